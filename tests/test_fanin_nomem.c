/*
 * A fan-in buffer that cannot be allocated in the middle of a factorization over several ranks
 * (run by tests/test_fanin_nomem.sh under mpiexec -n 2 and 3, under a timeout): the buffer a rank
 * sends (allocated by its first contribution) or receives (allocated when its message arrives)
 * fails on one rank, for every rank in turn, under both schedulers in every comm-threads mode
 * MPI's thread level allows, LL^T and LU; and with top2d=flat the message of a facing group (its
 * sender) or the copy of a panel (its receiver). Every rank must return the same status, out of memory
 * exactly when the failure happened, nobody may hang, and the next factorization must succeed and
 * solve.
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

static void run(const canopy_csc *A, canopy_matrix_kind kind, int comm_threads, canopy_scheduler sched, int top2d)
{
    static const char *const fanin_labels[2] = {"fan-in buffer", "received fan-in buffer"};
    /* top2d=flat: a facing group's message on its sender, the copy of the panel on its receiver */
    static const char *const top2d_labels[2] = {"top2d group message", "top2d copy of a panel"};
    const char *const *labels = top2d ? top2d_labels : fanin_labels;
    canopy_options o;
    canopy_options_default(&o);
    o.top2d = top2d;
    if (top2d) o.twod_levels = 4;
    o.threads = 2;
    o.bind = CANOPY_BIND_NONE;
    o.comm_threads = comm_threads;
    o.scheduler = sched;
    snprintf(o.cost_cache, sizeof o.cost_cache, "fixed");
    canopy_solver *s = NULL;
    if (canopy_create(MPI_COMM_WORLD, &o, &s) != CANOPY_SUCCESS) {
        fail("canopy_create: %s", canopy_last_error(NULL));
        return;
    }
    canopy_csc M = *A;
    M.kind = kind;
    canopy_status st = canopy_set_matrix(s, rank == 0 ? &M : NULL);
    if (st >= 0) st = canopy_analyze(s);
    if (st >= 0) st = canopy_factorize(s);
    if (st < 0) {
        fail("setup (kind %d, comm-threads %d): %s", (int)kind, comm_threads, canopy_last_error(s));
        canopy_destroy(&s);
        return;
    }
    int happened_any = 0;
    for (int victim = 0; victim < size; victim++)
        for (int l = 0; l < 2; l++)
            for (long skip = 0; skip < 3; skip += 2) {
                if (rank == victim) canopy_alloc_fail_named(labels[l], skip);
                st = canopy_factorize(s);
                int happened = rank == victim ? !canopy_alloc_fail_named_pending() : 0;
                canopy_alloc_fail_named(NULL, 0);
                MPI_Bcast(&happened, 1, MPI_INT, victim, MPI_COMM_WORLD);
                happened_any |= happened;
                int mine = (int)st, lo, hi;
                MPI_Allreduce(&mine, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
                MPI_Allreduce(&mine, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
                char what[200];
                snprintf(what, sizeof what, "kind %d, comm-threads %d, %s, %s #%ld failing on rank %d", (int)kind,
                         comm_threads, sched == CANOPY_SCHED_STATIC ? "static" : "dynamic", labels[l], skip, victim);
                if (lo != hi) fail("%s: ranks returned different statuses (%d to %d)", what, lo, hi);
                if (happened && st != CANOPY_ERR_NOMEM) fail("%s: status %d (%s), not out of memory", what, (int)st, canopy_last_error(s));
                if (!happened && st < 0) fail("%s: nothing failed, yet status %d: %s", what, (int)st, canopy_last_error(s));
                /* and the solver factorizes and solves again */
                st = canopy_factorize(s);
                double e = st >= 0 ? solve_error(s, A) : INFINITY;
                mine = st < 0 || e > 1e-8;
                MPI_Allreduce(MPI_IN_PLACE, &mine, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
                if (mine) fail("%s: the next factorization: status %d, error %g", what, (int)st, e);
            }
    if (!happened_any) fail("kind %d, comm-threads %d: no %s was ever allocated", (int)kind, comm_threads, labels[0]);
    canopy_destroy(&s);
}

int main(int argc, char **argv)
{
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    canopy_csc A, T;
    /* T: wide enough for 2D tasks in the shared top (top2d=flat) */
    if (canopy_generate_laplacian(10, 10, 10, 7, &A) != CANOPY_SUCCESS ||
        canopy_generate_laplacian(20, 20, 20, 7, &T) != CANOPY_SUCCESS) {
        fprintf(stderr, "cannot generate the matrix\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    static const canopy_matrix_kind kinds[2] = {CANOPY_KIND_SPD, CANOPY_KIND_GENERAL};
    for (int k = 0; k < 2; k++)
        for (int ct = 0; ct <= 2; ct++) {
            if (ct == 2 && provided < MPI_THREAD_MULTIPLE) continue;
            if (ct < 2 && provided < MPI_THREAD_SERIALIZED) continue;
            /* both schedulers everywhere: dynamic adds received messages on arrival (another thread) */
            run(&A, kinds[k], ct, CANOPY_SCHED_STATIC, 0);
            run(&A, kinds[k], ct, CANOPY_SCHED_DYNAMIC, 0);
            run(&T, kinds[k], ct, CANOPY_SCHED_STATIC, 1);
            run(&T, kinds[k], ct, CANOPY_SCHED_DYNAMIC, 1);
        }
    canopy_csc_free(&A);
    canopy_csc_free(&T);
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("test_fanin_nomem on %d ranks: %s\n", size, all ? "FAILED" : "passed");
    MPI_Finalize();
    return all ? 1 : 0;
}
