/*
 * The symbolic factorization over the ranks (src/symbolic/symbolic_dist.c), run by
 * tests/test_symbolic_mpi.sh on 1 to 4 ranks and on 8 oversubscribed ones. Every rank holds the
 * whole graph here only to cut its slice and to compute the one-rank answer itself:
 *  - the etree and the column counts equal symbolic_etree / symbolic_colcounts on G(perm, perm);
 *  - the block structure (every array and figure) equals symbolic_analyze's, and with the split
 *    flags symbolic_analyze_unsplit's, bit for bit;
 * for natural, random and SCOTCH orderings, with and without amalgamation and split, and for
 * slices cut evenly, all on the last rank (the others own nothing) and skewed. Then fault
 * injection: one allocation made to fail on one rank at each step gives the same status on every
 * rank, and nobody hangs (the script's timeout). The quick passes check less on more than 2
 * ranks (see main).
 */
#include "base/config.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>

#include "canopy.h"
#include "matrix/matrix.h"
#include "order/order.h"
#include "symbolic/symbolic_dist.h"

static int rank, size, failures;
static bool quick; /* CANOPY_TEST_QUICK on more than 2 ranks: see main */

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

static void *xmalloc(size_t n)
{
    void *p = malloc(n > 0 ? n : 1);
    if (p == NULL) {
        fprintf(stderr, "rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

/* First vertex of rank r's slice: 0 even, 1 all on the last rank, 2 skewed (r^2 shares). */
static cint cut_at(cint n, int r, int mode)
{
    if (r >= size) return n;
    if (mode == 0) return (cint)((int64_t)n * r / size);
    if (mode == 1) return r == size ? n : 0;
    int64_t tot = 0, pre = 0;
    for (int q = 0; q < size; q++) tot += (int64_t)(q + 1) * (q + 1);
    for (int q = 0; q < r; q++) pre += (int64_t)(q + 1) * (q + 1);
    return (cint)((int64_t)n * pre / tot);
}

static symbolic_slice slice_of(const canopy_csc *G, int mode)
{
    cint f = cut_at(G->n, rank, mode), l = cut_at(G->n, rank + 1, mode);
    return (symbolic_slice){.n = G->n, .first = f, .nv = l - f, .vert = G->colptr + f, .edge = G->rowind};
}

#define SAME_ARRAY(what, a, b, len)                                                                      \
    do {                                                                                                 \
        if (memcmp((a), (b), (size_t)(len) * sizeof *(a)) != 0) {                                        \
            fail("%s: %s differs from the one-rank analysis", name, what);                               \
            return;                                                                                      \
        }                                                                                                \
    } while (0)

static void same_symbolic(const char *name, const symbolic *a, const symbolic *b)
{
    if (a->n != b->n || a->ncblk != b->ncblk || a->nblok != b->nblok || a->nnz_l != b->nnz_l ||
        a->flops_llt != b->flops_llt || a->flops_lu != b->flops_lu || a->max_update_rows != b->max_update_rows ||
        a->max_update_buf != b->max_update_buf || a->max_width != b->max_width) {
        fail("%s: sizes or figures differ (ncblk %lld/%lld, nblok %lld/%lld, nnz(L) %lld/%lld)", name,
             (long long)a->ncblk, (long long)b->ncblk, (long long)a->nblok, (long long)b->nblok, (long long)a->nnz_l,
             (long long)b->nnz_l);
        return;
    }
    SAME_ARRAY("cblk_fcol", a->cblk_fcol, b->cblk_fcol, a->ncblk + 1);
    SAME_ARRAY("cblk_fblok", a->cblk_fblok, b->cblk_fblok, a->ncblk + 1);
    SAME_ARRAY("cblk_stride", a->cblk_stride, b->cblk_stride, a->ncblk);
    SAME_ARRAY("cblk_parent", a->cblk_parent, b->cblk_parent, a->ncblk);
    SAME_ARRAY("cblk_coef", a->cblk_coef, b->cblk_coef, a->ncblk + 1);
    SAME_ARRAY("blok_frow", a->blok_frow, b->blok_frow, a->nblok);
    SAME_ARRAY("blok_lrow", a->blok_lrow, b->blok_lrow, a->nblok);
    SAME_ARRAY("blok_fcblk", a->blok_fcblk, b->blok_fcblk, a->nblok);
    SAME_ARRAY("blok_coefrow", a->blok_coefrow, b->blok_coefrow, a->nblok);
    SAME_ARRAY("col2cblk", a->col2cblk, b->col2cblk, a->n);
    SAME_ARRAY("perm", a->perm, b->perm, a->n);
    SAME_ARRAY("iperm", a->iperm, b->iperm, a->n);
}

/* The tree pieces against the one-rank ones on G(perm, perm). */
static void check_tree(const char *name, const canopy_csc *G, const cint *perm, int mode)
{
    cint n = G->n;
    canopy_err err = {0};
    cint *ip = xmalloc((size_t)n * sizeof(cint)), *p1 = xmalloc((size_t)n * sizeof(cint));
    cint *p2 = xmalloc((size_t)n * sizeof(cint)), *post = xmalloc((size_t)n * sizeof(cint));
    cint *c1 = xmalloc((size_t)n * sizeof(cint)), *c2 = xmalloc((size_t)n * sizeof(cint));
    canopy_csc G1 = {0};
    order_invert(n, perm, ip, NULL);
    symbolic_slice sl = slice_of(G, mode);
    if (symbolic_permute_graph(G, perm, ip, &G1, &err) != CANOPY_SUCCESS || symbolic_etree(&G1, p1, &err) != CANOPY_SUCCESS ||
        symbolic_postorder(n, p1, post, &err) != CANOPY_SUCCESS ||
        symbolic_colcounts(&G1, p1, post, c1, &err) != CANOPY_SUCCESS) {
        fail("%s: one-rank tree: %s", name, err.msg);
    } else if (symbolic_etree_dist(MPI_COMM_WORLD, &sl, ip, p2, &err) != CANOPY_SUCCESS) {
        fail("%s: symbolic_etree_dist: %s", name, err.msg);
    } else if (memcmp(p1, p2, (size_t)n * sizeof(cint)) != 0) {
        fail("%s: the etree over the ranks differs", name);
    } else if (symbolic_colcounts_dist(MPI_COMM_WORLD, &sl, ip, p1, post, c2, &err) != CANOPY_SUCCESS) {
        fail("%s: symbolic_colcounts_dist: %s", name, err.msg);
    } else if (memcmp(c1, c2, (size_t)n * sizeof(cint)) != 0) {
        fail("%s: the column counts over the ranks differ", name);
    }
    matrix_free(&G1);
    free(ip);
    free(p1);
    free(p2);
    free(post);
    free(c1);
    free(c2);
}

static const symbolic_opts OPTS[] = {
    {.amalgamation = 1, .amalgamation_fill = -1},
    {.amalgamation = 0},
    {.amalgamation = 1, .amalgamation_fill = -1, .split_size = 24},
    {.amalgamation = 1, .amalgamation_fill = -1, .split_size = 16, .split_share = 0.05},
};

static void check_analysis(const char *name, const canopy_csc *G, const cint *perm, int mode)
{
    canopy_err err = {0};
    symbolic_slice sl = slice_of(G, mode);
    for (size_t o = quick ? 2 : 0; o < sizeof OPTS / sizeof OPTS[0]; o++)
        for (int want_cut = 0; want_cut < 2; want_cut++) {
            char what[256];
            snprintf(what, sizeof what, "%s, options %zu%s", name, o, want_cut ? ", whole blocks and flags" : "");
            symbolic S1 = {0}, S2 = {0};
            unsigned char *cut1 = NULL, *cut2 = NULL;
            canopy_status a = want_cut ? symbolic_analyze_unsplit(G, perm, &OPTS[o], &S1, &cut1, &err)
                                       : symbolic_analyze(G, perm, &OPTS[o], &S1, &err);
            if (a != CANOPY_SUCCESS) fail("%s: symbolic_analyze: %s", what, err.msg);
            canopy_err_clear(&err);
            canopy_status b = symbolic_analyze_dist(MPI_COMM_WORLD, &sl, perm, &OPTS[o], &S2, want_cut ? &cut2 : NULL, &err);
            if (b != CANOPY_SUCCESS) {
                fail("%s: symbolic_analyze_dist: %s", what, err.msg);
            } else if (rank == 0 && a == CANOPY_SUCCESS) {
                same_symbolic(what, &S1, &S2);
                if (want_cut && (cut2 == NULL || memcmp(cut1, cut2, (size_t)S1.ncblk) != 0))
                    fail("%s: the split flags differ", what);
            } else if (rank != 0 && (S2.cblk_fcol != NULL || cut2 != NULL)) {
                fail("%s: rank %d got a structure: only rank 0 should", what, rank);
            }
            symbolic_free(&S1);
            symbolic_free(&S2);
            canopy_free(cut1);
            canopy_free(cut2);
        }
}

static void check_graph(const char *name, const canopy_csc *A)
{
    canopy_err err = {0};
    canopy_csc G = {0};
    if (matrix_graph(A, &G, &err) != CANOPY_SUCCESS) {
        fail("%s: matrix_graph: %s", name, err.msg);
        return;
    }
    cint n = G.n;
    cint *perm = xmalloc((size_t)n * sizeof(cint)), *iperm = xmalloc((size_t)n * sizeof(cint));
    for (int ord = quick ? 2 : 0; ord < 3; ord++) {
        const char *oname = ord == 0 ? "natural" : ord == 1 ? "random" : "scotch";
        for (cint k = 0; k < n; k++) perm[k] = k;
        if (ord == 1) {
            uint64_t x = 88172645463325252ull ^ (uint64_t)n;
            for (cint k = n - 1; k > 0; k--) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                cint j = (cint)(x % (uint64_t)(k + 1)), t = perm[k];
                perm[k] = perm[j];
                perm[j] = t;
            }
        } else if (ord == 2 && order_compute(&G, CANOPY_ORDER_SCOTCH, NULL, 1, perm, iperm, &err) != CANOPY_SUCCESS) {
            fail("%s: SCOTCH: %s", name, err.msg);
            continue;
        }
        for (int mode = 0; mode < 3; mode++) {
            if ((size == 1 || quick) && mode > 0) break;
            char what[200];
            snprintf(what, sizeof what, "%s, %s ordering, %s slices", name, oname,
                     mode == 0 ? "even" : mode == 1 ? "last-rank" : "skewed");
            check_tree(what, &G, perm, mode);
            check_analysis(what, &G, perm, mode);
        }
    }
    if (rank == 0) printf("%s: n=%lld, etree, counts and block structure as on one rank\n", name, (long long)n);
    free(perm);
    free(iperm);
    matrix_free(&G);
}

static void check_laplacian(int nx, int ny, int nz)
{
    canopy_csc A = {0};
    char name[64];
    snprintf(name, sizeof name, "laplacian %dx%dx%d", nx, ny, nz);
    if (canopy_generate_laplacian(nx, ny, nz, 7, &A) != CANOPY_SUCCESS) {
        fail("canopy_generate_laplacian failed");
        return;
    }
    check_graph(name, &A);
    canopy_csc_free(&A);
}

static void check_file(const char *file)
{
    static char dir[4096];
    const char *env = getenv("CANOPY_TEST_MATRICES"), *top = getenv("top_srcdir");
    if (env && *env) snprintf(dir, sizeof dir, "%s", env);
    else snprintf(dir, sizeof dir, "%s/../shared/matrices", top ? top : ".");
    char path[4200], msg[512];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        if (rank == 0) printf("%s: not found, skipped\n", path);
        return;
    }
    fclose(f);
    canopy_csc A = {0};
    if (canopy_read_matrix(path, &A, msg, sizeof msg) != CANOPY_SUCCESS) {
        fail("%s: %s", file, msg);
        return;
    }
    check_graph(file, &A);
    canopy_csc_free(&A);
}

/* A diagonal matrix: a graph without edges. */
static void check_diagonal(cint n)
{
    canopy_csc G = {.n = n, .arith = CANOPY_PATTERN, .kind = CANOPY_KIND_SYMMETRIC};
    G.colptr = calloc((size_t)n + 1, sizeof(cint));
    G.rowind = xmalloc(sizeof(cint));
    cint *perm = xmalloc((size_t)n * sizeof(cint));
    for (cint k = 0; k < n; k++) perm[k] = n - 1 - k;
    check_tree("diagonal", &G, perm, 0);
    check_analysis("diagonal", &G, perm, 0);
    free(perm);
    free(G.colptr);
    free(G.rowind);
}

/*
 * Make the k-th allocation fail on rank `victim` inside symbolic_analyze_dist, for k = 0, 1, ...
 * until the analysis gets through: every rank must return the same status.
 */
static void check_faults(void)
{
    canopy_csc A = {0}, G = {0};
    canopy_err err = {0};
    if (canopy_generate_laplacian(9, 8, 7, 7, &A) != CANOPY_SUCCESS || matrix_graph(&A, &G, &err) != CANOPY_SUCCESS) {
        fail("laplacian graph failed");
        return;
    }
    cint n = G.n;
    cint *perm = xmalloc((size_t)n * sizeof(cint)), *iperm = xmalloc((size_t)n * sizeof(cint));
    order_compute(&G, CANOPY_ORDER_SCOTCH, NULL, 1, perm, iperm, &err);
    symbolic_slice sl = slice_of(&G, 0);
    int tried = 0;
    for (int victim = 0; victim < size; victim += size > 1 ? size - 1 : 1) {
        for (long k = 0; k < 400; k++) {
            symbolic S = {0};
            unsigned char *cut = NULL;
            canopy_err_clear(&err);
            if (rank == victim) canopy_alloc_fail_after(k);
            canopy_status st = symbolic_analyze_dist(MPI_COMM_WORLD, &sl, perm, &OPTS[3], &S, &cut, &err);
            canopy_alloc_fail_after(-1);
            int lo = st, hi = st;
            MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
            MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            if (lo != hi) fail("allocation %ld failing on rank %d: the ranks returned %d and %d", k, victim, lo, hi);
            if (st != CANOPY_SUCCESS && (S.cblk_fcol != NULL || cut != NULL))
                fail("allocation %ld failing on rank %d: a failed analysis left a structure", k, victim);
            symbolic_free(&S);
            canopy_free(cut);
            tried++;
            if (lo == CANOPY_SUCCESS) break;
        }
    }
    if (rank == 0) printf("fault injection: %d analyses with one failing allocation, statuses agreed\n", tried);
    free(perm);
    free(iperm);
    matrix_free(&G);
    canopy_csc_free(&A);
}

int main(int argc, char **argv)
{
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* the quick passes (sanitizers; MPICH, whose waiting ranks poll and take the cores of the
     * working ones: 3 ranks of the full check take 4 minutes on 2 cores) keep more than 2 ranks
     * to two Laplacians, the SCOTCH ordering, even slices and the split options, without fault
     * injection; the full pass (the README's test command) checks everything on every count */
    const char *q = getenv("CANOPY_TEST_QUICK");
    quick = q && *q && strcmp(q, "0") && size > 2;
    check_laplacian(14, 13, 12);
    check_laplacian(2, 1, 1); /* two vertices: with more ranks, some own none */
    if (!quick) {
        check_laplacian(3, 2, 1);
        check_laplacian(40, 1, 1); /* a path: one long chain */
        check_diagonal(7);
        check_file("bcsstk16.mtx.gz");
        check_file("west0479.mtx");
        check_file("utm300.rua");
        check_file("gemat12.mtx");
        check_file("nos5.mtx");
        check_faults();
    }
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("%s on %d ranks\n", all ? "FAILED" : "passed", size);
    MPI_Finalize();
    return all ? 1 : 0;
}
