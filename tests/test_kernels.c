/*
 * Dense diagonal-block kernels of the numerical factorization (numeric_dense_ldlt_d,
 * numeric_dense_lu_d) against LAPACK: reconstruction ||P A P^T - L D L^T|| (Bunch-Kaufman 1x1/2x2
 * pivots, on dominant, weak-diagonal and KKT blocks), inertia compared with dsytrf, ||P A - L U||,
 * solves compared with dsysv / dgesv, pivots compared with dgetrf, and exact perturbation counts
 * on blocks with planted zero pivots.
 */
#include "testutil.h"
#include "numeric/numeric.h"

#include <cblas.h>
#include <lapacke.h>

static const cint sizes[] = {1, 2, 7, 63, 64, 65, 200};

/* Random symmetric indefinite matrix with a strong diagonal of random sign (no tiny pivots). */
static double *random_symmetric(cint n, uint64_t seed)
{
    uint64_t st = seed;
    double *A = malloc((size_t)n * n * sizeof *A);
    for (cint j = 0; j < n; j++)
        for (cint i = j; i < n; i++) {
            double v = 2 * testutil_uniform(&st) - 1;
            if (i == j) v = (testutil_rand(&st) % 2 ? 1 : -1) * (2.0 + (double)n * 0.6);
            A[i + (size_t)j * n] = A[j + (size_t)i * n] = v;
        }
    return A;
}

static double *random_general(cint n, uint64_t seed)
{
    uint64_t st = seed;
    double *A = malloc((size_t)n * n * sizeof *A);
    for (size_t k = 0; k < (size_t)n * n; k++) A[k] = 2 * testutil_uniform(&st) - 1;
    return A;
}

static double max_abs(const double *x, size_t len)
{
    double m = 0;
    for (size_t i = 0; i < len; i++) m = fmax(m, fabs(x[i]));
    return m;
}

/* Random symmetric indefinite matrix with entries uniform in [-1, 1] everywhere: the diagonal
 * is no larger than the rest, so a stable LDL^T needs interchanges and 2x2 pivots. */
static double *random_weak_symmetric(cint n, uint64_t seed)
{
    uint64_t st = seed;
    double *A = malloc((size_t)n * n * sizeof *A);
    for (cint j = 0; j < n; j++)
        for (cint i = j; i < n; i++) A[i + (size_t)j * n] = A[j + (size_t)i * n] = 2 * testutil_uniform(&st) - 1;
    return A;
}

/*
 * KKT-like block [[H B^T][B 0]] with nc = n / 3 constraints (H diagonally dominant, B of full
 * rank), rows and columns then shuffled symmetrically so the zero diagonal entries are spread
 * over the block (and over its sub-blocks). @p zero_h leaves H = 0 too (n even, nc = n / 2).
 */
static double *random_kkt(cint n, int zero_h, uint64_t seed)
{
    uint64_t st = seed;
    cint nc = zero_h ? n / 2 : n / 3, nh = n - nc;
    double *K = calloc((size_t)n * n, sizeof *K);
    for (cint j = 0; j < nh; j++)
        for (cint i = j; i < nh && !zero_h; i++) {
            double v = i == j ? 2.0 + (double)nh * 0.6 : 2 * testutil_uniform(&st) - 1;
            K[i + (size_t)j * n] = K[j + (size_t)i * n] = v;
        }
    for (cint c = 0; c < nc; c++)
        for (cint j = 0; j < nh; j++) {
            /* a strong entry on variable c keeps B of full rank */
            double v = (2 * testutil_uniform(&st) - 1) + (j == c ? 3.0 + (double)nh * 0.6 : 0);
            K[nh + c + (size_t)j * n] = K[j + (size_t)(nh + c) * n] = v;
        }
    cint *p = malloc((size_t)n * sizeof *p);
    for (cint i = 0; i < n; i++) p[i] = i;
    for (cint i = n - 1; i > 0; i--) {
        cint j = (cint)(testutil_rand(&st) % (uint64_t)(i + 1)), t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
    double *A = malloc((size_t)n * n * sizeof *A);
    for (cint j = 0; j < n; j++)
        for (cint i = 0; i < n; i++) A[i + (size_t)j * n] = K[p[i] + (size_t)p[j] * n];
    free(p);
    free(K);
    return A;
}

/* Inertia (positive, negative, zero) of a block diagonal D given by its 1x1 and 2x2 blocks. */
static void inertia_add_1x1(double d, int in[3])
{
    in[d > 0 ? 0 : d < 0 ? 1 : 2]++;
}

static void inertia_add_2x2(double a, double b, double c, int in[3])
{
    double det = a * c - b * b;
    if (det < 0) {
        in[0]++;
        in[1]++;
    } else if (det > 0) {
        in[a + c > 0 ? 0 : 1] += 2;
    } else {
        in[2]++;
        inertia_add_1x1(a + c, in);
    }
}

/*
 * Factor the symmetric n x n matrix A0 with numeric_dense_ldlt_d (lda > n) and check the result:
 * pivot encoding, ||P A P^T - L D L^T|| small, inertia equal to LAPACK dsytrf's, solve equal to
 * dsysv's. Returns the number of perturbed pivots.
 */
static cint check_dense_ldlt(cint n, const double *A0, double thr, const char *what)
{
    cint lda = n + 5;
    double *F = malloc((size_t)lda * n * sizeof *F);
    for (cint j = 0; j < n; j++)
        for (cint i = 0; i < n; i++) F[i + (size_t)j * lda] = A0[i + (size_t)j * n];
    double *work = malloc((size_t)n * (size_t)CANOPY_MIN(n, 65) * sizeof *work);
    cint *ipiv = malloc((size_t)n * sizeof *ipiv);
    double *dsub = malloc((size_t)n * sizeof *dsub);
    cint count = numeric_dense_ldlt_d(n, F, lda, ipiv, dsub, thr, work);
    /* pivot encoding; D as a dense tridiagonal, L unit lower */
    double *D = calloc((size_t)n * n, sizeof *D), *Lm = calloc((size_t)n * n, sizeof *Lm);
    int in[3] = {0, 0, 0};
    for (cint j = 0; j < n;) {
        if (ipiv[j] < 0) {
            ck_assert_msg(ipiv[j] == -1 && j + 1 < n && ipiv[j + 1] > j && ipiv[j + 1] < n, "%s n %d: ipiv[%d]", what,
                          (int)n, (int)j);
            ck_assert(F[j + 1 + (size_t)j * lda] == 0);
            ck_assert(dsub[j] != 0 && dsub[j + 1] == 0);
            D[j + (size_t)j * n] = F[j + (size_t)j * lda];
            D[j + 1 + (size_t)(j + 1) * n] = F[j + 1 + (size_t)(j + 1) * lda];
            D[j + 1 + (size_t)j * n] = D[j + (size_t)(j + 1) * n] = dsub[j];
            inertia_add_2x2(D[j + (size_t)j * n], dsub[j], D[j + 1 + (size_t)(j + 1) * n], in);
            j += 2;
        } else {
            ck_assert_msg(ipiv[j] >= j && ipiv[j] < n, "%s n %d: ipiv[%d] = %d", what, (int)n, (int)j, (int)ipiv[j]);
            ck_assert(dsub[j] == 0);
            D[j + (size_t)j * n] = F[j + (size_t)j * lda];
            inertia_add_1x1(D[j + (size_t)j * n], in);
            j++;
        }
    }
    for (cint j = 0; j < n; j++) {
        Lm[j + (size_t)j * n] = 1;
        for (cint i = j + 1; i < n; i++) Lm[i + (size_t)j * n] = F[i + (size_t)j * lda];
    }
    /* P A P^T: the interchanges in order, on rows and columns */
    double *PA = malloc((size_t)n * n * sizeof *PA);
    memcpy(PA, A0, (size_t)n * n * sizeof *PA);
    for (cint j = 0; j < n; j++) {
        cint q = ipiv[j];
        if (q < 0 || q == j) continue;
        for (cint c = 0; c < n; c++) {
            double t = PA[j + (size_t)c * n];
            PA[j + (size_t)c * n] = PA[q + (size_t)c * n];
            PA[q + (size_t)c * n] = t;
        }
        for (cint r = 0; r < n; r++) {
            double t = PA[r + (size_t)j * n];
            PA[r + (size_t)j * n] = PA[r + (size_t)q * n];
            PA[r + (size_t)q * n] = t;
        }
    }
    /* L D L^T */
    double *LD = malloc((size_t)n * n * sizeof *LD), *R = malloc((size_t)n * n * sizeof *R);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, Lm, n, D, n, 0.0, LD, n);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, n, n, n, 1.0, LD, n, Lm, n, 0.0, R, n);
    double err = 0, lmax = max_abs(Lm, (size_t)n * n);
    for (size_t k = 0; k < (size_t)n * n; k++) err = fmax(err, fabs(R[k] - PA[k]));
    if (count == 0)
        ck_assert_msg(err <= 1e-13 * n * max_abs(A0, (size_t)n * n), "%s n %d: ||PAP^T - LDL^T|| = %g (max |L| %g)",
                      what, (int)n, err, lmax);
    /* inertia as dsytrf's D gives it (Sylvester: both are A's) */
    double *G = malloc((size_t)n * n * sizeof *G);
    memcpy(G, A0, (size_t)n * n * sizeof *G);
    lapack_int *lp = malloc((size_t)n * sizeof *lp);
    ck_assert_int_eq(LAPACKE_dsytrf(LAPACK_COL_MAJOR, 'L', n, G, n, lp), 0);
    int il[3] = {0, 0, 0};
    for (cint j = 0; j < n;) {
        if (lp[j] < 0) {
            inertia_add_2x2(G[j + (size_t)j * n], G[j + 1 + (size_t)j * n], G[j + 1 + (size_t)(j + 1) * n], il);
            j += 2;
        } else {
            inertia_add_1x1(G[j + (size_t)j * n], il);
            j++;
        }
    }
    if (count == 0)
        ck_assert_msg(in[0] == il[0] && in[1] == il[1] && in[2] == il[2], "%s n %d: inertia (%d,%d,%d), dsytrf (%d,%d,%d)",
                      what, (int)n, in[0], in[1], in[2], il[0], il[1], il[2]);
    /* solve x = P^T L^-T D^-1 L^-1 P b against dsysv */
    if (count == 0) {
        uint64_t st = 5;
        double *b = malloc((size_t)n * sizeof *b), *x = malloc((size_t)n * sizeof *x);
        for (cint i = 0; i < n; i++) b[i] = x[i] = 2 * testutil_uniform(&st) - 1;
        for (cint j = 0; j < n; j++)
            if (ipiv[j] >= 0 && ipiv[j] != j) {
                double t = x[j];
                x[j] = x[ipiv[j]];
                x[ipiv[j]] = t;
            }
        cblas_dtrsv(CblasColMajor, CblasLower, CblasNoTrans, CblasUnit, n, F, lda, x, 1);
        memcpy(G, D, (size_t)n * n * sizeof *G);
        ck_assert_int_eq(LAPACKE_dgesv(LAPACK_COL_MAJOR, n, 1, G, n, lp, x, n), 0);
        cblas_dtrsv(CblasColMajor, CblasLower, CblasTrans, CblasUnit, n, F, lda, x, 1);
        for (cint j = n - 1; j >= 0; j--)
            if (ipiv[j] >= 0 && ipiv[j] != j) {
                double t = x[j];
                x[j] = x[ipiv[j]];
                x[ipiv[j]] = t;
            }
        memcpy(G, A0, (size_t)n * n * sizeof *G);
        ck_assert_int_eq(LAPACKE_dsysv(LAPACK_COL_MAJOR, 'L', n, 1, G, n, lp, b, n), 0);
        double bm = max_abs(b, (size_t)n);
        for (cint i = 0; i < n; i++)
            ck_assert_msg(fabs(x[i] - b[i]) <= 1e-9 * bm, "%s n %d: x[%d] %g, dsysv %g", what, (int)n, (int)i, x[i], b[i]);
        free(b);
        free(x);
    }
    free(G);
    free(lp);
    free(LD);
    free(R);
    free(PA);
    free(D);
    free(Lm);
    free(dsub);
    free(ipiv);
    free(work);
    free(F);
    return count;
}

START_TEST(ldlt_reconstruction_and_solve)
{
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        cint n = sizes[s];
        double *A0 = random_symmetric(n, 11 + s);
        ck_assert_int_eq(check_dense_ldlt(n, A0, 1e-8, "dominant"), 0);
        free(A0);
        A0 = random_weak_symmetric(n, 31 + s);
        ck_assert_int_eq(check_dense_ldlt(n, A0, 1e-8, "weak diagonal"), 0);
        free(A0);
    }
}
END_TEST

START_TEST(ldlt_kkt_blocks)
{
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        cint n = sizes[s];
        if (n < 2) continue;
        double *A0 = random_kkt(n, 0, 41 + s);
        ck_assert_int_eq(check_dense_ldlt(n, A0, 1e-8, "KKT"), 0);
        free(A0);
        if (n % 2) continue;
        A0 = random_kkt(n, 1, 51 + s);
        ck_assert_int_eq(check_dense_ldlt(n, A0, 1e-8, "KKT, H = 0"), 0);
        free(A0);
    }
}
END_TEST

/* A 2x2 pivot starting on the last column of a 64-column sub-block makes it 65 wide. */
START_TEST(ldlt_2x2_across_subblock_edge)
{
    cint n = 200;
    double *A0 = random_symmetric(n, 77);
    for (cint e = 63; e < n - 1; e += 65) {
        A0[e + (size_t)e * n] = A0[e + 1 + (size_t)(e + 1) * n] = 0;
        A0[e + 1 + (size_t)e * n] = A0[e + (size_t)(e + 1) * n] = 500;
    }
    ck_assert_int_eq(check_dense_ldlt(n, A0, 1e-8, "edge"), 0);
    cint lda = n;
    double *work = malloc((size_t)n * 65 * sizeof *work), *dsub = malloc((size_t)n * sizeof *dsub);
    cint *ipiv = malloc((size_t)n * sizeof *ipiv);
    ck_assert_int_eq(numeric_dense_ldlt_d(n, A0, lda, ipiv, dsub, 1e-8, work), 0);
    ck_assert_int_eq(ipiv[63], -1);
    ck_assert_int_eq(ipiv[64], 64);
    ck_assert_int_eq(ipiv[128], -1);
    free(work);
    free(dsub);
    free(ipiv);
    free(A0);
}
END_TEST

START_TEST(lu_reconstruction_pivots_and_solve)
{
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        cint n = sizes[s], lda = n + 3;
        double *A0 = random_general(n, 21 + s);
        double *F = malloc((size_t)lda * n * sizeof *F);
        for (cint j = 0; j < n; j++)
            for (cint i = 0; i < n; i++) F[i + (size_t)j * lda] = A0[i + (size_t)j * n];
        cint *ipiv = malloc((size_t)n * sizeof *ipiv);
        ck_assert_int_eq(numeric_dense_lu_d(n, F, lda, ipiv, 1e-12), 0);
        /* pivots as LAPACK's partial pivoting chooses them */
        double *G = malloc((size_t)n * n * sizeof *G);
        memcpy(G, A0, (size_t)n * n * sizeof *G);
        lapack_int *lp = malloc((size_t)n * sizeof *lp);
        ck_assert_int_eq(LAPACKE_dgetrf(LAPACK_COL_MAJOR, n, n, G, n, lp), 0);
        for (cint j = 0; j < n; j++) ck_assert_int_eq(ipiv[j], lp[j] - 1);
        /* P A - L U */
        double *PA = malloc((size_t)n * n * sizeof *PA);
        memcpy(PA, A0, (size_t)n * n * sizeof *PA);
        for (cint j = 0; j < n; j++)
            if (ipiv[j] != j)
                for (cint c = 0; c < n; c++) {
                    double t = PA[j + (size_t)c * n];
                    PA[j + (size_t)c * n] = PA[ipiv[j] + (size_t)c * n];
                    PA[ipiv[j] + (size_t)c * n] = t;
                }
        double err = 0;
        for (cint j = 0; j < n; j++)
            for (cint i = 0; i < n; i++) {
                double sum = 0;
                for (cint k = 0; k <= CANOPY_MIN(i, j); k++)
                    sum += (i == k ? 1 : F[i + (size_t)k * lda]) * F[k + (size_t)j * lda];
                err = fmax(err, fabs(sum - PA[i + (size_t)j * n]));
            }
        ck_assert_msg(err <= 1e-13 * n, "n %d: ||PA - LU|| = %g", (int)n, err);
        /* solve against dgesv */
        uint64_t st = 9;
        double *b = malloc((size_t)n * sizeof *b), *x = malloc((size_t)n * sizeof *x);
        for (cint i = 0; i < n; i++) b[i] = x[i] = 2 * testutil_uniform(&st) - 1;
        for (cint j = 0; j < n; j++) {
            double t = x[j];
            x[j] = x[ipiv[j]];
            x[ipiv[j]] = t;
        }
        for (cint k = 0; k < n; k++)
            for (cint i = k + 1; i < n; i++) x[i] -= F[i + (size_t)k * lda] * x[k];
        for (cint k = n - 1; k >= 0; k--) {
            x[k] /= F[k + (size_t)k * lda];
            for (cint i = 0; i < k; i++) x[i] -= F[i + (size_t)k * lda] * x[k];
        }
        memcpy(G, A0, (size_t)n * n * sizeof *G);
        ck_assert_int_eq(LAPACKE_dgesv(LAPACK_COL_MAJOR, n, 1, G, n, lp, b, n), 0);
        double bm = max_abs(b, (size_t)n);
        for (cint i = 0; i < n; i++) ck_assert_msg(fabs(x[i] - b[i]) <= 1e-9 * bm, "n %d", (int)n);
        free(b);
        free(x);
        free(PA);
        free(lp);
        free(G);
        free(ipiv);
        free(F);
        free(A0);
    }
}
END_TEST

START_TEST(ldlt_planted_pivots)
{
    /* diag(1, 0, 2, -1e-20, 3) with no coupling: two tiny pivots and nothing to swap them with,
     * replaced by +thr and -thr */
    double A[25] = {0};
    double d[5] = {1, 0, 2, -1e-20, 3};
    for (int i = 0; i < 5; i++) A[i * 6] = d[i];
    double work[25], dsub[5];
    cint ipiv[5];
    ck_assert_int_eq(numeric_dense_ldlt_d(5, A, 5, ipiv, dsub, 1e-8, work), 2);
    ck_assert(A[6] == 1e-8);
    ck_assert(A[18] == -1e-8);
    ck_assert(A[0] == 1 && A[12] == 2 && A[24] == 3);
    for (int i = 0; i < 5; i++) ck_assert_int_eq(ipiv[i], i);
    /* a rank-deficient block: [[1 1][1 1]] -> second pivot is 0 after elimination */
    double B[4] = {1, 1, 1, 1};
    ck_assert_int_eq(numeric_dense_ldlt_d(2, B, 2, ipiv, dsub, 1e-8, work), 1);
    ck_assert(B[3] == 1e-8);
    /* nothing perturbed when the pivots are large enough, even below 1 */
    double C[4] = {1e-6, 0, 0, -1e-6};
    ck_assert_int_eq(numeric_dense_ldlt_d(2, C, 2, ipiv, dsub, 1e-8, work), 0);
    /* [[0 3][3 0]]: one 2x2 pivot, no perturbation */
    double E[4] = {0, 3, 3, 0};
    ck_assert_int_eq(numeric_dense_ldlt_d(2, E, 2, ipiv, dsub, 1e-8, work), 0);
    ck_assert_int_eq(ipiv[0], -1);
    ck_assert_int_eq(ipiv[1], 1);
    ck_assert(dsub[0] == 3 && E[0] == 0 && E[3] == 0 && E[1] == 0);
    /* [[0 1][1 1000]]: the large diagonal entry is swapped to the front (1x1 pivots) */
    double G[4] = {0, 1, 1, 1000};
    ck_assert_int_eq(numeric_dense_ldlt_d(2, G, 2, ipiv, dsub, 1e-8, work), 0);
    ck_assert_int_eq(ipiv[0], 1);
    ck_assert(G[0] == 1000 && G[1] == 1e-3 && fabs(G[3] + 1e-3) < 1e-18);
    /* a zero diagonal entry whose only partner is tiny: perturbed, not swapped */
    double H[4] = {0, 1e-12, 1e-12, 1};
    ck_assert_int_eq(numeric_dense_ldlt_d(2, H, 2, ipiv, dsub, 1e-8, work), 1);
    ck_assert_int_eq(ipiv[0], 0);
    ck_assert(H[0] == 1e-8);
}
END_TEST

START_TEST(lu_planted_pivots)
{
    /* zero column inside the block: no swap, pivot replaced by +thr, counted once */
    double A[9] = {2, 1, 0, /* col 0 */ 0, 0, 0, /* col 1 */ 1, 1, 5 /* col 2 */};
    cint ipiv[3];
    ck_assert_int_eq(numeric_dense_lu_d(3, A, 3, ipiv, 1e-8), 1);
    ck_assert_int_eq(ipiv[0], 0);
    ck_assert_int_eq(ipiv[1], 1);
    ck_assert(A[4] == 1e-8);
    /* zero diagonal with a usable entry below: a swap, no perturbation */
    double B[4] = {0, 3, 2, 0};
    ck_assert_int_eq(numeric_dense_lu_d(2, B, 2, ipiv, 1e-8), 0);
    ck_assert_int_eq(ipiv[0], 1);
    ck_assert(B[0] == 3 && B[3] == 2);
    /* a negative tiny pivot keeps its sign */
    double C[1] = {-1e-30};
    ck_assert_int_eq(numeric_dense_lu_d(1, C, 1, ipiv, 1e-8), 1);
    ck_assert(C[0] == -1e-8);
    /* planted singular column in a 65-wide block (crosses the 64-column sub-block boundary) */
    cint n = 65;
    double *G = random_general(n, 3);
    for (cint i = 0; i < n; i++) G[i + (size_t)64 * n] = 0;
    cint *ip = malloc((size_t)n * sizeof *ip);
    ck_assert_int_eq(numeric_dense_lu_d(n, G, n, ip, 1e-8), 1);
    ck_assert_int_eq(ip[64], 64);
    ck_assert(G[64 + (size_t)64 * n] == 1e-8);
    free(ip);
    free(G);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels");
    TCase *tc = tcase_create("kernels");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, ldlt_reconstruction_and_solve);
    tcase_add_test(tc, ldlt_kkt_blocks);
    tcase_add_test(tc, ldlt_2x2_across_subblock_edge);
    tcase_add_test(tc, lu_reconstruction_pivots_and_solve);
    tcase_add_test(tc, ldlt_planted_pivots);
    tcase_add_test(tc, lu_planted_pivots);
    suite_add_tcase(s, tc);
    return testutil_run(s);
}
