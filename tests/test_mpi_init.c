/*
 * A plain C MPI program, started with MPI_Init (MPI_THREAD_SINGLE with Open MPI and MPICH, as
 * most existing codes start it): with the default comm-threads=1 Canopy runs on any number of
 * ranks, the calling thread driving MPI while 2 workers compute (reported as comm_threads = 3);
 * an unsymmetric matrix (convection-diffusion, LU), centralized and then given in pieces, is
 * solved and refined against a known solution. An explicit comm-threads=0 or 2 (idle workers, or
 * two threads, calling MPI) is refused on every rank with the same status and a message that
 * names the level needed and the advice an unmodified program can follow, without a hang.
 * Argument "verbose": every solver with verbose=1 (tests/test_mpi_init.sh counts the notes).
 * Argument "root": every solver with root-grid=on, and on several ranks the root must have been
 * factored on a grid (the grid's messages sent from the calling thread, no communication thread).
 */
#include <canopy.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures, rank, size, root_mode; /* root_mode: argument "root", root-grid=on */
#define CHECK(c, ...)                                                   \
    do {                                                                \
        if (!(c)) {                                                     \
            fprintf(stderr, "rank %d: FAILED %s:%d: ", rank, __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                               \
            fputc('\n', stderr);                                        \
            failures++;                                                 \
        }                                                               \
    } while (0)

enum { G = 100, N = G * G }; /* a dense root of 145 columns: a 1 x 2 grid under root-grid=on */

/* 2-D convection-diffusion on a G x G grid, full CSC, 0-based: 4 on the diagonal, -1.3 / -0.7 to
 * the west / east neighbours, -1.1 / -0.9 to the south / north ones */
static void build(canopy_int *colptr, canopy_int *rowind, double *values)
{
    canopy_int p = 0;
    for (int j = 0; j < N; j++) {
        int x = j % G, y = j / G;
        colptr[j] = p;
        if (y > 0) rowind[p] = j - G, values[p++] = -0.9;
        if (x > 0) rowind[p] = j - 1, values[p++] = -0.7;
        rowind[p] = j, values[p++] = 4.0;
        if (x < G - 1) rowind[p] = j + 1, values[p++] = -1.3;
        if (y < G - 1) rowind[p] = j + G, values[p++] = -1.1;
    }
    colptr[N] = p;
}

static double known(int i)
{
    return 1.0 + 0.25 * (i % 7) - 0.125 * (i % 3);
}

static canopy_solver *create(int comm_threads, int verbose)
{
    canopy_options o;
    canopy_options_default(&o);
    o.threads = 2;
    o.bind = CANOPY_BIND_NONE;
    o.comm_threads = comm_threads;
    o.verbose = verbose;
    o.root_grid = root_mode;
    snprintf(o.cost_cache, sizeof o.cost_cache, "fixed");
    canopy_solver *s = NULL;
    canopy_status st = canopy_create(MPI_COMM_WORLD, &o, &s);
    int mine = (int)st, lo, hi;
    MPI_Allreduce(&mine, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&mine, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    CHECK(lo == hi, "comm-threads=%d: the ranks disagree (%d..%d)", comm_threads, lo, hi);
    if (st != CANOPY_SUCCESS) {
        CHECK(s == NULL, "a refused canopy_create left a handle");
        return NULL;
    }
    return s;
}

static double max_error(const double *x, const canopy_int *rows, int nloc)
{
    double e = 0;
    for (int i = 0; i < nloc; i++) e = fmax(e, fabs(x[i] - known(rows ? (int)rows[i] : i)) / known(rows ? (int)rows[i] : i));
    return e;
}

static void check_run(canopy_solver *s, const char *what, int provided)
{
    canopy_stats S;
    CHECK(canopy_get_stats(s, &S) == CANOPY_SUCCESS, "canopy_get_stats");
    /* below MPI_THREAD_SERIALIZED the calling thread drove the messages (reported as 3) */
    if (size > 1) {
        CHECK(S.comm_threads == (provided < MPI_THREAD_SERIALIZED ? 3 : 1), "%s: comm_threads %d at level %d", what,
              S.comm_threads, provided);
        CHECK(S.comm_msgs > 0, "%s: no message on %d ranks", what, size);
    }
    CHECK(S.threads_per_rank == 2, "%s: %d threads per rank", what, S.threads_per_rank);
    /* root-grid=on: the root on its grid, factored from the calling thread's MPI calls alone */
    if (root_mode && size > 1)
        CHECK(S.root_columns > 0 && S.root_pr * S.root_pc >= 1, "%s: no root grid (%lld columns)", what,
              (long long)S.root_columns);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int verbose = argc > 1 && !strcmp(argv[1], "verbose");
    root_mode = argc > 1 && !strcmp(argv[1], "root");
    int provided = -1;
    MPI_Query_thread(&provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0)
        printf("MPI_Init gives thread level %d (%s MPI_THREAD_SERIALIZED), %d ranks\n", provided,
               provided < MPI_THREAD_SERIALIZED ? "below" : "not below", size);

    static canopy_int colptr[N + 1], rowind[5 * N];
    static double values[5 * N], b[N], x[N];
    build(colptr, rowind, values);
    for (int i = 0; i < N; i++) b[i] = 0;
    for (int j = 0; j < N; j++)
        for (canopy_int p = colptr[j]; p < colptr[j + 1]; p++) b[rowind[p]] += values[p] * known(j);

    /* centralized on rank 0: solve, refine */
    canopy_solver *s = create(1, verbose);
    CHECK(s != NULL, "comm-threads=1 under MPI_Init refused: %s", canopy_last_error(NULL));
    if (s) {
        canopy_csc A = {.n = N, .colptr = colptr, .rowind = rowind, .values = values, .base = 0,
                        .arith = CANOPY_REAL, .kind = CANOPY_KIND_GENERAL, .triangle = CANOPY_TRIANGLE_BOTH};
        canopy_status st = canopy_set_matrix(s, rank == 0 ? &A : NULL);
        if (st >= 0) st = canopy_analyze(s);
        if (st >= 0) st = canopy_factorize(s);
        memcpy(x, b, sizeof x);
        if (st >= 0) st = canopy_solve(s, rank == 0 ? 1 : 0, rank == 0 ? x : NULL, N);
        CHECK(st >= 0, "centralized: %s", canopy_last_error(s));
        if (rank == 0) CHECK(max_error(x, NULL, N) < 1e-10, "centralized solve: error %g", max_error(x, NULL, N));
        if (st >= 0) st = canopy_refine(s, rank == 0 ? 1 : 0, rank == 0 ? b : NULL, N, rank == 0 ? x : NULL, N);
        CHECK(st >= 0, "centralized refine: %s", canopy_last_error(s));
        if (rank == 0) {
            CHECK(max_error(x, NULL, N) < 1e-12, "centralized refine: error %g", max_error(x, NULL, N));
            printf("centralized LU: error %.2e\n", max_error(x, NULL, N));
        }
        check_run(s, "centralized", provided);
        canopy_destroy(&s);
    }

    /* in pieces: columns and rows dealt round-robin */
    s = create(1, verbose);
    if (s) {
        int nl = 0;
        static canopy_int cols[N], cp[N + 1], ri[5 * N], rows[N];
        static double v[5 * N], bl[N], xl[N];
        cp[0] = 0;
        for (int j = rank; j < N; j += size) {
            cols[nl] = j;
            for (canopy_int p = colptr[j]; p < colptr[j + 1]; p++) ri[cp[nl] + p - colptr[j]] = rowind[p], v[cp[nl] + p - colptr[j]] = values[p];
            cp[nl + 1] = cp[nl] + colptr[j + 1] - colptr[j];
            rows[nl] = j;
            bl[nl] = xl[nl] = b[j];
            nl++;
        }
        canopy_dist_csc D = {.n = N, .ncols = nl, .cols = cols, .colptr = cp, .rowind = ri, .values = v, .base = 0,
                             .arith = CANOPY_REAL, .kind = CANOPY_KIND_GENERAL, .triangle = CANOPY_TRIANGLE_BOTH};
        canopy_status st = canopy_set_matrix_distributed(s, &D);
        if (st >= 0) st = canopy_analyze(s);
        if (st >= 0) st = canopy_factorize(s);
        if (st >= 0) st = canopy_solve_distributed(s, 1, nl, rows, xl, nl > 0 ? nl : 1);
        CHECK(st >= 0, "pieces: %s", canopy_last_error(s));
        CHECK(max_error(xl, rows, nl) < 1e-10, "pieces solve: error %g", max_error(xl, rows, nl));
        if (st >= 0) st = canopy_refine_distributed(s, 1, nl, rows, bl, nl > 0 ? nl : 1, xl, nl > 0 ? nl : 1);
        CHECK(st >= 0, "pieces refine: %s", canopy_last_error(s));
        CHECK(max_error(xl, rows, nl) < 1e-12, "pieces refine: error %g", max_error(xl, rows, nl));
        double e = max_error(xl, rows, nl), all = 0;
        MPI_Reduce(&e, &all, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (rank == 0) printf("in pieces: error %.2e\n", all);
        check_run(s, "pieces", provided);
        canopy_destroy(&s);
    }

    /* what needs more than the calling thread: refused everywhere, with the way out */
    for (int ct = 0; ct <= 2; ct += 2) {
        s = create(ct, 0);
        if (size == 1 || provided >= (ct == 2 ? MPI_THREAD_MULTIPLE : MPI_THREAD_SERIALIZED)) {
            CHECK(s != NULL, "comm-threads=%d: %s", ct, canopy_last_error(NULL));
            canopy_destroy(&s);
            continue;
        }
        CHECK(s == NULL, "comm-threads=%d under MPI_Init was accepted", ct);
        canopy_destroy(&s);
        const char *msg = canopy_last_error(NULL);
        CHECK(strstr(msg, ct == 2 ? "MPI_THREAD_MULTIPLE" : "MPI_THREAD_SERIALIZED") != NULL &&
                  strstr(msg, "use comm-threads=1") != NULL && strstr(msg, "-mat_canopy_comm_threads 1") != NULL &&
                  strstr(msg, "MPI_Init_thread") != NULL,
              "comm-threads=%d: the message lacks the level needed or the way out: %s", ct, msg);
        /* the same message on every rank */
        char mine[512], first[512];
        snprintf(mine, sizeof mine, "%s", msg);
        memcpy(first, mine, sizeof first);
        MPI_Bcast(first, (int)sizeof first, MPI_CHAR, 0, MPI_COMM_WORLD);
        CHECK(!strcmp(mine, first), "comm-threads=%d: rank 0 says \"%s\", this rank \"%s\"", ct, first, mine);
        if (rank == 0) printf("comm-threads=%d refused as expected: %s\n", ct, msg);
    }

    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    return all ? 1 : 0;
}
