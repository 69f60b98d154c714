/*
 * Dense diagonal-block kernels of the numerical factorization (numeric_dense_ldlt_d,
 * numeric_dense_lu_d) against LAPACK: reconstruction ||A - L D L^T||, ||P A - L U||, solves
 * compared with dsysv / dgesv, pivots compared with dgetrf, and exact perturbation counts on
 * blocks with planted zero pivots.
 */
#include "testutil.h"
#include "numeric.h"

#include <lapacke.h>

static const cint sizes[] = {1, 7, 64, 65, 200};

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

START_TEST(ldlt_reconstruction_and_solve)
{
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        cint n = sizes[s], lda = n + 5;
        double *A0 = random_symmetric(n, 11 + s);
        double *F = malloc((size_t)lda * n * sizeof *F);
        for (cint j = 0; j < n; j++)
            for (cint i = 0; i < n; i++) F[i + (size_t)j * lda] = A0[i + (size_t)j * n];
        double *work = malloc((size_t)n * (size_t)CANOPY_MIN(n, 64) * sizeof *work);
        ck_assert_int_eq(numeric_dense_ldlt_d(n, F, lda, 1e-8, work), 0);
        /* reconstruction of the lower triangle */
        double err = 0;
        for (cint j = 0; j < n; j++)
            for (cint i = j; i < n; i++) {
                double sum = 0;
                for (cint k = 0; k <= j; k++) {
                    double lik = i == k ? 1 : F[i + (size_t)k * lda], ljk = j == k ? 1 : F[j + (size_t)k * lda];
                    sum += lik * F[k + (size_t)k * lda] * ljk;
                }
                err = fmax(err, fabs(sum - A0[i + (size_t)j * n]));
            }
        ck_assert_msg(err <= 1e-13 * n * max_abs(A0, (size_t)n * n), "n %d: ||A - LDL^T|| = %g", (int)n, err);
        /* solve against dsysv */
        uint64_t st = 5;
        double *b = malloc((size_t)n * sizeof *b), *x = malloc((size_t)n * sizeof *x);
        for (cint i = 0; i < n; i++) b[i] = x[i] = 2 * testutil_uniform(&st) - 1;
        for (cint k = 0; k < n; k++) /* L y = b */
            for (cint i = k + 1; i < n; i++) x[i] -= F[i + (size_t)k * lda] * x[k];
        for (cint k = 0; k < n; k++) x[k] /= F[k + (size_t)k * lda];
        for (cint k = n - 1; k >= 0; k--) /* L^T x = y */
            for (cint i = k + 1; i < n; i++) x[k] -= F[i + (size_t)k * lda] * x[i];
        double *D = malloc((size_t)n * n * sizeof *D);
        memcpy(D, A0, (size_t)n * n * sizeof *D);
        lapack_int *ip = malloc((size_t)n * sizeof *ip);
        ck_assert_int_eq(LAPACKE_dsysv(LAPACK_COL_MAJOR, 'L', n, 1, D, n, ip, b, n), 0);
        for (cint i = 0; i < n; i++) ck_assert_msg(fabs(x[i] - b[i]) <= 1e-11 * max_abs(b, (size_t)n), "n %d", (int)n);
        free(D);
        free(ip);
        free(b);
        free(x);
        free(work);
        free(F);
        free(A0);
    }
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
    /* diag(1, 0, 2, -1e-20, 3) with no coupling: two tiny pivots, replaced by +thr and -thr */
    double A[25] = {0};
    double d[5] = {1, 0, 2, -1e-20, 3};
    for (int i = 0; i < 5; i++) A[i * 6] = d[i];
    double work[25];
    ck_assert_int_eq(numeric_dense_ldlt_d(5, A, 5, 1e-8, work), 2);
    ck_assert(A[6] == 1e-8);
    ck_assert(A[18] == -1e-8);
    ck_assert(A[0] == 1 && A[12] == 2 && A[24] == 3);
    /* a rank-deficient block: [[1 1][1 1]] -> second pivot is 0 after elimination */
    double B[4] = {1, 1, 1, 1};
    ck_assert_int_eq(numeric_dense_ldlt_d(2, B, 2, 1e-8, work), 1);
    ck_assert(B[3] == 1e-8);
    /* nothing perturbed when the pivots are large enough, even below 1 */
    double C[4] = {1e-6, 0, 0, -1e-6};
    ck_assert_int_eq(numeric_dense_ldlt_d(2, C, 2, 1e-8, work), 0);
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
    tcase_add_test(tc, lu_reconstruction_pivots_and_solve);
    tcase_add_test(tc, ldlt_planted_pivots);
    tcase_add_test(tc, lu_planted_pivots);
    suite_add_tcase(s, tc);
    return testutil_run(s);
}
