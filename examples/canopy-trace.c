/*
 * canopy-trace: read a trace written by the threaded scheduler (format in sched/trace.h) and show
 * where the time went: a per-thread summary on stdout (busy, idle, steals, steals across NUMA
 * nodes, predicted vs measured time), a Gantt chart as SVG and/or PNG (examples/trace_render.c),
 * and a Chrome trace ("traceEvents" JSON) for chrome://tracing or Perfetto.
 *
 * Exit status: 0 done, 1 bad or unreadable input or an output that cannot be written, 2 usage.
 */
#include "base/common.h"
#include "sched/trace.h"
#include "trace_render.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: canopy-trace TRACE [--phase NAME|INDEX] [--svg OUT.svg] [--png OUT.png] [--chrome OUT.json]\n"
            "                    [--width PX]\n"
            "  TRACE            a trace written by canopy-solve --trace FILE (plain or gzip)\n"
            "  --phase P        only phase P (its name, or its index from 0); charts show phase 0 by default\n"
            "  --svg FILE       Gantt chart as SVG: one row per thread, colour = tree level, black = idle,\n"
            "                   top strip = stolen (white: victim on the same NUMA node, red: another node)\n"
            "  --png FILE       the same chart as PNG\n"
            "  --chrome FILE    Chrome trace JSON (chrome://tracing, https://ui.perfetto.dev)\n"
            "  --width PX       chart width in pixels, %d..%d (default 1200)\n"
            "Prints a summary of each phase on stdout.\n",
            SCHED_TRACE_RENDER_MIN_WIDTH, SCHED_TRACE_RENDER_MAX_WIDTH);
}

static int usage_error(const char *fmt, ...) CANOPY_PRINTF(1, 2);
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("canopy-trace: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\n(canopy-trace --help for usage)\n", stderr);
    return 2;
}

static void print_phase(const sched_trace_phase *p, int index, sched_trace_stats *st)
{
    sched_trace_stats tot;
    sched_trace_phase_stats(p, st, &tot);
    printf("phase %d '%s': scheduler %s, %d thread%s, %d task%s\n", index, p->name, p->scheduler, p->nthreads,
           p->nthreads == 1 ? "" : "s", p->ntasks, p->ntasks == 1 ? "" : "s");
    if (p->predicted > 0)
        printf("  wall %.6f s, predicted %.6f s (measured/predicted %.3f)\n", p->wall, p->predicted,
               p->wall / p->predicted);
    else
        printf("  wall %.6f s, predicted: not simulated\n", p->wall);
    printf("  %6s %5s %4s %12s %7s %7s %12s %7s %10s\n", "thread", "core", "node", "busy_s", "busy%", "tasks",
           "idle_s", "steals", "cross_node");
    for (int t = 0; t < p->nthreads; t++)
        printf("  %6d %5d %4d %12.6f %7.2f %7" PRId64 " %12.6f %7" PRId64 " %10" PRId64 "\n", t, p->core_os[t],
               p->node[t], st[t].busy, p->wall > 0 ? 100 * st[t].busy / p->wall : 0.0, st[t].tasks, st[t].idle,
               st[t].steals, st[t].cross_node);
    double cap = p->wall * p->nthreads;
    printf("  %6s %5s %4s %12.6f %7.2f %7" PRId64 " %12.6f %7" PRId64 " %10" PRId64 "\n", "total", "", "", tot.busy,
           cap > 0 ? 100 * tot.busy / cap : 0.0, tot.tasks, tot.idle, tot.steals, tot.cross_node);
    if (tot.cost > 0)
        printf("  task time: predicted %.6f s, measured %.6f s (measured/predicted %.3f)\n", tot.cost, tot.busy,
               tot.busy / tot.cost);
}

/* Names are trace tokens (printable ASCII) but may hold '"' or '\\'. */
static void json_str(FILE *fp, const char *s)
{
    fputc('"', fp);
    for (; *s != '\0'; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', fp);
        fputc(*s, fp);
    }
    fputc('"', fp);
}

static int write_chrome(const sched_trace_phase *p, const char *path)
{
    errno = 0;
    FILE *fp = fopen(path, "w");
    if (fp == NULL) {
        fprintf(stderr, "canopy-trace: %s: cannot open for writing: %s\n", path, strerror(errno));
        return 1;
    }
    /* microseconds with 3 decimals keep the nanoseconds of the trace */
    fputs("{\"displayTimeUnit\":\"ms\",\"otherData\":{\"phase\":", fp);
    json_str(fp, p->name);
    fputs(",\"scheduler\":", fp);
    json_str(fp, p->scheduler);
    fprintf(fp, ",\"threads\":%d,\"wall_s\":%.9f,\"predicted_s\":%.9f},\n\"traceEvents\":[\n", p->nthreads, p->wall,
            p->predicted);
    fputs("{\"ph\":\"M\",\"pid\":0,\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":", fp);
    char buf[2 * SCHED_TRACE_NAME_MAX + 32];
    snprintf(buf, sizeof buf, "canopy %s (%s)", p->name, p->scheduler);
    json_str(fp, buf);
    fputs("}}", fp);
    for (int t = 0; t < p->nthreads; t++) {
        fprintf(fp, ",\n{\"ph\":\"M\",\"pid\":0,\"tid\":%d,\"name\":\"thread_name\",\"args\":{\"name\":"
                    "\"T%d core %d node %d\"}}",
                t, t, p->core_os[t], p->node[t]);
        fprintf(fp, ",\n{\"ph\":\"M\",\"pid\":0,\"tid\":%d,\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":%d}}",
                t, t);
    }
    for (int k = 0; k < p->ntasks; k++) {
        const sched_trace_task *x = &p->tasks[k];
        const char *kind = sched_trace_kind_name(x->kind);
        fprintf(fp, ",\n{\"ph\":\"X\",\"pid\":0,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"name\":\"%s %d\",\"cat\":\"%s\","
                    "\"args\":{\"task\":%d,\"level\":%d,\"cblk\":%d,\"victim\":%d,\"cost_us\":%.3f}}",
                x->thread, x->start * 1e6, (x->end - x->start) * 1e6, kind, x->cblk, kind, x->id, x->level, x->cblk,
                x->victim, x->cost * 1e6);
    }
    fputs("\n]}\n", fp);
    bool failed = ferror(fp) != 0;
    int e1 = errno;
    errno = 0;
    failed |= fclose(fp) != 0;
    int e = errno != 0 ? errno : e1;
    if (failed) {
        fprintf(stderr, "canopy-trace: %s: write error: %s\n", path, e ? strerror(e) : "unknown cause");
        return 1;
    }
    return 0;
}

/* --phase: a phase name first (names may be digits), else an index. -1 when nothing matches. */
static int find_phase(const sched_trace_file *f, const char *sel)
{
    for (int i = 0; i < f->nphases; i++)
        if (strcmp(f->phases[i].name, sel) == 0) return i;
    char *end;
    errno = 0;
    long v = strtol(sel, &end, 10);
    if (end != sel && *end == '\0' && errno == 0 && v >= 0 && v < f->nphases) return (int)v;
    return -1;
}

int main(int argc, char **argv)
{
    const char *trace = NULL, *phase_sel = NULL, *svg = NULL, *png = NULL, *chrome = NULL;
    int width = 1200;
    bool opts_done = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (!opts_done && strcmp(a, "--") == 0) {
            opts_done = true;
            continue;
        }
        if (!opts_done && a[0] == '-' && a[1] != '\0') {
            static const char *const opts[] = {"--phase", "--svg", "--png", "--chrome", "--width"};
            const char **dst[] = {&phase_sel, &svg, &png, &chrome, NULL};
            const char *val = NULL, *wval = NULL;
            int o = -1;
            for (int k = 0; k < 5 && o < 0; k++) {
                size_t l = strlen(opts[k]);
                if (strncmp(a, opts[k], l) == 0 && (a[l] == '\0' || a[l] == '=')) {
                    o = k;
                    if (a[l] == '=') val = a + l + 1;
                }
            }
            if (o < 0) return usage_error("unknown option '%s'", a);
            if (val == NULL) {
                if (i + 1 >= argc) return usage_error("%s needs a value", opts[o]);
                val = argv[++i];
            }
            if (val[0] == '\0') return usage_error("%s needs a nonempty value", opts[o]);
            if (dst[o] != NULL) {
                *dst[o] = val;
                continue;
            }
            wval = val;
            char *end;
            errno = 0;
            long w = strtol(wval, &end, 10);
            if (end == wval || *end != '\0' || errno != 0 || w < SCHED_TRACE_RENDER_MIN_WIDTH ||
                w > SCHED_TRACE_RENDER_MAX_WIDTH)
                return usage_error("--width '%s': expected a pixel count in %d..%d", wval,
                                   SCHED_TRACE_RENDER_MIN_WIDTH, SCHED_TRACE_RENDER_MAX_WIDTH);
            width = (int)w;
            continue;
        }
        if (trace != NULL) return usage_error("one trace file only ('%s' is a second one)", a);
        trace = a;
    }
    if (trace == NULL) {
        usage(stderr);
        return 2;
    }

    canopy_err err;
    canopy_err_clear(&err);
    sched_trace_file *f = NULL;
    if (sched_trace_read(trace, &f, &err) != CANOPY_SUCCESS) {
        fprintf(stderr, "canopy-trace: %s\n", err.msg);
        return 1;
    }
    int sel = -1;
    if (phase_sel != NULL && (sel = find_phase(f, phase_sel)) < 0) {
        fprintf(stderr, "canopy-trace: %s: no phase '%s' (phases:", trace, phase_sel);
        for (int i = 0; i < f->nphases; i++) fprintf(stderr, " %d '%s'", i, f->phases[i].name);
        fputs(")\n", stderr);
        sched_trace_file_free(f);
        return 1;
    }

    int rc = 0, maxthreads = 1;
    for (int i = 0; i < f->nphases; i++) maxthreads = CANOPY_MAX(maxthreads, f->phases[i].nthreads);
    sched_trace_stats *st = canopy_alloc((size_t)maxthreads, sizeof *st, "thread statistics", &err);
    if (st == NULL) {
        fprintf(stderr, "canopy-trace: %s\n", err.msg);
        sched_trace_file_free(f);
        return 1;
    }
    printf("trace %s: %d phase%s (format version %d)\n", trace, f->nphases, f->nphases == 1 ? "" : "s", f->version);
    for (int i = 0; i < f->nphases; i++) {
        if (sel >= 0 && i != sel) continue;
        printf("\n");
        print_phase(&f->phases[i], i, st);
    }
    canopy_free(st);

    if (svg != NULL || png != NULL || chrome != NULL) {
        if (sel < 0) {
            sel = 0;
            if (f->nphases > 1)
                fprintf(stderr, "canopy-trace: note: charts show phase 0 '%s' of %d; choose another with --phase\n",
                        f->phases[0].name, f->nphases);
        }
        const sched_trace_phase *p = &f->phases[sel];
        if (svg != NULL && sched_trace_render_svg(p, width, svg, &err) != CANOPY_SUCCESS) {
            fprintf(stderr, "canopy-trace: %s\n", err.msg);
            rc = 1;
        }
        canopy_err_clear(&err);
        if (png != NULL && sched_trace_render_png(p, width, png, &err) != CANOPY_SUCCESS) {
            fprintf(stderr, "canopy-trace: %s\n", err.msg);
            rc = 1;
        }
        if (chrome != NULL && write_chrome(p, chrome) != 0) rc = 1;
    }
    sched_trace_file_free(f);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "canopy-trace: write error on standard output: %s\n", strerror(errno));
        rc = 1;
    }
    return rc;
}
