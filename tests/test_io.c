/*
 * Tests of the matrix readers (Matrix Market, Harwell-Boeing) and of matrix_import /
 * matrix_update_values: the hand-made files of tests/data (valid ones compared entry by entry,
 * malformed ones for status and "file:line:" in the message), in-memory matrices for every
 * import check, allocation failures on every path, and every real matrix of the shared directory
 * against MANIFEST.md.
 */
#include "testutil.h"
#include "io/io.h"

#include <sys/stat.h>

static char data_dir[4096];

static const char *data_path(const char *name)
{
    static char buf[8192];
    if (data_dir[0] == '\0') {
        const char *top = getenv("top_srcdir");
        const char *cand[3] = {top, ".", ".."};
        for (int k = 0; k < 3; k++) {
            struct stat sb;
            if (cand[k] == NULL) continue;
            snprintf(buf, sizeof buf, "%s/tests/data/mm_real_general.mtx", cand[k]);
            if (stat(buf, &sb) == 0) {
                snprintf(data_dir, sizeof data_dir, "%s/tests/data", cand[k]);
                break;
            }
        }
        ck_assert_msg(data_dir[0] != '\0', "tests/data not found (set top_srcdir)");
    }
    snprintf(buf, sizeof buf, "%s/%s", data_dir, name);
    return buf;
}

static canopy_status read_file(const char *name, canopy_csc *A, char *msg, size_t len)
{
    return canopy_read_matrix(data_path(name), A, msg, len);
}

static void expect_csc(const canopy_csc *A, cint n, const cint *cp, const cint *ri, const double *v, int vsz)
{
    ck_assert_int_eq(A->n, n);
    ck_assert_int_eq(A->base, 0);
    for (cint j = 0; j <= n; j++) ck_assert_int_eq(A->colptr[j], cp[j]);
    for (cint p = 0; p < cp[n]; p++) ck_assert_int_eq(A->rowind[p], ri[p]);
    if (v == NULL) {
        ck_assert_ptr_null(A->values);
        return;
    }
    const double *av = A->values;
    for (cint p = 0; p < cp[n] * vsz; p++) ck_assert_msg(fabs(av[p] - v[p]) <= 1e-14 * fabs(v[p]), "value %d: %g != %g", (int)p, av[p], v[p]);
}

/* G: the 4x4 general reference of make_data.py */
static const cint G_cp[] = {0, 3, 5, 7, 9};
static const cint G_ri[] = {0, 1, 3, 1, 2, 0, 2, 1, 3};
static const double G_v[] = {4, -1, 0.5, 5, -2, 1.5, 6, -0.25, 7};

START_TEST(read_general)
{
    static const char *files[] = {"mm_real_general.mtx", "mm_crlf_upper.mtx", "hb_real_unsym.rua", "hb_real_unsym.rb",
                                  "hb_sniffed_noext"};
    size_t mem0 = canopy_mem_current();
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        canopy_csc A;
        char msg[512];
        ck_assert_msg(read_file(files[f], &A, msg, sizeof msg) == CANOPY_SUCCESS, "%s: %s", files[f], msg);
        ck_assert_int_eq(A.arith, CANOPY_REAL);
        ck_assert_int_eq(A.kind, CANOPY_KIND_GENERAL);
        expect_csc(&A, 4, G_cp, G_ri, G_v, 1);
        canopy_csc_free(&A);
    }
    ck_assert_uint_eq(canopy_mem_current(), mem0);
}
END_TEST

START_TEST(read_symmetric)
{
    static const cint cp[] = {0, 3, 5, 7, 8}, ri[] = {0, 1, 3, 1, 2, 2, 3, 3};
    static const double s_v[] = {4, -1, 0.5, 5, -2, 6, 1.5, 7}, i_v[] = {4, -1, 1, 5, -2, 6, 2, 7};
    canopy_csc A;
    char msg[512];
    ck_assert_int_eq(read_file("hb_real_sym.rsa", &A, msg, sizeof msg), CANOPY_SUCCESS);
    ck_assert_int_eq(A.kind, CANOPY_KIND_SYMMETRIC);
    ck_assert_int_eq(A.triangle, CANOPY_TRIANGLE_LOWER);
    expect_csc(&A, 4, cp, ri, s_v, 1);
    canopy_csc_free(&A);
    ck_assert_int_eq(read_file("mm_integer_symmetric.mtx", &A, msg, sizeof msg), CANOPY_SUCCESS);
    ck_assert_int_eq(A.kind, CANOPY_KIND_SYMMETRIC);
    ck_assert_int_eq(A.triangle, CANOPY_TRIANGLE_LOWER);
    expect_csc(&A, 4, cp, ri, i_v, 1);
    canopy_csc_free(&A);
    ck_assert_int_eq(read_file("hb_pattern_sym.psa", &A, msg, sizeof msg), CANOPY_SUCCESS);
    ck_assert_int_eq(A.arith, CANOPY_PATTERN);
    ck_assert_int_eq(A.triangle, CANOPY_TRIANGLE_LOWER);
    expect_csc(&A, 4, cp, ri, NULL, 0);
    canopy_csc_free(&A);
}
END_TEST

START_TEST(read_pattern_upper)
{
    static const cint cp[] = {0, 1, 3, 4, 6}, ri[] = {0, 0, 1, 2, 1, 3};
    canopy_csc A;
    char msg[512];
    ck_assert_int_eq(read_file("mm_pattern_upper.mtx", &A, msg, sizeof msg), CANOPY_SUCCESS);
    ck_assert_int_eq(A.arith, CANOPY_PATTERN);
    ck_assert_int_eq(A.kind, CANOPY_KIND_SYMMETRIC);
    ck_assert_int_eq(A.triangle, CANOPY_TRIANGLE_UPPER);
    expect_csc(&A, 4, cp, ri, NULL, 0);
    /* the solver needs values */
    canopy_csc B;
    canopy_err err;
    canopy_err_clear(&err);
    ck_assert_int_eq(matrix_import(&A, &B, &err), CANOPY_ERR_ARGUMENT);
    canopy_csc_free(&A);
}
END_TEST

START_TEST(read_complex)
{
    canopy_csc A;
    char msg[512];
    static const cint cp[] = {0, 1, 3}, ri[] = {0, 0, 1};
    static const double v[] = {1, -1, -3, 4, 2, 0.5};
    ck_assert_int_eq(read_file("mm_complex_general.mtx.gz", &A, msg, sizeof msg), CANOPY_SUCCESS);
    ck_assert_int_eq(A.arith, CANOPY_COMPLEX);
    expect_csc(&A, 2, cp, ri, v, 2);
    canopy_csc_free(&A);

    static const cint gri[] = {0, 1, 3, 1, 2, 0, 2, 1, 3};
    double gv[18];
    for (int k = 0; k < 9; k++) {
        gv[2 * k] = k + 1;
        gv[2 * k + 1] = -(k + 1);
    }
    ck_assert_int_eq(read_file("hb_complex_unsym.cua", &A, msg, sizeof msg), CANOPY_SUCCESS);
    ck_assert_int_eq(A.arith, CANOPY_COMPLEX);
    ck_assert_int_eq(A.kind, CANOPY_KIND_GENERAL);
    expect_csc(&A, 4, G_cp, gri, gv, 2);
    canopy_csc_free(&A);

    static const cint hcp[] = {0, 2, 4, 5}, hri[] = {0, 1, 1, 2, 2};
    static const double hv[] = {2, 0, 1, 1, 3, 0, 0, -2, 4, 0};
    static const char *herm[] = {"mm_complex_hermitian.mtx", "hb_complex_herm.cha"};
    for (int f = 0; f < 2; f++) {
        ck_assert_msg(read_file(herm[f], &A, msg, sizeof msg) == CANOPY_SUCCESS, "%s", msg);
        ck_assert_int_eq(A.kind, CANOPY_KIND_HERMITIAN);
        ck_assert_int_eq(A.triangle, CANOPY_TRIANGLE_LOWER);
        expect_csc(&A, 3, hcp, hri, hv, 2);
        /* full storage: conjugate mirror */
        canopy_csc B;
        canopy_err err;
        canopy_err_clear(&err);
        ck_assert_int_eq(matrix_import(&A, &B, &err), CANOPY_SUCCESS);
        static const cint fcp[] = {0, 2, 5, 7}, fri[] = {0, 1, 0, 1, 2, 1, 2};
        static const double fv[] = {2, 0, 1, 1, 1, -1, 3, 0, 0, -2, 0, 2, 4, 0};
        expect_csc(&B, 3, fcp, fri, fv, 2);
        matrix_free(&B);
        canopy_csc_free(&A);
    }
}
END_TEST

START_TEST(read_skew_and_fortran)
{
    static const cint cp[] = {0, 2, 4, 6}, ri[] = {1, 2, 0, 2, 0, 1};
    static const double v[] = {1, 2, -1, 3, -2, -3};
    static const char *files[] = {"mm_skew.mtx", "hb_skew.rza"};
    canopy_csc A;
    char msg[512];
    for (int f = 0; f < 2; f++) {
        ck_assert_msg(read_file(files[f], &A, msg, sizeof msg) == CANOPY_SUCCESS, "%s", msg);
        ck_assert_int_eq(A.kind, CANOPY_KIND_GENERAL);
        expect_csc(&A, 3, cp, ri, v, 1);
        canopy_csc_free(&A);
    }
    /* implied decimal point (E11.3 reading "2500") and 1P on a field without exponent */
    static const cint dcp[] = {0, 1, 2, 3}, dri[] = {0, 1, 2};
    static const double dv[] = {1.5, 0.25, 0.3};
    ck_assert_msg(read_file("hb_fortran.rua", &A, msg, sizeof msg) == CANOPY_SUCCESS, "%s", msg);
    expect_csc(&A, 3, dcp, dri, dv, 1);
    canopy_csc_free(&A);
    /* a file without telling suffix is sniffed */
    ck_assert_int_eq(read_file("mm_sniffed_noext", &A, msg, sizeof msg), CANOPY_SUCCESS);
    ck_assert_int_eq(A.n, 2);
    canopy_csc_free(&A);
}
END_TEST

static const struct bad_file {
    const char *name;
    canopy_status status;
    long line; /* -1: any line */
} bad_files[] = {
    {"bad_empty.mtx", CANOPY_ERR_FORMAT, 1},
    {"bad_banner.mtx", CANOPY_ERR_FORMAT, 1},
    {"bad_field.mtx", CANOPY_ERR_FORMAT, 1},
    {"bad_sizeline.mtx", CANOPY_ERR_FORMAT, 3},
    {"bad_truncated.mtx", CANOPY_ERR_FORMAT, 6},
    {"bad_extra.mtx", CANOPY_ERR_FORMAT, 6},
    {"bad_huge_size.mtx", CANOPY_ERR_SINGULAR, 2},
    {"bad_range.mtx", CANOPY_ERR_MATRIX, 4},
    {"bad_zero_index.mtx", CANOPY_ERR_MATRIX, 4},
    {"bad_nonsquare.mtx", CANOPY_ERR_MATRIX, 2},
    {"bad_nan.mtx", CANOPY_ERR_MATRIX, 4},
    {"bad_inf.mtx", CANOPY_ERR_MATRIX, 5},
    {"bad_overflow.mtx", CANOPY_ERR_MATRIX, 4},
    {"bad_duplicate.mtx", CANOPY_ERR_MATRIX, 6},
    {"bad_bothtri.mtx", CANOPY_ERR_MATRIX, 6},
    {"bad_number.mtx", CANOPY_ERR_FORMAT, 4},
    {"bad_complex_missing.mtx", CANOPY_ERR_FORMAT, 4},
    {"bad_truncated.mtx.gz", CANOPY_ERR_IO, -1},
    {"mm_array.mtx", CANOPY_ERR_UNSUPPORTED, 1},
    {"bad_hb_elemental.rua", CANOPY_ERR_UNSUPPORTED, 3},
    {"bad_hb_rect.rua", CANOPY_ERR_MATRIX, 3},
    {"bad_hb_notsquare.rua", CANOPY_ERR_MATRIX, 3},
    {"bad_hb_format.rua", CANOPY_ERR_FORMAT, 4},
    {"bad_hb_counts.rua", CANOPY_ERR_FORMAT, 2},
    {"bad_hb_total.rua", CANOPY_ERR_FORMAT, 2},
    {"bad_hb_number.rua", CANOPY_ERR_FORMAT, 10},
    {"bad_hb_nan.rua", CANOPY_ERR_MATRIX, 10},
    {"bad_hb_inf.rua", CANOPY_ERR_MATRIX, 9},
    {"bad_hb_range.rua", CANOPY_ERR_MATRIX, 7},
    {"bad_hb_duplicate.rua", CANOPY_ERR_MATRIX, 8},
    {"bad_hb_bothtri.rsa", CANOPY_ERR_MATRIX, 6},
    {"bad_hb_pointers.rua", CANOPY_ERR_FORMAT, 5},
    {"bad_hb_truncated.rua", CANOPY_ERR_FORMAT, 10},
    {"bad_hb_header.rua", CANOPY_ERR_FORMAT, 2},
    {"bad_hb_count_overflow.rua", CANOPY_ERR_FORMAT, 2},
    {"bad_hb_huge_order.rsa", CANOPY_ERR_FORMAT, 6},
    {"bad_hb_huge_order.rsa.gz", CANOPY_ERR_FORMAT, 6},
    {"bad_hb_size_range.rua", CANOPY_ERR_FORMAT, 3},
};

START_TEST(read_malformed)
{
    size_t mem0 = canopy_mem_current();
    for (size_t f = 0; f < sizeof bad_files / sizeof bad_files[0]; f++) {
        const struct bad_file *b = &bad_files[f];
        canopy_csc A;
        char msg[512], want[600];
        canopy_status st = read_file(b->name, &A, msg, sizeof msg);
        ck_assert_msg(st == b->status, "%s: status %d, expected %d (%s)", b->name, st, b->status, msg);
        ck_assert_ptr_null(A.colptr);
        if (b->line >= 0) snprintf(want, sizeof want, "%s:%ld: ", b->name, b->line);
        else snprintf(want, sizeof want, "%s:", b->name);
        ck_assert_msg(strstr(msg, want) != NULL, "%s: message \"%s\" lacks \"%s\"", b->name, msg, want);
    }
    ck_assert_uint_eq(canopy_mem_current(), mem0);
}
END_TEST

/*
 * Hostile Harwell-Boeing headers found by fuzzing: line counts beyond the I14 fields (strtoll
 * saturated and their sum overflowed: undefined behaviour, and a wrapped sum could pass the
 * check), and a 357-byte file announcing n = 2^31-2 whose arrays (24 GiB) were reserved before any
 * data was read. Each must fail with CANOPY_ERR_FORMAT and a "file:line: reason" message, whole or
 * in parts, without allocating more than the data it holds justify.
 */
START_TEST(read_hostile_hb)
{
    static const struct {
        const char *name;
        long line;
        const char *reason;
    } files[] = {
        {"bad_hb_count_overflow.rua", 2, "line count \"11111111111111111111\" out of range"},
        {"bad_hb_huge_order.rsa", 6, "unexpected end of file in column pointers"},
        {"bad_hb_huge_order.rsa.gz", 6, "unexpected end of file in column pointers"},
        {"bad_hb_size_range.rua", 3, "size \"123456789012345\" out of range"},
    };
    size_t mem0 = canopy_mem_current();
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        for (int parts = 0; parts <= 3; parts++) {
            canopy_csc A;
            char msg[512], want[600];
            canopy_mem_reset_peak();
            canopy_status st = parts == 0 ? read_file(files[f].name, &A, msg, sizeof msg)
                                          : canopy_read_matrix_part(data_path(files[f].name), parts - 1, parts, &A, msg, sizeof msg);
            ck_assert_msg(st == CANOPY_ERR_FORMAT, "%s: status %d (%s)", files[f].name, st, msg);
            ck_assert_ptr_null(A.colptr);
            snprintf(want, sizeof want, "%s:%ld: %s", files[f].name, files[f].line, files[f].reason);
            ck_assert_msg(strstr(msg, want) != NULL, "%s: message \"%s\" lacks \"%s\"", files[f].name, msg, want);
            /* the line buffer and a few small arrays, not what the header announces */
            ck_assert_msg(canopy_mem_peak() - mem0 < ((size_t)4 << 20), "%s: %zu bytes allocated", files[f].name,
                          canopy_mem_peak() - mem0);
            ck_assert_uint_eq(canopy_mem_current(), mem0);
        }
    }
}
END_TEST

START_TEST(read_errors)
{
    canopy_csc A;
    char msg[512];
    ck_assert_int_eq(canopy_read_matrix("/nonexistent/dir/x.mtx", &A, msg, sizeof msg), CANOPY_ERR_IO);
    ck_assert_ptr_nonnull(strstr(msg, "/nonexistent/dir/x.mtx"));
    ck_assert_int_eq(canopy_read_matrix("/nonexistent/dir/x", &A, msg, sizeof msg), CANOPY_ERR_IO);
    ck_assert_int_eq(canopy_read_matrix(NULL, &A, msg, sizeof msg), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(canopy_read_matrix("x.mtx", NULL, NULL, 0), CANOPY_ERR_ARGUMENT);
    /* a short message buffer is truncated, not overrun */
    char tiny[8];
    ck_assert_int_eq(read_file("bad_banner.mtx", &A, tiny, sizeof tiny), CANOPY_ERR_FORMAT);
    ck_assert_uint_eq(strlen(tiny), sizeof tiny - 1);
}
END_TEST

/* Every allocation of a reader may fail: no crash, no leak, an out-of-memory status. */
START_TEST(read_alloc_failures)
{
    static const char *files[] = {"mm_real_general.mtx", "mm_skew.mtx", "hb_real_unsym.rua", "hb_skew.rza", "hb_complex_herm.cha"};
    size_t mem0 = canopy_mem_current();
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        for (long k = 0;; k++) {
            canopy_csc A;
            char msg[512];
            canopy_alloc_fail_after(k);
            canopy_status st = read_file(files[f], &A, msg, sizeof msg);
            canopy_alloc_fail_after(-1);
            if (st == CANOPY_SUCCESS) {
                canopy_csc_free(&A);
                ck_assert_int_gt(k, 2);
                break;
            }
            ck_assert_msg(st == CANOPY_ERR_NOMEM, "%s after %ld allocations: %d %s", files[f], k, st, msg);
            ck_assert_uint_eq(canopy_mem_current(), mem0);
        }
    }
    ck_assert_uint_eq(canopy_mem_current(), mem0);
}
END_TEST

/* ---- matrix_import ------------------------------------------------------------------------ */

static canopy_status import(cint n, const cint *cp, const cint *ri, const double *v, int base, canopy_arith arith,
                            canopy_matrix_kind kind, canopy_triangle tri, canopy_csc *out, canopy_err *err)
{
    canopy_csc in = {.n = n, .colptr = (cint *)cp, .rowind = (cint *)ri, .values = (void *)v, .base = base,
                     .arith = arith, .kind = kind, .triangle = tri};
    canopy_err_clear(err);
    return matrix_import(&in, out, err);
}

START_TEST(import_invalid)
{
    canopy_csc B;
    canopy_err err;
    const double v[] = {1, 2, 3, 4, 5, 6};
    /* row out of range (1-based message) */
    {
        const cint cp[] = {1, 3, 4, 5}, ri[] = {1, 4, 2, 3};
        ck_assert_int_eq(import(3, cp, ri, v, 1, CANOPY_REAL, CANOPY_KIND_GENERAL, 0, &B, &err), CANOPY_ERR_MATRIX);
        ck_assert_str_eq(err.msg, "column 1: row index 4 out of range 1..3");
    }
    /* duplicate */
    {
        const cint cp[] = {0, 1, 3, 4}, ri[] = {0, 2, 2, 2};
        ck_assert_int_eq(import(3, cp, ri, v, 0, CANOPY_REAL, CANOPY_KIND_GENERAL, 0, &B, &err), CANOPY_ERR_MATRIX);
        ck_assert_str_eq(err.msg, "column 1: duplicate entry in row 2");
    }
    /* NaN and Inf */
    {
        const cint cp[] = {0, 1, 2, 3}, ri[] = {0, 1, 2};
        const double bad[] = {1, NAN, 3}, inf[] = {1, 2, -INFINITY};
        ck_assert_int_eq(import(3, cp, ri, bad, 0, CANOPY_REAL, CANOPY_KIND_GENERAL, 0, &B, &err), CANOPY_ERR_MATRIX);
        ck_assert_ptr_nonnull(strstr(err.msg, "column 1, row 1"));
        ck_assert_int_eq(import(3, cp, ri, inf, 0, CANOPY_REAL, CANOPY_KIND_GENERAL, 0, &B, &err), CANOPY_ERR_MATRIX);
        const double cbad[] = {1, 0, 2, INFINITY, 3, 0};
        ck_assert_int_eq(import(3, cp, ri, cbad, 0, CANOPY_COMPLEX, CANOPY_KIND_GENERAL, 0, &B, &err), CANOPY_ERR_MATRIX);
    }
    /* bad colptr: start, decrease, base */
    {
        const cint ri[] = {0, 1, 2};
        const cint c1[] = {1, 1, 2, 3}, c2[] = {0, 2, 1, 3};
        ck_assert_int_eq(import(3, c1, ri, v, 0, CANOPY_REAL, CANOPY_KIND_GENERAL, 0, &B, &err), CANOPY_ERR_MATRIX);
        ck_assert_int_eq(import(3, c2, ri, v, 0, CANOPY_REAL, CANOPY_KIND_GENERAL, 0, &B, &err), CANOPY_ERR_MATRIX);
        ck_assert_ptr_nonnull(strstr(err.msg, "colptr decreases"));
        const cint c3[] = {0, 1, 2, 3};
        ck_assert_int_eq(import(3, c3, ri, v, 2, CANOPY_REAL, CANOPY_KIND_GENERAL, 0, &B, &err), CANOPY_ERR_ARGUMENT);
        ck_assert_int_eq(import(0, c3, ri, v, 0, CANOPY_REAL, CANOPY_KIND_GENERAL, 0, &B, &err), CANOPY_ERR_ARGUMENT);
        ck_assert_int_eq(import(3, c3, ri, NULL, 0, CANOPY_REAL, CANOPY_KIND_GENERAL, 0, &B, &err), CANOPY_ERR_ARGUMENT);
        ck_assert_int_eq(import(3, c3, ri, v, 0, CANOPY_PATTERN, CANOPY_KIND_GENERAL, 0, &B, &err), CANOPY_ERR_ARGUMENT);
    }
    /* wrong triangle: an upper entry in a LOWER matrix, a lower one in an UPPER matrix */
    {
        const cint cp[] = {0, 1, 3, 4}, ri[] = {0, 0, 1, 2};
        ck_assert_int_eq(import(3, cp, ri, v, 0, CANOPY_REAL, CANOPY_KIND_SPD, CANOPY_TRIANGLE_LOWER, &B, &err), CANOPY_ERR_MATRIX);
        ck_assert_str_eq(err.msg, "column 1: row 0 is above the diagonal but the triangle is LOWER");
        const cint cp2[] = {0, 2, 3, 4}, ri2[] = {0, 1, 1, 2};
        ck_assert_int_eq(import(3, cp2, ri2, v, 0, CANOPY_REAL, CANOPY_KIND_SYMMETRIC, CANOPY_TRIANGLE_UPPER, &B, &err), CANOPY_ERR_MATRIX);
        /* but GENERAL ignores the triangle */
        ck_assert_int_eq(import(3, cp2, ri2, v, 0, CANOPY_REAL, CANOPY_KIND_GENERAL, CANOPY_TRIANGLE_UPPER, &B, &err), CANOPY_SUCCESS);
        matrix_free(&B);
    }
    /* asymmetric BOTH: pattern, then values */
    {
        const cint cp[] = {0, 2, 3, 4}, ri[] = {0, 1, 1, 2};
        ck_assert_int_eq(import(3, cp, ri, v, 0, CANOPY_REAL, CANOPY_KIND_SYMMETRIC, CANOPY_TRIANGLE_BOTH, &B, &err), CANOPY_ERR_MATRIX);
        ck_assert_ptr_nonnull(strstr(err.msg, "no symmetric partner"));
        const cint cp2[] = {0, 2, 4, 5}, ri2[] = {0, 1, 0, 1, 2};
        const double sv[] = {4, 1, 1 + 1e-9, 4, 4};
        ck_assert_int_eq(import(3, cp2, ri2, sv, 0, CANOPY_REAL, CANOPY_KIND_SPD, CANOPY_TRIANGLE_BOTH, &B, &err), CANOPY_ERR_MATRIX);
        ck_assert_ptr_nonnull(strstr(err.msg, "differs from its symmetric partner"));
        const double sv2[] = {4, 1, 1 + 1e-15, 4, 4};
        ck_assert_int_eq(import(3, cp2, ri2, sv2, 0, CANOPY_REAL, CANOPY_KIND_SPD, CANOPY_TRIANGLE_BOTH, &B, &err), CANOPY_SUCCESS);
        matrix_free(&B);
        /* Hermitian BOTH needs conjugates; complex symmetric needs equal values */
        const double hv[] = {4, 0, 1, 2, 1, -2, 4, 0, 4, 0};
        ck_assert_int_eq(import(3, cp2, ri2, hv, 0, CANOPY_COMPLEX, CANOPY_KIND_HERMITIAN, CANOPY_TRIANGLE_BOTH, &B, &err), CANOPY_SUCCESS);
        matrix_free(&B);
        ck_assert_int_eq(import(3, cp2, ri2, hv, 0, CANOPY_COMPLEX, CANOPY_KIND_SYMMETRIC, CANOPY_TRIANGLE_BOTH, &B, &err), CANOPY_ERR_MATRIX);
        /* Hermitian diagonal must be real */
        const double hd[] = {4, 1, 1, 2, 1, -2, 4, 0, 4, 0};
        ck_assert_int_eq(import(3, cp2, ri2, hd, 0, CANOPY_COMPLEX, CANOPY_KIND_HERMITIAN, CANOPY_TRIANGLE_BOTH, &B, &err), CANOPY_ERR_MATRIX);
        /* reported as given, also for one stored triangle (conjugated on the way) */
        const cint lcp[] = {0, 2, 3, 4}, lri[] = {0, 1, 1, 2};
        const double ld[] = {2, 1, 1, 2, 4, 0, 4, 0};
        ck_assert_int_eq(import(3, lcp, lri, ld, 0, CANOPY_COMPLEX, CANOPY_KIND_HERMITIAN, CANOPY_TRIANGLE_LOWER, &B, &err), CANOPY_ERR_MATRIX);
        ck_assert_msg(strstr(err.msg, "column 0: diagonal entry of a Hermitian matrix has imaginary part 1") != NULL, "%s", err.msg);
    }
}
END_TEST

START_TEST(import_valid)
{
    canopy_csc B;
    canopy_err err;
    size_t mem0 = canopy_mem_current();
    /* 1-based, unsorted general */
    {
        const cint cp[] = {1, 4, 6, 8, 10}, ri[] = {4, 1, 2, 3, 2, 3, 1, 4, 2};
        const double v[] = {0.5, 4, -1, -2, 5, 6, 1.5, 7, -0.25};
        ck_assert_int_eq(import(4, cp, ri, v, 1, CANOPY_REAL, CANOPY_KIND_GENERAL, CANOPY_TRIANGLE_BOTH, &B, &err), CANOPY_SUCCESS);
        ck_assert_int_eq(B.kind, CANOPY_KIND_GENERAL);
        ck_assert_int_eq(B.triangle, CANOPY_TRIANGLE_BOTH);
        expect_csc(&B, 4, G_cp, G_ri, G_v, 1);
        matrix_free(&B);
    }
    /* upper triangle, unsorted, 1-based -> full */
    {
        /* A = [4 1 0; 1 5 2; 0 2 6] upper: col1 {1:4}, col2 {2:5, 1:1}, col3 {3:6, 2:2} */
        const cint cp[] = {1, 2, 4, 6}, ri[] = {1, 2, 1, 3, 2};
        const double v[] = {4, 5, 1, 6, 2};
        ck_assert_int_eq(import(3, cp, ri, v, 1, CANOPY_REAL, CANOPY_KIND_SPD, CANOPY_TRIANGLE_UPPER, &B, &err), CANOPY_SUCCESS);
        const cint fcp[] = {0, 2, 5, 7}, fri[] = {0, 1, 0, 1, 2, 1, 2};
        const double fv[] = {4, 1, 1, 5, 2, 2, 6};
        ck_assert_int_eq(B.kind, CANOPY_KIND_SPD);
        ck_assert_int_eq(B.triangle, CANOPY_TRIANGLE_BOTH);
        expect_csc(&B, 3, fcp, fri, fv, 1);

        /* update values in the same layout */
        const double v2[] = {8, 10, 2, 12, 4};
        canopy_csc layout = {.n = 3, .colptr = (cint *)cp, .rowind = (cint *)ri, .values = NULL, .base = 1,
                             .arith = CANOPY_REAL, .kind = CANOPY_KIND_SPD, .triangle = CANOPY_TRIANGLE_UPPER};
        canopy_err_clear(&err);
        ck_assert_int_eq(matrix_update_values(&layout, v2, &B, &err), CANOPY_SUCCESS);
        const double fv2[] = {8, 2, 2, 10, 4, 4, 12};
        expect_csc(&B, 3, fcp, fri, fv2, 1);
        const double v3[] = {8, 10, NAN, 12, 4};
        ck_assert_int_eq(matrix_update_values(&layout, v3, &B, &err), CANOPY_ERR_MATRIX);
        expect_csc(&B, 3, fcp, fri, fv2, 1);
        /* another pattern is refused */
        const cint ri4[] = {1, 2, 1, 3, 1};
        layout.rowind = (cint *)ri4;
        canopy_err_clear(&err);
        ck_assert_int_eq(matrix_update_values(&layout, v2, &B, &err), CANOPY_ERR_ARGUMENT);
        matrix_free(&B);
    }
    /* lower triangle, 0-based, with an empty column and explicit zero */
    {
        const cint cp[] = {0, 2, 2, 3}, ri[] = {2, 0, 2};
        const double v[] = {0.0, 3, 5};
        ck_assert_int_eq(import(3, cp, ri, v, 0, CANOPY_REAL, CANOPY_KIND_SYMMETRIC, CANOPY_TRIANGLE_LOWER, &B, &err), CANOPY_SUCCESS);
        const cint fcp[] = {0, 2, 2, 4}, fri[] = {0, 2, 0, 2};
        const double fv[] = {3, 0, 0, 5};
        expect_csc(&B, 3, fcp, fri, fv, 1);
        matrix_free(&B);
    }
    /* a random larger matrix: import(lower of A) == import(A) */
    {
        canopy_csc R, L, F1, F2;
        testutil_random_matrix(60, 4, CANOPY_KIND_SYMMETRIC, 1, 7, &R);
        cint *lcp = canopy_alloc(61, sizeof(cint), "t", NULL), *lri = canopy_alloc((size_t)R.colptr[60], sizeof(cint), "t", NULL);
        double *lv = canopy_alloc((size_t)R.colptr[60], sizeof(double), "t", NULL), *rv = R.values;
        cint q = 0;
        for (cint j = 0; j < 60; j++) {
            lcp[j] = q;
            for (cint p = R.colptr[j + 1] - 1; p >= R.colptr[j]; p--) /* reversed: unsorted input */
                if (R.rowind[p] >= j) { lri[q] = R.rowind[p]; lv[q++] = rv[p]; }
        }
        lcp[60] = q;
        L = R;
        L.colptr = lcp;
        L.rowind = lri;
        L.values = lv;
        L.triangle = CANOPY_TRIANGLE_LOWER;
        canopy_err_clear(&err);
        ck_assert_int_eq(matrix_import(&R, &F1, &err), CANOPY_SUCCESS);
        ck_assert_int_eq(matrix_import(&L, &F2, &err), CANOPY_SUCCESS);
        expect_csc(&F2, 60, F1.colptr, F1.rowind, F1.values, 1);
        matrix_free(&F1);
        matrix_free(&F2);
        matrix_free(&R);
        canopy_free(lcp);
        canopy_free(lri);
        canopy_free(lv);
    }
    ck_assert_uint_eq(canopy_mem_current(), mem0);
}
END_TEST

START_TEST(import_alloc_failures)
{
    const cint cp[] = {1, 2, 4, 6}, ri[] = {1, 2, 1, 3, 2};
    const double v[] = {4, 5, 1, 6, 2};
    size_t mem0 = canopy_mem_current();
    for (long k = 0;; k++) {
        canopy_csc B;
        canopy_err err;
        canopy_alloc_fail_after(k);
        canopy_status st = import(3, cp, ri, v, 1, CANOPY_REAL, CANOPY_KIND_SPD, CANOPY_TRIANGLE_UPPER, &B, &err);
        canopy_alloc_fail_after(-1);
        if (st == CANOPY_SUCCESS) {
            matrix_free(&B);
            break;
        }
        ck_assert_int_eq(st, CANOPY_ERR_NOMEM);
        ck_assert_uint_eq(canopy_mem_current(), mem0);
    }
}
END_TEST


/*
 * canopy_read_matrix_part: every part has the whole file's n, kind, triangle and arithmetic, and
 * the parts' entries together are the file's, each exactly once (nparts 1..5, Matrix Market and
 * Harwell-Boeing, real, complex, symmetric, skew, gzip); a bad file fails alike in every part.
 */
static void check_parts(const char *path, const char *label)
{
    canopy_csc W, A;
    char msg[512];
    ck_assert_msg(canopy_read_matrix(path, &W, msg, sizeof msg) == CANOPY_SUCCESS, "%s: %s", label, msg);
    int vsz = W.arith == CANOPY_COMPLEX ? 2 : W.arith == CANOPY_PATTERN ? 0 : 1;
    int64_t nnz = matrix_nnz(&W);
    unsigned char *seen = calloc((size_t)nnz + 1, 1);
    ck_assert_ptr_nonnull(seen);
    for (int np = 1; np <= 5; np++) {
        memset(seen, 0, (size_t)nnz + 1);
        int64_t total = 0;
        for (int part = 0; part < np; part++) {
            ck_assert_msg(canopy_read_matrix_part(path, part, np, &A, msg, sizeof msg) == CANOPY_SUCCESS, "%s %d/%d: %s",
                          label, part, np, msg);
            ck_assert_msg(A.n == W.n && A.kind == W.kind && A.arith == W.arith && A.base == W.base &&
                              (W.kind == CANOPY_KIND_GENERAL || A.triangle == W.triangle),
                          "%s part %d/%d: n, kind, arithmetic or triangle differ", label, part, np);
            for (cint j = 0; j < A.n; j++)
                for (cint p = A.colptr[j] - A.base; p < A.colptr[j + 1] - A.base; p++) {
                    cint i = A.rowind[p], lo = W.colptr[j] - W.base, hi = W.colptr[j + 1] - W.base;
                    while (lo < hi) { /* the whole matrix's column is sorted by row */
                        cint mid = lo + (hi - lo) / 2;
                        if (W.rowind[mid] < i) lo = mid + 1;
                        else hi = mid;
                    }
                    ck_assert_msg(lo < W.colptr[j + 1] - W.base && W.rowind[lo] == i, "%s %d/%d: entry (%d, %d) not in the file",
                                  label, part, np, (int)i, (int)j);
                    ck_assert_msg(!seen[lo], "%s %d/%d: entry (%d, %d) in two parts", label, part, np, (int)i, (int)j);
                    seen[lo] = 1;
                    for (int c = 0; c < vsz; c++)
                        ck_assert(((const double *)A.values)[(size_t)p * vsz + c] == ((const double *)W.values)[(size_t)lo * vsz + c]);
                    total++;
                }
            canopy_csc_free(&A);
        }
        ck_assert_msg(total == nnz, "%s, %d parts: %lld entries in all, the file has %lld", label, np, (long long)total,
                      (long long)nnz);
    }
    free(seen);
    canopy_csc_free(&W);
}

START_TEST(read_parts)
{
    static const char *files[] = {"mm_real_general.mtx", "mm_skew.mtx", "hb_skew.rza", "hb_real_sym.rsa",
                                  "hb_complex_unsym.cua"};
    size_t mem0 = canopy_mem_current();
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) check_parts(data_path(files[f]), files[f]);
    const char *dir = testutil_matrix_dir();
    static const char *big[] = {"bcsstk14.rsa", "young1c.mtx", "sherman3.mtx", "1138_bus.mtx", "bcsstk13.mtx.gz"};
    for (size_t f = 0; dir && f < sizeof big / sizeof big[0]; f++) {
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, big[f]);
        check_parts(path, big[f]);
    }
    /* a bad file: the same status and message in every part (every part parses every line) */
    canopy_csc A;
    char msg[512], first[512];
    for (int part = 0; part < 3; part++) {
        ck_assert_int_eq(canopy_read_matrix_part(data_path("bad_nan.mtx"), part, 3, &A, msg, sizeof msg), CANOPY_ERR_MATRIX);
        ck_assert_ptr_null(A.colptr);
        if (part == 0) snprintf(first, sizeof first, "%s", msg);
        else ck_assert_str_eq(msg, first);
    }
    /* a duplicate is found by the part holding both copies (here: the only one) */
    ck_assert_int_eq(canopy_read_matrix_part(data_path("bad_duplicate.mtx"), 0, 1, &A, msg, sizeof msg), CANOPY_ERR_MATRIX);
    ck_assert_ptr_nonnull(strstr(msg, "duplicate"));
    ck_assert_int_eq(canopy_read_matrix_part(data_path("bad_truncated.mtx"), 2, 3, &A, msg, sizeof msg), CANOPY_ERR_FORMAT);
    ck_assert_int_eq(canopy_read_matrix_part(data_path("mm_real_general.mtx"), 3, 3, &A, msg, sizeof msg), CANOPY_ERR_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(msg, "part 3 of 3"));
    ck_assert_int_eq(canopy_read_matrix_part(data_path("mm_real_general.mtx"), 0, 0, &A, msg, sizeof msg), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(canopy_read_matrix_part(NULL, 0, 1, &A, msg, sizeof msg), CANOPY_ERR_ARGUMENT);
    ck_assert_uint_eq(canopy_mem_current(), mem0);
}
END_TEST

/* ---- the shared real matrices ------------------------------------------------------------- */

static const struct shared_matrix {
    const char *file;
    cint n;
    int64_t nnz; /* stored entries (one triangle for symmetric files) */
    canopy_arith arith;
    canopy_matrix_kind kind;
} shared[] = {
    {"G3_circuit.mtx.gz", 1585478, 4623152, CANOPY_REAL, CANOPY_KIND_SYMMETRIC},
    {"Andrews.mtx.gz", 60000, 410077, CANOPY_REAL, CANOPY_KIND_SYMMETRIC},
    {"bcsstk16.mtx.gz", 4884, 147631, CANOPY_REAL, CANOPY_KIND_SYMMETRIC},
    {"bcsstk24.rsa.gz", 3562, 81736, CANOPY_REAL, CANOPY_KIND_SYMMETRIC},
    {"bcsstk13.mtx.gz", 2003, 42943, CANOPY_REAL, CANOPY_KIND_SYMMETRIC},
    {"bcsstk26.mtx", 1922, 16129, CANOPY_REAL, CANOPY_KIND_SYMMETRIC},
    {"bcsstk14.rsa", 1806, 32630, CANOPY_REAL, CANOPY_KIND_SYMMETRIC},
    {"1138_bus.mtx", 1138, 2596, CANOPY_REAL, CANOPY_KIND_SYMMETRIC},
    {"494_bus.mtx", 494, 1080, CANOPY_REAL, CANOPY_KIND_SYMMETRIC},
    {"nos5.mtx", 468, 2820, CANOPY_REAL, CANOPY_KIND_SYMMETRIC},
    {"g20.rua", 400, 1920, CANOPY_REAL, CANOPY_KIND_GENERAL},
    {"lund_a.rsa", 147, 1298, CANOPY_REAL, CANOPY_KIND_SYMMETRIC},
    {"c-62.mtx.gz", 41731, 300537, CANOPY_REAL, CANOPY_KIND_SYMMETRIC},
    {"ACTIVSg200_AC_kkt.mtx", 4644, 14078, CANOPY_REAL, CANOPY_KIND_SYMMETRIC},
    {"ex14.rua.gz", 3251, 66775, CANOPY_REAL, CANOPY_KIND_GENERAL},
    {"hangGlider_2.mtx", 1647, 7834, CANOPY_REAL, CANOPY_KIND_SYMMETRIC},
    {"basker_matrix1.mtx.gz", 59070, 288510, CANOPY_REAL, CANOPY_KIND_GENERAL},
    {"xenon1.mtx.gz", 48600, 1181120, CANOPY_REAL, CANOPY_KIND_GENERAL},
    {"ScaleMicrogrid_N1000.mtx.gz", 35998, 197981, CANOPY_REAL, CANOPY_KIND_GENERAL},
    {"nsjac.mtx.gz", 15444, 397476, CANOPY_REAL, CANOPY_KIND_GENERAL},
    {"bayer10.mtx.gz", 13436, 94926, CANOPY_REAL, CANOPY_KIND_GENERAL},
    {"cage10.mtx.gz", 11397, 150645, CANOPY_REAL, CANOPY_KIND_GENERAL},
    {"sherman3.mtx", 5005, 20033, CANOPY_REAL, CANOPY_KIND_GENERAL},
    {"add32.rua", 4960, 23884, CANOPY_REAL, CANOPY_KIND_GENERAL},
    {"gemat12.mtx", 4929, 33111, CANOPY_REAL, CANOPY_KIND_GENERAL},
    {"sherman5.rua", 3312, 20793, CANOPY_REAL, CANOPY_KIND_GENERAL},
    {"cryg2500.mtx", 2500, 12349, CANOPY_REAL, CANOPY_KIND_GENERAL},
    {"watt_2.mtx", 1856, 11550, CANOPY_REAL, CANOPY_KIND_GENERAL},
    {"adder_dcop_05.mtx", 1813, 11097, CANOPY_REAL, CANOPY_KIND_GENERAL},
    {"fuego1.mtx", 1500, 12338, CANOPY_REAL, CANOPY_KIND_GENERAL},
    {"nnc1374.mtx", 1374, 8606, CANOPY_REAL, CANOPY_KIND_GENERAL},
    {"rajat19.mtx", 1157, 5399, CANOPY_REAL, CANOPY_KIND_GENERAL},
    {"orsirr_1.rua", 1030, 6858, CANOPY_REAL, CANOPY_KIND_GENERAL},
    {"mbeacxc.mtx.gz", 496, 49920, CANOPY_REAL, CANOPY_KIND_GENERAL},
    {"west0479.mtx", 479, 1910, CANOPY_REAL, CANOPY_KIND_GENERAL},
    {"utm300.rua", 300, 3155, CANOPY_REAL, CANOPY_KIND_GENERAL},
    {"helmholtz_2D.mtx.gz", 2880, 52016, CANOPY_COMPLEX, CANOPY_KIND_GENERAL},
    {"mhd1280a.cua.gz", 1280, 47906, CANOPY_COMPLEX, CANOPY_KIND_GENERAL},
    {"mhd1280b.cua", 1280, 22778, CANOPY_COMPLEX, CANOPY_KIND_GENERAL},
    {"young1c.mtx", 841, 4089, CANOPY_COMPLEX, CANOPY_KIND_GENERAL},
    {"cg20.cua", 400, 1920, CANOPY_COMPLEX, CANOPY_KIND_GENERAL},
    {"qc324.cua.gz", 324, 26730, CANOPY_COMPLEX, CANOPY_KIND_GENERAL},
};

START_TEST(read_shared_matrices)
{
    const char *dir = testutil_matrix_dir();
    if (dir == NULL) {
        printf("skipping: shared matrices not found\n");
        return;
    }
    ck_assert_uint_eq(sizeof shared / sizeof shared[0], 42);
    size_t mem0 = canopy_mem_current();
    for (size_t f = 0; f < sizeof shared / sizeof shared[0]; f++) {
        const struct shared_matrix *m = &shared[f];
        char path[8192], msg[512];
        snprintf(path, sizeof path, "%s/%s", dir, m->file);
        canopy_csc A;
        canopy_status st = canopy_read_matrix(path, &A, msg, sizeof msg);
        ck_assert_msg(st == CANOPY_SUCCESS, "%s: %s", m->file, msg);
        ck_assert_msg(A.n == m->n && matrix_nnz(&A) == m->nnz, "%s: n %d nnz %lld, expected %d %lld", m->file, (int)A.n,
                      (long long)matrix_nnz(&A), (int)m->n, (long long)m->nnz);
        ck_assert_msg(A.arith == m->arith && A.kind == m->kind, "%s: arith %d kind %d", m->file, A.arith, A.kind);
        if (A.kind != CANOPY_KIND_GENERAL) ck_assert_int_eq(A.triangle, CANOPY_TRIANGLE_LOWER);
        /* reader output is already in import form apart from the storage (one check call: each
         * ck_assert costs a system call) */
        bool sorted = true;
        for (cint j = 0; j < A.n; j++)
            for (cint p = A.colptr[j] + 1; p < A.colptr[j + 1]; p++) sorted &= A.rowind[p - 1] < A.rowind[p];
        ck_assert_msg(sorted, "%s: rows not sorted", m->file);
        canopy_csc B;
        canopy_err err;
        canopy_err_clear(&err);
        ck_assert_msg(matrix_import(&A, &B, &err) == CANOPY_SUCCESS, "%s: %s", m->file, err.msg);
        if (A.kind == CANOPY_KIND_GENERAL) ck_assert_int_eq(matrix_nnz(&B), matrix_nnz(&A));
        else ck_assert_int_gt(matrix_nnz(&B), matrix_nnz(&A));
        matrix_free(&B);
        canopy_csc_free(&A);
    }
    ck_assert_uint_eq(canopy_mem_current(), mem0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("io");
    TCase *tc = tcase_create("readers");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, read_general);
    tcase_add_test(tc, read_symmetric);
    tcase_add_test(tc, read_pattern_upper);
    tcase_add_test(tc, read_complex);
    tcase_add_test(tc, read_skew_and_fortran);
    tcase_add_test(tc, read_malformed);
    tcase_add_test(tc, read_hostile_hb);
    tcase_add_test(tc, read_errors);
    tcase_add_test(tc, read_alloc_failures);
    tcase_add_test(tc, import_invalid);
    tcase_add_test(tc, import_valid);
    tcase_add_test(tc, import_alloc_failures);
    tcase_add_test(tc, read_shared_matrices);
    tcase_add_test(tc, read_parts);
    suite_add_tcase(s, tc);
    return testutil_run(s);
}
