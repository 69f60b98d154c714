/*
 * The line reader (base/lines.h): zlib's gzread reads plain and gzip files alike. Lines are cut out
 * of one growing buffer, so a line may have any length and most lines are returned without a
 * copy. The reader counts lines so every message can say "path:line: reason".
 */
#include "base/lines.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#ifndef IO_MAX_LINE
#define IO_MAX_LINE (1 << 26)
#endif

#ifndef IO_CHUNK
#define IO_CHUNK (1u << 18)
#endif

struct lines_reader {
    gzFile gz;
    char *buf;      /* bytes [pos, end) are read but not yet returned */
    size_t cap;
    size_t pos;
    size_t end;
    long line;      /* number of the line last returned */
    bool eof;
    char *path;
};

canopy_status lines_open(const char *path, lines_reader **r, canopy_err *err)
{
    if (path == NULL || r == NULL) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "lines_open: NULL argument");
    *r = NULL;
    lines_reader *rd = canopy_calloc(1, sizeof *rd, "file reader", err);
    if (rd == NULL) return err ? err->status : CANOPY_ERR_NOMEM;
    size_t plen = strlen(path);
    rd->path = canopy_alloc(plen + 1, 1, "file name", err);
    rd->cap = IO_CHUNK;
    rd->buf = canopy_alloc(rd->cap + 1, 1, "line buffer", err);
    if (rd->path == NULL || rd->buf == NULL) {
        lines_close(rd);
        return err ? err->status : CANOPY_ERR_NOMEM;
    }
    memcpy(rd->path, path, plen + 1);
    errno = 0;
    rd->gz = gzopen(path, "rb");
    if (rd->gz == NULL) {
        int e = errno;
        canopy_status st = canopy_err_set(err, CANOPY_ERR_IO, "%s: cannot open: %s", path,
                                          e ? strerror(e) : "out of memory in zlib");
        lines_close(rd);
        return st;
    }
    gzbuffer(rd->gz, IO_CHUNK);
    *r = rd;
    return CANOPY_SUCCESS;
}

/* Read more bytes after the unread part; grows the buffer when one line fills it. */
static bool lines_fill(lines_reader *r, canopy_err *err)
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

const char *lines_next(lines_reader *r, canopy_err *err)
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
        if (!lines_fill(r, err)) return NULL;
        scanned = done;
    }
}

long lines_number(const lines_reader *r) { return r ? r->line : 0; }

const char *lines_path(const lines_reader *r) { return r ? r->path : ""; }

void lines_close(lines_reader *r)
{
    if (r == NULL) return;
    if (r->gz) gzclose(r->gz);
    canopy_free(r->buf);
    canopy_free(r->path);
    canopy_free(r);
}
