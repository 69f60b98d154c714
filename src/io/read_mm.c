/*
 * Matrix Market reader (coordinate format): real, integer, pattern and complex fields; general,
 * symmetric, skew-symmetric and hermitian symmetry. Produces a 0-based CSC with sorted rows.
 * Symmetric and hermitian files keep the triangle they store; skew-symmetric files are expanded
 * to a general matrix because the solver has no skew kind. Dense "array" files are refused.
 * Every problem is reported as "path:line: reason". Checking a user matrix is matrix_import's job.
 */
#include "base/common.h"
#include "base/lines.h"
#include "io/io.h"
#include "matrix/matrix.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- small parsers: hand-written for integers (the bulk of the file), strtod for reals ------ */

static const char *skip_blanks(const char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\r') s++;
    return s;
}

/* '\r' counts as a blank: a file with CR CR LF line ends (converted twice) is still readable */
static bool at_delim(const char *s) { return *s == '\0' || *s == ' ' || *s == '\t' || *s == '\r'; }

/* Parse an integer token; false if there is none, it overflows or is glued to other text. */
static bool parse_int(const char **ps, int64_t *v)
{
    const char *s = skip_blanks(*ps);
    bool neg = false;
    if (*s == '+' || *s == '-') neg = *s++ == '-';
    if (!isdigit((unsigned char)*s)) return false;
    int64_t x = 0;
    for (; isdigit((unsigned char)*s); s++) {
        int d = *s - '0';
        if (x > (INT64_MAX - d) / 10) return false;
        x = 10 * x + d;
    }
    if (!at_delim(s)) return false;
    *v = neg ? -x : x;
    *ps = s;
    return true;
}

static bool parse_real(const char **ps, double *v)
{
    const char *s = skip_blanks(*ps);
    if (*s == '\0') return false;
    char *end;
    double x = strtod(s, &end);
    /* underflow to 0 or a denormal is fine; overflow gives inf, caught by the finiteness check */
    if (end == s || !at_delim(end)) return false;
    *v = x;
    *ps = end;
    return true;
}

static bool blank_line(const char *s) { return *skip_blanks(s) == '\0'; }

/* ---- the reader ----------------------------------------------------------------------------- */

enum mm_field { F_REAL, F_INTEGER, F_PATTERN, F_COMPLEX };
enum mm_sym { S_GENERAL, S_SYMMETRIC, S_SKEW, S_HERMITIAN };

typedef struct mm_state {
    lines_reader *r;
    const char *path;
    cint *row, *col;
    double *val;
    int64_t cap;
    int vsz;
    /* entry k sits on line first_line + k + (number of skip marks <= k) */
    long first_line;
    int64_t *skips;
    int64_t nskips, capskips;
} mm_state;

static long entry_line(const mm_state *s, int64_t k)
{
    int64_t lo = 0, hi = s->nskips; /* count of marks <= k (marks are non-decreasing) */
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (s->skips[mid] <= k) lo = mid + 1;
        else hi = mid;
    }
    return s->first_line + (long)k + (long)lo;
}

static bool grow_entries(mm_state *s, int64_t need, int64_t limit, canopy_err *err)
{
    if (need <= s->cap) return true;
    int64_t c = s->cap ? 2 * s->cap : 1024;
    if (c < need) c = need;
    if (c > limit) c = limit;
    cint *r = canopy_realloc(s->row, (size_t)c, sizeof(cint), "row indices", err);
    if (r == NULL) return false;
    s->row = r;
    cint *cl = canopy_realloc(s->col, (size_t)c, sizeof(cint), "column indices", err);
    if (cl == NULL) return false;
    s->col = cl;
    if (s->vsz) {
        double *v = canopy_realloc(s->val, (size_t)c, (size_t)s->vsz * sizeof(double), "values", err);
        if (v == NULL) return false;
        s->val = v;
    }
    s->cap = c;
    return true;
}

static bool add_skip(mm_state *s, int64_t k, canopy_err *err)
{
    if (s->nskips == s->capskips) {
        int64_t c = s->capskips ? 2 * s->capskips : 64;
        int64_t *p = canopy_realloc(s->skips, (size_t)c, sizeof *p, "line map", err);
        if (p == NULL) return false;
        s->skips = p;
        s->capskips = c;
    }
    s->skips[s->nskips++] = k;
    return true;
}

/* Lower-case the next whitespace-separated word of *ps into w (truncated to wlen-1). */
static void next_word(const char **ps, char *w, size_t wlen)
{
    const char *s = skip_blanks(*ps);
    size_t k = 0;
    while (*s && *s != ' ' && *s != '\t' && *s != '\r') {
        if (k + 1 < wlen) w[k++] = (char)tolower((unsigned char)*s);
        s++;
    }
    w[k] = '\0';
    *ps = s;
}

canopy_status io_read_mm(const char *path, canopy_csc *A, canopy_err *err)
{
    return io_read_mm_part(path, 0, 1, A, err);
}

/*
 * Part @p part of @p nparts: every entry of the file is parsed and checked (so every part fails
 * alike on a bad file), entries [nz part / nparts, nz (part + 1) / nparts) in file order are kept.
 */
canopy_status io_read_mm_part(const char *path, int part, int nparts, canopy_csc *A, canopy_err *err)
{
    if (path == NULL || A == NULL) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "io_read_mm: NULL argument");
    if (nparts < 1 || part < 0 || part >= nparts)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "part %d of %d: must be 0 <= part < nparts", part, nparts);
    memset(A, 0, sizeof *A);
    canopy_err local;
    canopy_err_clear(&local);
    canopy_err *e = err ? err : &local;
    if (e->status != CANOPY_SUCCESS) return e->status; /* a stale error would hide ours */

    mm_state s;
    memset(&s, 0, sizeof s);
    s.path = path;
    if (lines_open(path, &s.r, e) != CANOPY_SUCCESS) return e->status;

    const char *line = lines_next(s.r, e);
    enum mm_field field = F_REAL;
    enum mm_sym sym = S_GENERAL;
    int64_t n = 0, ncol = 0, nz = 0;
    if (line == NULL) {
        if (e->status == CANOPY_SUCCESS)
            canopy_err_set(e, CANOPY_ERR_FORMAT, "%s:1: empty file, expected a %%%%MatrixMarket banner", path);
        goto done;
    }
    {
        char w[5][32];
        const char *p = line;
        for (int i = 0; i < 5; i++) next_word(&p, w[i], sizeof w[i]);
        if (strcmp(w[0], "%%matrixmarket") != 0) {
            canopy_err_set(e, CANOPY_ERR_FORMAT, "%s:1: bad banner: expected \"%%%%MatrixMarket matrix coordinate <field> <symmetry>\"", path);
            goto done;
        }
        if (strcmp(w[1], "matrix") != 0) {
            canopy_err_set(e, CANOPY_ERR_FORMAT, "%s:1: bad banner: object \"%s\" is not \"matrix\"", path, w[1]);
            goto done;
        }
        if (strcmp(w[2], "array") == 0) {
            canopy_err_set(e, CANOPY_ERR_UNSUPPORTED, "%s:1: dense \"array\" Matrix Market files are not supported, only \"coordinate\"", path);
            goto done;
        }
        if (strcmp(w[2], "coordinate") != 0) {
            canopy_err_set(e, CANOPY_ERR_FORMAT, "%s:1: bad banner: format \"%s\" is not \"coordinate\"", path, w[2]);
            goto done;
        }
        if (strcmp(w[3], "real") == 0 || strcmp(w[3], "double") == 0) field = F_REAL;
        else if (strcmp(w[3], "integer") == 0) field = F_INTEGER;
        else if (strcmp(w[3], "pattern") == 0) field = F_PATTERN;
        else if (strcmp(w[3], "complex") == 0) field = F_COMPLEX;
        else {
            canopy_err_set(e, CANOPY_ERR_FORMAT, "%s:1: bad banner: unknown field \"%s\" (real, integer, complex or pattern)", path, w[3]);
            goto done;
        }
        if (strcmp(w[4], "general") == 0) sym = S_GENERAL;
        else if (strcmp(w[4], "symmetric") == 0) sym = S_SYMMETRIC;
        else if (strcmp(w[4], "skew-symmetric") == 0) sym = S_SKEW;
        else if (strcmp(w[4], "hermitian") == 0) sym = S_HERMITIAN;
        else {
            canopy_err_set(e, CANOPY_ERR_FORMAT, "%s:1: bad banner: unknown symmetry \"%s\" (general, symmetric, skew-symmetric or hermitian)", path, w[4]);
            goto done;
        }
        if (field == F_PATTERN && (sym == S_SKEW || sym == S_HERMITIAN)) {
            canopy_err_set(e, CANOPY_ERR_FORMAT, "%s:1: bad banner: a pattern matrix cannot be %s", path, w[4]);
            goto done;
        }
        /* a real "hermitian" matrix is just symmetric */
        if (sym == S_HERMITIAN && field != F_COMPLEX) sym = S_SYMMETRIC;
    }

    /* size line, after comments and blank lines */
    for (;;) {
        line = lines_next(s.r, e);
        if (line == NULL) {
            if (e->status == CANOPY_SUCCESS)
                canopy_err_set(e, CANOPY_ERR_FORMAT, "%s:%ld: unexpected end of file, expected the size line \"rows columns entries\"",
                               path, lines_number(s.r) + 1);
            goto done;
        }
        if (line[0] != '%' && !blank_line(line)) break;
    }
    {
        const char *p = line;
        long ln = lines_number(s.r);
        if (!parse_int(&p, &n) || !parse_int(&p, &ncol) || !parse_int(&p, &nz) || !blank_line(p)) {
            canopy_err_set(e, CANOPY_ERR_FORMAT, "%s:%ld: bad size line \"%.60s\", expected three integers \"rows columns entries\"", path, ln, line);
            goto done;
        }
        if (n < 1 || ncol < 1 || nz < 0) {
            canopy_err_set(e, CANOPY_ERR_FORMAT, "%s:%ld: bad sizes %lld x %lld with %lld entries", path, ln,
                           (long long)n, (long long)ncol, (long long)nz);
            goto done;
        }
        if (n != ncol) {
            canopy_err_set(e, CANOPY_ERR_MATRIX, "%s:%ld: matrix is not square (%lld x %lld)", path, ln, (long long)n, (long long)ncol);
            goto done;
        }
        if (n > CINT_MAX - 1 || nz > CINT_MAX - 1) {
            canopy_err_set(e, CANOPY_ERR_TOO_LARGE, "%s:%ld: problem too large for the index type (%lld rows, %lld entries)",
                           path, ln, (long long)n, (long long)nz);
            goto done;
        }
        /* more entries than positions means a wrong count or duplicates: refuse before allocating */
        double maxnz = sym == S_GENERAL ? (double)n * (double)n : (double)n * ((double)n + 1) / 2;
        if ((double)nz > maxnz) {
            canopy_err_set(e, CANOPY_ERR_FORMAT, "%s:%ld: %lld entries cannot fit in a %s %lld x %lld matrix", path, ln,
                           (long long)nz, sym == S_GENERAL ? "general" : "triangle of a", (long long)n, (long long)n);
            goto done;
        }
        /* too few entries to cover every column: singular, and refused before n-sized arrays are
         * allocated (a tiny file announcing 2e9 rows must not exhaust memory) */
        if ((double)nz < (sym == S_GENERAL ? (double)n : (double)n / 2)) {
            canopy_err_set(e, CANOPY_ERR_SINGULAR, "%s:%ld: structurally singular: %lld entries cannot cover the %lld columns",
                           path, ln, (long long)nz, (long long)n);
            goto done;
        }
        s.first_line = ln + 1;
    }

    s.vsz = field == F_PATTERN ? 0 : field == F_COMPLEX ? 2 : 1;
    bool lower = false, upper = false;
    int64_t k = 0;
    /* this part's entries, in file order: k0 <= k < k1, stored at k - k0 */
    const int64_t k0 = (int64_t)((double)nz * part / nparts), k1 = (int64_t)((double)nz * (part + 1) / nparts);
    const int64_t kept = k1 - k0;
    while (k < nz) {
        line = lines_next(s.r, e);
        if (line == NULL) {
            if (e->status == CANOPY_SUCCESS)
                canopy_err_set(e, CANOPY_ERR_FORMAT, "%s:%ld: unexpected end of file: %lld entries announced, %lld found",
                               path, lines_number(s.r) + 1, (long long)nz, (long long)k);
            goto done;
        }
        if (line[0] == '%' || blank_line(line)) {
            if (!add_skip(&s, k, e)) goto done;
            continue;
        }
        if (k >= k0 && k < k1 && !grow_entries(&s, k - k0 + 1, kept, e)) goto done;
        long ln = lines_number(s.r);
        const char *p = line;
        int64_t i, j;
        if (!parse_int(&p, &i) || !parse_int(&p, &j)) {
            canopy_err_set(e, CANOPY_ERR_FORMAT, "%s:%ld: bad entry \"%.60s\", expected \"row column%s\"", path, ln, line,
                           field == F_PATTERN ? "" : field == F_COMPLEX ? " real imaginary" : " value");
            goto done;
        }
        if (i < 1 || i > n) {
            canopy_err_set(e, CANOPY_ERR_MATRIX, "%s:%ld: row index %lld out of range 1..%lld", path, ln, (long long)i, (long long)n);
            goto done;
        }
        if (j < 1 || j > n) {
            canopy_err_set(e, CANOPY_ERR_MATRIX, "%s:%ld: column index %lld out of range 1..%lld", path, ln, (long long)j, (long long)n);
            goto done;
        }
        double v[2] = {0, 0};
        bool ok = true;
        if (field == F_INTEGER) {
            int64_t iv;
            ok = parse_int(&p, &iv);
            v[0] = (double)iv;
        } else if (field != F_PATTERN) {
            ok = parse_real(&p, &v[0]) && (field != F_COMPLEX || parse_real(&p, &v[1]));
        }
        if (!ok || !blank_line(p)) {
            canopy_err_set(e, CANOPY_ERR_FORMAT, "%s:%ld: bad number in entry \"%.60s\"", path, ln, line);
            goto done;
        }
        if (!isfinite(v[0]) || !isfinite(v[1])) {
            canopy_err_set(e, CANOPY_ERR_MATRIX, "%s:%ld: value of entry (%lld, %lld) is not finite", path, ln, (long long)i, (long long)j);
            goto done;
        }
        if (sym != S_GENERAL && i != j) {
            bool lo = i > j;
            if ((lo && upper) || (!lo && lower)) {
                canopy_err_set(e, CANOPY_ERR_MATRIX, "%s:%ld: entry (%lld, %lld) is in the %s triangle but earlier entries of this %s file are in the %s one",
                               path, ln, (long long)i, (long long)j, lo ? "lower" : "upper",
                               sym == S_SKEW ? "skew-symmetric" : sym == S_HERMITIAN ? "hermitian" : "symmetric",
                               lo ? "upper" : "lower");
                goto done;
            }
            if (lo) lower = true;
            else upper = true;
        }
        if (sym == S_SKEW && i == j && (v[0] != 0 || v[1] != 0)) {
            canopy_err_set(e, CANOPY_ERR_MATRIX, "%s:%ld: nonzero diagonal entry (%lld, %lld) in a skew-symmetric matrix", path, ln, (long long)i, (long long)j);
            goto done;
        }
        if (k >= k0 && k < k1) {
            int64_t q = k - k0;
            s.row[q] = (cint)(i - 1);
            s.col[q] = (cint)(j - 1);
            for (int c = 0; c < s.vsz; c++) s.val[q * s.vsz + c] = v[c];
        }
        k++;
    }
    /* anything but comments after the last announced entry means the count was wrong */
    while ((line = lines_next(s.r, e)) != NULL) {
        if (line[0] != '%' && !blank_line(line)) {
            canopy_err_set(e, CANOPY_ERR_FORMAT, "%s:%ld: more entries than the %lld announced on line %ld", path,
                           lines_number(s.r), (long long)nz, s.first_line - 1);
            goto done;
        }
    }
    if (e->status != CANOPY_SUCCESS) goto done;

    int64_t total = kept;
    if (sym == S_SKEW) {
        /* expand: a_ji = -a_ij; diagonal entries (zero) are kept once */
        int64_t off = 0;
        for (int64_t q = 0; q < kept; q++) off += s.row[q] != s.col[q];
        if (kept + off > CINT_MAX - 1) {
            canopy_err_set(e, CANOPY_ERR_TOO_LARGE, "%s: expanded skew-symmetric matrix has too many entries for the index type", path);
            goto done;
        }
        if (!grow_entries(&s, kept + off, kept + off, e)) goto done;
        for (int64_t q = 0; q < kept; q++) {
            if (s.row[q] == s.col[q]) continue;
            s.row[total] = s.col[q];
            s.col[total] = s.row[q];
            for (int c = 0; c < s.vsz; c++) s.val[total * s.vsz + c] = -s.val[q * s.vsz + c];
            total++;
        }
    }
    if (kept == 0 && !grow_entries(&s, 1, 1, e)) goto done;

    int64_t dup[4] = {-1, -1, 0, 0};
    canopy_status st = io_build_csc((cint)n, total, s.row, s.col, s.val, s.vsz, kept, A, dup, e);
    s.row = s.col = NULL;
    s.val = NULL;
    if (st == CANOPY_ERR_MATRIX && e->status == CANOPY_SUCCESS) {
        /* entry ids are positions in the file; recover the row/column from the line map */
        long l0 = entry_line(&s, dup[0] + k0), l1 = entry_line(&s, dup[1] + k0);
        canopy_err_set(e, CANOPY_ERR_MATRIX, "%s:%ld: duplicate entry (%lld, %lld), already given on line %ld", path, l1,
                       (long long)dup[2] + 1, (long long)dup[3] + 1, l0);
    }
    if (st != CANOPY_SUCCESS) goto done;

    A->arith = field == F_PATTERN ? CANOPY_PATTERN : field == F_COMPLEX ? CANOPY_COMPLEX : CANOPY_REAL;
    A->kind = sym == S_SYMMETRIC ? CANOPY_KIND_SYMMETRIC : sym == S_HERMITIAN ? CANOPY_KIND_HERMITIAN : CANOPY_KIND_GENERAL;
    A->triangle = CANOPY_TRIANGLE_BOTH;
    if (sym == S_SYMMETRIC || sym == S_HERMITIAN)
        A->triangle = (upper && !lower) ? CANOPY_TRIANGLE_UPPER : CANOPY_TRIANGLE_LOWER;

done:
    lines_close(s.r);
    canopy_free(s.row);
    canopy_free(s.col);
    canopy_free(s.val);
    canopy_free(s.skips);
    if (e->status != CANOPY_SUCCESS) {
        matrix_free(A);
        return e->status;
    }
    return CANOPY_SUCCESS;
}
