/*
 * The public entry points canopy_read_matrix() and canopy_read_matrix_part(): pick a reader
 * (read_mm.c, read_hb.c) from the file name, or from the first line when the name says nothing.
 */
#include "base/common.h"
#include "base/lines.h"
#include "io/io.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

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
            lines_reader *r;
            if (lines_open(path, &r, &err) == CANOPY_SUCCESS) {
                const char *line = lines_next(r, &err);
                if (err.status == CANOPY_SUCCESS)
                    fmt = (line && starts_with_nocase(line, "%%MatrixMarket")) ? FMT_MM : FMT_HB;
                lines_close(r);
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
            lines_reader *r;
            if (lines_open(path, &r, &err) == CANOPY_SUCCESS) {
                const char *line = lines_next(r, &err);
                if (err.status == CANOPY_SUCCESS)
                    fmt = (line && starts_with_nocase(line, "%%MatrixMarket")) ? FMT_MM : FMT_HB;
                lines_close(r);
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
