/*
 * The MPI thread level Canopy needs on several ranks (comm/README.md): run with the level given as
 * argument (funneled, serialized, multiple); canopy_create must refuse, on every rank with the same
 * message, exactly the comm-threads settings the level cannot carry, and the accepted ones must
 * solve (backward error <= 1e-12). At MPI_THREAD_FUNNELED (an unmodified PETSc program's level)
 * comm-threads=1 becomes the calling thread driving MPI while 2 workers compute; and top2d=flat
 * there (the calling thread receives and forwards the shared top's groups).
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
        o.threads = ct == 1 ? 2 : 1;
        o.comm_threads = ct;
        snprintf(o.cost_cache, sizeof o.cost_cache, "fixed");
        char map[64];
        snprintf(map, sizeof map, "test_mpi_level-%d.svg", size);
        if (ct == 1) snprintf(o.comm_heatmap, sizeof o.comm_heatmap, "%s", map);
        canopy_solver *s = NULL;
        canopy_status st = canopy_create(MPI_COMM_WORLD, &o, &s);
        int need = ct == 2 ? MPI_THREAD_MULTIPLE : ct == 1 ? MPI_THREAD_FUNNELED : MPI_THREAD_SERIALIZED;
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
        /* the rank x rank volume adds up to the totals; nobody sends to itself */
        int64_t *bytes = calloc((size_t)size * size, sizeof *bytes), *msgs = calloc((size_t)size * size, sizeof *msgs);
        CHECK(canopy_get_comm_matrix(s, bytes, msgs) == CANOPY_SUCCESS, "canopy_get_comm_matrix: %s", canopy_last_error(s));
        if (rank == 0) {
            int64_t tb = 0, tm = 0;
            for (int i = 0; i < size; i++)
                for (int j = 0; j < size; j++) {
                    tb += bytes[i * size + j];
                    tm += msgs[i * size + j];
                    if (i == j) CHECK(bytes[i * size + j] == 0 && msgs[i * size + j] == 0, "rank %d sends to itself", i);
                }
            CHECK(tb == S.comm_bytes && tm == S.comm_msgs, "comm matrix sums %lld bytes %lld msgs, stats %lld %lld",
                  (long long)tb, (long long)tm, (long long)S.comm_bytes, (long long)S.comm_msgs);
            CHECK(size == 1 || tm > 0, "no fan-in message on %d ranks", size);
            CHECK(S.comm_msgs <= S.comm_msgs_without_fanin, "fan-in sends more messages than one per update");
        }
        free(bytes);
        free(msgs);
        CHECK(st >= 0 && S.backward_error <= 1e-12, "comm-threads=%d: status %d (%s), backward error %g", ct, (int)st,
              canopy_last_error(s), S.backward_error);
        /* comm-threads=1 at MPI_THREAD_FUNNELED: the calling thread drove the messages (reported as 3) */
        if (size > 1 && ct == 1)
            CHECK(S.comm_threads == (provided < MPI_THREAD_SERIALIZED ? 3 : 1), "comm-threads=1 at level %d reported as %d",
                  provided, S.comm_threads);
        if (rank == 0) printf("comm-threads=%d, level %d, %d ranks: backward error %.2e\n", ct, provided, size,
                              S.backward_error);
        if (ct == 1 && rank == 0 && size > 1) {
            FILE *f = fopen(map, "r");
            char head[64] = "";
            CHECK(f && fgets(head, sizeof head, f) && strstr(head, "<?xml"), "heat map %s not written", map);
            if (f) fclose(f);
            remove(map);
        }
        canopy_destroy(&s);
        free(b);
        free(x);
    }
    canopy_csc_free(&A);
    /* top2d=flat at any level comm-threads=1 accepts (funneled: the calling thread receives and
     * forwards the groups down their trees while 2 workers compute) */
    if (canopy_generate_laplacian(16, 14, 12, 7, &A) != CANOPY_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 2);
    {
        canopy_options o;
        canopy_options_default(&o);
        o.threads = 2;
        o.comm_threads = 1;
        o.top2d = 1;
        o.twod_levels = 4;
        snprintf(o.cost_cache, sizeof o.cost_cache, "fixed");
        canopy_solver *s = NULL;
        canopy_status st = canopy_create(MPI_COMM_WORLD, &o, &s);
        int n = (int)A.n;
        double *b = calloc((size_t)n + 1, sizeof *b), *x = calloc((size_t)n + 1, sizeof *x);
        for (int i = 0; i < n; i++) b[i] = x[i] = 1.0 + (i % 7);
        if (st >= 0) st = canopy_set_matrix(s, rank == 0 ? &A : NULL);
        if (st >= 0) st = canopy_analyze(s);
        if (st >= 0) st = canopy_factorize(s);
        if (st >= 0) st = canopy_solve(s, 1, x, n);
        if (st >= 0) st = canopy_refine(s, 1, b, n, x, n);
        canopy_stats S;
        memset(&S, 0, sizeof S);
        if (s) canopy_get_stats(s, &S);
        CHECK(st >= 0 && S.backward_error <= 1e-12, "top2d=flat, level %d: status %d (%s), backward error %g", provided,
              (int)st, canopy_last_error(s), S.backward_error);
        CHECK(size == 1 || S.top2d_cblks > 0, "top2d=flat on %d ranks ran no top2d column block", size);
        if (rank == 0) printf("top2d=flat, level %d, %d ranks: %lld column blocks, backward error %.2e\n", provided, size,
                              (long long)S.top2d_cblks, S.backward_error);
        canopy_destroy(&s);
        free(b);
        free(x);
        canopy_csc_free(&A);
    }
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    return all ? 1 : 0;
}
