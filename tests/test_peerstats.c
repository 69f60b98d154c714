/*
 * Per-peer communication statistics (comm/peerstats.c) on one process: summaries of known arrays,
 * counters (init, reset, free, concurrent adds from several threads summing exactly), the
 * single-rank collectives on MPI_COMM_SELF, and the SVG and PNG heat maps (parsed back, the PNG
 * decompressed to check cell colours) with their argument and I/O errors. The multi-rank gathering
 * is tests/test_peerstats_mpi.sh.
 */
#include "testutil.h"

#include <float.h>
#include <ftw.h>
#include <pthread.h>
#include <unistd.h>
#include <sys/stat.h>
#include <zlib.h>
#include <mpi.h>
#include "comm/peerstats.h"

/* ---- summaries --------------------------------------------------------------------------- */

static void check_summary(const comm_summary *s, double min, double max, double median, double mean, double stddev,
                          double total)
{
    ck_assert_double_eq(s->min, min);
    ck_assert_double_eq(s->max, max);
    ck_assert_double_eq(s->median, median);
    ck_assert_double_eq_tol(s->mean, mean, 1e-12 * (1 + fabs(mean)));
    ck_assert_double_eq_tol(s->stddev, stddev, 1e-12 * (1 + stddev));
    ck_assert_double_eq_tol(s->total, total, 1e-12 * (1 + fabs(total)));
}

START_TEST(summary_known)
{
    comm_summary s;
    const double odd[5] = {5, 1, 4, 2, 3};
    comm_summary_compute(odd, 5, &s);
    check_summary(&s, 1, 5, 3, 3, sqrt(2.0), 15);
    ck_assert_double_eq(odd[0], 5); /* input untouched */
    ck_assert_double_eq(odd[1], 1);

    const double even[4] = {4, 1, 3, 2};
    comm_summary_compute(even, 4, &s);
    check_summary(&s, 1, 4, 2.5, 2.5, sqrt(1.25), 10);

    const double one[1] = {7.5};
    comm_summary_compute(one, 1, &s);
    check_summary(&s, 7.5, 7.5, 7.5, 7.5, 0, 7.5);
    ck_assert(s.stddev == 0.0);

    /* constant values: exact mean and a standard deviation of exactly 0, even where sum / n rounds */
    const double same[3] = {0.1, 0.1, 0.1};
    comm_summary_compute(same, 3, &s);
    ck_assert(s.min == 0.1 && s.max == 0.1 && s.median == 0.1 && s.mean == 0.1 && s.stddev == 0.0);
    const double four[4] = {3, 3, 3, 3};
    comm_summary_compute(four, 4, &s);
    check_summary(&s, 3, 3, 3, 3, 0, 12);
    ck_assert(s.stddev == 0.0);

    /* negatives, zeros of both signs, duplicates around the middle */
    const double mixed[6] = {-2, 0.5, -0.0, 10, 0.5, -7};
    comm_summary_compute(mixed, 6, &s);
    ck_assert_double_eq(s.min, -7);
    ck_assert_double_eq(s.max, 10);
    ck_assert_double_eq(s.median, 0.25); /* sorted: -7 -2 -0 0.5 0.5 10 */
    ck_assert_double_eq_tol(s.mean, 2.0 / 6.0, 1e-15);
    const double dup[4] = {2, 9, 2, 2};
    comm_summary_compute(dup, 4, &s);
    ck_assert_double_eq(s.median, 2);

    /* two huge middle values: no overflow to infinity */
    const double big[2] = {DBL_MAX, DBL_MAX * 0.5};
    comm_summary_compute(big, 2, &s);
    ck_assert(isfinite(s.median));
    ck_assert_double_eq(s.median, DBL_MAX * 0.75);

    /* n <= 0: all zero; NaN: all NaN; NULL output: nothing */
    comm_summary_compute(odd, 0, &s);
    check_summary(&s, 0, 0, 0, 0, 0, 0);
    comm_summary_compute(NULL, -3, &s);
    check_summary(&s, 0, 0, 0, 0, 0, 0);
    const double withnan[3] = {1, NAN, 3};
    comm_summary_compute(withnan, 3, &s);
    ck_assert(isnan(s.min) && isnan(s.max) && isnan(s.median) && isnan(s.mean) && isnan(s.stddev) && isnan(s.total));
    comm_summary_compute(odd, 5, NULL);
}
END_TEST

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The allocation-free median against sorting, on random data with many ties. */
START_TEST(summary_random_median)
{
    uint64_t rng = 12345;
    enum { N = 301 };
    double v[N], sorted[N];
    for (int n = 1; n <= N; n += 20) {
        for (int i = 0; i < n; i++) v[i] = (double)((int64_t)(testutil_rand(&rng) % 41) - 20) * 0.25;
        if (n > 5) v[n / 3] = 1e300, v[n / 2] = -1e-300;
        memcpy(sorted, v, (size_t)n * sizeof *v);
        qsort(sorted, (size_t)n, sizeof *sorted, dbl_cmp);
        double want = n % 2 ? sorted[n / 2] : sorted[n / 2 - 1] / 2 + sorted[n / 2] / 2;
        comm_summary s;
        comm_summary_compute(v, n, &s);
        ck_assert_double_eq(s.median, want);
        ck_assert_double_eq(s.min, sorted[0]);
        ck_assert_double_eq(s.max, sorted[n - 1]);
    }
}
END_TEST

/* ---- counters ---------------------------------------------------------------------------- */

static long long get(atomic_llong *a, int i) { return atomic_load(&a[i]); }

START_TEST(counters)
{
    comm_peerstats ps;
    canopy_err err = {0};
    ck_assert_int_eq(comm_peerstats_init(NULL, 3, &err), CANOPY_ERR_ARGUMENT);
    canopy_err_clear(&err);
    ck_assert_int_eq(comm_peerstats_init(&ps, 0, &err), CANOPY_ERR_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(err.msg, "at least one rank"));
    ck_assert_ptr_null(ps.bytes_sent);
    ck_assert_int_eq(comm_peerstats_init(&ps, -4, NULL), CANOPY_ERR_ARGUMENT);
    canopy_alloc_fail_after(0);
    canopy_err_clear(&err);
    ck_assert_int_eq(comm_peerstats_init(&ps, 5, &err), CANOPY_ERR_NOMEM);
    canopy_alloc_fail_after(-1);
    ck_assert_ptr_null(ps.msgs_sent);
    ck_assert_int_eq(ps.nranks, 0);
    comm_peerstats_free(&ps); /* zeroed after a failure: safe */

    ck_assert_int_eq(comm_peerstats_init(&ps, 5, NULL), CANOPY_SUCCESS);
    ck_assert_int_eq(ps.nranks, 5);
    for (int j = 0; j < 5; j++)
        ck_assert(get(ps.msgs_sent, j) == 0 && get(ps.bytes_sent, j) == 0 && get(ps.msgs_recv, j) == 0 &&
                  get(ps.bytes_recv, j) == 0);
    ck_assert(comm_peerstats_sent(&ps, 1, 100));
    ck_assert(comm_peerstats_sent(&ps, 1, 28));
    ck_assert(comm_peerstats_sent(&ps, 4, 0)); /* an empty message still counts as a message */
    ck_assert(comm_peerstats_recv(&ps, 0, 7));
    ck_assert(comm_peerstats_sent(&ps, 2, INT64_C(5000000000))); /* above 2^32 */
    /* refused: nothing recorded */
    ck_assert(!comm_peerstats_sent(&ps, 5, 1));
    ck_assert(!comm_peerstats_sent(&ps, -1, 1));
    ck_assert(!comm_peerstats_recv(&ps, 0, -3));
    ck_assert(!comm_peerstats_sent(NULL, 0, 1));
    ck_assert_int_eq(get(ps.msgs_sent, 1), 2);
    ck_assert_int_eq(get(ps.bytes_sent, 1), 128);
    ck_assert_int_eq(get(ps.msgs_sent, 4), 1);
    ck_assert_int_eq(get(ps.bytes_sent, 4), 0);
    ck_assert(get(ps.bytes_sent, 2) == 5000000000LL);
    ck_assert_int_eq(get(ps.msgs_recv, 0), 1);
    ck_assert_int_eq(get(ps.bytes_recv, 0), 7);
    ck_assert_int_eq(get(ps.msgs_sent, 0) + get(ps.msgs_sent, 3) + get(ps.msgs_recv, 1), 0);

    comm_peerstats_reset(&ps);
    for (int j = 0; j < 5; j++)
        ck_assert(get(ps.msgs_sent, j) == 0 && get(ps.bytes_sent, j) == 0 && get(ps.msgs_recv, j) == 0 &&
                  get(ps.bytes_recv, j) == 0);
    ck_assert(comm_peerstats_recv(&ps, 3, 9));
    ck_assert_int_eq(get(ps.bytes_recv, 3), 9);

    comm_peerstats_free(&ps);
    ck_assert_ptr_null(ps.msgs_sent);
    ck_assert_ptr_null(ps.bytes_recv);
    ck_assert_int_eq(ps.nranks, 0);
    comm_peerstats_free(&ps); /* twice: harmless */
    comm_peerstats_free(NULL);
    comm_peerstats_reset(&ps);
    comm_peerstats_reset(NULL);
    ck_assert(!comm_peerstats_sent(&ps, 0, 1)); /* freed: refused */
}
END_TEST

enum { NTHREADS = 8, PEERS = 7, ADDS = 200000 };

typedef struct adder {
    comm_peerstats *ps;
    int id;
} adder;

static void *add_many(void *arg)
{
    const adder *a = arg;
    for (int k = 0; k < ADDS; k++) {
        int peer = (a->id + k) % PEERS;
        comm_peerstats_sent(a->ps, peer, k % 13 + a->id);
        comm_peerstats_recv(a->ps, PEERS - 1 - peer, 3);
    }
    return NULL;
}

START_TEST(concurrent_adds)
{
    comm_peerstats ps;
    ck_assert_int_eq(comm_peerstats_init(&ps, PEERS, NULL), CANOPY_SUCCESS);
    pthread_t th[NTHREADS];
    adder args[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) {
        args[t] = (adder){&ps, t};
        ck_assert_int_eq(pthread_create(&th[t], NULL, add_many, &args[t]), 0);
    }
    for (int t = 0; t < NTHREADS; t++) ck_assert_int_eq(pthread_join(th[t], NULL), 0);
    long long msgs[PEERS] = {0}, bytes[PEERS] = {0}, rmsgs[PEERS] = {0};
    for (int t = 0; t < NTHREADS; t++)
        for (int k = 0; k < ADDS; k++) {
            int peer = (t + k) % PEERS;
            msgs[peer]++;
            bytes[peer] += k % 13 + t;
            rmsgs[PEERS - 1 - peer]++;
        }
    long long all = 0;
    for (int j = 0; j < PEERS; j++) {
        ck_assert_int_eq(get(ps.msgs_sent, j), msgs[j]);
        ck_assert_int_eq(get(ps.bytes_sent, j), bytes[j]);
        ck_assert_int_eq(get(ps.msgs_recv, j), rmsgs[j]);
        ck_assert_int_eq(get(ps.bytes_recv, j), 3 * rmsgs[j]);
        all += get(ps.msgs_sent, j);
    }
    ck_assert_int_eq(all, (long long)NTHREADS * ADDS);
    comm_peerstats_free(&ps);
}
END_TEST

/* ---- the collectives on one rank --------------------------------------------------------- */

START_TEST(single_rank_collectives)
{
    canopy_err err = {0};
    comm_summary s;
    ck_assert_int_eq(comm_summary_allranks(MPI_COMM_SELF, 42.5, &s, &err), CANOPY_SUCCESS);
    check_summary(&s, 42.5, 42.5, 42.5, 42.5, 0, 42.5);
    ck_assert_int_eq(comm_summary_allranks(MPI_COMM_SELF, 1, NULL, &err), CANOPY_ERR_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(err.msg, "NULL output"));
    canopy_err_clear(&err);
    ck_assert_int_eq(comm_summary_allranks(MPI_COMM_NULL, 1, &s, NULL), CANOPY_ERR_ARGUMENT);

    comm_peerstats ps;
    ck_assert_int_eq(comm_peerstats_init(&ps, 1, NULL), CANOPY_SUCCESS);
    comm_peerstats_sent(&ps, 0, 10);
    comm_peerstats_sent(&ps, 0, 5);
    comm_summary b, m;
    int64_t bm = -1, mm = -1;
    ck_assert_int_eq(comm_peerstats_gather(MPI_COMM_SELF, &ps, &b, &m, &bm, &mm, &err), CANOPY_SUCCESS);
    ck_assert_int_eq(bm, 15);
    ck_assert_int_eq(mm, 2);
    check_summary(&b, 15, 15, 15, 15, 0, 15);
    check_summary(&m, 2, 2, 2, 2, 0, 2);
    ck_assert_int_eq(comm_peerstats_gather(MPI_COMM_SELF, &ps, NULL, NULL, NULL, NULL, &err), CANOPY_SUCCESS);
    comm_peerstats_free(&ps);
    /* counters for another number of ranks than the communicator's; freed counters; NULL */
    ck_assert_int_eq(comm_peerstats_init(&ps, 3, NULL), CANOPY_SUCCESS);
    ck_assert_int_eq(comm_peerstats_gather(MPI_COMM_SELF, &ps, &b, &m, &bm, &mm, &err), CANOPY_ERR_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(err.msg, "for 3 ranks"));
    comm_peerstats_free(&ps);
    canopy_err_clear(&err);
    ck_assert_int_eq(comm_peerstats_gather(MPI_COMM_SELF, &ps, &b, &m, &bm, &mm, &err), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(comm_peerstats_gather(MPI_COMM_SELF, NULL, &b, &m, &bm, &mm, NULL), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(comm_peerstats_gather(MPI_COMM_NULL, NULL, &b, &m, &bm, &mm, NULL), CANOPY_ERR_ARGUMENT);
    /* out of memory inside the collective: reported, nothing leaked */
    ck_assert_int_eq(comm_peerstats_init(&ps, 1, NULL), CANOPY_SUCCESS);
    for (int k = 0; k < 2; k++) {
        canopy_err_clear(&err);
        canopy_alloc_fail_after(k);
        ck_assert_int_eq(comm_peerstats_gather(MPI_COMM_SELF, &ps, &b, &m, &bm, &mm, &err), CANOPY_ERR_NOMEM);
        canopy_alloc_fail_after(-1);
    }
    /* few values are gathered on the stack; more need an allocation */
    canopy_alloc_fail_after(0);
    ck_assert_int_eq(comm_summary_allranks(MPI_COMM_SELF, 1, &s, NULL), CANOPY_SUCCESS);
    double many[200] = {0};
    comm_summary outs[200];
    ck_assert_int_eq(comm_summary_allranks_n(MPI_COMM_SELF, many, 200, outs, NULL, NULL), CANOPY_ERR_NOMEM);
    canopy_alloc_fail_after(-1);
    comm_peerstats_free(&ps);
}
END_TEST

/* ---- heat maps --------------------------------------------------------------------------- */

static char tmpdir[4096];

static void make_tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/canopy-peerstats-XXXXXX", base && *base ? base : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void remove_tmpdir(void) { nftw(tmpdir, rm_entry, 8, FTW_DEPTH | FTW_PHYS); }

/* Whole file into a NUL-terminated malloc'ed buffer. */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    ck_assert_int_ge(n, 0);
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    if (len != NULL) *len = (size_t)n;
    return buf;
}

static int count_of(const char *hay, const char *needle)
{
    int c = 0;
    for (const char *p = strstr(hay, needle); p != NULL; p = strstr(p + 1, needle)) c++;
    return c;
}

/* P x P matrix with distinct off-diagonal values, zero diagonal, its maximum at (P-1, 0) when P > 1. */
static void volume_of(int p, int64_t *vol)
{
    for (int i = 0; i < p; i++)
        for (int j = 0; j < p; j++) vol[i * p + j] = i == j ? 0 : (int64_t)(i + 1) * 1000 + j * 7;
    if (p > 1) vol[(p - 1) * p] = INT64_C(123456789012);
}

START_TEST(heatmap_svg)
{
    make_tmpdir();
    static const int sizes[] = {1, 2, 5, 17, 64};
    for (size_t t = 0; t < sizeof sizes / sizeof *sizes; t++) {
        int p = sizes[t];
        int64_t *vol = malloc((size_t)p * (size_t)p * sizeof *vol);
        volume_of(p, vol);
        char path[4200];
        snprintf(path, sizeof path, "%s/heat%d.%s", tmpdir, p, t % 2 ? "SVG" : "svg");
        canopy_err err = {0};
        ck_assert_int_eq(comm_heatmap_write(path, p, vol, "bytes <sent> & \"received\"", &err), CANOPY_SUCCESS);
        char *svg = slurp(path, NULL);
        ck_assert(strncmp(svg, "<?xml", 5) == 0);
        ck_assert_ptr_nonnull(strstr(svg, "</svg>"));
        ck_assert_int_eq(count_of(svg, "<rect class=\"cell\""), p * p);
        ck_assert_int_eq(count_of(svg, "<title>"), p * p);
        ck_assert_ptr_nonnull(strstr(svg, "from rank"));
        ck_assert_ptr_nonnull(strstr(svg, "to rank"));
        ck_assert_ptr_nonnull(strstr(svg, "bytes &lt;sent&gt; &amp; &quot;received&quot;"));
        ck_assert_ptr_null(strstr(svg, "<sent>"));
        char want[128];
        if (p > 1) {
            snprintf(want, sizeof want, "<title>from rank %d to rank 0: 123456789012</title>", p - 1);
            ck_assert_ptr_nonnull(strstr(svg, want));
            ck_assert_ptr_nonnull(strstr(svg, "123456789012 (max)"));
            /* the maximum cell is dark red, the zero diagonal white */
            snprintf(want, sizeof want, "fill=\"#99000d\" stroke=\"#cccccc\" stroke-width=\"0.5\"><title>from rank %d to rank 0:", p - 1);
            ck_assert_ptr_nonnull(strstr(svg, want));
        }
        ck_assert_ptr_nonnull(strstr(svg, "fill=\"#ffffff\" stroke=\"#cccccc\" stroke-width=\"0.5\"><title>from rank 0 to rank 0: 0<"));
        free(svg);
        free(vol);
    }
    /* all zero and a NULL title */
    int64_t zero[4] = {0, 0, 0, 0};
    char path[4200];
    snprintf(path, sizeof path, "%s/zero.svg", tmpdir);
    ck_assert_int_eq(comm_heatmap_write(path, 2, zero, NULL, NULL), CANOPY_SUCCESS);
    char *svg = slurp(path, NULL);
    ck_assert_int_eq(count_of(svg, "<rect class=\"cell\""), 4);
    ck_assert_int_eq(count_of(svg, "fill=\"#ffffff\" stroke"), 4);
    ck_assert_ptr_nonnull(strstr(svg, "communication volume"));
    free(svg);
    remove_tmpdir();
}
END_TEST

static uint32_t be32_at(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

START_TEST(heatmap_png)
{
    make_tmpdir();
    static const int sizes[] = {1, 3, 16, 17, 100, 600};
    for (size_t t = 0; t < sizeof sizes / sizeof *sizes; t++) {
        int p = sizes[t];
        int cs = 512 / p < 1 ? 1 : 512 / p > 32 ? 32 : 512 / p, w = p * cs;
        int64_t *vol = malloc((size_t)p * (size_t)p * sizeof *vol);
        volume_of(p, vol);
        char path[4200];
        snprintf(path, sizeof path, "%s/heat%d.png", tmpdir, p);
        canopy_err err = {0};
        ck_assert_int_eq(comm_heatmap_write(path, p, vol, "ignored", &err), CANOPY_SUCCESS);
        size_t len;
        unsigned char *png = (unsigned char *)slurp(path, &len);
        static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
        ck_assert_uint_ge(len, 8 + 25 + 12 + 12);
        ck_assert(memcmp(png, sig, 8) == 0);
        ck_assert_uint_eq(be32_at(png + 8), 13);
        ck_assert(memcmp(png + 12, "IHDR", 4) == 0);
        ck_assert_uint_eq(be32_at(png + 16), (uint32_t)w);
        ck_assert_uint_eq(be32_at(png + 20), (uint32_t)w);
        ck_assert_int_eq(png[24], 8); /* 8-bit */
        ck_assert_int_eq(png[25], 2); /* RGB */
        /* the single IDAT right after IHDR: decompress and look at two cells' pixels */
        const unsigned char *idat = png + 8 + 25;
        uint32_t zlen = be32_at(idat);
        ck_assert(memcmp(idat + 4, "IDAT", 4) == 0);
        ck_assert_uint_le(33 + 12 + (size_t)zlen, len);
        uLongf rawlen = (uLongf)(3 * (size_t)w + 1) * (uLongf)w;
        unsigned char *raw = malloc(rawlen);
        ck_assert_int_eq(uncompress(raw, &rawlen, idat + 8, zlen), Z_OK);
        ck_assert_uint_eq(rawlen, (3 * (size_t)w + 1) * (size_t)w);
        /* pixel (x, y) of cell (i, j): its last pixel row and column, to test the cell extent */
        const unsigned char *diag = raw + ((size_t)cs - 1) * (3 * (size_t)w + 1) + 1 + 3 * ((size_t)cs - 1);
        ck_assert(diag[0] == 255 && diag[1] == 255 && diag[2] == 255);
        if (p > 1) {
            size_t y = (size_t)p * (size_t)cs - 1, x = (size_t)cs - 1; /* cell (p-1, 0): the maximum */
            const unsigned char *mx = raw + y * (3 * (size_t)w + 1) + 1 + 3 * x;
            ck_assert(mx[0] == 153 && mx[1] == 0 && mx[2] == 13);
            const unsigned char *next = mx + 3; /* cell (p-1, 1): positive, smaller: lighter */
            ck_assert(next[0] != 255 || next[1] != 255 || next[2] != 255);
            ck_assert(next[1] > 0);
        }
        free(raw);
        free(png);
        free(vol);
    }
    remove_tmpdir();
}
END_TEST

START_TEST(heatmap_errors)
{
    make_tmpdir();
    int64_t vol[4] = {0, 1, 2, 0};
    char path[4200];
    canopy_err err = {0};
    static const char *const bad_names[] = {"heat.txt", "heat", "heat.svgz", ".png.gz", "svg", "png"};
    for (size_t k = 0; k < sizeof bad_names / sizeof *bad_names; k++) {
        snprintf(path, sizeof path, "%s/%s", tmpdir, bad_names[k]);
        canopy_err_clear(&err);
        ck_assert_int_eq(comm_heatmap_write(path, 2, vol, NULL, &err), CANOPY_ERR_ARGUMENT);
        ck_assert_ptr_nonnull(strstr(err.msg, ".svg or .png"));
        ck_assert_int_eq(access(path, F_OK), -1); /* nothing written */
    }
    static const char *const unwritable[] = {"no/such/dir/heat.svg", "no/such/dir/heat.png"};
    for (size_t k = 0; k < 2; k++) {
        snprintf(path, sizeof path, "%s/%s", tmpdir, unwritable[k]);
        canopy_err_clear(&err);
        ck_assert_int_eq(comm_heatmap_write(path, 2, vol, NULL, &err), CANOPY_ERR_IO);
        ck_assert_ptr_nonnull(strstr(err.msg, "no/such/dir"));
    }
    /* a directory in place of the file */
    snprintf(path, sizeof path, "%s/dir.svg", tmpdir);
    ck_assert_int_eq(mkdir(path, 0700), 0);
    ck_assert_int_eq(comm_heatmap_write(path, 2, vol, NULL, NULL), CANOPY_ERR_IO);
    snprintf(path, sizeof path, "%s/ok.svg", tmpdir);
    ck_assert_int_eq(comm_heatmap_write(NULL, 2, vol, NULL, NULL), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(comm_heatmap_write(path, 2, NULL, NULL, NULL), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(comm_heatmap_write(path, 0, vol, NULL, NULL), CANOPY_ERR_ARGUMENT);
    int64_t neg[4] = {0, 1, -2, 0};
    canopy_err_clear(&err);
    ck_assert_int_eq(comm_heatmap_write(path, 2, neg, NULL, &err), CANOPY_ERR_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(err.msg, "from rank 1 to rank 0"));
    remove_tmpdir();
}
END_TEST

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    Suite *s = suite_create("peerstats");
    TCase *tc = tcase_create("peerstats");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, summary_known);
    tcase_add_test(tc, summary_random_median);
    tcase_add_test(tc, counters);
    tcase_add_test(tc, concurrent_adds);
    tcase_add_test(tc, single_rank_collectives);
    tcase_add_test(tc, heatmap_svg);
    tcase_add_test(tc, heatmap_png);
    tcase_add_test(tc, heatmap_errors);
    suite_add_tcase(s, tc);
    int rc = testutil_run(s);
    if (canopy_mem_current() != 0) { /* with CK_FORK=no: every test gave back what it took */
        fprintf(stderr, "%zu bytes allocated through canopy_alloc were not freed\n", canopy_mem_current());
        rc = EXIT_FAILURE;
    }
    MPI_Finalize();
    return rc;
}
