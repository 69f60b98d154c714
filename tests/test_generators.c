/*
 * Tests of the model-problem generators: sizes and exact entry counts, internal form (sorted,
 * symmetric, accepted unchanged by matrix_import), row sums on interior and boundary rows,
 * diagonal dominance, argument checking, speed, and the Helmholtz problem's equation counts
 * against papers/mpi-ellpack-itpack.txt section 3.1.
 */
#include "testutil.h"

/* matrix_import of a generated matrix must give it back unchanged: sorted, no duplicates, symmetric */
static void check_internal_form(const canopy_csc *A)
{
    ck_assert_int_eq(A->base, 0);
    ck_assert_int_eq(A->arith, CANOPY_REAL);
    ck_assert_int_eq(A->kind, CANOPY_KIND_SPD);
    ck_assert_int_eq(A->triangle, CANOPY_TRIANGLE_BOTH);
    canopy_csc B;
    canopy_err err;
    canopy_err_clear(&err);
    canopy_csc S = *A;
    S.kind = CANOPY_KIND_SYMMETRIC; /* symmetric check of both triangles */
    ck_assert_msg(matrix_import(&S, &B, &err) == CANOPY_SUCCESS, "%s", err.msg);
    int64_t nnz = matrix_nnz(A);
    ck_assert_int_eq(matrix_nnz(&B), nnz);
    ck_assert(memcmp(B.colptr, A->colptr, ((size_t)A->n + 1) * sizeof(cint)) == 0);
    ck_assert(memcmp(B.rowind, A->rowind, (size_t)nnz * sizeof(cint)) == 0);
    ck_assert(memcmp(B.values, A->values, (size_t)nnz * sizeof(double)) == 0);
    matrix_free(&B);
}

/* valid offsets in {-1, 0, 1} at coordinate c of an axis of m points */
static int axis_count(cint c, cint m) { return 1 + (c > 0) + (c + 1 < m); }

static void check_laplacian(cint nx, cint ny, cint nz, int stencil)
{
    canopy_csc A;
    ck_assert_int_eq(canopy_generate_laplacian(nx, ny, nz, stencil, &A), CANOPY_SUCCESS);
    int64_t n = (int64_t)nx * ny * nz;
    int64_t nnz = stencil == 27 ? (int64_t)(3 * nx - 2) * (3 * ny - 2) * (3 * nz - 2)
                                : n + 2 * ((int64_t)(nx - 1) * ny * nz + (int64_t)nx * (ny - 1) * nz + (int64_t)nx * ny * (nz - 1));
    ck_assert_int_eq(A.n, n);
    ck_assert_int_eq(matrix_nnz(&A), nnz);
    check_internal_form(&A);
    const double diag = stencil == 5 ? 4 : stencil == 7 ? 6 : 26;
    const double *v = A.values;
    bool ok = true, strict = false;
    for (cint k = 0; k < nz; k++) {
        for (cint j = 0; j < ny; j++) {
            for (cint i = 0; i < nx; i++) {
                cint c = i + nx * (j + ny * k);
                int ax = axis_count(i, nx), ay = axis_count(j, ny), az = axis_count(k, nz);
                int neigh = stencil == 27 ? ax * ay * az - 1 : (ax - 1) + (ay - 1) + (az - 1);
                double sum = 0, off = 0, d = 0;
                for (cint p = A.colptr[c]; p < A.colptr[c + 1]; p++) {
                    sum += v[p];
                    if (A.rowind[p] == c) d = v[p];
                    else off += fabs(v[p]);
                }
                /* the matrix is symmetric, so column sums are row sums */
                ok &= sum == diag - neigh && d == diag && off == neigh && d >= off;
                ok &= A.colptr[c + 1] - A.colptr[c] == neigh + 1;
                strict |= d > off;
            }
        }
    }
    ck_assert_msg(ok, "laplacian %dx%dx%d/%d: wrong row", (int)nx, (int)ny, (int)nz, stencil);
    ck_assert(strict); /* boundary rows are strictly dominant */
    matrix_free(&A);
}

START_TEST(laplacian_small)
{
    size_t mem0 = canopy_mem_current();
    check_laplacian(1, 1, 1, 5);
    check_laplacian(4, 3, 1, 5);
    check_laplacian(10, 1, 1, 5);
    check_laplacian(4, 3, 5, 7);
    check_laplacian(6, 6, 1, 7);
    check_laplacian(2, 2, 2, 27);
    check_laplacian(5, 4, 3, 27);
    check_laplacian(1, 7, 1, 27);
    ck_assert_uint_eq(canopy_mem_current(), mem0);
}
END_TEST

START_TEST(laplacian_values)
{
    /* 3x3 5-point: the centre row couples to its four neighbours with -1 */
    canopy_csc A;
    ck_assert_int_eq(canopy_generate_laplacian(3, 3, 1, 5, &A), CANOPY_SUCCESS);
    static const cint rows[] = {1, 3, 4, 5, 7};
    static const double vals[] = {-1, -1, 4, -1, -1};
    const double *v = A.values;
    ck_assert_int_eq(A.colptr[5] - A.colptr[4], 5);
    for (int k = 0; k < 5; k++) {
        ck_assert_int_eq(A.rowind[A.colptr[4] + k], rows[k]);
        ck_assert(v[A.colptr[4] + k] == vals[k]);
    }
    matrix_free(&A);
}
END_TEST

START_TEST(laplacian_arguments)
{
    canopy_csc A;
    ck_assert_int_eq(canopy_generate_laplacian(0, 3, 1, 5, &A), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(canopy_generate_laplacian(3, -1, 1, 5, &A), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(canopy_generate_laplacian(3, 3, 0, 7, &A), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(canopy_generate_laplacian(3, 3, 2, 5, &A), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(canopy_generate_laplacian(3, 3, 3, 9, &A), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(canopy_generate_laplacian(3, 3, 3, 7, NULL), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(canopy_generate_laplacian(100000, 100000, 1, 5, &A), CANOPY_ERR_TOO_LARGE);
    ck_assert_int_eq(canopy_generate_laplacian(2000, 2000, 2000, 27, &A), CANOPY_ERR_TOO_LARGE);
    /* n fits but the entries do not (27 per row) */
    if (CINT_MAX == INT32_MAX)
        ck_assert_int_eq(canopy_generate_laplacian(1000, 1000, 200, 27, &A), CANOPY_ERR_TOO_LARGE);
    ck_assert_ptr_null(A.colptr);
    ck_assert_int_eq(canopy_generate_helmholtz(0, 5, &A), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(canopy_generate_helmholtz(5, 5, NULL), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(canopy_generate_helmholtz(1000000, 1000000, &A), CANOPY_ERR_TOO_LARGE);
    /* out of memory is reported, not fatal */
    size_t mem0 = canopy_mem_current();
    for (long k = 0;; k++) {
        canopy_alloc_fail_after(k);
        canopy_status st = canopy_generate_laplacian(4, 4, 4, 7, &A);
        canopy_alloc_fail_after(-1);
        if (st == CANOPY_SUCCESS) {
            matrix_free(&A);
            break;
        }
        ck_assert_int_eq(st, CANOPY_ERR_NOMEM);
        ck_assert_uint_eq(canopy_mem_current(), mem0);
    }
    for (long k = 0;; k++) {
        canopy_alloc_fail_after(k);
        canopy_status st = canopy_generate_helmholtz(8, 8, &A);
        canopy_alloc_fail_after(-1);
        if (st == CANOPY_SUCCESS) {
            matrix_free(&A);
            break;
        }
        ck_assert_int_eq(st, CANOPY_ERR_NOMEM);
        ck_assert_uint_eq(canopy_mem_current(), mem0);
    }
    ck_assert_uint_eq(canopy_mem_current(), mem0);
}
END_TEST

START_TEST(laplacian_speed)
{
    canopy_csc A;
    double t = canopy_wtime();
    ck_assert_int_eq(canopy_generate_laplacian(100, 100, 100, 27, &A), CANOPY_SUCCESS);
    t = canopy_wtime() - t;
    ck_assert_int_eq(matrix_nnz(&A), (int64_t)298 * 298 * 298);
    printf("100^3 27-point Laplacian (%lld entries) built in %.3f s\n", (long long)matrix_nnz(&A), t);
    /* about 0.5 s on an idle machine (mostly page faults), 4.5 s under valgrind: the bound only
     * catches an accidentally quadratic build, not a loaded test host */
    ck_assert_msg(t < 15.0, "too slow: %.2f s", t);
    matrix_free(&A);
}
END_TEST

static void check_helmholtz(cint nx, cint ny, int64_t active_expected)
{
    canopy_csc A;
    ck_assert_int_eq(canopy_generate_helmholtz(nx, ny, &A), CANOPY_SUCCESS);
    ck_assert_int_eq(A.n, (int64_t)nx * ny);
    check_internal_form(&A);
    const double *v = A.values;
    int64_t active = 0, couplings = 0;
    bool ok = true;
    for (cint c = 0; c < A.n; c++) {
        double d = 0, off = 0;
        int len = A.colptr[c + 1] - A.colptr[c];
        for (cint p = A.colptr[c]; p < A.colptr[c + 1]; p++) {
            if (A.rowind[p] == c) d = v[p];
            else off += fabs(v[p]);
        }
        ok &= len >= 1 && len <= 5 && d > off; /* c(x,y) >= 98 > 0: strictly dominant everywhere */
        /* identity rows are the exterior points: diagonal exactly 1 with nothing else */
        if (!(len == 1 && d == 1.0)) active++;
        couplings += len - 1;
        /* an exterior point (x on the box edge) never couples */
        cint i = c % nx, j = c / nx;
        if (i == 0 || j == 0 || i == nx - 1 || j == ny - 1) ok &= len == 1 && d == 1.0;
    }
    ck_assert(ok);
    ck_assert_int_eq(couplings % 2, 0);
    if (active_expected >= 0) ck_assert_int_eq(active, active_expected);
    ck_assert_int_eq(matrix_nnz(&A), A.n + couplings);
    matrix_free(&A);
}

START_TEST(helmholtz)
{
    size_t mem0 = canopy_mem_current();
    /* the equation counts quoted in papers/mpi-ellpack-itpack.txt section 3.1 */
    check_helmholtz(150, 150, 18631);
    check_helmholtz(200, 200, 33290);
    check_helmholtz(1, 1, 0);
    check_helmholtz(2, 7, 0);
    check_helmholtz(31, 21, -1);
    /* square cells (hx = hy): interior rows are the classic 4, -1 star plus h^2 c(x,y) */
    canopy_csc A;
    ck_assert_int_eq(canopy_generate_helmholtz(31, 21, &A), CANOPY_SUCCESS);
    const double *v = A.values, h = 0.05, pi = 3.14159265358979323846;
    cint c = 10 * 31 + 10; /* x = 0.5, y = 0.5: inside, four interior neighbours */
    ck_assert_int_eq(A.colptr[c + 1] - A.colptr[c], 5);
    double coef = 100 + cos(2 * pi * 0.5) + sin(3 * pi * 0.5);
    ck_assert_double_eq_tol(v[A.colptr[c] + 2], 4 + h * h * coef, 1e-12);
    ck_assert_double_eq_tol(v[A.colptr[c]], -1, 1e-12);
    matrix_free(&A);
    ck_assert_uint_eq(canopy_mem_current(), mem0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("generators");
    TCase *tc = tcase_create("generators");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, laplacian_small);
    tcase_add_test(tc, laplacian_values);
    tcase_add_test(tc, laplacian_arguments);
    tcase_add_test(tc, laplacian_speed);
    tcase_add_test(tc, helmholtz);
    suite_add_tcase(s, tc);
    return testutil_run(s);
}
