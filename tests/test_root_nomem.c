/*
 * Failures inside the root's grid factorization (option root-grid, src/numeric/factor_root.c and
 * grid_dense), run by tests/test_root_nomem.sh under mpiexec -n 3 and 4 under a timeout:
 *  - each of the root's allocations (by label and skip count: the redistribution buffers, the tiles, the pivots,
 *    and grid_dense's own) fails on one rank, for every rank in turn, LL^T, LDL^T and LU: every
 *    rank returns the same status, out of memory exactly when the failure happened, nobody hangs,
 *    and the next factorization succeeds and solves;
 *  - LL^T of a Laplacian shifted to be indefinite (its first non-positive pivot in the root):
 *    CANOPY_ERR_NOT_SPD with a message on every rank, and the solver still usable.
 */
#include "base/config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include "canopy.h"
#include "base/common.h" /* canopy_alloc_fail_named */

static int rank, size, failures;

#if defined(__GNUC__)
static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#endif
static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "rank %d: FAIL: ", rank);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    failures++;
}

/* max |x_i - 1| after solving A x = A * ones on rank 0 (broadcast) */
static double solve_error(canopy_solver *s, const canopy_csc *A)
{
    double err = 0;
    double *b = NULL;
    canopy_int n = A->n;
    if (rank == 0) {
        b = calloc((size_t)n, sizeof(double));
        const double *v = A->values;
        for (canopy_int j = 0; j < n; j++)
            for (canopy_int p = A->colptr[j] - A->base; p < A->colptr[j + 1] - A->base; p++) b[A->rowind[p] - A->base] += v[p];
    }
    canopy_status st = canopy_solve(s, 1, b, n);
    if (rank == 0) {
        for (canopy_int i = 0; st >= 0 && i < n; i++) err = fmax(err, fabs(b[i] - 1));
        if (st < 0) err = INFINITY;
    }
    free(b);
    MPI_Bcast(&err, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return err;
}

static int agreed(int mine, const char *what)
{
    int lo, hi;
    MPI_Allreduce(&mine, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&mine, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (lo != hi) fail("%s: ranks returned different statuses (%d to %d)", what, lo, hi);
    return lo == hi;
}

/* a solver with root-grid=on; @p factor: factorized once, and its root on a grid (stats are set by
 * the factorization) */
static canopy_solver *setup(const canopy_csc *A, canopy_factorization fact, int factor)
{
    canopy_options o;
    canopy_options_default(&o);
    o.threads = 1; /* MPICH polls: oversubscribed threads make each run slow */
    o.bind = CANOPY_BIND_NONE;
    o.factorization = fact;
    o.root_grid = 1;
    snprintf(o.cost_cache, sizeof o.cost_cache, "fixed");
    canopy_solver *s = NULL;
    if (canopy_create(MPI_COMM_WORLD, &o, &s) != CANOPY_SUCCESS) {
        fail("canopy_create: %s", canopy_last_error(NULL));
        return NULL;
    }
    canopy_status st = canopy_set_matrix(s, rank == 0 ? A : NULL);
    if (st >= 0) st = canopy_analyze(s);
    if (st >= 0 && factor) st = canopy_factorize(s);
    canopy_stats S;
    /* no root on a grid would make every case below vacuous */
    if (st >= 0 && factor && (canopy_get_stats(s, &S) != CANOPY_SUCCESS || S.root_columns <= 0)) {
        fail("fact %d: no root on a grid", (int)fact);
        st = CANOPY_ERR_INTERNAL;
    }
    if (st < 0) {
        fail("setup (fact %d): %s", (int)fact, canopy_last_error(s));
        canopy_destroy(&s);
    }
    return s;
}

/* the labels of factor_root.c and grid_dense_template.c, and how many arrays of each to fail in turn
 * (the redistribution's counts, send and receive buffers; LDL^T's two pivot arrays); *hit counts
 * the failures that happened */
static const char *const labels[] = {"root redistribution", "root tiles", "root pivots", "grid_dense panel buffers",
                                     "grid_dense requests", "grid_dense pivots", "grid_dense work", "grid_dense members"};
static const long nskip[] = {3, 1, 2, 1, 1, 1, 1, 1};
#define NLABELS ((int)(sizeof labels / sizeof labels[0]))

static void nomem(const canopy_csc *A, canopy_factorization fact, int *hit)
{
    canopy_solver *s = setup(A, fact, 1);
    if (s == NULL) return;
    for (int victim = 0; victim < size; victim++)
        for (int l = 0; l < NLABELS; l++)
            for (long skip = 0; skip < nskip[l]; skip++) {
                if (rank == victim) canopy_alloc_fail_named(labels[l], skip);
                canopy_status st = canopy_factorize(s);
                int happened = rank == victim ? !canopy_alloc_fail_named_pending() : 0;
                canopy_alloc_fail_named(NULL, 0);
                MPI_Bcast(&happened, 1, MPI_INT, victim, MPI_COMM_WORLD);
                hit[l] += happened;
                char what[160];
                snprintf(what, sizeof what, "fact %d, '%s' #%ld failing on rank %d", (int)fact, labels[l], skip, victim);
                agreed((int)st, what);
                if (happened && st != CANOPY_ERR_NOMEM)
                    fail("%s: status %d (%s), not out of memory", what, (int)st, canopy_last_error(s));
                if (!happened && st < 0) fail("%s: nothing failed, yet status %d: %s", what, (int)st, canopy_last_error(s));
                st = canopy_factorize(s);
                double e = st >= 0 ? solve_error(s, A) : INFINITY;
                int bad = st < 0 || e > 1e-8;
                MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
                if (bad) fail("%s: the next factorization: status %d, error %g", what, (int)st, e);
            }
    canopy_destroy(&s);
}

int main(int argc, char **argv)
{
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    canopy_csc A;
    if (canopy_generate_laplacian(12, 12, 12, 7, &A) != CANOPY_SUCCESS) {
        fprintf(stderr, "cannot generate the matrix\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int hit[NLABELS] = {0};
    static const canopy_factorization facts[3] = {CANOPY_FACT_LLT, CANOPY_FACT_LDLT, CANOPY_FACT_LU};
    for (int f = 0; f < 3; f++) nomem(&A, facts[f], hit);
    /* each label is allocated by some rank in some kind (pivots: LDL^T and LU at least) */
    for (int l = 0; l < NLABELS; l++)
        if (hit[l] == 0) fail("'%s' never failed: not allocated, or renamed?", labels[l]);

    /* diagonal 6 - 0.3: below 6 - 6 cos(pi / 13), the grid's smallest eigenvalue goes negative */
    canopy_csc B = A;
    double *v = malloc(sizeof(double) * (size_t)(A.colptr[A.n] - A.base));
    memcpy(v, A.values, sizeof(double) * (size_t)(A.colptr[A.n] - A.base));
    for (canopy_int j = 0; j < A.n; j++)
        for (canopy_int p = A.colptr[j] - A.base; p < A.colptr[j + 1] - A.base; p++)
            if (A.rowind[p] - A.base == j) v[p] -= 0.3;
    B.values = v;
    B.kind = CANOPY_KIND_SPD;
    canopy_solver *s = setup(&B, CANOPY_FACT_LLT, 0); /* same structure and plan as the LL^T above */
    if (s != NULL) {
        for (int i = 0; i < 2; i++) { /* twice: the refusal leaves the solver usable */
            canopy_status st = canopy_factorize(s);
            if (agreed((int)st, "indefinite LL^T") && st != CANOPY_ERR_NOT_SPD)
                fail("indefinite LL^T: status %d (%s), not CANOPY_ERR_NOT_SPD", (int)st, canopy_last_error(s));
            if (strstr(canopy_last_error(s), "positive definite") == NULL)
                fail("indefinite LL^T: message '%s'", canopy_last_error(s));
        }
        canopy_destroy(&s);
    }
    free(v);
    canopy_csc_free(&A);
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("test_root_nomem on %d ranks: %s\n", size, all ? "FAILED" : "passed");
    MPI_Finalize();
    return all ? 1 : 0;
}
