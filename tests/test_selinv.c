/*
 * canopy_selinv against dense inverses (LAPACK getrf + getri) on small matrices of every kind and
 * arithmetic: the whole pattern, the diagonal and listed entries (inside and outside the pattern),
 * with the scaling, matching and pivoting undone; the same bits on 3 threads as on the calling
 * thread alone (the same structure, its workers hidden); the pattern
 * holds every entry of A; in place the factors are gone (solves refused, refactorization restores
 * them); perturbed pivots give the warning and their count; bad requests get clear errors.
 */
#include "testutil.h"
#include "solver/solver.h" /* s->F.exec.pool: the same structure inverted without the workers */

#include <complex.h>
#include <lapacke.h>
#include <mpi.h>

typedef double complex zdouble;

/* A as a dense column-major matrix (n x n, complex entries: the real ones have zero imaginary part) */
static zdouble *dense_of(const canopy_csc *A)
{
    cint n = A->n;
    zdouble *D = calloc((size_t)n * n + 1, sizeof *D);
    int cx = A->arith == CANOPY_COMPLEX;
    int sym = A->kind != CANOPY_KIND_GENERAL && A->triangle != CANOPY_TRIANGLE_BOTH;
    int herm = A->kind == CANOPY_KIND_HERMITIAN && cx;
    for (cint j = 0; j < n; j++)
        for (cint p = A->colptr[j] - A->base; p < A->colptr[j + 1] - A->base; p++) {
            cint i = A->rowind[p] - A->base;
            zdouble v = cx ? ((const zdouble *)A->values)[p] : ((const double *)A->values)[p];
            D[i + (size_t)j * n] = v;
            if (sym && i != j) D[j + (size_t)i * n] = herm ? conj(v) : v;
        }
    return D;
}

/* the dense inverse, in place; false if LAPACK finds it singular */
static bool dense_invert(zdouble *D, cint n)
{
    lapack_int *ipiv = malloc(((size_t)n + 1) * sizeof *ipiv);
    bool ok = LAPACKE_zgetrf(LAPACK_COL_MAJOR, (lapack_int)n, (lapack_int)n, (lapack_complex_double *)D, (lapack_int)n,
                             ipiv) == 0 &&
              LAPACKE_zgetri(LAPACK_COL_MAJOR, (lapack_int)n, (lapack_complex_double *)D, (lapack_int)n, ipiv) == 0;
    free(ipiv);
    return ok;
}

static zdouble value_at(const canopy_csc *A, const void *vals, cint p)
{
    return A->arith == CANOPY_COMPLEX ? ((const zdouble *)vals)[p] : ((const double *)vals)[p];
}

static canopy_solver *factorized(const canopy_csc *A, const char *fact, int threads, const char *memory, const char *thr)
{
    canopy_options o;
    canopy_options_default(&o);
    char tv[16];
    snprintf(tv, sizeof tv, "%d", threads);
    ck_assert_int_eq(canopy_options_set(&o, "threads", tv, NULL, 0), CANOPY_SUCCESS);
    ck_assert_int_eq(canopy_options_set(&o, "bind", "none", NULL, 0), CANOPY_SUCCESS);
    ck_assert_int_eq(canopy_options_set(&o, "cost-cache", "fixed", NULL, 0), CANOPY_SUCCESS);
    ck_assert_int_eq(canopy_options_set(&o, "verbose", "0", NULL, 0), CANOPY_SUCCESS);
    ck_assert_int_eq(canopy_options_set(&o, "factorization", fact, NULL, 0), CANOPY_SUCCESS);
    ck_assert_int_eq(canopy_options_set(&o, "selinv-memory", memory, NULL, 0), CANOPY_SUCCESS);
    /* the static scheduler sums every update in a fixed order: the same factors run after run */
    ck_assert_int_eq(canopy_options_set(&o, "scheduler", "static", NULL, 0), CANOPY_SUCCESS);
    /* split the wide cblks even on few threads: more cblks, more bloks, more pairs */
    ck_assert_int_eq(canopy_options_set(&o, "split", "24", NULL, 0), CANOPY_SUCCESS);
    if (thr) ck_assert_int_eq(canopy_options_set(&o, "pivot-threshold", thr, NULL, 0), CANOPY_SUCCESS);
    canopy_solver *s = NULL;
    ck_assert_int_eq(canopy_create(MPI_COMM_WORLD, &o, &s), CANOPY_SUCCESS);
    ck_assert_int_eq(canopy_set_matrix(s, A), CANOPY_SUCCESS);
    ck_assert_int_eq(canopy_analyze(s), CANOPY_SUCCESS);
    canopy_status st = canopy_factorize(s);
    ck_assert_msg(st >= CANOPY_SUCCESS, "factorize: %s", canopy_last_error(s));
    return s;
}

/* cblks whose pieces the workers ran, over the checks (some must have) */
static long long pieces_on_workers;

/* every check of one matrix and factorization */
static void check_against_dense(const char *name, const canopy_csc *A, const char *fact, double tol)
{
    cint n = A->n;
    zdouble *Z = dense_of(A);
    ck_assert_msg(dense_invert(Z, n), "%s: LAPACK finds it singular", name);
    double zmax = 0;
    for (size_t q = 0; q < (size_t)n * n; q++) zmax = fmax(zmax, cabs(Z[q]));
    int cx = A->arith == CANOPY_COMPLEX, vsz = cx ? 2 : 1;
    canopy_csc P[2];
    for (int run = 0; run < 2; run++) {
        int threads = 3;
        canopy_solver *s = factorized(A, fact, threads, "separate", NULL);
        canopy_selinv_request rq = {0};
        sched_pool *pool = s->F.exec.pool;
        ck_assert_ptr_nonnull(pool);
        if (run == 0) s->F.exec.pool = NULL;
        /* the workers take the pieces of every cblk at the top of the tree, however small */
        if (run == 1) s->F.sol_split_min = 1;
        canopy_status st = canopy_selinv(s, CANOPY_SELINV_PATTERN, &rq);
        if (run == 1) pieces_on_workers += s->F.sol_split;
        s->F.exec.pool = pool;
        ck_assert_msg(st == CANOPY_SUCCESS, "%s %s: pattern: %s", name, fact, canopy_last_error(s));
        ck_assert_int_eq(rq.perturbed_pivots, 0); /* else the entries are of another matrix's inverse */
        P[run] = rq.pattern;
        /* every entry against the dense inverse */
        double err = 0;
        const canopy_csc *Q = &P[run];
        ck_assert_int_eq(Q->n, n);
        for (cint j = 0; j < n; j++)
            for (cint p = Q->colptr[j]; p < Q->colptr[j + 1]; p++) {
                cint i = Q->rowind[p];
                ck_assert(i >= 0 && i < n && (p == Q->colptr[j] || Q->rowind[p - 1] < i));
                err = fmax(err, cabs(value_at(Q, Q->values, p) - Z[i + (size_t)j * n]));
            }
        ck_assert_msg(err <= tol * zmax, "%s %s threads %d: pattern error %.3g (max entry %.3g)", name, fact, threads, err, zmax);
        /* the pattern holds A^T's: A^-1(j, i) for every A(i, j) (both triangles of a symmetric one;
         * with a matching's row permutation, A's own pattern need not be there) */
        for (cint j = 0; j < n; j++)
            for (cint p = A->colptr[j] - A->base; p < A->colptr[j + 1] - A->base; p++) {
                cint i = A->rowind[p] - A->base;
                int sym = A->kind != CANOPY_KIND_GENERAL;
                for (int t = 0; t < (sym ? 2 : 1); t++) {
                    cint r = t ? i : j, c = t ? j : i, lo = Q->colptr[c], hi = Q->colptr[c + 1] - 1;
                    while (lo < hi) {
                        cint mid = (lo + hi) / 2;
                        if (Q->rowind[mid] < r) lo = mid + 1;
                        else hi = mid;
                    }
                    ck_assert_msg(lo <= hi && Q->rowind[lo] == r, "%s: A(%d, %d) is not in the inverse's pattern", name,
                                  (int)r, (int)c);
                }
            }
        /* the diagonal */
        double *d = malloc((size_t)n * vsz * sizeof(double));
        st = canopy_selinv(s, CANOPY_SELINV_DIAG, &(canopy_selinv_request){.diag = d});
        ck_assert_msg(st >= CANOPY_SUCCESS, "%s: diag: %s", name, canopy_last_error(s));
        double derr = 0;
        for (cint i = 0; i < n; i++) {
            zdouble v = cx ? ((zdouble *)d)[i] : d[i];
            derr = fmax(derr, cabs(v - Z[i + (size_t)i * n]));
        }
        ck_assert_msg(derr <= tol * zmax, "%s %s: diagonal error %.3g", name, fact, derr);
        /* listed entries, most outside the pattern: pruned solves */
        enum { NE = 60 };
        canopy_int rows[NE], cols[NE];
        uint64_t seed = 12345;
        for (int e = 0; e < NE; e++) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            rows[e] = (canopy_int)((seed >> 33) % (uint64_t)n);
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            cols[e] = e % 7 == 6 ? cols[e - 1] : (canopy_int)((seed >> 33) % (uint64_t)n);
        }
        double *v = malloc(NE * (size_t)vsz * sizeof(double));
        canopy_selinv_request er = {.nentries = NE, .rows = rows, .cols = cols, .values = v};
        st = canopy_selinv(s, CANOPY_SELINV_ENTRIES, &er);
        ck_assert_msg(st >= CANOPY_SUCCESS, "%s: entries: %s", name, canopy_last_error(s));
        double eerr = 0;
        for (int e = 0; e < NE; e++) {
            zdouble x = cx ? ((zdouble *)v)[e] : v[e];
            eerr = fmax(eerr, cabs(x - Z[rows[e] + (size_t)cols[e] * n]));
        }
        ck_assert_msg(eerr <= tol * zmax, "%s %s: listed entries error %.3g", name, fact, eerr);
        canopy_stats S;
        canopy_get_stats(s, &S);
        ck_assert_int_eq(S.selinv_entries, NE);
        if (run == 0)
            printf("%-24s %-4s n %5d: pattern %8ld entries, errors / max |A^-1|: pattern %.1e diag %.1e listed %.1e\n", name,
                   fact, (int)n, (long)Q->colptr[n], err / zmax, derr / zmax, eerr / zmax);
        free(d);
        free(v);
        canopy_destroy(&s);
    }
    /* the calling thread alone and three workers: the same entries, bit for bit */
    ck_assert_int_eq(P[0].colptr[n], P[1].colptr[n]);
    ck_assert(memcmp(P[0].rowind, P[1].rowind, (size_t)P[0].colptr[n] * sizeof(cint)) == 0);
    ck_assert_msg(memcmp(P[0].values, P[1].values, (size_t)P[0].colptr[n] * vsz * sizeof(double)) == 0,
                  "%s %s: 3 threads give other bits than the calling thread", name, fact);
    canopy_csc_free(&P[0]);
    canopy_csc_free(&P[1]);
    free(Z);
}

static bool read_shared(const char *file, canopy_csc *A)
{
    const char *dir = testutil_matrix_dir();
    if (dir == NULL) {
        printf("%s: shared matrices not found, skipped\n", file);
        return false;
    }
    char path[4300], msg[512];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    ck_assert_msg(canopy_read_matrix(path, A, msg, sizeof msg) == CANOPY_SUCCESS, "%s", msg);
    return true;
}

/* a 2D Laplacian minus shift * I: symmetric indefinite */
static void shifted_laplacian(cint nx, cint ny, double shift, canopy_csc *A)
{
    ck_assert_int_eq(canopy_generate_laplacian(nx, ny, 1, 5, A), CANOPY_SUCCESS);
    for (cint j = 0; j < A->n; j++)
        for (cint p = A->colptr[j] - A->base; p < A->colptr[j + 1] - A->base; p++)
            if (A->rowind[p] - A->base == j) ((double *)A->values)[p] -= shift;
    A->kind = CANOPY_KIND_SYMMETRIC;
}

START_TEST(real_kinds)
{
    canopy_csc A = {0};
    ck_assert_int_eq(canopy_generate_laplacian(7, 6, 5, 7, &A), CANOPY_SUCCESS);
    check_against_dense("laplacian 7x6x5", &A, "llt", 1e-12);
    check_against_dense("laplacian 7x6x5", &A, "ldlt", 1e-12);
    check_against_dense("laplacian 7x6x5", &A, "lu", 1e-12);
    canopy_csc_free(&A);
    /* separators wider than a piece: the top of the tree ran in pieces on the workers, with the
     * same bits as the calling thread */
    ck_assert_int_eq(canopy_generate_laplacian(12, 11, 10, 7, &A), CANOPY_SUCCESS);
    check_against_dense("laplacian 12x11x10", &A, "ldlt", 1e-12);
    canopy_csc_free(&A);
    printf("%lld cblks in pieces on the workers\n", pieces_on_workers);
    ck_assert_int_gt(pieces_on_workers, 0);
    shifted_laplacian(15, 14, 3.3, &A);
    check_against_dense("laplacian 15x14 - 3.3 I", &A, "ldlt", 1e-10);
    check_against_dense("laplacian 15x14 - 3.3 I", &A, "lu", 1e-10);
    canopy_csc_free(&A);
    /* hangGlider_2 (733 zero diagonals) is ill-conditioned: LAPACK's own inverse is off by more */
    static const char *files[][3] = {{"nos5.mtx", "auto", "1e-10"},     {"494_bus.mtx", "auto", "1e-10"},
                                     {"utm300.rua", "auto", "1e-10"},   {"west0479.mtx", "auto", "1e-10"},
                                     {"orsirr_1.rua", "auto", "1e-10"}, {"hangGlider_2.mtx", "lu", "1e-8"}};
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        if (!read_shared(files[f][0], &A)) continue;
        check_against_dense(files[f][0], &A, files[f][1], atof(files[f][2]));
        canopy_csc_free(&A);
    }
}
END_TEST

START_TEST(complex_kinds)
{
    canopy_csc A = {0};
    static const char *files[][2] = {{"young1c.mtx", "auto"}, {"cg20.cua", "auto"}, {"qc324.cua.gz", "auto"},
                                     {"mhd1280b.cua", "auto"}, {"cg20.cua", "lu"}};
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        if (!read_shared(files[f][0], &A)) continue;
        check_against_dense(files[f][0], &A, files[f][1], 1e-10);
        canopy_csc_free(&A);
    }
}
END_TEST

START_TEST(inplace_and_phases)
{
    canopy_csc A = {0};
    ck_assert_int_eq(canopy_generate_laplacian(9, 8, 1, 5, &A), CANOPY_SUCCESS);
    cint n = A.n;
    canopy_solver *s = factorized(&A, "ldlt", 2, "inplace", NULL);
    double *d = malloc((size_t)n * sizeof *d), *b = malloc((size_t)n * sizeof *b);
    ck_assert_int_eq(canopy_selinv(s, CANOPY_SELINV_DIAG, &(canopy_selinv_request){.diag = d}), CANOPY_SUCCESS);
    /* the factors are gone: solves are refused with a message that says why */
    for (cint i = 0; i < n; i++) b[i] = 1;
    ck_assert_int_eq(canopy_solve(s, 1, b, n), CANOPY_ERR_PHASE);
    ck_assert_ptr_nonnull(strstr(canopy_last_error(s), "selinv-memory"));
    /* entries inside the pattern still come from the inverse; outside it they cannot */
    canopy_int r[2] = {0, 0}, c[2] = {0, n - 1};
    double v[2];
    ck_assert_int_eq(canopy_selinv(s, CANOPY_SELINV_ENTRIES, &(canopy_selinv_request){.nentries = 1, .rows = r, .cols = c, .values = v}),
                     CANOPY_SUCCESS);
    ck_assert(v[0] == d[0]);
    ck_assert_int_eq(canopy_selinv(s, CANOPY_SELINV_ENTRIES, &(canopy_selinv_request){.nentries = 2, .rows = r, .cols = c, .values = v}),
                     CANOPY_ERR_PHASE);
    /* a new factorization brings the factors back */
    ck_assert_int_eq(canopy_factorize(s), CANOPY_SUCCESS);
    ck_assert_int_eq(canopy_solve(s, 1, b, n), CANOPY_SUCCESS);
    ck_assert_int_eq(canopy_selinv(s, CANOPY_SELINV_ENTRIES, &(canopy_selinv_request){.nentries = 2, .rows = r, .cols = c, .values = v}),
                     CANOPY_SUCCESS);
    ck_assert(fabs(v[0] - d[0]) <= 1e-13 * fabs(d[0]));
    /* bad requests */
    ck_assert_int_eq(canopy_selinv(s, CANOPY_SELINV_DIAG, NULL), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(canopy_selinv(s, CANOPY_SELINV_DIAG, &(canopy_selinv_request){0}), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(canopy_selinv(s, (canopy_selinv_what)7, &(canopy_selinv_request){0}), CANOPY_ERR_ARGUMENT);
    r[1] = n;
    ck_assert_int_eq(canopy_selinv(s, CANOPY_SELINV_ENTRIES, &(canopy_selinv_request){.nentries = 2, .rows = r, .cols = c, .values = v}),
                     CANOPY_ERR_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(canopy_last_error(s), "outside"));
    ck_assert_int_eq(canopy_selinv(NULL, CANOPY_SELINV_DIAG, NULL), CANOPY_ERR_ARGUMENT);
    canopy_destroy(&s);
    /* before a factorization */
    canopy_options o;
    canopy_options_default(&o);
    canopy_options_set(&o, "verbose", "0", NULL, 0);
    ck_assert_int_eq(canopy_create(MPI_COMM_WORLD, &o, &s), CANOPY_SUCCESS);
    ck_assert_int_eq(canopy_set_matrix(s, &A), CANOPY_SUCCESS);
    ck_assert_int_eq(canopy_selinv(s, CANOPY_SELINV_DIAG, &(canopy_selinv_request){.diag = d}), CANOPY_ERR_PHASE);
    canopy_destroy(&s);
    ck_assert_int_ne(canopy_options_set(&o, "selinv-memory", "elsewhere", NULL, 0), CANOPY_SUCCESS);
    free(d);
    free(b);
    canopy_csc_free(&A);
}
END_TEST

/* static pivoting: the warning, the count, and the entries of the perturbed matrix's inverse
 * (checked through a solve with the same factors: A_perturbed^-1 e_j) */
START_TEST(perturbed_pivots)
{
    canopy_csc A = {0};
    shifted_laplacian(12, 11, 3.3, &A);
    cint n = A.n;
    canopy_solver *s = factorized(&A, "ldlt", 1, "separate", "0.5");
    double *d = malloc((size_t)n * sizeof *d), *e = calloc((size_t)n, sizeof *e);
    canopy_selinv_request rq = {.diag = d};
    ck_assert_int_eq(canopy_selinv(s, CANOPY_SELINV_DIAG, &rq), CANOPY_WARN_PIVOTS_PERTURBED);
    ck_assert_int_gt(rq.perturbed_pivots, 0);
    ck_assert_ptr_nonnull(strstr(canopy_last_error(s), "perturbed"));
    for (cint j = 0; j < n; j += 17) {
        memset(e, 0, (size_t)n * sizeof *e);
        e[j] = 1;
        ck_assert_int_ge(canopy_solve(s, 1, e, n), CANOPY_SUCCESS);
        ck_assert_msg(fabs(e[j] - d[j]) <= 1e-12 * fabs(e[j]), "column %d: %g vs %g", (int)j, e[j], d[j]);
    }
    free(d);
    free(e);
    canopy_destroy(&s);
    canopy_csc_free(&A);
}
END_TEST

/* The top of the tree (numeric_selinv_top) against subtree sums found independently (each cblk's
 * flops added to every ancestor by walking up its parents), its profile's figures, and the
 * inversion's flops in the statistics. */
START_TEST(top_of_the_tree)
{
    canopy_csc A = {0};
    ck_assert_int_eq(canopy_generate_laplacian(20, 19, 18, 7, &A), CANOPY_SUCCESS);
    canopy_solver *s = factorized(&A, "llt", 2, "separate", NULL);
    const symbolic *S = &s->S;
    cint nc = S->ncblk;
    unsigned char *top = calloc((size_t)nc, 1);
    double *own = calloc((size_t)nc, sizeof(double)), *sub = calloc((size_t)nc, sizeof(double)), total = 0;
    numeric_selinv_profile pr;
    ck_assert_int_eq(numeric_selinv_top(S, s->F.kind, false, NULL, top, &pr, NULL), CANOPY_SUCCESS);
    for (cint k = 0; k < nc; k++) {
        double w = S->cblk_fcol[k + 1] - S->cblk_fcol[k];
        own[k] = numeric_selinv_cblk_flops(s->F.kind, false, w, S->cblk_stride[k] - w);
        total += own[k];
        for (cint a = k; a >= 0; a = S->cblk_parent[a]) sub[a] += own[k];
    }
    double in_top = 0, chain_all = 0;
    int64_t count = 0;
    for (cint k = 0; k < nc; k++) {
        bool ancestors = true;
        double chain = 0;
        for (cint a = S->cblk_parent[k]; a >= 0; a = S->cblk_parent[a]) ancestors = ancestors && top[a];
        for (cint a = k; a >= 0; a = S->cblk_parent[a]) chain += own[a];
        chain_all = fmax(chain_all, chain);
        ck_assert_int_eq(top[k], sub[k] * NUMERIC_SELINV_TOP_SHARE >= total && ancestors);
        if (top[k]) in_top += own[k], count++;
    }
    ck_assert_double_eq_tol(pr.flops, total, 1e-9 * total);
    ck_assert_double_eq_tol(pr.top_share, in_top / total, 1e-12);
    ck_assert_int_eq(pr.top_cblks, count);
    ck_assert_double_eq_tol(pr.task_serial_share, chain_all / total, 1e-12);
    ck_assert(pr.serial_share > 0 && pr.serial_share < pr.task_serial_share);
    ck_assert(pr.top_share > 0.5); /* a 3D problem: most of the work near the root */
    /* the statistics count the same flops */
    double *d = malloc((size_t)A.n * sizeof *d);
    ck_assert_int_eq(canopy_selinv(s, CANOPY_SELINV_DIAG, &(canopy_selinv_request){.diag = d}), CANOPY_SUCCESS);
    canopy_stats st;
    canopy_get_stats(s, &st);
    ck_assert_double_eq_tol(st.flops_selinv, total, 1e-9 * total);
    printf("laplacian 20x19x18: top of the tree %lld of %d cblks, %.1f%% of the flops; unshortened %.2f%% (as tasks %.1f%%)\n",
           (long long)pr.top_cblks, (int)nc, 100 * pr.top_share, 100 * pr.serial_share, 100 * pr.task_serial_share);
    free(d);
    free(top);
    free(own);
    free(sub);
    canopy_destroy(&s);
    canopy_csc_free(&A);
}
END_TEST

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    Suite *s = suite_create("selinv");
    TCase *tc = tcase_create("selinv");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, real_kinds);
    tcase_add_test(tc, complex_kinds);
    tcase_add_test(tc, inplace_and_phases);
    tcase_add_test(tc, perturbed_pivots);
    tcase_add_test(tc, top_of_the_tree);
    suite_add_tcase(s, tc);
    int rc = testutil_run(s);
    MPI_Finalize();
    return rc;
}
