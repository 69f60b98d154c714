/*
 * The MPI thread level Canopy needs on several ranks (comm/README.md): run with the level given as
 * argument (funneled, serialized, multiple); canopy_create must refuse, on every rank with the same
 * message, exactly the comm-threads settings the level cannot carry, and the accepted ones must
 * solve (backward error <= 1e-12).
 */
#include <canopy.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
#define CHECK(c, ...)                                       \
    do {                                                    \
        if (!(c)) {                                         \
            fprintf(stderr, "FAILED %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                   \
            fputc('\n', stderr);                            \
            failures++;                                     \
        }                                                   \
    } while (0)

int main(int argc, char **argv)
{
    const char *want = argc > 1 ? argv[1] : "multiple";
    int req = !strcmp(want, "funneled") ? MPI_THREAD_FUNNELED
              : !strcmp(want, "serialized") ? MPI_THREAD_SERIALIZED : MPI_THREAD_MULTIPLE;
    int provided;
    MPI_Init_thread(&argc, &argv, req, &provided);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    canopy_csc A;
    memset(&A, 0, sizeof A);
    if (canopy_generate_laplacian(14, 12, 1, 5, &A) != CANOPY_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 2);
    for (int ct = 0; ct <= 2; ct++) {
        canopy_options o;
        canopy_options_default(&o);
        o.threads = 1;
        o.comm_threads = ct;
        snprintf(o.cost_cache, sizeof o.cost_cache, "fixed");
        canopy_solver *s = NULL;
        canopy_status st = canopy_create(MPI_COMM_WORLD, &o, &s);
        int need = ct == 2 ? MPI_THREAD_MULTIPLE : MPI_THREAD_SERIALIZED;
        int ok = size == 1 || provided >= need;
        /* the same status everywhere */
        int mine = (int)st, lo, hi;
        MPI_Allreduce(&mine, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(&mine, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        CHECK(lo == hi, "comm-threads=%d: ranks disagree (%d..%d)", ct, lo, hi);
        if (!ok) {
            CHECK(st == CANOPY_ERR_MPI && s == NULL, "comm-threads=%d with level %d: expected a refusal, got %d", ct,
                  provided, (int)st);
            CHECK(strstr(canopy_last_error(NULL), need == MPI_THREAD_MULTIPLE ? "MPI_THREAD_MULTIPLE"
                                                                               : "MPI_THREAD_SERIALIZED") != NULL,
                  "the message names the level needed: %s", canopy_last_error(NULL));
            if (rank == 0) printf("comm-threads=%d refused as expected: %s\n", ct, canopy_last_error(NULL));
            continue;
        }
        CHECK(st == CANOPY_SUCCESS, "comm-threads=%d with level %d: %s", ct, provided, canopy_last_error(NULL));
        if (st != CANOPY_SUCCESS) continue;
        int n = (int)A.n;
        double *b = calloc((size_t)n + 1, sizeof *b), *x = calloc((size_t)n + 1, sizeof *x);
        for (int i = 0; i < n; i++) b[i] = x[i] = 1.0 + (i % 7);
        st = canopy_set_matrix(s, rank == 0 ? &A : NULL);
        if (st >= 0) st = canopy_analyze(s);
        if (st >= 0) st = canopy_factorize(s);
        if (st >= 0) st = canopy_solve(s, 1, x, n);
        if (st >= 0) st = canopy_refine(s, 1, b, n, x, n);
        canopy_stats S;
        canopy_get_stats(s, &S);
        CHECK(st >= 0 && S.backward_error <= 1e-12, "comm-threads=%d: status %d (%s), backward error %g", ct, (int)st,
              canopy_last_error(s), S.backward_error);
        if (rank == 0) printf("comm-threads=%d, level %d, %d ranks: backward error %.2e\n", ct, provided, size,
                              S.backward_error);
        canopy_destroy(&s);
        free(b);
        free(x);
    }
    canopy_csc_free(&A);
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    return all ? 1 : 0;
}
