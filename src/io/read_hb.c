/*
 * Harwell-Boeing / Rutherford-Boeing reader for assembled matrices: real, complex or pattern
 * values; symmetric, unsymmetric, hermitian or skew-symmetric storage. Produces a 0-based CSC with
 * sorted rows; symmetric and hermitian files keep their stored triangle, skew-symmetric files are
 * expanded to a general matrix. Right-hand sides are skipped, elemental files refused.
 *
 * The data are fixed-width Fortran records: numbers may touch ("1.0E+00-2.5E-01"), so every
 * field is cut by the column positions its edit descriptor gives, never by whitespace. The format
 * parser understands the descriptors these files use (Iw, Ew.d, Dw.d, Fw.d, Gw.d, ESw.d, nX, kP,
 * BN and nested repeat groups); it does not do format reversion onto several records per pass.
 */
#include "base/common.h"
#include "base/lines.h"
#include "io/io.h"
#include "matrix/matrix.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Fortran edit descriptors --------------------------------------------------------------- */

#define FF_MAX_FIELDS 512
#define FF_MAX_WIDTH 80
/* Widest record a format may describe: keeps column arithmetic far from int overflow. */
#define FF_MAX_RECORD (1 << 16)

typedef struct ffield {
    int start;      /* 0-based column */
    int width;
    int decimals;   /* d of Ew.d: implied decimal point when the field has none */
    int scale;      /* kP in force: divides a value written without exponent by 10^k */
    char type;      /* 'I' or 'R' */
} ffield;

typedef struct ffmt {
    ffield f[FF_MAX_FIELDS];
    int nf;
    int col;        /* column cursor while parsing */
    int scale;
} ffmt;

/* Largest repeat count, width, decimals or scale factor accepted in a format: far beyond any
 * real file, and small enough that no column or exponent arithmetic can overflow. */
#define FF_MAX_NUMBER 100000

/* An unsigned number of a format; *ok false when there is none or it exceeds FF_MAX_NUMBER. */
static int ff_number(const char **ps, bool *ok)
{
    const char *s = *ps;
    int v = 0;
    *ok = false;
    while (*s == ' ') s++;
    if (!isdigit((unsigned char)*s)) return 0;
    for (; isdigit((unsigned char)*s); s++) {
        if (v > (FF_MAX_NUMBER - (*s - '0')) / 10) return 0;
        v = 10 * v + (*s - '0');
    }
    *ok = true;
    *ps = s;
    return v;
}

/* Parse a comma-separated list up to the matching ')' (the '(' is already eaten). */
static bool ff_list(const char **ps, ffmt *F, int depth)
{
    const char *s = *ps;
    if (depth > 8) return false;
    for (;;) {
        while (*s == ' ' || *s == ',') s++;
        if (*s == ')') {
            *ps = s + 1;
            return true;
        }
        if (*s == '\0') return false;
        bool neg = false, has;
        if (*s == '-' || *s == '+') neg = *s++ == '-';
        while (*s == ' ') s++;
        bool digits = isdigit((unsigned char)*s);
        int rep = ff_number(&s, &has);
        if (digits && !has) return false;     /* a repeat count or scale beyond FF_MAX_NUMBER */
        while (*s == ' ') s++;
        char c = (char)toupper((unsigned char)*s);
        if (c == 'P') {                       /* kP scale factor (sign allowed only here) */
            if (!has) return false;
            F->scale = neg ? -rep : rep;
            s++;
            continue;
        }
        if (neg) return false;
        if (!has) rep = 1;
        if (rep < 1) return false;
        if (c == '(') {
            s++;
            int first = F->nf, col0 = F->col;
            if (!ff_list(&s, F, depth + 1)) return false;
            int nf = F->nf - first, w = F->col - col0;
            if ((int64_t)col0 + (int64_t)rep * w > FF_MAX_RECORD) return false;
            for (int r = 1; r < rep; r++) {
                if (F->nf + nf > FF_MAX_FIELDS) return false;
                for (int q = 0; q < nf; q++) {
                    F->f[F->nf] = F->f[first + q];
                    F->f[F->nf].start += r * w;
                    F->nf++;
                }
            }
            F->col = col0 + rep * w;
            continue;
        }
        if (c == 'X') {
            if ((int64_t)F->col + rep > FF_MAX_RECORD) return false;
            F->col += rep;
            s++;
            continue;
        }
        if (c == 'B') {                       /* BN (blanks ignored) is what we do anyway */
            if (toupper((unsigned char)s[1]) != 'N') return false;
            s += 2;
            continue;
        }
        char type;
        if (c == 'I') type = 'I';
        else if (c == 'E' || c == 'D' || c == 'F' || c == 'G') type = 'R';
        else return false;                    /* '/', T, A, L, ... are not data formats of HB files */
        s++;
        if (c == 'E' && (toupper((unsigned char)*s) == 'S' || toupper((unsigned char)*s) == 'N')) s++;
        int w = ff_number(&s, &has);
        if (!has || w < 1 || w > FF_MAX_WIDTH) return false;
        int d = 0;
        if (*s == '.') {
            s++;
            d = ff_number(&s, &has);
            if (!has) return false;
        } else if (type == 'R') {
            return false;                     /* Ew, Dw without .d are not valid */
        }
        if (type == 'R' && toupper((unsigned char)*s) == 'E') { /* Ew.dEe exponent width */
            s++;
            ff_number(&s, &has);
            if (!has) return false;
        }
        if (F->nf + rep > FF_MAX_FIELDS || (int64_t)F->col + (int64_t)rep * w > FF_MAX_RECORD) return false;
        for (int r = 0; r < rep; r++) {
            F->f[F->nf++] = (ffield){.start = F->col, .width = w, .decimals = type == 'I' ? 0 : d,
                                     .scale = F->scale, .type = type};
            F->col += w;
        }
    }
}

/* Parse "(...)" at *ps into F; false for anything this reader cannot follow. */
static bool ff_parse(const char *text, ffmt *F)
{
    memset(F, 0, sizeof *F);
    const char *s = text;
    while (*s == ' ') s++;
    if (*s != '(') return false;
    s++;
    if (!ff_list(&s, F, 0)) return false;
    while (*s == ' ') s++;
    return *s == '\0' && F->nf > 0;
}

/* Copy the field's characters without blanks (Fortran's BN); chars past the line end are blanks. */
static int ff_text(const char *line, size_t len, const ffield *f, char *buf)
{
    int k = 0;
    for (int c = f->start; c < f->start + f->width && (size_t)c < len; c++)
        if (line[c] != ' ' && line[c] != '\t') buf[k++] = line[c];
    buf[k] = '\0';
    return k;
}

static bool ff_int(const char *line, size_t len, const ffield *f, int64_t *v)
{
    char buf[FF_MAX_WIDTH + 1];
    if (ff_text(line, len, f, buf) == 0) return false;
    const char *s = buf;
    bool neg = false;
    if (*s == '+' || *s == '-') neg = *s++ == '-';
    if (*s == '\0') return false;
    int64_t x = 0;
    for (; *s; s++) {
        if (!isdigit((unsigned char)*s)) return false;
        if (x > (INT64_MAX - 9) / 10) return false;
        x = 10 * x + (*s - '0');
    }
    *v = neg ? -x : x;
    return true;
}

/*
 * A Fortran real: [sign] digits [. digits] [exponent], exponent = (E|D|Q)[sign]digits or
 * sign digits ("0.12345-05"). Without a decimal point the last d digits are decimals; without an
 * exponent a kP scale factor divides by 10^k. NaN/Inf are accepted here and refused by the caller.
 */
static bool ff_real(const char *line, size_t len, const ffield *f, double *v)
{
    char buf[FF_MAX_WIDTH + 1], norm[FF_MAX_WIDTH + 32];
    if (ff_text(line, len, f, buf) == 0) return false;
    const char *s = buf;
    if (f->type == 'I') {
        int64_t x;
        if (!ff_int(line, len, f, &x)) return false;
        *v = (double)x;
        return true;
    }
    {
        const char *t = (*s == '+' || *s == '-') ? s + 1 : s;
        char low[16];
        size_t k = 0;
        for (; t[k] && k < sizeof low - 1; k++) low[k] = (char)tolower((unsigned char)t[k]);
        low[k] = '\0';
        if (strcmp(low, "nan") == 0 || strcmp(low, "inf") == 0 || strcmp(low, "infinity") == 0) {
            *v = strtod(buf, NULL);
            return true;
        }
    }
    size_t n = 0;
    if (*s == '+' || *s == '-') norm[n++] = *s++;
    int digits = 0;
    bool point = false;
    while (isdigit((unsigned char)*s) || (*s == '.' && !point)) {
        if (*s == '.') point = true;
        else digits++;
        norm[n++] = *s++;
    }
    if (digits == 0) return false;
    long ex = 0;
    bool has_exp = false;
    char c = (char)toupper((unsigned char)*s);
    if (c == 'E' || c == 'D' || c == 'Q') {
        s++;
        has_exp = true;
    } else if (c == '+' || c == '-') {
        has_exp = true;
    }
    if (has_exp) {
        bool neg = false;
        if (*s == '+' || *s == '-') neg = *s++ == '-';
        if (!isdigit((unsigned char)*s)) return false;
        for (; isdigit((unsigned char)*s); s++) {
            if (ex > 100000) return false;
            ex = 10 * ex + (*s - '0');
        }
        if (neg) ex = -ex;
    }
    if (*s != '\0') return false;
    if (!point) ex -= f->decimals;
    if (!has_exp) ex -= f->scale;
    snprintf(norm + n, sizeof norm - n, "e%ld", ex);
    char *end;
    *v = strtod(norm, &end);
    return *end == '\0';
}

/* ---- sections ------------------------------------------------------------------------------- */

typedef struct hb_state {
    lines_reader *r;
    const char *path;
    canopy_err *e;
} hb_state;

static const char *hb_line(hb_state *h, const char *what)
{
    const char *line = lines_next(h->r, h->e);
    if (line == NULL && h->e->status == CANOPY_SUCCESS)
        canopy_err_set(h->e, CANOPY_ERR_FORMAT, "%s:%ld: unexpected end of file in %s", h->path,
                       lines_number(h->r) + 1, what);
    return line;
}

/*
 * Read @p count numbers of one section, integers into *iv or reals into *dv, one pass of the
 * format per record. The record count was checked against the format beforehand. The array grows
 * with the numbers actually read, never ahead of them: the header may announce anything (a
 * file of a few hundred bytes announcing 2^31 columns must not reserve gigabytes): memory follows
 * the data, as in the Matrix Market reader, for compressed files too, whose size says nothing.
 */
static bool hb_section(hb_state *h, const ffmt *F, int64_t count, int64_t **iv, double **dv, const char *what)
{
    const size_t elsz = iv ? sizeof **iv : sizeof **dv;
    int64_t cap = CANOPY_MIN(count, (int64_t)4096) + 1;
    void *arr = canopy_alloc((size_t)cap, elsz, what, h->e);
    if (arr == NULL) return false;
    if (iv) *iv = arr;
    else *dv = arr;
    int64_t k = 0;
    while (k < count) {
        const char *line = hb_line(h, what);
        if (line == NULL) return false;
        if (k + F->nf > cap) {
            int64_t c = CANOPY_MIN(CANOPY_MAX(2 * cap, k + F->nf), count + 1);
            arr = canopy_realloc(arr, (size_t)c, elsz, what, h->e);
            if (arr == NULL) return false;
            if (iv) *iv = arr;
            else *dv = arr;
            cap = c;
        }
        size_t len = strlen(line);
        for (int q = 0; q < F->nf && k < count; q++, k++) {
            bool ok = iv ? ff_int(line, len, &F->f[q], &(*iv)[k]) : ff_real(line, len, &F->f[q], &(*dv)[k]);
            if (!ok) {
                const ffield *f = &F->f[q];
                size_t from = CANOPY_MIN((size_t)f->start, len);
                int shown = (int)CANOPY_MIN((size_t)f->width, len - from);
                canopy_err_set(h->e, CANOPY_ERR_FORMAT, "%s:%ld: bad or missing number \"%.*s\" in columns %d-%d (%s, item %lld)",
                               h->path, lines_number(h->r), shown, line + from, f->start + 1, f->start + f->width,
                               what, (long long)k + 1);
                return false;
            }
        }
    }
    return true;
}

/*
 * The header's integers are I14 fields: no count of a real file has more than 14 digits, and with
 * that bound no sum or product of counts below can overflow (saturating at INT64_MAX, as strtoll
 * does, let a wrapped sum of line counts pass the check).
 */
#define HB_MAX_HEADER_INT INT64_C(99999999999999)

enum { HDR_JUNK = -1, HDR_RANGE = -2 };

/*
 * Whitespace-separated integers of a header line: up to max, returns how many, HDR_JUNK on text
 * that is not an integer, HDR_RANGE on one beyond HB_MAX_HEADER_INT in magnitude (*bad then points
 * at the offending token).
 */
static int header_ints(const char *s, int64_t *v, int max, const char **bad)
{
    int n = 0;
    for (;;) {
        while (*s == ' ' || *s == '\t') s++;
        if (*s == '\0') return n;
        *bad = s;
        if (n == max) return HDR_JUNK;
        bool neg = false;
        if (*s == '+' || *s == '-') neg = *s++ == '-';
        if (!isdigit((unsigned char)*s)) return HDR_JUNK;
        int64_t x = 0;
        for (; isdigit((unsigned char)*s); s++) {
            if (x > (HB_MAX_HEADER_INT - (*s - '0')) / 10) return HDR_RANGE;
            x = 10 * x + (*s - '0');
        }
        if (*s && *s != ' ' && *s != '\t') return HDR_JUNK;
        v[n++] = neg ? -x : x;
    }
}

/* Length of the token at s (up to a blank), for quoting it in a message. */
static int token_len(const char *s)
{
    int k = 0;
    while (s[k] && s[k] != ' ' && s[k] != '\t' && k < 40) k++;
    return k;
}

/* The next "( ... )" group of line 4, copied into out; false when there is none. */
static bool next_paren(const char **ps, char *out, size_t outlen)
{
    const char *s = strchr(*ps, '(');
    if (s == NULL) return false;
    int depth = 0;
    size_t k = 0;
    for (; *s; s++) {
        if (k + 1 < outlen) out[k++] = *s;
        if (*s == '(') depth++;
        else if (*s == ')' && --depth == 0) {
            s++;
            break;
        }
    }
    out[k] = '\0';
    *ps = s;
    return depth == 0;
}

/* ---- the reader ----------------------------------------------------------------------------- */

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

canopy_status io_read_hb(const char *path, canopy_csc *A, canopy_err *err)
{
    if (path == NULL || A == NULL) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "io_read_hb: NULL argument");
    memset(A, 0, sizeof *A);
    canopy_err local;
    canopy_err_clear(&local);
    canopy_err *e = err ? err : &local;
    if (e->status != CANOPY_SUCCESS) return e->status;

    hb_state h = {.path = path, .e = e};
    ffmt *fp = NULL, *fi = NULL, *fv = NULL;
    int64_t *ptr = NULL, *ind = NULL;
    double *val = NULL;
    cint *row = NULL, *col = NULL;
    if (lines_open(path, &h.r, e) != CANOPY_SUCCESS) return e->status;

    const char *line;
    int64_t cnt[5] = {0, 0, 0, 0, 0}, sz[4] = {0, 0, 0, 0};
    char type[4];
    if ((line = hb_line(&h, "the header (title line)")) == NULL) goto done;
    if ((line = hb_line(&h, "the header (line counts)")) == NULL) goto done;
    const char *tok = line;
    int nc = header_ints(line, cnt, 5, &tok);
    if (nc == HDR_RANGE) {
        canopy_err_set(e, CANOPY_ERR_FORMAT, "%s:2: line count \"%.*s\" out of range (the header's I14 fields hold at most 14 digits)",
                       path, token_len(tok), tok);
        goto done;
    }
    if (nc < 4 || cnt[0] < 0 || cnt[1] < 0 || cnt[2] < 0 || cnt[3] < 0 || cnt[4] < 0) {
        canopy_err_set(e, CANOPY_ERR_FORMAT, "%s:2: bad line counts \"%.60s\": expected TOTCRD PTRCRD INDCRD VALCRD [RHSCRD]", path, line);
        goto done;
    }
    if (cnt[0] != cnt[1] + cnt[2] + cnt[3] + cnt[4]) {
        canopy_err_set(e, CANOPY_ERR_FORMAT, "%s:2: line counts do not add up: total %lld != %lld + %lld + %lld + %lld", path,
                       (long long)cnt[0], (long long)cnt[1], (long long)cnt[2], (long long)cnt[3], (long long)cnt[4]);
        goto done;
    }
    if ((line = hb_line(&h, "the header (type and sizes)")) == NULL) goto done;
    {
        size_t len = strlen(line);
        for (int i = 0; i < 3; i++) type[i] = (char)((size_t)i < len ? toupper((unsigned char)line[i]) : ' ');
        type[3] = '\0';
        int ns = len > 3 ? header_ints(line + 3, sz, 4, &tok) : 0;
        if (strchr("RCPI", type[0]) == NULL || strchr("SUHZR", type[1]) == NULL || strchr("AE", type[2]) == NULL) {
            canopy_err_set(e, CANOPY_ERR_FORMAT, "%s:3: bad matrix type \"%s\": expected [RCP][SUHZR][AE]", path, type);
            goto done;
        }
        if (ns == HDR_RANGE) {
            canopy_err_set(e, CANOPY_ERR_FORMAT, "%s:3: size \"%.*s\" out of range (the header's I14 fields hold at most 14 digits)",
                           path, token_len(tok), tok);
            goto done;
        }
        if (ns < 3 || sz[0] < 0 || sz[1] < 0 || sz[2] < 0) {
            canopy_err_set(e, CANOPY_ERR_FORMAT, "%s:3: bad sizes \"%.60s\": expected NROW NCOL NNZERO [NELTVL]", path, line + CANOPY_MIN(len, 3));
            goto done;
        }
        if (type[2] == 'E') {
            canopy_err_set(e, CANOPY_ERR_UNSUPPORTED, "%s:3: elemental (unassembled, type %s) matrices are not supported; assemble the matrix first", path, type);
            goto done;
        }
        if (type[1] == 'R' || sz[0] != sz[1]) {
            canopy_err_set(e, CANOPY_ERR_MATRIX, "%s:3: matrix is not square (%lld x %lld, type %s)", path, (long long)sz[0], (long long)sz[1], type);
            goto done;
        }
        if (sz[0] < 1) {
            canopy_err_set(e, CANOPY_ERR_FORMAT, "%s:3: bad order %lld", path, (long long)sz[0]);
            goto done;
        }
        if (sz[0] > CINT_MAX - 1 || sz[2] > CINT_MAX - 1) {
            canopy_err_set(e, CANOPY_ERR_TOO_LARGE, "%s:3: problem too large for the index type (%lld rows, %lld entries)", path,
                           (long long)sz[0], (long long)sz[2]);
            goto done;
        }
        /* too few entries to cover every column: singular, and refused before n-sized arrays are
         * allocated (a tiny file announcing 2e9 rows must not exhaust memory) */
        if ((double)sz[2] < (type[1] == 'U' ? (double)sz[0] : (double)sz[0] / 2)) {
            canopy_err_set(e, CANOPY_ERR_SINGULAR, "%s:3: structurally singular: %lld entries cannot cover the %lld columns",
                           path, (long long)sz[2], (long long)sz[0]);
            goto done;
        }
    }
    const cint n = (cint)sz[0];
    const int64_t nnz = sz[2];
    const bool pattern = type[0] == 'P';
    const int vsz = pattern ? 0 : type[0] == 'C' ? 2 : 1;
    if ((double)nnz > (type[1] == 'U' ? (double)n * n : (double)n * ((double)n + 1) / 2)) {
        canopy_err_set(e, CANOPY_ERR_FORMAT, "%s:3: %lld entries cannot fit in a %lld x %lld %s", path, (long long)nnz, (long long)n,
                       (long long)n, type[1] == 'U' ? "matrix" : "triangle");
        goto done;
    }

    if ((line = hb_line(&h, "the header (formats)")) == NULL) goto done;
    fp = canopy_alloc(1, sizeof *fp, "format", e);
    fi = canopy_alloc(1, sizeof *fi, "format", e);
    fv = canopy_alloc(1, sizeof *fv, "format", e);
    if (!fp || !fi || !fv) goto done;
    {
        char txt[3][128];
        const char *p = line;
        int nf = 0;
        while (nf < 3 && next_paren(&p, txt[nf], sizeof txt[nf])) nf++;
        if (nf < (pattern ? 2 : 3)) {
            canopy_err_set(e, CANOPY_ERR_FORMAT, "%s:4: expected %s Fortran formats, found %d", path,
                           pattern ? "pointer and index" : "pointer, index and value", nf);
            goto done;
        }
        ffmt *fs[3] = {fp, fi, fv};
        static const char *const names[3] = {"pointer", "index", "value"};
        for (int q = 0; q < (pattern ? 2 : 3); q++) {
            if (!ff_parse(txt[q], fs[q])) {
                canopy_err_set(e, CANOPY_ERR_FORMAT, "%s:4: cannot parse the %s format \"%s\"", path, names[q], txt[q]);
                goto done;
            }
            for (int k = 0; q < 2 && k < fs[q]->nf; k++) {
                if (fs[q]->f[k].type != 'I') {
                    canopy_err_set(e, CANOPY_ERR_FORMAT, "%s:4: the %s format \"%s\" is not an integer format", path, names[q], txt[q]);
                    goto done;
                }
            }
        }
    }
    if (cnt[4] > 0 && (line = hb_line(&h, "the header (right-hand side line)")) == NULL) goto done;

    /* the line counts must match what the formats need, or sections would be misaligned */
    {
        int64_t need[3] = {ceil_div(n + 1, fp->nf), ceil_div(nnz, fi->nf), pattern ? 0 : ceil_div(vsz * nnz, fv->nf)};
        static const char *const names[3] = {"PTRCRD", "INDCRD", "VALCRD"};
        for (int q = 0; q < (pattern ? 2 : 3); q++) {
            if (cnt[q + 1] != need[q]) {
                canopy_err_set(e, CANOPY_ERR_FORMAT, "%s:2: %s is %lld but the sizes and formats need %lld lines", path,
                               names[q], (long long)cnt[q + 1], (long long)need[q]);
                goto done;
            }
        }
    }

    long ptr_line = lines_number(h.r) + 1;
    if (!hb_section(&h, fp, (int64_t)n + 1, &ptr, NULL, "column pointers")) goto done;
    long ind_line = lines_number(h.r) + 1;
    if (!hb_section(&h, fi, nnz, &ind, NULL, "row indices")) goto done;
    long val_line = lines_number(h.r) + 1;
    if (!pattern && !hb_section(&h, fv, vsz * nnz, NULL, &val, "values")) goto done;

    for (cint j = 0; j <= n; j++) {
        int64_t want = j == 0 ? 1 : ptr[j - 1];
        bool bad = j == 0 ? ptr[0] != 1 : ptr[j] < want;
        if (!bad && j == n) bad = ptr[n] != nnz + 1;
        if (bad) {
            canopy_err_set(e, CANOPY_ERR_FORMAT, "%s:%ld: column pointer %lld is %lld; pointers must start at 1, never decrease and end at NNZERO+1 = %lld",
                           path, ptr_line + (long)(j / fp->nf), (long long)j + 1, (long long)ptr[j], (long long)nnz + 1);
            goto done;
        }
    }

    /* triplets, with the checks that need the file position of an entry */
    int64_t total = nnz, off = 0;
    bool lower = false, upper = false;
    const bool sym = type[1] != 'U';
    row = canopy_alloc((size_t)nnz + 1, sizeof *row, "row indices", e);
    col = canopy_alloc((size_t)nnz + 1, sizeof *col, "column indices", e);
    if (!row || !col) goto done;
    for (cint j = 0; j < n; j++) {
        for (int64_t k = ptr[j] - 1; k < ptr[j + 1] - 1; k++) {
            long ln = ind_line + (long)(k / fi->nf);
            if (ind[k] < 1 || ind[k] > n) {
                canopy_err_set(e, CANOPY_ERR_MATRIX, "%s:%ld: row index %lld of column %lld out of range 1..%lld", path, ln,
                               (long long)ind[k], (long long)j + 1, (long long)n);
                goto done;
            }
            cint i = (cint)(ind[k] - 1);
            if (val) {
                for (int c = 0; c < vsz; c++) {
                    if (!isfinite(val[k * vsz + c])) {
                        canopy_err_set(e, CANOPY_ERR_MATRIX, "%s:%ld: value of entry (%lld, %lld) is not finite", path,
                                       val_line + (long)((k * vsz + c) / fv->nf), (long long)i + 1, (long long)j + 1);
                        goto done;
                    }
                }
            }
            if (sym && i != j) {
                bool lo = i > j;
                if ((lo && upper) || (!lo && lower)) {
                    canopy_err_set(e, CANOPY_ERR_MATRIX, "%s:%ld: entry (%lld, %lld) is in the %s triangle but earlier entries of this %s matrix are in the %s one",
                                   path, ln, (long long)i + 1, (long long)j + 1, lo ? "lower" : "upper", type, lo ? "upper" : "lower");
                    goto done;
                }
                if (lo) lower = true;
                else upper = true;
                off++;
            }
            if (type[1] == 'Z' && i == j && val && (val[k * vsz] != 0 || (vsz == 2 && val[k * vsz + 1] != 0))) {
                canopy_err_set(e, CANOPY_ERR_MATRIX, "%s:%ld: nonzero diagonal entry (%lld, %lld) in a skew-symmetric matrix", path, ln,
                               (long long)i + 1, (long long)j + 1);
                goto done;
            }
            row[k] = i;
            col[k] = j;
        }
    }
    canopy_free(ptr);
    canopy_free(ind);
    ptr = ind = NULL;

    if (type[1] == 'Z') {
        /* expand: a_ji = -a_ij */
        if (nnz + off > CINT_MAX - 1) {
            canopy_err_set(e, CANOPY_ERR_TOO_LARGE, "%s: expanded skew-symmetric matrix has too many entries for the index type", path);
            goto done;
        }
        cint *r2 = canopy_realloc(row, (size_t)(nnz + off) + 1, sizeof *row, "row indices", e);
        if (r2 == NULL) goto done;
        row = r2;
        cint *c2 = canopy_realloc(col, (size_t)(nnz + off) + 1, sizeof *col, "column indices", e);
        if (c2 == NULL) goto done;
        col = c2;
        if (val) {
            double *v2 = canopy_realloc(val, (size_t)(nnz + off) + 1, (size_t)vsz * sizeof(double), "values", e);
            if (v2 == NULL) goto done;
            val = v2;
        }
        for (int64_t k = 0; k < nnz; k++) {
            if (row[k] == col[k]) continue;
            row[total] = col[k];
            col[total] = row[k];
            for (int c = 0; val && c < vsz; c++) val[total * vsz + c] = -val[k * vsz + c];
            total++;
        }
    }

    int64_t dup[4] = {-1, -1, 0, 0};
    canopy_status st = io_build_csc(n, total, row, col, val, vsz, nnz, A, dup, e);
    row = col = NULL;
    val = NULL;
    if (st == CANOPY_ERR_MATRIX && e->status == CANOPY_SUCCESS)
        canopy_err_set(e, CANOPY_ERR_MATRIX, "%s:%ld: duplicate entry (%lld, %lld), already given on line %ld", path,
                       ind_line + (long)(dup[1] / fi->nf), (long long)dup[2] + 1, (long long)dup[3] + 1,
                       ind_line + (long)(dup[0] / fi->nf));
    if (st != CANOPY_SUCCESS) goto done;
    A->arith = pattern ? CANOPY_PATTERN : vsz == 2 ? CANOPY_COMPLEX : CANOPY_REAL;
    A->kind = CANOPY_KIND_GENERAL;
    A->triangle = CANOPY_TRIANGLE_BOTH;
    if (type[1] == 'S' || type[1] == 'H') {
        A->kind = (type[1] == 'H' && vsz == 2) ? CANOPY_KIND_HERMITIAN : CANOPY_KIND_SYMMETRIC;
        A->triangle = (upper && !lower) ? CANOPY_TRIANGLE_UPPER : CANOPY_TRIANGLE_LOWER;
    }

done:
    lines_close(h.r);
    canopy_free(fp);
    canopy_free(fi);
    canopy_free(fv);
    canopy_free(ptr);
    canopy_free(ind);
    canopy_free(val);
    canopy_free(row);
    canopy_free(col);
    if (e->status != CANOPY_SUCCESS) {
        matrix_free(A);
        return e->status;
    }
    return CANOPY_SUCCESS;
}
