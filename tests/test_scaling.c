/*
 * Check suite for src/matrix/scaling.c: the maximum-product matching (permutation, optimality against
 * brute force, the |diag| = 1 / |entries| <= 1 property of its scaling), Ruiz equilibration, the
 * symmetric scalings (exact symmetry kept), structural singularity, the right-hand-side and
 * solution transforms (real and complex), allocation failures, and the real test matrices when
 * the readers are available.
 */
#include "testutil.h"
#include "matrix/scaling.h"

#include <inttypes.h>

/* ---- helpers ------------------------------------------------------------------------------ */

/* Internal-form matrix from a dense column-major array (real: n*n doubles; complex: n*n pairs).
 * Entries are stored where keep[] is set (NULL: where the value is nonzero), so explicit zeros
 * can be planted. */
static void dense_to_csc(cint n, const double *D, const unsigned char *keep, canopy_arith arith,
                         canopy_matrix_kind kind, canopy_csc *A)
{
    int w = arith == CANOPY_COMPLEX ? 2 : 1;
    size_t nn = (size_t)n * (size_t)n;
    cint nnz = 0;
    for (size_t k = 0; k < nn; k++) {
        int nz = keep ? keep[k] : (D[w * k] != 0 || (w == 2 && D[w * k + 1] != 0));
        nnz += nz;
    }
    memset(A, 0, sizeof *A);
    A->n = n;
    A->colptr = canopy_alloc((size_t)n + 1, sizeof(cint), "test colptr", NULL);
    A->rowind = canopy_alloc((size_t)nnz + 1, sizeof(cint), "test rowind", NULL);
    A->values = canopy_alloc((size_t)nnz + 1, (size_t)w * sizeof(double), "test values", NULL);
    A->arith = arith;
    A->kind = kind;
    A->triangle = CANOPY_TRIANGLE_BOTH;
    double *v = A->values;
    cint p = 0;
    for (cint j = 0; j < n; j++) {
        A->colptr[j] = p;
        for (cint i = 0; i < n; i++) {
            size_t k = (size_t)j * n + i;
            int nz = keep ? keep[k] : (D[w * k] != 0 || (w == 2 && D[w * k + 1] != 0));
            if (!nz) continue;
            A->rowind[p] = i;
            for (int c = 0; c < w; c++) v[(size_t)w * p + c] = D[w * k + c];
            p++;
        }
    }
    A->colptr[n] = p;
}

/* Complex copy of a real matrix: same pattern, values (a, t*a') with random t. */
static void complexify(const canopy_csc *R, uint64_t seed, canopy_csc *C)
{
    int64_t nnz = matrix_nnz(R);
    *C = *R;
    C->colptr = canopy_alloc((size_t)R->n + 1, sizeof(cint), "test colptr", NULL);
    C->rowind = canopy_alloc((size_t)nnz + 1, sizeof(cint), "test rowind", NULL);
    C->values = canopy_alloc((size_t)nnz + 1, 2 * sizeof(double), "test values", NULL);
    C->arith = CANOPY_COMPLEX;
    memcpy(C->colptr, R->colptr, ((size_t)R->n + 1) * sizeof(cint));
    memcpy(C->rowind, R->rowind, (size_t)nnz * sizeof(cint));
    const double *rv = R->values;
    double *cv = C->values;
    uint64_t st = seed;
    for (int64_t p = 0; p < nnz; p++) {
        cv[2 * p] = rv[p];
        cv[2 * p + 1] = (2 * testutil_uniform(&st) - 1) * rv[p];
    }
}

static double mag_at(const canopy_csc *A, int64_t p)
{
    const double *v = A->values;
    return A->arith == CANOPY_COMPLEX ? hypot(v[2 * p], v[2 * p + 1]) : fabs(v[p]);
}

static void check_sorted(const canopy_csc *A)
{
    for (cint j = 0; j < A->n; j++)
        for (cint p = A->colptr[j] + 1; p < A->colptr[j + 1]; p++)
            if (A->rowind[p - 1] >= A->rowind[p]) ck_abort_msg("column %d not sorted", (int)j);
}

static void check_perm(const cint *perm, cint n)
{
    unsigned char *seen = calloc((size_t)n + 1, 1);
    for (cint i = 0; i < n; i++) {
        /* plain tests in hot loops: every ck_assert costs a write in Check's no-fork mode */
        if (perm[i] < 0 || perm[i] >= n) ck_abort_msg("perm[%d] = %d out of range", (int)i, (int)perm[i]);
        if (seen[perm[i]]) ck_abort_msg("perm value %d repeated", (int)perm[i]);
        seen[perm[i]] = 1;
    }
    free(seen);
}

/* After matching scaling: |As_ii| = 1, all |As_ij| <= 1 (to tol); also sorted. */
static void check_matching_property(const canopy_csc *As, double tol)
{
    check_sorted(As);
    double worst_diag = 0, worst_max = 0;
    for (cint j = 0; j < As->n; j++) {
        int diag = 0;
        for (cint p = As->colptr[j]; p < As->colptr[j + 1]; p++) {
            double a = mag_at(As, p);
            worst_max = CANOPY_MAX(worst_max, a - 1.0);
            if (As->rowind[p] == j) {
                diag = 1;
                worst_diag = CANOPY_MAX(worst_diag, fabs(a - 1.0));
            }
        }
        if (!diag) ck_abort_msg("no diagonal entry in column %d after matching", (int)j);
    }
    ck_assert_msg(worst_diag <= tol, "| |As_ii| - 1 | = %g > %g", worst_diag, tol);
    ck_assert_msg(worst_max <= tol, "max |As_ij| - 1 = %g > %g", worst_max, tol);
}

static void check_exact_symmetry(const canopy_csc *As)
{
    const double *v = As->values;
    int w = As->arith == CANOPY_COMPLEX ? 2 : 1;
    for (cint j = 0; j < As->n; j++) {
        for (cint p = As->colptr[j]; p < As->colptr[j + 1]; p++) {
            cint i = As->rowind[p];
            cint q = -1;
            for (cint t = As->colptr[i]; t < As->colptr[i + 1]; t++)
                if (As->rowind[t] == j) q = t;
            if (q < 0) ck_abort_msg("pattern not symmetric at (%d,%d)", (int)i, (int)j);
            for (int c = 0; c < w; c++)
                if (v[(size_t)w * p + c] != v[(size_t)w * q + c])
                    ck_abort_msg("As(%d,%d) != As(%d,%d)", (int)i, (int)j, (int)j, (int)i);
        }
    }
}

/* Sparse random matrix for big sizes (testutil_random_matrix is dense inside): per_col distinct
 * random rows per column, no guaranteed diagonal, values spanning six decades. With @p planted,
 * a hidden random permutation carries entries 100 times larger, as in circuit-like matrices
 * whose large entries are off the diagonal; without, the values are pure noise, which makes
 * the shortest-path searches long (a hard case, not a typical one). */
static void sparse_random(cint n, int per_col, int planted, uint64_t seed, canopy_csc *A)
{
    uint64_t st = seed;
    memset(A, 0, sizeof *A);
    A->n = n;
    A->colptr = canopy_alloc((size_t)n + 1, sizeof(cint), "test colptr", NULL);
    A->rowind = canopy_alloc((size_t)n * per_col + 1, sizeof(cint), "test rowind", NULL);
    double *v = canopy_alloc((size_t)n * per_col + 1, sizeof(double), "test values", NULL);
    A->values = v;
    A->kind = CANOPY_KIND_GENERAL;
    A->arith = CANOPY_REAL;
    cint p = 0;
    cint *rows = malloc((size_t)per_col * sizeof *rows);
    cint *hidden = malloc((size_t)n * sizeof *hidden);
    for (cint i = 0; i < n; i++) hidden[i] = i;
    for (cint i = n - 1; i > 0; i--) {
        cint r = (cint)(testutil_rand(&st) % (uint64_t)(i + 1));
        cint t = hidden[i];
        hidden[i] = hidden[r];
        hidden[r] = t;
    }
    for (cint j = 0; j < n; j++) {
        A->colptr[j] = p;
        int k = 0;
        /* the hidden permutation's entry is always present: a perfect matching exists */
        rows[k++] = hidden[j];
        while (k < per_col) {
            cint i = (cint)(testutil_rand(&st) % (uint64_t)n);
            int dup = 0;
            for (int t = 0; t < k; t++) dup |= rows[t] == i;
            if (!dup) rows[k++] = i;
        }
        /* insertion sort: per_col is small */
        for (int a = 1; a < k; a++)
            for (int b = a; b > 0 && rows[b - 1] > rows[b]; b--) {
                cint t = rows[b];
                rows[b] = rows[b - 1];
                rows[b - 1] = t;
            }
        for (int t = 0; t < k; t++) {
            A->rowind[p] = rows[t];
            v[p] = (testutil_uniform(&st) - 0.5) * pow(10.0, 6 * testutil_uniform(&st) - 3);
            if (planted && rows[t] == hidden[j]) v[p] = (testutil_uniform(&st) < 0.5 ? -1 : 1) * 1e5;
            p++;
        }
    }
    A->colptr[n] = p;
    free(rows);
    free(hidden);
}

/* ---- matching ----------------------------------------------------------------------------- */

START_TEST(matching_random_property)
{
    for (int trial = 0; trial < 20; trial++) {
        canopy_csc A, As;
        memset(&As, 0, sizeof As);
        testutil_random_matrix(30 + 7 * trial, 3, CANOPY_KIND_GENERAL, 0, 1000 + trial, &A);
        scaling sc;
        canopy_err err = {0};
        ck_assert_int_eq(scaling_compute(&A, CANOPY_SCALING_MATCHING, CANOPY_KIND_GENERAL, &sc, &err), CANOPY_SUCCESS);
        ck_assert_ptr_nonnull(sc.row_perm);
        ck_assert_ptr_nonnull(sc.row);
        ck_assert_ptr_nonnull(sc.col);
        ck_assert_int_eq(sc.structurally_singular, 0);
        check_perm(sc.row_perm, A.n);
        ck_assert_int_eq(scaling_apply(&A, &sc, &As, &err), CANOPY_SUCCESS);
        ck_assert_int_eq(matrix_nnz(&As), matrix_nnz(&A));
        ck_assert_int_eq(As.kind, A.kind);
        ck_assert_int_eq(As.arith, A.arith);
        check_matching_property(&As, 1e-12);
        /* AUTO means matching for GENERAL */
        scaling sc2;
        ck_assert_int_eq(scaling_compute(&A, CANOPY_SCALING_AUTO, CANOPY_KIND_GENERAL, &sc2, &err), CANOPY_SUCCESS);
        ck_assert_ptr_nonnull(sc2.row_perm);
        scaling_free(&sc2);
        scaling_free(&sc);
        ck_assert_ptr_null(sc.row);
        matrix_free(&As);
        matrix_free(&A);
    }
}
END_TEST

/* Maximum product over all permutations by enumeration (Heap's algorithm), as a log sum. */
static double brute_force_logprod(cint n, const double *M)
{
    cint c[8] = {0}, perm[8];
    for (cint i = 0; i < n; i++) perm[i] = i;
    double best = -INFINITY;
    for (;;) {
        double s = 0;
        for (cint i = 0; i < n && s > -INFINITY; i++) {
            double a = M[(size_t)perm[i] * n + i]; /* row i, column perm[i] */
            s = a > 0 ? s + log(a) : -INFINITY;
        }
        best = s > best ? s : best;
        cint k = 0;
        while (k < n && c[k] >= k) c[k++] = 0;
        if (k >= n) break;
        cint a = k % 2 == 0 ? 0 : c[k];
        cint t = perm[a];
        perm[a] = perm[k];
        perm[k] = t;
        c[k]++;
    }
    return best;
}

START_TEST(matching_brute_force)
{
    uint64_t st = 4242;
    for (int trial = 0; trial < 60; trial++) {
        cint n = 1 + (cint)(testutil_rand(&st) % 8);
        double *D = calloc((size_t)n * n, sizeof *D);
        double *M = calloc((size_t)n * n, sizeof *M);
        /* background of random entries, a planted permutation of large ones: the optimum is
         * usually but not always the planted one, which is what makes this a test */
        for (size_t k = 0; k < (size_t)n * n; k++)
            if (testutil_uniform(&st) < 0.5) D[k] = (testutil_uniform(&st) - 0.5) * 2;
        cint planted[8];
        for (cint i = 0; i < n; i++) planted[i] = i;
        for (cint i = n - 1; i > 0; i--) {
            cint r = (cint)(testutil_rand(&st) % (uint64_t)(i + 1));
            cint t = planted[i];
            planted[i] = planted[r];
            planted[r] = t;
        }
        for (cint i = 0; i < n; i++) D[(size_t)planted[i] * n + i] = 1 + 4 * testutil_uniform(&st);
        for (size_t k = 0; k < (size_t)n * n; k++) M[k] = fabs(D[k]);
        double opt = brute_force_logprod(n, M);
        canopy_csc A;
        dense_to_csc(n, D, NULL, CANOPY_REAL, CANOPY_KIND_GENERAL, &A);
        scaling sc;
        canopy_err err = {0};
        ck_assert_int_eq(scaling_compute(&A, CANOPY_SCALING_MATCHING, CANOPY_KIND_GENERAL, &sc, &err), CANOPY_SUCCESS);
        check_perm(sc.row_perm, n);
        double got = 0;
        for (cint i = 0; i < n; i++) got += log(M[(size_t)sc.row_perm[i] * n + i]);
        ck_assert_msg(got >= opt - 1e-12 * (1 + fabs(opt)), "trial %d n %d: matching log-product %.17g < optimum %.17g",
                      trial, (int)n, got, opt);
        scaling_free(&sc);
        matrix_free(&A);
        free(D);
        free(M);
    }
}
END_TEST

START_TEST(matching_complex)
{
    for (int trial = 0; trial < 5; trial++) {
        canopy_csc R, A, As;
        memset(&As, 0, sizeof As);
        testutil_random_matrix(50 + 10 * trial, 4, CANOPY_KIND_GENERAL, 0, 77 + trial, &R);
        complexify(&R, 99 + trial, &A);
        scaling sc;
        canopy_err err = {0};
        ck_assert_int_eq(scaling_compute(&A, CANOPY_SCALING_MATCHING, CANOPY_KIND_GENERAL, &sc, &err), CANOPY_SUCCESS);
        check_perm(sc.row_perm, A.n);
        ck_assert_int_eq(scaling_apply(&A, &sc, &As, &err), CANOPY_SUCCESS);
        ck_assert_int_eq(As.arith, CANOPY_COMPLEX);
        check_matching_property(&As, 1e-12);
        scaling_free(&sc);
        matrix_free(&As);
        matrix_free(&A);
        matrix_free(&R);
    }
}
END_TEST

START_TEST(matching_explicit_zeros_ignored)
{
    /* rows 0 and 1 have nonzeros only in column 0; row 0 also stores an explicit zero in
     * column 1. Using that zero would give a perfect matching; ignoring it, one row is left:
     * the values are singular, the pattern is not (the next values may fill the zero), so no
     * scaling comes from them and no error either. */
    double D[9] = {0};
    unsigned char keep[9] = {0};
#define SET(i, j, x) (D[(j) * 3 + (i)] = (x), keep[(j) * 3 + (i)] = 1)
    SET(0, 0, 2.0);
    SET(1, 0, 3.0);
    SET(0, 1, 0.0);
    SET(2, 1, 1.0);
    SET(2, 2, 5.0);
    SET(2, 0, 1.0);
#undef SET
    canopy_csc A;
    dense_to_csc(3, D, keep, CANOPY_REAL, CANOPY_KIND_GENERAL, &A);
    scaling sc;
    canopy_err err = {0};
    ck_assert_int_eq(scaling_compute(&A, CANOPY_SCALING_MATCHING, CANOPY_KIND_GENERAL, &sc, &err), CANOPY_SUCCESS);
    ck_assert_int_eq(sc.structurally_singular, 0);
    ck_assert_int_eq(sc.unscaled_values, 1);
    ck_assert(scaling_identity(&sc));
    scaling_free(&sc);
    matrix_free(&A);

    /* an explicit zero on the diagonal must not be matched when a real entry is available */
    double E[4] = {0, 1, 1, 0}; /* [[0 1],[1 0]] with the diagonal stored as explicit zeros */
    unsigned char keep2[4] = {1, 1, 1, 1};
    dense_to_csc(2, E, keep2, CANOPY_REAL, CANOPY_KIND_GENERAL, &A);
    canopy_err_clear(&err);
    ck_assert_int_eq(scaling_compute(&A, CANOPY_SCALING_MATCHING, CANOPY_KIND_GENERAL, &sc, &err), CANOPY_SUCCESS);
    ck_assert_int_eq(sc.row_perm[0], 1);
    ck_assert_int_eq(sc.row_perm[1], 0);
    scaling_free(&sc);
    matrix_free(&A);
}
END_TEST

START_TEST(singular_examples)
{
    canopy_err err = {0};
    scaling sc;
    canopy_csc A;
    /* empty column 1 */
    double D1[9] = {1, 2, 0, 0, 0, 0, 0, 3, 4};
    dense_to_csc(3, D1, NULL, CANOPY_REAL, CANOPY_KIND_GENERAL, &A);
    ck_assert_int_eq(scaling_compute(&A, CANOPY_SCALING_MATCHING, CANOPY_KIND_GENERAL, &sc, &err), CANOPY_ERR_SINGULAR);
    ck_assert_int_eq(sc.structurally_singular, 1);
    ck_assert_msg(strstr(err.msg, "column 1") != NULL, "message: %s", err.msg);
    scaling_free(&sc);
    canopy_err_clear(&err);
    ck_assert_int_eq(scaling_compute(&A, CANOPY_SCALING_EQUILIBRATE, CANOPY_KIND_GENERAL, &sc, &err), CANOPY_ERR_SINGULAR);
    scaling_free(&sc);
    matrix_free(&A);

    /* empty row 2 */
    double D2[9] = {1, 2, 0, 0, 5, 0, 3, 0, 0};
    dense_to_csc(3, D2, NULL, CANOPY_REAL, CANOPY_KIND_GENERAL, &A);
    canopy_err_clear(&err);
    ck_assert_int_eq(scaling_compute(&A, CANOPY_SCALING_AUTO, CANOPY_KIND_GENERAL, &sc, &err), CANOPY_ERR_SINGULAR);
    ck_assert_msg(strstr(err.msg, "row 2") != NULL, "message: %s", err.msg);
    scaling_free(&sc);
    matrix_free(&A);

    /* rows 0 and 1 share the single column pattern {0}: one row cannot be matched */
    double D3[9] = {1, 2, 3, 0, 0, 4, 0, 0, 5};
    dense_to_csc(3, D3, NULL, CANOPY_REAL, CANOPY_KIND_GENERAL, &A);
    canopy_err_clear(&err);
    ck_assert_int_eq(scaling_compute(&A, CANOPY_SCALING_MATCHING, CANOPY_KIND_GENERAL, &sc, &err), CANOPY_ERR_SINGULAR);
    ck_assert_int_eq(sc.structurally_singular, 1);
    ck_assert_msg(strstr(err.msg, "structurally singular: 1 rows cannot be matched") != NULL, "message: %s", err.msg);
    scaling_free(&sc);
    /* equilibration does not need a matching: fine on the same matrix */
    canopy_err_clear(&err);
    ck_assert_int_eq(scaling_compute(&A, CANOPY_SCALING_EQUILIBRATE, CANOPY_KIND_GENERAL, &sc, &err), CANOPY_SUCCESS);
    scaling_free(&sc);

    /* without an error record the status alone comes back */
    ck_assert_int_eq(scaling_compute(&A, CANOPY_SCALING_MATCHING, CANOPY_KIND_GENERAL, &sc, NULL), CANOPY_ERR_SINGULAR);
    ck_assert_int_eq(sc.structurally_singular, 1);
    scaling_free(&sc);
    matrix_free(&A);
    dense_to_csc(3, D1, NULL, CANOPY_REAL, CANOPY_KIND_GENERAL, &A);
    ck_assert_int_eq(scaling_compute(&A, CANOPY_SCALING_AUTO, CANOPY_KIND_SYMMETRIC, &sc, NULL), CANOPY_ERR_SINGULAR);
    scaling_free(&sc);
    matrix_free(&A);

    /* a column of explicit zeros only: not structurally singular (the pattern is what the
     * analysis works on), only without a scaling; matching and equilibration alike */
    double D4[4] = {1, 1, 0, 0};
    unsigned char keep4[4] = {1, 1, 1, 1};
    dense_to_csc(2, D4, keep4, CANOPY_REAL, CANOPY_KIND_GENERAL, &A);
    canopy_scaling modes[2] = {CANOPY_SCALING_MATCHING, CANOPY_SCALING_EQUILIBRATE};
    for (int m = 0; m < 2; m++) {
        canopy_err_clear(&err);
        ck_assert_int_eq(scaling_compute(&A, modes[m], CANOPY_KIND_GENERAL, &sc, &err), CANOPY_SUCCESS);
        ck_assert_int_eq(sc.structurally_singular, 0);
        ck_assert_int_eq(sc.unscaled_values, 1);
        ck_assert(scaling_identity(&sc));
        scaling_free(&sc);
    }
    matrix_free(&A);
}
END_TEST

/* ---- modes and symmetric scalings --------------------------------------------------------- */

START_TEST(mode_mapping)
{
    canopy_csc A;
    testutil_random_matrix(40, 3, CANOPY_KIND_SPD, 1, 5, &A);
    canopy_err err = {0};
    scaling sc;
    ck_assert_int_eq(scaling_compute(&A, CANOPY_SCALING_NONE, CANOPY_KIND_GENERAL, &sc, &err), CANOPY_SUCCESS);
    ck_assert_ptr_null(sc.row);
    ck_assert_ptr_null(sc.col);
    ck_assert_ptr_null(sc.row_perm);
    ck_assert_int_eq(sc.n, 40);
    /* identity scaling applies as a copy */
    canopy_csc As;
    memset(&As, 0, sizeof As);
    ck_assert_int_eq(scaling_apply(&A, &sc, &As, &err), CANOPY_SUCCESS);
    ck_assert_mem_eq(As.values, A.values, (size_t)matrix_nnz(&A) * sizeof(double));
    scaling_free(&sc);
    ck_assert_int_eq(scaling_compute(&A, CANOPY_SCALING_AUTO, CANOPY_KIND_SPD, &sc, &err), CANOPY_SUCCESS);
    ck_assert_ptr_null(sc.row);
    ck_assert_ptr_null(sc.col);
    ck_assert_ptr_null(sc.row_perm);
    scaling_free(&sc);
    /* symmetric kinds never permute */
    const canopy_scaling modes[3] = {CANOPY_SCALING_AUTO, CANOPY_SCALING_MATCHING, CANOPY_SCALING_EQUILIBRATE};
    const canopy_matrix_kind kinds[2] = {CANOPY_KIND_SYMMETRIC, CANOPY_KIND_HERMITIAN};
    for (int m = 0; m < 3; m++)
        for (int k = 0; k < 2; k++) {
            ck_assert_int_eq(scaling_compute(&A, modes[m], kinds[k], &sc, &err), CANOPY_SUCCESS);
            ck_assert_ptr_null(sc.row_perm);
            ck_assert_ptr_nonnull(sc.row);
            ck_assert_mem_eq(sc.row, sc.col, (size_t)A.n * sizeof(double));
            scaling_free(&sc);
        }
    ck_assert_int_eq(scaling_compute(&A, (canopy_scaling)42, CANOPY_KIND_GENERAL, &sc, &err), CANOPY_ERR_ARGUMENT);
    scaling_free(&sc);
    matrix_free(&As);
    matrix_free(&A);
}
END_TEST

START_TEST(symmetric_matching_scaling)
{
    for (int trial = 0; trial < 10; trial++) {
        canopy_csc A, As;
        memset(&As, 0, sizeof As);
        /* indefinite, random diagonal (sometimes tiny) */
        testutil_random_matrix(40 + 9 * trial, 3, CANOPY_KIND_SYMMETRIC, 0, 300 + trial, &A);
        scaling sc;
        canopy_err err = {0};
        canopy_status st = scaling_compute(&A, CANOPY_SCALING_MATCHING, CANOPY_KIND_SYMMETRIC, &sc, &err);
        if (st == CANOPY_ERR_SINGULAR) { /* random pattern may be structurally singular */
            scaling_free(&sc);
            matrix_free(&A);
            continue;
        }
        ck_assert_int_eq(st, CANOPY_SUCCESS);
        ck_assert_ptr_null(sc.row_perm);
        ck_assert_int_eq(scaling_apply(&A, &sc, &As, &err), CANOPY_SUCCESS);
        check_sorted(&As);
        check_exact_symmetry(&As);
        double mx = matrix_abs_max(&As);
        ck_assert_msg(mx <= 1 + 1e-12, "max |As| = %.17g", mx);
        ck_assert_msg(mx >= 0.5, "max |As| = %g suspiciously small", mx);
        scaling_free(&sc);
        matrix_free(&As);
        matrix_free(&A);
    }
}
END_TEST

/* Hermitian: conj-symmetric values; a real symmetric scaling keeps As exactly Hermitian. */
START_TEST(hermitian_scaling)
{
    canopy_csc R, A, As;
    memset(&As, 0, sizeof As);
    testutil_random_matrix(60, 4, CANOPY_KIND_SYMMETRIC, 0, 31, &R);
    complexify(&R, 32, &A);
    A.kind = CANOPY_KIND_HERMITIAN;
    double *v = A.values;
    /* make it Hermitian: imaginary part antisymmetric, zero on the diagonal */
    for (cint j = 0; j < A.n; j++)
        for (cint p = A.colptr[j]; p < A.colptr[j + 1]; p++) {
            cint i = A.rowind[p];
            if (i == j) v[2 * p + 1] = 0;
            else if (i > j) {
                for (cint q = A.colptr[i]; q < A.colptr[i + 1]; q++)
                    if (A.rowind[q] == j) v[2 * q + 1] = -v[2 * p + 1];
            }
        }
    const canopy_scaling modes[2] = {CANOPY_SCALING_MATCHING, CANOPY_SCALING_EQUILIBRATE};
    for (int m = 0; m < 2; m++) {
        scaling sc;
        canopy_err err = {0};
        ck_assert_int_eq(scaling_compute(&A, modes[m], CANOPY_KIND_HERMITIAN, &sc, &err), CANOPY_SUCCESS);
        ck_assert_int_eq(scaling_apply(&A, &sc, &As, &err), CANOPY_SUCCESS); /* second pass reuses As */
        const double *s = As.values;
        for (cint j = 0; j < As.n; j++)
            for (cint p = As.colptr[j]; p < As.colptr[j + 1]; p++) {
                cint i = As.rowind[p];
                for (cint q = As.colptr[i]; q < As.colptr[i + 1]; q++)
                    if (As.rowind[q] == j && (s[2 * p] != s[2 * q] || s[2 * p + 1] != -s[2 * q + 1]))
                        ck_abort_msg("As not Hermitian at (%d,%d)", (int)i, (int)j);
            }
        ck_assert(matrix_abs_max(&As) <= 1 + 1e-12);
        scaling_free(&sc);
    }
    matrix_free(&As);
    matrix_free(&A);
    matrix_free(&R);
}
END_TEST

static void check_equilibrated(const canopy_csc *As, double tol)
{
    cint n = As->n;
    double *rmax = calloc((size_t)n, sizeof *rmax);
    double *cmax = calloc((size_t)n, sizeof *cmax);
    for (cint j = 0; j < n; j++)
        for (cint p = As->colptr[j]; p < As->colptr[j + 1]; p++) {
            double a = mag_at(As, p);
            cint i = As->rowind[p];
            rmax[i] = CANOPY_MAX(rmax[i], a);
            cmax[j] = CANOPY_MAX(cmax[j], a);
        }
    for (cint i = 0; i < n; i++) {
        if (!(fabs(rmax[i] - 1) <= tol)) ck_abort_msg("row %d max %g", (int)i, rmax[i]);
        if (!(fabs(cmax[i] - 1) <= tol)) ck_abort_msg("column %d max %g", (int)i, cmax[i]);
    }
    free(rmax);
    free(cmax);
}

START_TEST(equilibrate_ruiz)
{
    for (int trial = 0; trial < 6; trial++) {
        canopy_matrix_kind kind = trial % 2 ? CANOPY_KIND_SYMMETRIC : CANOPY_KIND_GENERAL;
        canopy_csc A, As;
        memset(&As, 0, sizeof As);
        testutil_random_matrix(80, 4, kind, 0, 700 + trial, &A);
        /* badly scaled: multiply by D A D with D spanning 1e-6..1e6 (symmetric stays symmetric) */
        uint64_t st = 900 + trial;
        double *d = malloc((size_t)A.n * sizeof *d);
        for (cint i = 0; i < A.n; i++) d[i] = pow(10.0, 12 * testutil_uniform(&st) - 6);
        double *v = A.values;
        for (cint j = 0; j < A.n; j++)
            for (cint p = A.colptr[j]; p < A.colptr[j + 1]; p++) v[p] *= d[A.rowind[p]] * d[j];
        free(d);
        scaling sc;
        canopy_err err = {0};
        ck_assert_int_eq(scaling_compute(&A, CANOPY_SCALING_EQUILIBRATE, kind, &sc, &err), CANOPY_SUCCESS);
        ck_assert_ptr_null(sc.row_perm);
        ck_assert_int_eq(scaling_apply(&A, &sc, &As, &err), CANOPY_SUCCESS);
        check_sorted(&As);
        check_equilibrated(&As, 1e-2);
        if (kind == CANOPY_KIND_SYMMETRIC) {
            ck_assert_mem_eq(sc.row, sc.col, (size_t)A.n * sizeof(double));
            check_exact_symmetry(&As);
        }
        scaling_free(&sc);
        matrix_free(&As);
        matrix_free(&A);
    }
    /* complex */
    canopy_csc R, A, As;
    memset(&As, 0, sizeof As);
    testutil_random_matrix(70, 4, CANOPY_KIND_GENERAL, 0, 808, &R);
    complexify(&R, 809, &A);
    scaling sc;
    canopy_err err = {0};
    ck_assert_int_eq(scaling_compute(&A, CANOPY_SCALING_EQUILIBRATE, CANOPY_KIND_GENERAL, &sc, &err), CANOPY_SUCCESS);
    ck_assert_int_eq(scaling_apply(&A, &sc, &As, &err), CANOPY_SUCCESS);
    check_equilibrated(&As, 1e-2);
    scaling_free(&sc);
    matrix_free(&As);
    matrix_free(&A);
    matrix_free(&R);
}
END_TEST

/* ---- right-hand sides and solutions ------------------------------------------------------------ */

/* As (Dc^{-1} x) must equal Dr P (A x): scaling_rhs of A x against a product with As. */
static void rhs_roundtrip(const canopy_csc *A, canopy_scaling mode)
{
    cint n = A->n, nrhs = 3, ld = n + 5;
    int w = A->arith == CANOPY_COMPLEX ? 2 : 1;
    size_t len = (size_t)ld * nrhs * w;
    double *x = calloc(len, sizeof *x), *b = calloc(len, sizeof *b), *z = calloc(len, sizeof *z);
    double *y = calloc(len, sizeof *y), *tmp = calloc((size_t)n * w, sizeof *tmp);
    uint64_t st = 1234;
    for (size_t k = 0; k < len; k++) x[k] = 2 * testutil_uniform(&st) - 1;
    scaling sc;
    canopy_err err = {0};
    ck_assert_int_eq(scaling_compute(A, mode, A->kind, &sc, &err), CANOPY_SUCCESS);
    canopy_csc As;
    memset(&As, 0, sizeof As);
    ck_assert_int_eq(scaling_apply(A, &sc, &As, &err), CANOPY_SUCCESS);
    matrix_spmv(A, nrhs, 1.0, x, ld, 0.0, b, ld);
    scaling_rhs(&sc, A->arith, nrhs, b, ld, tmp);
    for (cint r = 0; r < nrhs; r++)
        for (cint i = 0; i < n; i++)
            for (int c = 0; c < w; c++) {
                size_t k = ((size_t)r * ld + i) * w + c;
                z[k] = x[k] / (sc.col ? sc.col[i] : 1.0);
            }
    matrix_spmv(&As, nrhs, 1.0, z, ld, 0.0, y, ld);
    double bmax = 0, diff = 0;
    for (cint r = 0; r < nrhs; r++)
        for (cint i = 0; i < n * w; i++) {
            size_t k = (size_t)r * ld * w + i;
            bmax = CANOPY_MAX(bmax, fabs(b[k]));
            diff = CANOPY_MAX(diff, fabs(b[k] - y[k]));
        }
    ck_assert_msg(diff <= 1e-12 * bmax, "As Dc^-1 x vs Dr P A x: diff %g (scale %g)", diff, bmax);
    /* solution transform: Dc z == x */
    scaling_solution(&sc, A->arith, nrhs, z, ld);
    for (cint r = 0; r < nrhs; r++)
        for (cint i = 0; i < n * w; i++) {
            size_t k = (size_t)r * ld * w + i;
            if (!(fabs(z[k] - x[k]) <= 1e-14 * (1 + fabs(x[k])))) ck_abort_msg("Dc (Dc^-1 x) != x at %zu", k);
        }
    scaling_free(&sc);
    matrix_free(&As);
    free(x);
    free(b);
    free(z);
    free(y);
    free(tmp);
}

START_TEST(rhs_solution_roundtrip)
{
    canopy_csc A, C;
    testutil_random_matrix(90, 4, CANOPY_KIND_GENERAL, 0, 2024, &A);
    rhs_roundtrip(&A, CANOPY_SCALING_MATCHING);
    rhs_roundtrip(&A, CANOPY_SCALING_EQUILIBRATE);
    rhs_roundtrip(&A, CANOPY_SCALING_NONE);
    complexify(&A, 2025, &C);
    rhs_roundtrip(&C, CANOPY_SCALING_MATCHING);
    rhs_roundtrip(&C, CANOPY_SCALING_EQUILIBRATE);
    matrix_free(&C);
    matrix_free(&A);
    testutil_random_matrix(70, 3, CANOPY_KIND_SYMMETRIC, 1, 2026, &A);
    rhs_roundtrip(&A, CANOPY_SCALING_MATCHING);
    complexify(&A, 2027, &C);
    C.kind = CANOPY_KIND_GENERAL; /* complex symmetric treated as general: permuted */
    rhs_roundtrip(&C, CANOPY_SCALING_AUTO);
    matrix_free(&C);
    matrix_free(&A);
}
END_TEST

/* ---- robustness and size ------------------------------------------------------------------------ */

START_TEST(allocation_failures)
{
    canopy_csc A;
    testutil_random_matrix(50, 3, CANOPY_KIND_GENERAL, 0, 55, &A);
    size_t base = canopy_mem_current();
    const canopy_scaling modes[2] = {CANOPY_SCALING_MATCHING, CANOPY_SCALING_EQUILIBRATE};
    for (int m = 0; m < 2; m++) {
        for (long k = 0; k < 40; k++) {
            canopy_err err = {0};
            scaling sc;
            canopy_csc As;
            memset(&As, 0, sizeof As);
            canopy_alloc_fail_after(k);
            canopy_status st = scaling_compute(&A, modes[m], CANOPY_KIND_GENERAL, &sc, &err);
            if (st == CANOPY_SUCCESS) st = scaling_apply(&A, &sc, &As, &err);
            canopy_alloc_fail_after(-1);
            ck_assert_msg(st == CANOPY_SUCCESS || st == CANOPY_ERR_NOMEM, "k=%ld: status %d", k, (int)st);
            scaling_free(&sc);
            matrix_free(&As);
            ck_assert_msg(canopy_mem_current() == base, "k=%ld: leak of %zu bytes", k, canopy_mem_current() - base);
        }
    }
    matrix_free(&A);
}
END_TEST

static void large_case(cint n, int per_col, int planted)
{
    canopy_csc A, As;
    memset(&As, 0, sizeof As);
    sparse_random(n, per_col, planted, 777, &A);
    scaling sc;
    canopy_err err = {0};
    double t0 = canopy_wtime();
    ck_assert_int_eq(scaling_compute(&A, CANOPY_SCALING_MATCHING, CANOPY_KIND_GENERAL, &sc, &err), CANOPY_SUCCESS);
    double t1 = canopy_wtime();
    ck_assert_int_eq(scaling_apply(&A, &sc, &As, &err), CANOPY_SUCCESS);
    double t2 = canopy_wtime();
    printf("matching %s random n=%d nnz=%lld: compute %.3f s, apply %.3f s\n", planted ? "planted" : "noise",
           (int)n, (long long)matrix_nnz(&A), t1 - t0, t2 - t1);
    check_perm(sc.row_perm, n);
    check_matching_property(&As, 1e-12);
    scaling_free(&sc);
    matrix_free(&As);
    matrix_free(&A);
}

START_TEST(matching_large_random)
{
    large_case(60000, 16, 1); /* the size the solver must handle quickly */
    large_case(8000, 8, 0);   /* long augmenting paths */
}
END_TEST

/* ---- real matrices ----------------------------------------------------------------------------- */

START_TEST(real_matrices)
{
    const char *dir = testutil_matrix_dir();
    if (dir == NULL) {
        printf("real_matrices: shared matrices not found, skipped\n");
        return;
    }
    const char *files[4] = {"west0479.mtx", "basker_matrix1.mtx.gz", "bayer10.mtx.gz", "ScaleMicrogrid_N1000.mtx.gz"};
    for (int f = 0; f < 4; f++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", dir, files[f]);
        canopy_csc raw, A, As;
        memset(&raw, 0, sizeof raw);
        memset(&A, 0, sizeof A);
        memset(&As, 0, sizeof As);
        canopy_err err = {0};
        char msg[512] = "";
        canopy_status st = canopy_read_matrix(path, &raw, msg, sizeof msg);
        if (st == CANOPY_ERR_UNSUPPORTED) {
            printf("real_matrices: %s: canopy_read_matrix not available in this build, skipped\n", files[f]);
            matrix_free(&raw);
            continue;
        }
        ck_assert_msg(st == CANOPY_SUCCESS, "%s: %s", files[f], msg);
        st = matrix_import(&raw, &A, &err);
        if (st == CANOPY_ERR_UNSUPPORTED) {
            printf("real_matrices: %s: matrix_import not available (%s), skipped\n", files[f], err.msg);
            matrix_free(&raw);
            continue;
        }
        ck_assert_msg(st == CANOPY_SUCCESS, "%s: %s", files[f], err.msg);
        scaling sc;
        double t0 = canopy_wtime();
        st = scaling_compute(&A, CANOPY_SCALING_MATCHING, CANOPY_KIND_GENERAL, &sc, &err);
        double t1 = canopy_wtime();
        ck_assert_msg(st == CANOPY_SUCCESS, "%s: %s", files[f], err.msg);
        check_perm(sc.row_perm, A.n);
        ck_assert_int_eq(scaling_apply(&A, &sc, &As, &err), CANOPY_SUCCESS);
        double t2 = canopy_wtime();
        printf("real_matrices: %s n=%d nnz=%lld: matching %.3f s, apply %.3f s\n", files[f], (int)A.n,
               (long long)matrix_nnz(&A), t1 - t0, t2 - t1);
        check_matching_property(&As, 1e-10);
        scaling_free(&sc);
        matrix_free(&As);
        matrix_free(&A);
        matrix_free(&raw);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("scaling");
    TCase *tc = tcase_create("scaling");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, matching_random_property);
    tcase_add_test(tc, matching_brute_force);
    tcase_add_test(tc, matching_complex);
    tcase_add_test(tc, matching_explicit_zeros_ignored);
    tcase_add_test(tc, singular_examples);
    tcase_add_test(tc, mode_mapping);
    tcase_add_test(tc, symmetric_matching_scaling);
    tcase_add_test(tc, hermitian_scaling);
    tcase_add_test(tc, equilibrate_ruiz);
    tcase_add_test(tc, rhs_solution_roundtrip);
    tcase_add_test(tc, allocation_failures);
    tcase_add_test(tc, matching_large_random);
    tcase_add_test(tc, real_matrices);
    suite_add_tcase(s, tc);
    return testutil_run(s);
}
