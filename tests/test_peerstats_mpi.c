/*
 * Per-peer statistics gathered over ranks (comm/peerstats.c), run by tests/test_peerstats_mpi.sh
 * under mpiexec -n 1..4. Every rank records known synthetic traffic (no real messages: only the
 * counters and their gathering are under test): rank i "sends" (i+1)(j+1)*1000 bytes to every
 * rank j != i in (i+j) % 3 + 1 messages. Rank 0 checks both matrices exactly; every rank checks the
 * summaries against sums and a sort of its own, and comm_summary_allranks. Bad arguments on a
 * single rank must make every rank return the same error, not hang. The same runs again on the
 * communicators of the even and of the odd ranks.
 */
#include "base/config.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include "comm/peerstats.h"

static int wrank; /* rank in MPI_COMM_WORLD, for the messages */

#define CHECK(cond, ...)                                                                            \
    do {                                                                                            \
        if (!(cond)) {                                                                              \
            fprintf(stderr, "rank %d, line %d: %s: ", wrank, __LINE__, #cond);                      \
            fprintf(stderr, __VA_ARGS__);                                                           \
            fputc('\n', stderr);                                                                    \
            bad = 1;                                                                                \
        }                                                                                           \
    } while (0)

static int64_t bytes_of(int i, int j) { return i == j ? 0 : (int64_t)(i + 1) * (j + 1) * 1000; }
static int64_t msgs_of(int i, int j) { return i == j ? 0 : (i + j) % 3 + 1; }

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The summary of v[0..n-1] the plain way (sorting a copy), compared with @p s. */
static int check_summary(const char *what, const double *v, int n, const comm_summary *s)
{
    int bad = 0;
    double *c = malloc((size_t)n * sizeof *c), sum = 0, ss = 0;
    memcpy(c, v, (size_t)n * sizeof *c);
    qsort(c, (size_t)n, sizeof *c, dbl_cmp);
    for (int i = 0; i < n; i++) sum += c[i];
    double mean = sum / n;
    for (int i = 0; i < n; i++) ss += (c[i] - mean) * (c[i] - mean);
    double median = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
    CHECK(s->min == c[0], "%s: min %g, expected %g", what, s->min, c[0]);
    CHECK(s->max == c[n - 1], "%s: max %g, expected %g", what, s->max, c[n - 1]);
    CHECK(s->median == median, "%s: median %g, expected %g", what, s->median, median);
    CHECK(s->total == sum, "%s: total %g, expected %g", what, s->total, sum);
    CHECK(fabs(s->mean - mean) <= 1e-12 * fabs(mean), "%s: mean %.17g, expected %.17g", what, s->mean, mean);
    CHECK(fabs(s->stddev - sqrt(ss / n)) <= 1e-9 * (1 + mean), "%s: stddev %.17g, expected %.17g", what, s->stddev,
          sqrt(ss / n));
    free(c);
    return bad;
}

/* Every rank of @p comm must get @p want (a status) with the same message. */
static int check_agreed(MPI_Comm comm, canopy_status st, canopy_status want, const canopy_err *err, const char *needle)
{
    int bad = 0, rank;
    MPI_Comm_rank(comm, &rank);
    CHECK(st == want, "status %d, expected %d (%s)", (int)st, (int)want, err->msg);
    CHECK(strstr(err->msg, needle) != NULL, "message \"%s\" lacks \"%s\"", err->msg, needle);
    char root_msg[sizeof err->msg];
    memcpy(root_msg, err->msg, sizeof root_msg);
    MPI_Bcast(root_msg, (int)sizeof root_msg, MPI_CHAR, 0, comm);
    CHECK(strcmp(root_msg, err->msg) == 0, "message \"%s\" differs from rank 0's \"%s\"", err->msg, root_msg);
    return bad;
}

static int run(MPI_Comm comm, const char *name)
{
    int bad = 0, rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    canopy_err err = {0};
    comm_peerstats ps;
    CHECK(comm_peerstats_init(&ps, size, &err) == CANOPY_SUCCESS, "init: %s", err.msg);
    for (int j = 0; j < size; j++) {
        /* the first message carries the remainder, the others an equal share */
        int64_t m = msgs_of(rank, j), b = bytes_of(rank, j);
        for (int64_t k = 0; k < m; k++) CHECK(comm_peerstats_sent(&ps, j, b / m + (k == 0 ? b % m : 0)), "sent to %d", j);
        int64_t rm = msgs_of(j, rank), rb = bytes_of(j, rank);
        for (int64_t k = 0; k < rm; k++) comm_peerstats_recv(&ps, j, rb / rm + (k == 0 ? rb % rm : 0));
    }
    comm_peerstats_sent(&ps, size, 1); /* refused: out of range */

    /* bad arguments on the last rank only: every rank returns the same error, nobody hangs */
    comm_summary bs, ms;
    int64_t *bm = NULL, *mm = NULL;
    canopy_err_clear(&err);
    canopy_status st = comm_peerstats_gather(comm, rank == size - 1 ? NULL : &ps, &bs, &ms, NULL, NULL, &err);
    bad |= check_agreed(comm, st, CANOPY_ERR_ARGUMENT, &err, "NULL or freed statistics");
    comm_peerstats small;
    comm_peerstats_init(&small, size + 1, NULL);
    canopy_err_clear(&err);
    st = comm_peerstats_gather(comm, rank == 0 ? &small : &ps, &bs, &ms, NULL, NULL, &err);
    bad |= check_agreed(comm, st, CANOPY_ERR_ARGUMENT, &err, "the communicator has");
    comm_peerstats_free(&small);
    canopy_err_clear(&err);
    comm_summary s;
    st = comm_summary_allranks(comm, 1.0, rank == size / 2 ? NULL : &s, &err);
    bad |= check_agreed(comm, st, CANOPY_ERR_ARGUMENT, &err, "NULL output");

    /* the real gathering */
    if (rank == 0) {
        bm = malloc((size_t)size * (size_t)size * sizeof *bm);
        mm = malloc((size_t)size * (size_t)size * sizeof *mm);
        for (int k = 0; k < size * size; k++) bm[k] = mm[k] = -1;
    }
    canopy_err_clear(&err);
    st = comm_peerstats_gather(comm, &ps, &bs, &ms, bm, mm, &err);
    CHECK(st == CANOPY_SUCCESS, "gather: %s", err.msg);
    double *rb = malloc((size_t)size * sizeof *rb), *rm = malloc((size_t)size * sizeof *rm);
    for (int i = 0; i < size; i++) {
        rb[i] = rm[i] = 0;
        for (int j = 0; j < size; j++) {
            rb[i] += (double)bytes_of(i, j);
            rm[i] += (double)msgs_of(i, j);
            if (rank == 0) {
                CHECK(bm[i * size + j] == bytes_of(i, j), "bytes[%d][%d] = %lld, expected %lld", i, j,
                      (long long)bm[i * size + j], (long long)bytes_of(i, j));
                CHECK(mm[i * size + j] == msgs_of(i, j), "msgs[%d][%d] = %lld, expected %lld", i, j,
                      (long long)mm[i * size + j], (long long)msgs_of(i, j));
            }
        }
    }
    bad |= check_summary("bytes sent", rb, size, &bs);
    bad |= check_summary("messages sent", rm, size, &ms);

    /* only rank 0's wish for matrices counts: the others' buffers stay untouched */
    int64_t sentinel[2] = {-7, -7};
    canopy_err_clear(&err);
    st = comm_peerstats_gather(comm, &ps, NULL, &ms, NULL, rank == 0 ? mm : sentinel, &err);
    CHECK(st == CANOPY_SUCCESS, "gather of the messages only: %s", err.msg);
    CHECK(sentinel[0] == -7 && sentinel[1] == -7, "a matrix was written on rank %d", rank);
    bad |= check_summary("messages sent (again)", rm, size, &ms);
    if (rank == 0)
        for (int k = 0; k < size * size; k++) CHECK(mm[k] == msgs_of(k / size, k % size), "msgs[%d] after the second gather", k);

    /* the received counters are the transpose of the sent ones */
    for (int j = 0; j < size; j++) {
        CHECK(atomic_load(&ps.bytes_recv[j]) == bytes_of(j, rank), "bytes received from %d", j);
        CHECK(atomic_load(&ps.msgs_recv[j]) == msgs_of(j, rank), "messages received from %d", j);
    }

    /* a value per rank, summarised on every rank */
    double *vals = malloc((size_t)size * sizeof *vals);
    for (int i = 0; i < size; i++) vals[i] = (double)(i * i) + 0.5 - (i % 2) * 3.25;
    canopy_err_clear(&err);
    st = comm_summary_allranks(comm, vals[rank], &s, &err);
    CHECK(st == CANOPY_SUCCESS, "allranks: %s", err.msg);
    bad |= check_summary("allranks", vals, size, &s);

    if (rank == 0 && !bad)
        printf("%s: %d ranks: bytes sent per rank min %.0f median %.0f max %.0f total %.0f\n", name, size, bs.min, bs.median,
               bs.max, bs.total);

    /* after a reset, everything gathers to zero */
    comm_peerstats_reset(&ps);
    st = comm_peerstats_gather(comm, &ps, &bs, &ms, bm, NULL, &err);
    CHECK(st == CANOPY_SUCCESS && bs.max == 0 && ms.total == 0, "gather after reset");
    if (rank == 0)
        for (int k = 0; k < size * size; k++) CHECK(bm[k] == 0, "bytes[%d] after reset", k);
    free(vals);
    free(rb);
    free(rm);
    free(bm);
    free(mm);
    comm_peerstats_free(&ps);
    return bad;
}

int main(int argc, char **argv)
{
    int provided, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int bad = run(MPI_COMM_WORLD, "world");
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, wrank, &half);
    bad |= run(half, wrank % 2 ? "odd ranks" : "even ranks");
    MPI_Comm_free(&half);
    int anybad = 0;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (wrank == 0 && !anybad) printf("per-peer statistics: %d ranks OK\n", size);
    MPI_Finalize();
    return anybad ? EXIT_FAILURE : EXIT_SUCCESS;
}
