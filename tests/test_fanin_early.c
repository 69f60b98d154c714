/*
 * Fan-in memory bounded (run by tests/test_fanin_early.sh under mpiexec -n 3 and 4): under
 * scheduler=dynamic a received fan-in message is added into its panel on arrival (stats
 * fanin_early > 0), in every comm-threads mode MPI's thread level allows, LL^T, LDL^T and LU, and
 * the answers stay right (backward error <= 1e-12); scheduler=static keeps holding them for the
 * panel task (fanin_early == 0) and stays bitwise reproducible from run to run.
 */
#include "base/config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include "canopy.h"

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

/* y = A x (full storage: the generator's Laplacian holds both triangles) */
static void matvec(const canopy_csc *A, const double *x, double *y)
{
    memset(y, 0, (size_t)A->n * sizeof *y);
    for (canopy_int j = 0; j < A->n; j++)
        for (canopy_int p = A->colptr[j] - A->base; p < A->colptr[j + 1] - A->base; p++)
            y[A->rowind[p] - A->base] += ((const double *)A->values)[p] * x[j];
}

/* factorize and solve A x = A * ones; x on rank 0, and its normwise backward error
 * ||b - A x|| / (||A|| ||x|| + ||b||) (inf-norms), broadcast */
static canopy_status solve_ones(canopy_solver *s, const canopy_csc *A, double *x, double *berr)
{
    canopy_int n = A->n;
    double *ones = malloc((size_t)n * sizeof *ones), *b = malloc((size_t)n * sizeof *b), *r = malloc((size_t)n * sizeof *r);
    for (canopy_int i = 0; i < n; i++) ones[i] = 1;
    matvec(A, ones, b);
    memcpy(x, b, (size_t)n * sizeof *x);
    canopy_status st = canopy_factorize(s);
    if (st >= 0) st = canopy_solve(s, 1, rank == 0 ? x : NULL, n);
    *berr = INFINITY;
    if (rank == 0 && st >= 0) {
        matvec(A, x, r);
        double rn = 0, xn = 0, bn = 0, an = 0;
        for (canopy_int i = 0; i < n; i++) {
            rn = fmax(rn, fabs(b[i] - r[i]));
            xn = fmax(xn, fabs(x[i]));
            bn = fmax(bn, fabs(b[i]));
        }
        for (canopy_int j = 0; j < n; j++) { /* symmetric: the column sums are the row sums */
            double c = 0;
            for (canopy_int p = A->colptr[j] - A->base; p < A->colptr[j + 1] - A->base; p++) c += fabs(((const double *)A->values)[p]);
            an = fmax(an, c);
        }
        *berr = rn / (an * xn + bn);
    }
    MPI_Bcast(berr, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    free(ones);
    free(b);
    free(r);
    return st;
}

static void run(const canopy_csc *A, canopy_matrix_kind kind, canopy_factorization fact, int comm_threads,
                canopy_scheduler sched)
{
    canopy_options o;
    canopy_options_default(&o);
    o.threads = 2;
    o.bind = CANOPY_BIND_NONE;
    o.comm_threads = comm_threads;
    o.scheduler = sched;
    o.factorization = fact;
    o.refine_max_iter = 0; /* the factors' own accuracy */
    snprintf(o.cost_cache, sizeof o.cost_cache, "fixed");
    char what[160];
    snprintf(what, sizeof what, "factorization %d, comm-threads %d, %s", (int)fact, comm_threads,
             sched == CANOPY_SCHED_STATIC ? "static" : "dynamic");
    canopy_solver *s = NULL;
    if (canopy_create(MPI_COMM_WORLD, &o, &s) != CANOPY_SUCCESS) {
        fail("%s: canopy_create: %s", what, canopy_last_error(NULL));
        return;
    }
    canopy_csc M = *A;
    M.kind = kind;
    double *x = calloc((size_t)A->n, sizeof(double)), *x1 = calloc((size_t)A->n, sizeof(double));
    canopy_status st = canopy_set_matrix(s, rank == 0 ? &M : NULL);
    if (st >= 0) st = canopy_analyze(s);
    canopy_stats S;
    memset(&S, 0, sizeof S);
    int64_t early = 0;
    double berr = 0;
    /* twice: the second factorization reuses the factors (and must give the same under static) */
    for (int rep = 0; rep < 2 && st >= 0; rep++) {
        double e = INFINITY;
        st = solve_ones(s, &M, rep ? x1 : x, &e);
        if (st >= 0) st = canopy_get_stats(s, &S);
        early += S.fanin_early;
        berr = fmax(berr, e);
    }
    if (st < 0) {
        fail("%s: %s", what, canopy_last_error(s));
    } else {
        if (!(berr <= 1e-12)) fail("%s: backward error %.3g", what, berr);
        if (sched == CANOPY_SCHED_DYNAMIC && early <= 0) fail("%s: no fan-in message was added on arrival", what);
        if (sched == CANOPY_SCHED_STATIC && early != 0) fail("%s: %lld messages added on arrival", what, (long long)early);
        if (sched == CANOPY_SCHED_STATIC && rank == 0 && memcmp(x, x1, (size_t)A->n * sizeof *x) != 0)
            fail("%s: two factorizations gave different solutions", what);
        if (rank == 0)
            printf("%s: backward error %.2e, messages added on arrival %lld\n", what, berr, (long long)early);
    }
    free(x);
    free(x1);
    canopy_destroy(&s);
}

int main(int argc, char **argv)
{
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    canopy_csc A;
    if (canopy_generate_laplacian(14, 13, 12, 7, &A) != CANOPY_SUCCESS) {
        fprintf(stderr, "cannot generate the matrix\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    static const canopy_matrix_kind kinds[3] = {CANOPY_KIND_SPD, CANOPY_KIND_SYMMETRIC, CANOPY_KIND_GENERAL};
    static const canopy_factorization facts[3] = {CANOPY_FACT_LLT, CANOPY_FACT_LDLT, CANOPY_FACT_LU};
    for (int ct = 0; ct <= 2; ct++) {
        if (ct == 2 && provided < MPI_THREAD_MULTIPLE) continue;
        if (ct < 2 && provided < MPI_THREAD_SERIALIZED) continue;
        for (int k = 0; k < 3; k++) run(&A, kinds[k], facts[k], ct, CANOPY_SCHED_DYNAMIC);
        run(&A, kinds[0], facts[0], ct, CANOPY_SCHED_STATIC);
    }
    canopy_csc_free(&A);
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("test_fanin_early on %d ranks: %s\n", size, all ? "FAILED" : "passed");
    MPI_Finalize();
    return all ? 1 : 0;
}
