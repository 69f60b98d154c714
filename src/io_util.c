/*
 * Line reader shared by the matrix file readers, and the public entry point canopy_read_matrix()
 * that picks a reader from the file name (or from the first line when the name says nothing).
 *
 * zlib's gzread reads plain and gzip files alike. Lines are cut out of one growing buffer, so a
 * line may have any length and most lines are returned without a copy. The reader counts lines so
 * every message can say "path:line: reason". Parsing of the formats lives in io_mm.c / io_hb.c.
 */
#include "common.h"
#include "io_util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

/* The fuzz targets (tests/fuzz) build with a tiny chunk and line limit, so that refills in the
 * middle of a line, buffer growth and the line limit are reached by inputs of a few KiB. */
#ifndef IO_MAX_LINE
#define IO_MAX_LINE (1 << 26)
#endif

#ifndef IO_CHUNK
#define IO_CHUNK (1u << 18)
#endif

struct io_reader {
    gzFile gz;
    char *buf;      /* bytes [pos, end) are read but not yet returned */
    size_t cap;
    size_t pos;
    size_t end;
    long line;      /* number of the line last returned */
    bool eof;
    char *path;
};

canopy_status io_open(const char *path, io_reader **r, canopy_err *err)
{
    if (path == NULL || r == NULL) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "io_open: NULL argument");
    *r = NULL;
    io_reader *rd = canopy_calloc(1, sizeof *rd, "file reader", err);
    if (rd == NULL) return err ? err->status : CANOPY_ERR_NOMEM;
    size_t plen = strlen(path);
    rd->path = canopy_alloc(plen + 1, 1, "file name", err);
    rd->cap = IO_CHUNK;
    rd->buf = canopy_alloc(rd->cap + 1, 1, "line buffer", err);
    if (rd->path == NULL || rd->buf == NULL) {
        io_close(rd);
        return err ? err->status : CANOPY_ERR_NOMEM;
    }
    memcpy(rd->path, path, plen + 1);
    errno = 0;
    rd->gz = gzopen(path, "rb");
    if (rd->gz == NULL) {
        int e = errno;
        canopy_status st = canopy_err_set(err, CANOPY_ERR_IO, "%s: cannot open: %s", path,
                                          e ? strerror(e) : "out of memory in zlib");
        io_close(rd);
        return st;
    }
    gzbuffer(rd->gz, IO_CHUNK);
    *r = rd;
    return CANOPY_SUCCESS;
}

/* Read more bytes after the unread part; grows the buffer when one line fills it. */
static bool io_fill(io_reader *r, canopy_err *err)
{
    if (r->pos > 0) {
        memmove(r->buf, r->buf + r->pos, r->end - r->pos);
        r->end -= r->pos;
        r->pos = 0;
    }
    if (r->end == r->cap) {
        /* no matrix file has lines this long: stop garbage (or /dev/zero) before it eats memory */
        if (r->cap >= IO_MAX_LINE) {
            canopy_err_set(err, CANOPY_ERR_FORMAT, "%s:%ld: line longer than %d MiB: not a matrix file", r->path,
                           r->line + 1, IO_MAX_LINE >> 20);
            return false;
        }
        char *nb = canopy_realloc(r->buf, 2 * r->cap + 1, 1, "line buffer", err);
        if (nb == NULL) return false;
        r->buf = nb;
        r->cap *= 2;
    }
    size_t want = r->cap - r->end;
    if (want > (size_t)INT32_MAX) want = (size_t)INT32_MAX;
    int got = gzread(r->gz, r->buf + r->end, (unsigned)want);
    if (got < 0) {
        int zerr;
        const char *zmsg = gzerror(r->gz, &zerr);
        canopy_err_set(err, CANOPY_ERR_IO, "%s:%ld: read error: %s", r->path, r->line + 1,
                       zerr == Z_ERRNO ? strerror(errno) : zmsg);
        return false;
    }
    if (got == 0) {
        /* A gzip stream cut short reads as a clean end of file; zlib flags it as Z_BUF_ERROR. */
        int zerr;
        const char *zmsg = gzerror(r->gz, &zerr);
        if (zerr != Z_OK && zerr != Z_STREAM_END) {
            canopy_err_set(err, CANOPY_ERR_IO, "%s:%ld: read error: %s", r->path, r->line + 1,
                           zerr == Z_BUF_ERROR ? "truncated compressed file" : zmsg);
            return false;
        }
        r->eof = true;
    }
    r->end += (size_t)got;
    return true;
}

const char *io_next_line(io_reader *r, canopy_err *err)
{
    if (r == NULL) return NULL;
    size_t scanned = r->pos;
    for (;;) {
        char *nl = memchr(r->buf + scanned, '\n', r->end - scanned);
        if (nl != NULL) {
            char *start = r->buf + r->pos;
            *nl = '\0';
            if (nl > start && nl[-1] == '\r') nl[-1] = '\0';
            r->pos = (size_t)(nl - r->buf) + 1;
            r->line++;
            return start;
        }
        if (r->eof) {
            if (r->pos == r->end) return NULL;
            /* last line without a newline: the buffer always keeps one spare byte for the NUL */
            char *start = r->buf + r->pos;
            r->buf[r->end] = '\0';
            if (r->end > r->pos && r->buf[r->end - 1] == '\r') r->buf[r->end - 1] = '\0';
            r->pos = r->end;
            r->line++;
            return start;
        }
        size_t done = r->end - r->pos;
        if (!io_fill(r, err)) return NULL;
        scanned = done;
    }
}

long io_line_number(const io_reader *r) { return r ? r->line : 0; }

const char *io_path(const io_reader *r) { return r ? r->path : ""; }

void io_close(io_reader *r)
{
    if (r == NULL) return;
    if (r->gz) gzclose(r->gz);
    canopy_free(r->buf);
    canopy_free(r->path);
    canopy_free(r);
}

/* Case-insensitive "does s end with suffix". */
static bool ends_with(const char *s, size_t len, const char *suffix)
{
    size_t k = strlen(suffix);
    if (len < k) return false;
    for (size_t i = 0; i < k; i++)
        if (tolower((unsigned char)s[len - k + i]) != tolower((unsigned char)suffix[i])) return false;
    return true;
}

static bool starts_with_nocase(const char *s, const char *prefix)
{
    for (; *prefix; s++, prefix++)
        if (tolower((unsigned char)*s) != tolower((unsigned char)*prefix)) return false;
    return true;
}

enum { FMT_UNKNOWN, FMT_MM, FMT_HB };

static int format_from_name(const char *path)
{
    static const char *const hb[] = {".rb", ".rua", ".rsa", ".psa", ".pua", ".cua", ".csa",
                                     ".cha", ".cza", ".rza", ".hb"};
    size_t len = strlen(path);
    if (ends_with(path, len, ".gz")) len -= 3;
    if (ends_with(path, len, ".mtx") || ends_with(path, len, ".mm")) return FMT_MM;
    for (size_t i = 0; i < sizeof hb / sizeof hb[0]; i++)
        if (ends_with(path, len, hb[i])) return FMT_HB;
    return FMT_UNKNOWN;
}

CANOPY_EXPORT canopy_status canopy_read_matrix(const char *path, canopy_csc *A, char *msg, size_t msglen)
{
    canopy_err err;
    canopy_err_clear(&err);
    if (msg && msglen) msg[0] = '\0';
    if (path == NULL || A == NULL) {
        canopy_err_set(&err, CANOPY_ERR_ARGUMENT, "canopy_read_matrix: NULL %s", path ? "matrix" : "path");
    } else {
        memset(A, 0, sizeof *A);
        int fmt = format_from_name(path);
        if (fmt == FMT_UNKNOWN) {
            /* No telling suffix: a Matrix Market file announces itself on its first line. */
            io_reader *r;
            if (io_open(path, &r, &err) == CANOPY_SUCCESS) {
                const char *line = io_next_line(r, &err);
                if (err.status == CANOPY_SUCCESS)
                    fmt = (line && starts_with_nocase(line, "%%MatrixMarket")) ? FMT_MM : FMT_HB;
                io_close(r);
            }
        }
        if (fmt == FMT_MM) io_read_mm(path, A, &err);
        else if (fmt == FMT_HB) io_read_hb(path, A, &err);
    }
    if (err.status != CANOPY_SUCCESS && msg && msglen) snprintf(msg, msglen, "%s", err.msg);
    return err.status;
}

/* Keep the columns [j0, j1) of A, in place (the other columns become empty). */
static void keep_columns(canopy_csc *A, cint j0, cint j1)
{
    int vsz = A->arith == CANOPY_COMPLEX ? 2 : A->arith == CANOPY_PATTERN ? 0 : 1;
    double *v = A->values;
    cint b = (cint)A->base, first = A->colptr[j0] - b, last = A->colptr[j1] - b;
    memmove(A->rowind, A->rowind + first, (size_t)(last - first) * sizeof(cint));
    if (vsz) memmove(v, v + (size_t)first * vsz, (size_t)(last - first) * vsz * sizeof(double));
    for (cint j = 0; j <= A->n; j++) {
        cint p = A->colptr[j] - b;
        A->colptr[j] = (p < first ? 0 : p > last ? last - first : p - first) + b;
    }
}

CANOPY_EXPORT canopy_status canopy_read_matrix_part(const char *path, int part, int nparts, canopy_csc *A, char *msg,
                                                    size_t msglen)
{
    canopy_err err;
    canopy_err_clear(&err);
    if (msg && msglen) msg[0] = '\0';
    if (path == NULL || A == NULL) {
        canopy_err_set(&err, CANOPY_ERR_ARGUMENT, "canopy_read_matrix_part: NULL %s", path ? "matrix" : "path");
    } else if (nparts < 1 || part < 0 || part >= nparts) {
        memset(A, 0, sizeof *A);
        canopy_err_set(&err, CANOPY_ERR_ARGUMENT, "canopy_read_matrix_part: part %d of %d (must be 0 <= part < nparts)",
                       part, nparts);
    } else {
        memset(A, 0, sizeof *A);
        int fmt = format_from_name(path);
        if (fmt == FMT_UNKNOWN) {
            io_reader *r;
            if (io_open(path, &r, &err) == CANOPY_SUCCESS) {
                const char *line = io_next_line(r, &err);
                if (err.status == CANOPY_SUCCESS)
                    fmt = (line && starts_with_nocase(line, "%%MatrixMarket")) ? FMT_MM : FMT_HB;
                io_close(r);
            }
        }
        if (fmt == FMT_MM) {
            io_read_mm_part(path, part, nparts, A, &err);
        } else if (fmt == FMT_HB && io_read_hb(path, A, &err) == CANOPY_SUCCESS) {
            /* Harwell-Boeing: read whole (a compressed file cannot be entered in the middle), cut */
            keep_columns(A, (cint)((int64_t)A->n * part / nparts), (cint)((int64_t)A->n * (part + 1) / nparts));
        }
    }
    if (err.status != CANOPY_SUCCESS && msg && msglen) snprintf(msg, msglen, "%s", err.msg);
    return err.status;
}

/* ---- triplets -> CSC ------------------------------------------------------------------------ */

/*
 * Sort entries k = 0..nz-1 by (column, row) with two stable counting sorts (by row, then by
 * column) and build A's arrays. Takes ownership of row, col and val (vsz doubles per entry, val
 * NULL for a pattern). A duplicate (same row and column twice) makes it return CANOPY_ERR_MATRIX
 * without a message, with dup[0] < dup[1] the entry numbers of the first duplicate in file order
 * whose entries are both below @p limit (mirrored entries of a skew file lie at or above it), and
 * dup[2], dup[3] its 0-based row and column.
 */
canopy_status io_build_csc(cint n, int64_t nz, cint *row, cint *col, double *val, int vsz,
                               int64_t limit, canopy_csc *A, int64_t dup[4], canopy_err *err)
{
    canopy_status st = CANOPY_SUCCESS;
    cint *cnt = canopy_calloc((size_t)n + 1, sizeof(cint), "column counts", err);
    cint *colptr = canopy_calloc((size_t)n + 1, sizeof(cint), "column pointers", err);
    cint *t = canopy_alloc((size_t)nz + 1, sizeof(cint), "row indices", err);
    cint *perm = canopy_alloc((size_t)nz + 1, sizeof(cint), "entry order", err);
    double *v = NULL;
    if (!cnt || !colptr || !t || !perm) goto fail;
    for (int64_t k = 0; k < nz; k++) cnt[row[k] + 1]++;
    for (cint i = 0; i < n; i++) cnt[i + 1] += cnt[i];
    for (int64_t k = 0; k < nz; k++) t[cnt[row[k]]++] = (cint)k;
    for (int64_t k = 0; k < nz; k++) colptr[col[k] + 1]++;
    for (cint j = 0; j < n; j++) colptr[j + 1] += colptr[j];
    memcpy(cnt, colptr, (size_t)n * sizeof(cint));
    for (int64_t q = 0; q < nz; q++) {
        cint k = t[q];
        perm[cnt[col[k]]++] = k;
    }
    for (int64_t p = 0; p < nz; p++) t[p] = row[perm[p]];
    dup[0] = dup[1] = -1;
    for (cint j = 0; j < n; j++) {
        for (cint p = colptr[j] + 1; p < colptr[j + 1]; p++) {
            if (t[p] == t[p - 1] && perm[p] < limit && perm[p - 1] < limit && (dup[1] < 0 || perm[p] < dup[1])) {
                dup[0] = perm[p - 1];
                dup[1] = perm[p];
                dup[2] = t[p];
                dup[3] = j;
            }
        }
    }
    if (dup[1] >= 0) {
        st = CANOPY_ERR_MATRIX;
        goto out;
    }
    if (val != NULL) {
        v = canopy_alloc((size_t)nz + 1, (size_t)vsz * sizeof(double), "values", err);
        if (v == NULL) goto fail;
        for (int64_t p = 0; p < nz; p++)
            for (int c = 0; c < vsz; c++) v[p * vsz + c] = val[(size_t)perm[p] * vsz + c];
    }
    A->n = n;
    A->colptr = colptr;
    A->rowind = t;
    A->values = v;
    A->base = 0;
    colptr = t = NULL;
    goto out;
fail:
    st = err ? err->status : CANOPY_ERR_NOMEM;
    if (st == CANOPY_SUCCESS) st = CANOPY_ERR_NOMEM;
out:
    canopy_free(cnt);
    canopy_free(colptr);
    canopy_free(t);
    canopy_free(perm);
    canopy_free(row);
    canopy_free(col);
    canopy_free(val);
    return st;
}
