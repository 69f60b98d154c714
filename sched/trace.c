/*
 * Trace files of the threaded scheduler (format in trace.h): the writer the phase driver calls
 * after a traced run, the strict reader the canopy-trace tool and the tests use, and the per-thread
 * statistics both the tool and a verbose run can print. Nothing here draws or times anything.
 *
 * The writer validates the events before touching the file, so that whatever it writes the reader
 * accepts: an engine bug (a task recorded twice, two tasks overlapping on one thread) is reported
 * to the caller instead of surfacing later as an unreadable trace.
 */
#include "base/common.h"
#include "trace.h"
#include "base/lines.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const sched_trace_kinds[] = {
    [SCHED_TASK_PANEL] = "panel",
    [SCHED_TASK_UPDATE] = "update",
    [SCHED_TASK_SUBTREE] = "subtree",
    [SCHED_TASK_FORWARD] = "forward",
    [SCHED_TASK_BACKWARD] = "backward",
    [SCHED_TASK_DIAG] = "diag",
    [SCHED_TASK_TRSM] = "trsm",
    [SCHED_TASK_UPDATE2D] = "update2d",
};
#define SCHED_TRACE_NKINDS ((int)(sizeof sched_trace_kinds / sizeof sched_trace_kinds[0]))

const char *sched_trace_kind_name(int kind)
{
    return kind >= 0 && kind < SCHED_TRACE_NKINDS ? sched_trace_kinds[kind] : NULL;
}

/* A token of the format: 1..63 printable, non-blank ASCII characters. */
static bool sched_trace_token_ok(const char *s)
{
    if (s == NULL || s[0] == '\0') return false;
    size_t n = 0;
    for (; s[n] != '\0'; n++)
        if ((unsigned char)s[n] <= 0x20 || (unsigned char)s[n] >= 0x7f || n >= SCHED_TRACE_NAME_MAX) return false;
    return true;
}

/* ---- writer ---------------------------------------------------------------------------------- */

/* A model's estimate as the format takes it: anything unusable (NaN, negative, huge) becomes 0. */
static double sched_trace_estimate(double v)
{
    return v >= 0 && v <= SCHED_TRACE_MAX_SECONDS ? v : 0;
}

/* Thread, then start; end and task only make the order (and so the file) deterministic. */
static int sched_trace_event_cmp(const void *pa, const void *pb)
{
    const sched_event *a = pa, *b = pb;
    if (a->thread != b->thread) return a->thread < b->thread ? -1 : 1;
    if (a->start != b->start) return a->start < b->start ? -1 : 1;
    if (a->end != b->end) return a->end < b->end ? -1 : 1;
    return (a->task > b->task) - (a->task < b->task);
}

/*
 * Appending to a file that is not a trace would produce something no reader accepts; look at its
 * first non-comment line first. *need_header is set when the file is missing or empty.
 */
static canopy_status sched_trace_check_existing(const char *path, bool *need_header, canopy_err *err)
{
    *need_header = true;
    errno = 0;
    FILE *fp = fopen(path, "r");
    if (fp == NULL) {
        if (errno == ENOENT) return CANOPY_SUCCESS;
        return canopy_err_set(err, CANOPY_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    }
    char line[256];
    bool any = false, ok = false;
    while (fgets(line, sizeof line, fp) != NULL) {
        size_t len = strlen(line);
        bool whole = len > 0 && line[len - 1] == '\n';
        const char *p = line + strspn(line, " \t\r\n");
        if (*p == '\0') continue; /* blank (or the blank start of a long line) */
        any = true;
        if (*p == '#') {
            /* skip the rest of a long comment line */
            while (!whole && fgets(line, sizeof line, fp) != NULL) {
                len = strlen(line);
                whole = len > 0 && line[len - 1] == '\n';
            }
            continue;
        }
        /* the only header this writer can continue: "canopy-trace 1" and blanks */
        static const char hdr[] = "canopy-trace";
        if (strncmp(p, hdr, sizeof hdr - 1) == 0 && (p[sizeof hdr - 1] == ' ' || p[sizeof hdr - 1] == '\t')) {
            char *end;
            errno = 0;
            long version = strtol(p + sizeof hdr - 1, &end, 10);
            ok = errno == 0 && end != p + sizeof hdr - 1 && version == SCHED_TRACE_VERSION &&
                 end[strspn(end, " \t\r\n")] == '\0';
        }
        break;
    }
    bool readerr = ferror(fp) != 0;
    fclose(fp);
    if (readerr) return canopy_err_set(err, CANOPY_ERR_IO, "%s: read error", path);
    if (!any) return CANOPY_SUCCESS;
    *need_header = false;
    if (!ok)
        return canopy_err_set(err, CANOPY_ERR_FORMAT,
                              "%s: not a version %d Canopy trace: refusing to append a phase to it", path,
                              SCHED_TRACE_VERSION);
    return CANOPY_SUCCESS;
}

canopy_status sched_trace_write(const char *path, int append, const char *phase, const char *scheduler,
                                const sched_dag *dag, const sched_event *events, int nthreads,
                                const int *thread_core_os, const int *thread_node, double wall,
                                canopy_err *err)
{
    if (path == NULL || dag == NULL || (events == NULL && dag->ntasks > 0))
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_trace_write: NULL argument");
    if (!sched_trace_token_ok(phase) || !sched_trace_token_ok(scheduler))
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT,
                              "sched_trace_write: phase and scheduler names must be 1..%d printable "
                              "characters without blanks", SCHED_TRACE_NAME_MAX);
    if (nthreads < 1 || nthreads > SCHED_TRACE_MAX_THREADS)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_trace_write: %d threads is out of range 1..%d",
                              nthreads, SCHED_TRACE_MAX_THREADS);
    if (dag->ntasks < 0 || (dag->ntasks > 0 && (dag->kind == NULL || dag->cblk == NULL || dag->level == NULL)))
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_trace_write: task graph without trace arrays");
    if (!isfinite(wall) || wall < 0 || wall > SCHED_TRACE_MAX_SECONDS)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_trace_write: wall time %g is not a duration", wall);
    for (int t = 0; t < nthreads; t++) {
        if ((thread_core_os != NULL && thread_core_os[t] < -1) || (thread_node != NULL && thread_node[t] < 0))
            return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_trace_write: thread %d: core %d, node %d",
                                  t, thread_core_os ? thread_core_os[t] : -1, thread_node ? thread_node[t] : 0);
    }

    int ntasks = dag->ntasks, n = 0;
    for (int i = 0; i < ntasks; i++) n += events[i].task >= 0;
    sched_event *ev = canopy_alloc((size_t)CANOPY_MAX(n, 1), sizeof *ev, "trace events", err);
    unsigned char *seen = canopy_calloc((size_t)CANOPY_MAX(ntasks, 1), 1, "trace task flags", err);
    canopy_status st = CANOPY_SUCCESS;
    FILE *fp = NULL;
    if (ev == NULL || seen == NULL) {
        st = err ? err->status : CANOPY_ERR_NOMEM;
        goto done;
    }
    n = 0;
    double last_end = 0;
    for (int i = 0; i < ntasks; i++) {
        const sched_event *e = &events[i];
        if (e->task < 0) continue;
        const char *why = NULL;
        if (e->task >= ntasks) why = "task number out of range";
        else if (seen[e->task]) why = "task recorded twice";
        else if (e->thread < 0 || e->thread >= nthreads) why = "thread out of range";
        else if (e->victim < -1 || e->victim >= nthreads || e->victim == e->thread) why = "bad victim thread";
        else if (!(e->start >= 0 && e->end >= e->start && e->end <= SCHED_TRACE_MAX_SECONDS)) why = "bad times";
        else if (sched_trace_kind_name(dag->kind[e->task]) == NULL) why = "unknown task kind";
        else if (dag->level[e->task] < 0 || dag->cblk[e->task] < -1) why = "bad level or cblk";
        if (why != NULL) {
            st = canopy_err_set(err, CANOPY_ERR_ARGUMENT,
                                "sched_trace_write: event %d (task %d, thread %d, victim %d, %g..%g s): %s", i,
                                e->task, e->thread, e->victim, e->start, e->end, why);
            goto done;
        }
        seen[e->task] = 1;
        ev[n++] = *e;
        if (e->end > last_end) last_end = e->end;
    }
    qsort(ev, (size_t)n, sizeof *ev, sched_trace_event_cmp);
    for (int i = 1; i < n; i++) {
        if (ev[i].thread == ev[i - 1].thread && ev[i].start < ev[i - 1].end) {
            st = canopy_err_set(err, CANOPY_ERR_ARGUMENT,
                                "sched_trace_write: tasks %d and %d overlap on thread %d (%.9f < %.9f)",
                                ev[i - 1].task, ev[i].task, ev[i].thread, ev[i].start, ev[i - 1].end);
            goto done;
        }
    }
    /* the caller's wall may come from another clock reading than the events: keep END <= W true */
    if (wall < last_end) wall = last_end;
    double predicted = sched_trace_estimate(dag->predicted_time);

    bool need_header = true;
    if (append) {
        st = sched_trace_check_existing(path, &need_header, err);
        if (st != CANOPY_SUCCESS) goto done;
    }
    errno = 0;
    fp = fopen(path, append ? "a" : "w");
    if (fp == NULL) {
        st = canopy_err_set(err, CANOPY_ERR_IO, "%s: cannot open for writing: %s", path, strerror(errno));
        goto done;
    }
    if (need_header) fprintf(fp, "canopy-trace %d\n", SCHED_TRACE_VERSION);
    fprintf(fp, "phase %s threads %d tasks %d scheduler %s wall %.9f predicted %.9f\n", phase, nthreads, n,
            scheduler, wall, predicted);
    for (int t = 0; t < nthreads; t++)
        fprintf(fp, "thread %d core %d node %d\n", t, thread_core_os ? thread_core_os[t] : -1,
                thread_node ? thread_node[t] : 0);
    fprintf(fp, "# task thread start end id kind cblk level victim cost\n");
    for (int i = 0; i < n; i++) {
        const sched_event *e = &ev[i];
        double cost = dag->cost != NULL ? sched_trace_estimate(dag->cost[e->task]) : 0;
        fprintf(fp, "task %d %.9f %.9f %d %s %d %d %d %.9g\n", e->thread, e->start, e->end, e->task,
                sched_trace_kinds[dag->kind[e->task]], dag->cblk[e->task], dag->level[e->task], e->victim, cost);
    }
    {
        /* fprintf errors are sticky: one check at the end catches a full disk anywhere above */
        bool failed = ferror(fp) != 0;
        int e1 = errno;
        errno = 0;
        failed |= fclose(fp) != 0;
        int e = errno != 0 ? errno : e1;
        fp = NULL;
        if (failed)
            st = canopy_err_set(err, CANOPY_ERR_IO, "%s: write error: %s", path, e ? strerror(e) : "unknown cause");
    }
done:
    if (fp != NULL) fclose(fp);
    canopy_free(ev);
    canopy_free(seen);
    return st;
}

/* ---- reader ---------------------------------------------------------------------------------- */

#define SCHED_TRACE_MAXTOK 16

typedef struct sched_trace_rd {
    lines_reader *io;
    const char *path;
    canopy_err e;                       /* local, so checks work whatever the caller passed */
    int ntok;
    const char *tok[SCHED_TRACE_MAXTOK];
    size_t len[SCHED_TRACE_MAXTOK];
} sched_trace_rd;

static canopy_status sched_trace_bad(sched_trace_rd *r, const char *fmt, ...) CANOPY_PRINTF(2, 3);
static canopy_status sched_trace_bad(sched_trace_rd *r, const char *fmt, ...)
{
    char why[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return canopy_err_set(&r->e, CANOPY_ERR_FORMAT, "%s:%ld: %s", r->path, lines_number(r->io), why);
}

/*
 * Next line that is not blank or a comment, cut into blank-separated tokens (pointers into the
 * reader's buffer, valid until the next call). Returns 1, 0 at end of file, -1 on error.
 */
static int sched_trace_next(sched_trace_rd *r)
{
    for (;;) {
        const char *line = lines_next(r->io, &r->e);
        if (line == NULL) return r->e.status != CANOPY_SUCCESS ? -1 : 0;
        const char *p = line + strspn(line, " \t\r");
        if (*p == '\0' || *p == '#') continue;
        r->ntok = 0;
        while (*p != '\0') {
            size_t l = strcspn(p, " \t\r");
            if (r->ntok == SCHED_TRACE_MAXTOK) {
                sched_trace_bad(r, "too many fields");
                return -1;
            }
            r->tok[r->ntok] = p;
            r->len[r->ntok++] = l;
            p += l;
            p += strspn(p, " \t\r");
        }
        return 1;
    }
}

static bool sched_trace_is(const sched_trace_rd *r, int i, const char *word)
{
    return i < r->ntok && r->len[i] == strlen(word) && memcmp(r->tok[i], word, r->len[i]) == 0;
}

/* Token i into buf (NUL-terminated), for messages and number parsing; long tokens are cut. */
static const char *sched_trace_tok(const sched_trace_rd *r, int i, char *buf, size_t cap)
{
    size_t l = CANOPY_MIN(r->len[i], cap - 1);
    memcpy(buf, r->tok[i], l);
    buf[l] = '\0';
    return buf;
}

/* Fields: the line must have exactly n tokens and, at the even positions from 0, the given keywords. */
static canopy_status sched_trace_shape(sched_trace_rd *r, int n, const char *const *words, int nwords,
                                       const char *what)
{
    for (int k = 0; k < nwords; k++) {
        if (!sched_trace_is(r, 2 * k, words[k])) {
            if (2 * k >= r->ntok) return sched_trace_bad(r, "%s line: '%s' missing", what, words[k]);
            char b[32];
            return sched_trace_bad(r, "%s line: expected '%s', found '%s'", what, words[k],
                                   sched_trace_tok(r, 2 * k, b, sizeof b));
        }
    }
    if (r->ntok < n) return sched_trace_bad(r, "%s line: %d fields, expected %d", what, r->ntok, n);
    if (r->ntok > n) {
        char b[32];
        return sched_trace_bad(r, "%s line: unexpected '%s' after the last field", what,
                               sched_trace_tok(r, n, b, sizeof b));
    }
    return CANOPY_SUCCESS;
}

static canopy_status sched_trace_int(sched_trace_rd *r, int i, const char *name, long lo, long hi, int *out)
{
    char b[40];
    if (r->len[i] >= sizeof b) return sched_trace_bad(r, "%s: '%.20s...' is not an integer", name, r->tok[i]);
    sched_trace_tok(r, i, b, sizeof b);
    char *end;
    errno = 0;
    long v = strtol(b, &end, 10);
    if (end == b || *end != '\0') return sched_trace_bad(r, "%s: '%s' is not an integer", name, b);
    if (errno == ERANGE || v < lo || v > hi)
        return sched_trace_bad(r, "%s %s is out of range %ld..%ld", name, b, lo, hi);
    *out = (int)v;
    return CANOPY_SUCCESS;
}

static canopy_status sched_trace_num(sched_trace_rd *r, int i, const char *name, double *out)
{
    char b[40];
    if (r->len[i] >= sizeof b) return sched_trace_bad(r, "%s: '%.20s...' is not a number", name, r->tok[i]);
    sched_trace_tok(r, i, b, sizeof b);
    char *end;
    errno = 0;
    double v = strtod(b, &end);
    if (end == b || *end != '\0') return sched_trace_bad(r, "%s: '%s' is not a number", name, b);
    if (!(v >= 0 && v <= SCHED_TRACE_MAX_SECONDS))
        return sched_trace_bad(r, "%s %s is out of range 0..%g seconds", name, b, SCHED_TRACE_MAX_SECONDS);
    *out = v;
    return CANOPY_SUCCESS;
}

static canopy_status sched_trace_name(sched_trace_rd *r, int i, const char *name, char *out)
{
    if (r->len[i] > SCHED_TRACE_NAME_MAX)
        return sched_trace_bad(r, "%s '%.20s...' is longer than %d characters", name, r->tok[i],
                               SCHED_TRACE_NAME_MAX);
    sched_trace_tok(r, i, out, SCHED_TRACE_NAME_MAX + 1);
    if (!sched_trace_token_ok(out)) return sched_trace_bad(r, "%s: non-printable character", name);
    return CANOPY_SUCCESS;
}

typedef struct sched_trace_idline {
    int id;
    long line;
} sched_trace_idline;

static int sched_trace_idline_cmp(const void *pa, const void *pb)
{
    const sched_trace_idline *a = pa, *b = pb;
    if (a->id != b->id) return a->id < b->id ? -1 : 1;
    return (a->line > b->line) - (a->line < b->line);
}

static void sched_trace_phase_free(sched_trace_phase *p)
{
    canopy_free(p->core_os);
    canopy_free(p->node);
    canopy_free(p->tasks);
    canopy_free(p->thread_ptr);
}

/* One task line into p->tasks[k], checked against the previous task and the phase header. */
static canopy_status sched_trace_task_line(sched_trace_rd *r, sched_trace_phase *p, int k)
{
    static const char *const w[] = {"task"};
    canopy_status st = sched_trace_shape(r, 10, w, 1, "task");
    if (st != CANOPY_SUCCESS) return st;
    sched_trace_task *t = &p->tasks[k];
    char kb[16];
    if ((st = sched_trace_int(r, 1, "thread", 0, p->nthreads - 1, &t->thread)) != CANOPY_SUCCESS ||
        (st = sched_trace_num(r, 2, "start", &t->start)) != CANOPY_SUCCESS ||
        (st = sched_trace_num(r, 3, "end", &t->end)) != CANOPY_SUCCESS ||
        (st = sched_trace_int(r, 4, "task id", 0, INT_MAX, &t->id)) != CANOPY_SUCCESS ||
        (st = sched_trace_int(r, 6, "cblk", -1, INT_MAX, &t->cblk)) != CANOPY_SUCCESS ||
        (st = sched_trace_int(r, 7, "level", 0, INT_MAX, &t->level)) != CANOPY_SUCCESS ||
        (st = sched_trace_int(r, 8, "victim", -1, p->nthreads - 1, &t->victim)) != CANOPY_SUCCESS ||
        (st = sched_trace_num(r, 9, "cost", &t->cost)) != CANOPY_SUCCESS)
        return st;
    t->kind = -1;
    for (int c = 0; c < SCHED_TRACE_NKINDS; c++)
        if (sched_trace_is(r, 5, sched_trace_kinds[c])) t->kind = c;
    if (t->kind < 0) return sched_trace_bad(r, "unknown task kind '%s'", sched_trace_tok(r, 5, kb, sizeof kb));
    if (t->end < t->start) return sched_trace_bad(r, "task ends (%.9f) before it starts (%.9f)", t->end, t->start);
    if (t->end > p->wall)
        return sched_trace_bad(r, "task ends at %.9f, after the phase's wall time %.9f", t->end, p->wall);
    if (t->victim == t->thread) return sched_trace_bad(r, "thread %d stole a task from itself", t->thread);
    if (k > 0) {
        const sched_trace_task *q = &p->tasks[k - 1];
        if (t->thread < q->thread)
            return sched_trace_bad(r, "task lines not sorted by thread (%d after %d)", t->thread, q->thread);
        if (t->thread == q->thread && t->start < q->end)
            return sched_trace_bad(r, "task starts at %.9f, before the previous task of thread %d ends (%.9f)",
                                   t->start, t->thread, q->end);
    }
    return CANOPY_SUCCESS;
}

/* The phase line just read, its thread lines and its task lines. */
static canopy_status sched_trace_read_phase(sched_trace_rd *r, sched_trace_phase *p)
{
    static const char *const w[] = {"phase", "threads", "tasks", "scheduler", "wall", "predicted"};
    canopy_status st = sched_trace_shape(r, 12, w, 6, "phase");
    if (st != CANOPY_SUCCESS) return st;
    if ((st = sched_trace_name(r, 1, "phase name", p->name)) != CANOPY_SUCCESS ||
        (st = sched_trace_int(r, 3, "threads", 1, SCHED_TRACE_MAX_THREADS, &p->nthreads)) != CANOPY_SUCCESS ||
        (st = sched_trace_int(r, 5, "tasks", 0, INT_MAX, &p->ntasks)) != CANOPY_SUCCESS ||
        (st = sched_trace_name(r, 7, "scheduler", p->scheduler)) != CANOPY_SUCCESS ||
        (st = sched_trace_num(r, 9, "wall", &p->wall)) != CANOPY_SUCCESS ||
        (st = sched_trace_num(r, 11, "predicted", &p->predicted)) != CANOPY_SUCCESS)
        return st;
    long phase_line = lines_number(r->io);
    size_t T = (size_t)p->nthreads;
    p->core_os = canopy_alloc(T, sizeof *p->core_os, "trace cores", &r->e);
    p->node = canopy_alloc(T, sizeof *p->node, "trace nodes", &r->e);
    p->thread_ptr = canopy_calloc(T + 1, sizeof *p->thread_ptr, "trace thread pointers", &r->e);
    if (p->core_os == NULL || p->node == NULL || p->thread_ptr == NULL) return r->e.status;

    static const char *const wt[] = {"thread", "core", "node"};
    for (int t = 0; t < p->nthreads; t++) {
        int got = sched_trace_next(r), num;
        if (got < 0) return r->e.status;
        if (got == 0)
            return sched_trace_bad(r, "end of file: phase '%s' (line %ld) declares %d threads, found %d", p->name,
                                   phase_line, p->nthreads, t);
        if ((st = sched_trace_shape(r, 6, wt, 3, "thread")) != CANOPY_SUCCESS ||
            (st = sched_trace_int(r, 1, "thread", 0, p->nthreads - 1, &num)) != CANOPY_SUCCESS ||
            (st = sched_trace_int(r, 3, "core", -1, INT_MAX, &p->core_os[t])) != CANOPY_SUCCESS ||
            (st = sched_trace_int(r, 5, "node", 0, INT_MAX, &p->node[t])) != CANOPY_SUCCESS)
            return st;
        if (num != t) return sched_trace_bad(r, "thread %d where thread %d was expected", num, t);
    }

    /* Grow with the lines actually present: a garbage count must not allocate by itself. */
    size_t cap = 0;
    sched_trace_idline *ids = NULL;
    p->max_level = -1;
    for (int k = 0; k < p->ntasks; k++) {
        int got = sched_trace_next(r);
        if (got < 0) goto fail;
        if (got == 0) {
            sched_trace_bad(r, "end of file: phase '%s' (line %ld) declares %d tasks, found %d", p->name, phase_line,
                            p->ntasks, k);
            goto fail;
        }
        if ((size_t)k == cap) {
            size_t nc = CANOPY_MIN((size_t)p->ntasks, CANOPY_MAX((size_t)1024, 2 * cap));
            sched_trace_task *nt = canopy_realloc(p->tasks, nc, sizeof *nt, "trace tasks", &r->e);
            if (nt == NULL) goto fail;
            p->tasks = nt;
            sched_trace_idline *ni = canopy_realloc(ids, nc, sizeof *ni, "trace task ids", &r->e);
            if (ni == NULL) goto fail;
            ids = ni;
            cap = nc;
        }
        if (sched_trace_task_line(r, p, k) != CANOPY_SUCCESS) goto fail;
        ids[k].id = p->tasks[k].id;
        ids[k].line = lines_number(r->io);
        p->thread_ptr[p->tasks[k].thread + 1]++;
        if (p->tasks[k].level > p->max_level) p->max_level = p->tasks[k].level;
    }
    if (p->ntasks > 0) {
        qsort(ids, (size_t)p->ntasks, sizeof *ids, sched_trace_idline_cmp);
        for (int k = 1; k < p->ntasks; k++) {
            if (ids[k].id == ids[k - 1].id) {
                canopy_err_set(&r->e, CANOPY_ERR_FORMAT, "%s:%ld: task id %d already used on line %ld", r->path,
                               ids[k].line, ids[k].id, ids[k - 1].line);
                goto fail;
            }
        }
    }
    canopy_free(ids);
    for (int t = 0; t < p->nthreads; t++) p->thread_ptr[t + 1] += p->thread_ptr[t];
    return CANOPY_SUCCESS;
fail:
    canopy_free(ids);
    return r->e.status;
}

canopy_status sched_trace_read(const char *path, sched_trace_file **out, canopy_err *err)
{
    if (path == NULL || out == NULL) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_trace_read: NULL argument");
    *out = NULL;
    sched_trace_rd r = {.path = path};
    canopy_err_clear(&r.e);
    sched_trace_file *f = NULL;
    canopy_status st = lines_open(path, &r.io, &r.e);
    if (st != CANOPY_SUCCESS) goto done;
    f = canopy_calloc(1, sizeof *f, "trace", &r.e);
    if (f == NULL) goto done;

    int got = sched_trace_next(&r);
    if (got < 0) goto done;
    if (got == 0) {
        canopy_err_set(&r.e, CANOPY_ERR_FORMAT, "%s: empty file, expected the header 'canopy-trace %d'", path,
                       SCHED_TRACE_VERSION);
        goto done;
    }
    if (!sched_trace_is(&r, 0, "canopy-trace") || r.ntok != 2) {
        sched_trace_bad(&r, "not a Canopy trace: expected the header 'canopy-trace %d'", SCHED_TRACE_VERSION);
        goto done;
    }
    if (sched_trace_int(&r, 1, "version", 0, INT_MAX, &f->version) != CANOPY_SUCCESS) goto done;
    if (f->version != SCHED_TRACE_VERSION) {
        sched_trace_bad(&r, "trace format version %d is not supported (this reader knows version %d)", f->version,
                        SCHED_TRACE_VERSION);
        goto done;
    }
    int cap = 0;
    while ((got = sched_trace_next(&r)) == 1) {
        if (!sched_trace_is(&r, 0, "phase")) {
            char b[32];
            sched_trace_bad(&r, "expected a 'phase' line, found '%s'", sched_trace_tok(&r, 0, b, sizeof b));
            goto done;
        }
        if (f->nphases == cap) {
            int nc = cap ? 2 * cap : 4;
            sched_trace_phase *np = canopy_realloc(f->phases, (size_t)nc, sizeof *np, "trace phases", &r.e);
            if (np == NULL) goto done;
            f->phases = np;
            cap = nc;
        }
        sched_trace_phase *p = &f->phases[f->nphases++];
        memset(p, 0, sizeof *p);
        if (sched_trace_read_phase(&r, p) != CANOPY_SUCCESS) goto done;
    }
    if (got == 0 && f->nphases == 0) sched_trace_bad(&r, "no phase in the trace");
done:
    if (r.io != NULL) lines_close(r.io);
    if (r.e.status != CANOPY_SUCCESS) {
        sched_trace_file_free(f);
        return canopy_err_set(err, r.e.status, "%s", r.e.msg);
    }
    *out = f;
    return CANOPY_SUCCESS;
}

void sched_trace_file_free(sched_trace_file *f)
{
    if (f == NULL) return;
    for (int i = 0; i < f->nphases; i++) sched_trace_phase_free(&f->phases[i]);
    canopy_free(f->phases);
    canopy_free(f);
}

/* ---- statistics ------------------------------------------------------------------------------ */

void sched_trace_phase_stats(const sched_trace_phase *p, sched_trace_stats *per_thread, sched_trace_stats *total)
{
    sched_trace_stats sum = {0};
    for (int t = 0; t < p->nthreads; t++) {
        sched_trace_stats s = {0};
        for (int k = p->thread_ptr[t]; k < p->thread_ptr[t + 1]; k++) {
            const sched_trace_task *x = &p->tasks[k];
            s.busy += x->end - x->start;
            s.cost += x->cost;
            s.tasks++;
            if (x->victim >= 0) {
                s.steals++;
                s.cross_node += p->node[x->victim] != p->node[t];
            }
        }
        s.idle = p->wall - s.busy;
        if (s.idle < 0) s.idle = 0;  /* rounding of the printed times */
        if (per_thread != NULL) per_thread[t] = s;
        sum.busy += s.busy;
        sum.idle += s.idle;
        sum.cost += s.cost;
        sum.tasks += s.tasks;
        sum.steals += s.steals;
        sum.cross_node += s.cross_node;
    }
    if (total != NULL) *total = sum;
}
