/*
 * Gantt charts of a trace phase for canopy-trace: a scene of rectangles computed once, then written
 * as SVG or rasterized into a PNG (numa/probe.c's encoder: IHDR/IDAT/IEND, zlib's compress2 and crc32;
 * no libpng). The chart follows Figure 6 of papers/numa-scheduler-pastix.txt: one row per thread,
 * one colour per tree level, idle time black.
 *
 * Stolen tasks are marked by a strip along the top of their row (white: the victim is on the
 * thread's NUMA node, red: on another node) rather than by outlining their rectangles: where tasks
 * are narrower than a pixel, outlines would cover the colours of every task near a steal.
 *
 * Size: a trace may hold 10^5 tasks and more, most far narrower than a pixel. Consecutive tasks of
 * one thread are merged into one rectangle when the next task is narrower than a pixel, follows
 * within half a pixel, and either has the same level or the rectangle so far is itself narrower
 * than a pixel (it then takes the level of its longest task). So every rectangle but the last of a
 * run is at least a pixel wide or ends at a visible gap, and the number of rectangles per row is
 * bounded by about twice the plot width whatever the number of tasks. Steal strips merge the same
 * way (a merged strip takes the colour of its worst steal: another node).
 */
#include "base/common.h"
#include "trace_render.h"
#include "numa/probe.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* Colours by level (mod 12), chosen to stay apart from black (idle), white and red (steals). */
#define SCHED_TRACE_NPAL 12
static const unsigned sched_trace_palette[SCHED_TRACE_NPAL] = {
    0x4e79a7, 0xf28e2b, 0x59a14f, 0xedc948, 0xb07aa1, 0x76b7b2,
    0xff9da7, 0x9c755f, 0xbab0ac, 0x8cd17d, 0xa0cbe8, 0xffbe7d,
};
#define SCHED_TRACE_IDLE 0x000000
#define SCHED_TRACE_STEAL_LOCAL 0xffffff
#define SCHED_TRACE_STEAL_REMOTE 0xe00000
#define SCHED_TRACE_PREDICTED 0x0060ff
#define SCHED_TRACE_SWATCH_GREY 0x888888
/* a cap on the raster: 16384 x 4096 is still fine, a garbage thread count is not */
#define SCHED_TRACE_MAX_PIXELS (64L << 20)
/* legend and labels are placed for the PNG font at scale 2 (8 px per character), which is wider
 * than the SVG's 11 px sans-serif, so both fit */
#define SCHED_TRACE_CHAR_W 8

typedef struct sched_trace_run {
    double x0, x1;     /* pixels */
    double longest;    /* seconds of its longest task: that task's level colours the run */
    int row, level;
    int task;          /* index in the phase's tasks when the run is one task, else -1 */
} sched_trace_run;

typedef struct sched_trace_mark {
    double x0, x1;     /* pixels */
    int row;
    int steal;         /* 1 victim on the same node, 2 on another node (the worst of its tasks) */
} sched_trace_mark;

typedef struct sched_trace_legend {
    int x, y;
    unsigned fill;
    int steal;          /* with the steal strip of this class */
    int dashed;         /* the predicted-end line instead of a swatch */
    char label[40];
} sched_trace_legend;

typedef struct sched_trace_scene {
    int width, height;
    int left, top, plotw, rowh, pitch;
    int axis_y, legend_y;
    double span;                  /* seconds on the x axis */
    double tick;                  /* seconds between ticks */
    int tick_decimals;
    char title[2 * SCHED_TRACE_NAME_MAX + 160];
    sched_trace_legend legend[SCHED_TRACE_NPAL + 4];
    int nlegend;
    sched_trace_run *runs;
    size_t nruns;
    sched_trace_mark *marks;
    size_t nmarks;
} sched_trace_scene;

static double sched_trace_x(const sched_trace_scene *s, double t)
{
    return s->left + t / s->span * s->plotw;
}

static int sched_trace_row_y(const sched_trace_scene *s, int row)
{
    return s->top + row * s->pitch;
}

static unsigned sched_trace_steal_colour(int steal)
{
    return steal == 2 ? SCHED_TRACE_STEAL_REMOTE : SCHED_TRACE_STEAL_LOCAL;
}

/*
 * Height of the steal strips at the top of a row, below a 1-pixel offset: they get a black frame
 * there, or a white strip would melt into the white between rows.
 */
static int sched_trace_strip_h(const sched_trace_scene *s)
{
    return s->rowh >= 8 ? s->rowh / 4 : 1;
}

static int sched_trace_strip_framed(const sched_trace_scene *s)
{
    return s->rowh >= 8;
}

static void sched_trace_thread_label(const sched_trace_phase *p, int t, char *buf, size_t cap)
{
    snprintf(buf, cap, "T%d n%d", t, p->node[t]);
}

static void sched_trace_tick_label(const sched_trace_scene *s, int i, char *buf, size_t cap)
{
    snprintf(buf, cap, "%.*f", s->tick_decimals, i * s->tick);
}

static int sched_trace_nticks(const sched_trace_scene *s)
{
    return (int)floor(s->span / s->tick + 1e-9);
}

static void sched_trace_legend_add(sched_trace_scene *s, int *x, int y, unsigned fill, int steal, int dashed,
                                   const char *label)
{
    sched_trace_legend *l = &s->legend[s->nlegend++];
    *l = (sched_trace_legend){.x = *x, .y = y, .fill = fill, .steal = steal, .dashed = dashed};
    snprintf(l->label, sizeof l->label, "%s", label);
    *x += 18 + SCHED_TRACE_CHAR_W * (int)strlen(label) + 14;
}

/* Merge the tasks of each row into rectangles and the steals into strips, as the header says. */
static void sched_trace_scene_runs(const sched_trace_phase *p, sched_trace_scene *s)
{
    for (int t = 0; t < p->nthreads; t++) {
        sched_trace_run *cur = NULL;
        sched_trace_mark *mk = NULL;
        for (int k = p->thread_ptr[t]; k < p->thread_ptr[t + 1]; k++) {
            const sched_trace_task *x = &p->tasks[k];
            double x0 = sched_trace_x(s, x->start), x1 = sched_trace_x(s, x->end), dur = x->end - x->start;
            if (x->victim >= 0) {
                int steal = p->node[x->victim] != p->node[t] ? 2 : 1;
                if (mk != NULL && x0 - mk->x1 < 0.5 && (mk->steal == steal || (x1 - x0 < 1 && mk->x1 - mk->x0 < 1))) {
                    mk->x1 = x1;
                    if (steal > mk->steal) mk->steal = steal;
                } else {
                    mk = &s->marks[s->nmarks++];
                    *mk = (sched_trace_mark){.x0 = x0, .x1 = x1, .row = t, .steal = steal};
                }
            }
            if (cur != NULL && x0 - cur->x1 < 0.5 && x1 - x0 < 1 && (cur->level == x->level || cur->x1 - cur->x0 < 1)) {
                cur->x1 = x1;
                cur->task = -1;
                if (dur > cur->longest) {
                    cur->longest = dur;
                    cur->level = x->level;
                }
                continue;
            }
            cur = &s->runs[s->nruns++];
            *cur = (sched_trace_run){.x0 = x0, .x1 = x1, .longest = dur, .row = t, .level = x->level, .task = k};
        }
    }
}

static canopy_status sched_trace_scene_build(const sched_trace_phase *p, int width, sched_trace_scene *s,
                                             canopy_err *err)
{
    memset(s, 0, sizeof *s);
    if (width < SCHED_TRACE_RENDER_MIN_WIDTH || width > SCHED_TRACE_RENDER_MAX_WIDTH)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "width %d is out of range %d..%d", width,
                              SCHED_TRACE_RENDER_MIN_WIDTH, SCHED_TRACE_RENDER_MAX_WIDTH);
    int T = p->nthreads;
    s->width = width;
    s->left = 80;
    s->top = 40;
    s->plotw = width - s->left - 24;
    /* rows shrink with many threads so the picture stays on a screen */
    s->rowh = T <= 32 ? 20 : CANOPY_MAX(2, CANOPY_MIN(20, 640 / T));
    s->pitch = s->rowh + (s->rowh >= 8 ? 3 : 0);
    s->axis_y = sched_trace_row_y(s, T) + 2;
    s->legend_y = s->axis_y + 44;
    s->height = s->legend_y + 64;
    if ((long)s->width * s->height > SCHED_TRACE_MAX_PIXELS)
        return canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "a %d x %d chart is too large: lower --width", s->width,
                              s->height);
    s->span = p->wall;
    if (p->predicted > s->span) s->span = p->predicted;
    if (!(s->span > 0)) s->span = 1;

    /* ticks: 1, 2 or 5 times a power of ten, about 8 of them */
    double raw = s->span / 8, mag = pow(10, floor(log10(raw)));
    double m = raw / mag;
    s->tick = (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * mag;
    if (!(s->tick > 0 && s->span / s->tick <= 20)) s->tick = s->span; /* pow underflowed: subnormal span */
    s->tick_decimals = s->tick >= 1 ? 0 : (int)ceil(-log10(s->tick) - 1e-9);
    if (s->tick_decimals > 9) s->tick_decimals = 9;

    int n = snprintf(s->title, sizeof s->title, "phase %s | scheduler %s | %d thread%s, %d task%s | wall %.6g s",
                     p->name, p->scheduler, T, T == 1 ? "" : "s", p->ntasks, p->ntasks == 1 ? "" : "s", p->wall);
    if (p->predicted > 0 && n > 0 && (size_t)n < sizeof s->title)
        snprintf(s->title + n, sizeof s->title - (size_t)n, ", predicted %.6g s", p->predicted);

    int x = s->left;
    for (int l = 0; l <= p->max_level && l < SCHED_TRACE_NPAL; l++) {
        char lab[16];
        snprintf(lab, sizeof lab, "%d", l);
        sched_trace_legend_add(s, &x, s->legend_y, sched_trace_palette[l], 0, 0, lab);
    }
    x = s->left;
    int y2 = s->legend_y + 22;
    sched_trace_legend_add(s, &x, y2, SCHED_TRACE_IDLE, 0, 0, "idle");
    sched_trace_legend_add(s, &x, y2, SCHED_TRACE_SWATCH_GREY, 1, 0, "stolen");
    sched_trace_legend_add(s, &x, y2, SCHED_TRACE_SWATCH_GREY, 2, 0, "stolen across NUMA nodes");
    if (p->predicted > 0) sched_trace_legend_add(s, &x, y2, SCHED_TRACE_PREDICTED, 0, 1, "predicted end");

    s->runs = canopy_alloc((size_t)CANOPY_MAX(p->ntasks, 1), sizeof *s->runs, "chart rectangles", err);
    s->marks = canopy_alloc((size_t)CANOPY_MAX(p->ntasks, 1), sizeof *s->marks, "chart steal marks", err);
    if (s->runs == NULL || s->marks == NULL) return err ? err->status : CANOPY_ERR_NOMEM;
    sched_trace_scene_runs(p, s);
    return CANOPY_SUCCESS;
}

static void sched_trace_scene_free(sched_trace_scene *s)
{
    canopy_free(s->runs);
    canopy_free(s->marks);
    s->runs = NULL;
    s->marks = NULL;
}

static canopy_status sched_trace_close(FILE *fp, const char *path, canopy_err *err)
{
    bool failed = ferror(fp) != 0;
    int e1 = errno;
    errno = 0;
    failed |= fclose(fp) != 0;
    int e = errno != 0 ? errno : e1;
    if (failed)
        return canopy_err_set(err, CANOPY_ERR_IO, "%s: write error: %s", path, e ? strerror(e) : "unknown cause");
    return CANOPY_SUCCESS;
}

/* ---- SVG -------------------------------------------------------------------------------------- */

/* Names come from the trace: tokens, but they may hold '<' or '&'. */
static void sched_trace_xml(FILE *fp, const char *s)
{
    for (; *s != '\0'; s++) {
        switch (*s) {
        case '<': fputs("&lt;", fp); break;
        case '>': fputs("&gt;", fp); break;
        case '&': fputs("&amp;", fp); break;
        case '"': fputs("&quot;", fp); break;
        case '\'': fputs("&apos;", fp); break;
        default: fputc(*s, fp);
        }
    }
}

canopy_status sched_trace_render_svg(const sched_trace_phase *p, int width, const char *path, canopy_err *err)
{
    sched_trace_scene s;
    canopy_status st = sched_trace_scene_build(p, width, &s, err);
    if (st != CANOPY_SUCCESS) return st;
    errno = 0;
    FILE *fp = fopen(path, "w");
    if (fp == NULL) {
        st = canopy_err_set(err, CANOPY_ERR_IO, "%s: cannot open for writing: %s", path, strerror(errno));
        sched_trace_scene_free(&s);
        return st;
    }
    fprintf(fp, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                "font-family=\"sans-serif\" font-size=\"11\">\n<title>",
            s.width, s.height, s.width, s.height);
    sched_trace_xml(fp, s.title);
    fputs("</title>\n<style>\n", fp);
    for (int l = 0; l < SCHED_TRACE_NPAL; l++) fprintf(fp, ".l%d{fill:#%06x}\n", l, sched_trace_palette[l]);
    const char *frame = sched_trace_strip_framed(&s) ? ";stroke:#000;stroke-width:1" : "";
    fprintf(fp, ".s1{fill:#%06x%s}\n.s2{fill:#%06x%s}\n</style>\n", SCHED_TRACE_STEAL_LOCAL, frame,
            SCHED_TRACE_STEAL_REMOTE, frame);
    fprintf(fp, "<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n<text x=\"%d\" y=\"24\" font-size=\"14\" "
                "font-weight=\"bold\">", s.width, s.height, s.left);
    sched_trace_xml(fp, s.title);
    fputs("</text>\n", fp);

    /* rows: idle time is whatever the tasks leave of the black band */
    double xw = sched_trace_x(&s, p->wall);
    fputs("<g id=\"threads\">\n", fp);
    for (int t = 0; t < p->nthreads; t++) {
        int y = sched_trace_row_y(&s, t);
        if (s.rowh >= 9) {
            char lab[48];
            sched_trace_thread_label(p, t, lab, sizeof lab);
            fprintf(fp, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n", s.left - 6, y + s.rowh / 2 + 4, lab);
        }
        fprintf(fp, "<rect x=\"%d\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"#%06x\"/>\n", s.left, y,
                xw - s.left, s.rowh, SCHED_TRACE_IDLE);
    }
    fputs("</g>\n<g id=\"tasks\">\n", fp);
    for (size_t i = 0; i < s.nruns; i++) {
        const sched_trace_run *r = &s.runs[i];
        int y = sched_trace_row_y(&s, r->row);
        fprintf(fp, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" class=\"l%d\"", r->x0, y, r->x1 - r->x0,
                s.rowh, r->level % SCHED_TRACE_NPAL);
        if (r->task >= 0) {
            /* a tooltip names the task when it is drawn alone */
            const sched_trace_task *x = &p->tasks[r->task];
            fprintf(fp, "><title>%s %d (task %d) level %d: %.6f..%.6f s", sched_trace_kind_name(x->kind), x->cblk,
                    x->id, x->level, x->start, x->end);
            if (x->victim >= 0) fprintf(fp, ", stolen from T%d", x->victim);
            fputs("</title></rect>\n", fp);
        } else {
            fputs("/>\n", fp);
        }
    }
    fputs("</g>\n<g id=\"steals\">\n", fp);
    for (size_t i = 0; i < s.nmarks; i++) {
        const sched_trace_mark *m = &s.marks[i];
        fprintf(fp, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" class=\"s%d\"/>\n", m->x0,
                sched_trace_row_y(&s, m->row) + sched_trace_strip_framed(&s), CANOPY_MAX(m->x1 - m->x0, 1.0),
                sched_trace_strip_h(&s), m->steal);
    }
    fputs("</g>\n", fp);

    if (p->predicted > 0) {
        double xp = sched_trace_x(&s, p->predicted);
        fprintf(fp, "<line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" stroke=\"#%06x\" stroke-dasharray=\"3 3\"/>\n",
                xp, s.top - 4, xp, s.axis_y, SCHED_TRACE_PREDICTED);
    }
    fprintf(fp, "<g id=\"axis\">\n<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#000\"/>\n", s.left, s.axis_y,
            s.left + s.plotw, s.axis_y);
    int nt = sched_trace_nticks(&s);
    for (int i = 0; i <= nt; i++) {
        double x = sched_trace_x(&s, i * s.tick);
        char lab[48];
        sched_trace_tick_label(&s, i, lab, sizeof lab);
        fprintf(fp, "<line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" stroke=\"#000\"/>"
                    "<text x=\"%.2f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
                x, s.axis_y, x, s.axis_y + 5, x, s.axis_y + 18, lab);
    }
    fprintf(fp, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">time (s)</text>\n</g>\n", s.left + s.plotw,
            s.axis_y + 34);

    fprintf(fp, "<g id=\"legend\">\n<text x=\"%d\" y=\"%d\" text-anchor=\"end\">level</text>\n", s.left - 6,
            s.legend_y + 12);
    for (int i = 0; i < s.nlegend; i++) {
        const sched_trace_legend *l = &s.legend[i];
        if (l->dashed)
            fprintf(fp, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#%06x\" stroke-dasharray=\"3 3\"/>\n",
                    l->x + 7, l->y, l->x + 7, l->y + 14, l->fill);
        else
            fprintf(fp, "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"14\" fill=\"#%06x\"%s/>\n", l->x, l->y,
                    l->fill, l->steal ? " stroke=\"#000\"" : "");
        if (l->steal)
            fprintf(fp, "<rect x=\"%d\" y=\"%d\" width=\"13\" height=\"4\" class=\"s%d\" stroke=\"#000\"/>\n",
                    l->x + 1, l->y + 1, l->steal);
        fprintf(fp, "<text x=\"%d\" y=\"%d\">%s</text>\n", l->x + 18, l->y + 12, l->label);
    }
    if (p->max_level >= SCHED_TRACE_NPAL)
        fprintf(fp, "<text x=\"%d\" y=\"%d\">colours repeat every %d levels (deepest: %d)</text>\n", s.left,
                s.legend_y + 56, SCHED_TRACE_NPAL, p->max_level);
    fputs("</g>\n</svg>\n", fp);
    sched_trace_scene_free(&s);
    return sched_trace_close(fp, path, err);
}

/* ---- PNG -------------------------------------------------------------------------------------- */

typedef struct sched_trace_img {
    int w, h;
    unsigned char *px;    /* w * h * 3, RGB */
} sched_trace_img;

static void sched_trace_fill(sched_trace_img *im, int x0, int y0, int x1, int y1, unsigned rgb)
{
    x0 = CANOPY_MAX(x0, 0);
    y0 = CANOPY_MAX(y0, 0);
    x1 = CANOPY_MIN(x1, im->w);
    y1 = CANOPY_MIN(y1, im->h);
    for (int y = y0; y < y1; y++) {
        unsigned char *q = im->px + ((size_t)y * (size_t)im->w + (size_t)x0) * 3;
        for (int x = x0; x < x1; x++, q += 3) {
            q[0] = (unsigned char)(rgb >> 16);
            q[1] = (unsigned char)(rgb >> 8);
            q[2] = (unsigned char)rgb;
        }
    }
}

/*
 * A 3x5 pixel font (rows top to bottom, bit 2 = left column) for the PNG's title, labels and
 * legend; lower case is drawn as upper case. Characters outside it leave a blank.
 */
static const char sched_trace_glyph_chars[] = "0123456789.-+:,()/|=%_ABCDEFGHIJKLMNOPQRSTUVWXYZ";
static const unsigned char sched_trace_glyphs[][5] = {
    {7, 5, 5, 5, 7}, {2, 6, 2, 2, 7}, {7, 1, 7, 4, 7}, {7, 1, 7, 1, 7}, {5, 5, 7, 1, 1},
    {7, 4, 7, 1, 7}, {7, 4, 7, 5, 7}, {7, 1, 1, 1, 1}, {7, 5, 7, 5, 7}, {7, 5, 7, 1, 7},
    {0, 0, 0, 0, 2}, {0, 0, 7, 0, 0}, {0, 2, 7, 2, 0}, {0, 2, 0, 2, 0}, {0, 0, 0, 2, 4},
    {1, 2, 2, 2, 1}, {4, 2, 2, 2, 4}, {1, 1, 2, 4, 4}, {2, 2, 2, 2, 2}, {0, 7, 0, 7, 0},
    {5, 1, 2, 4, 5}, {0, 0, 0, 0, 7},
    {2, 5, 7, 5, 5}, {6, 5, 6, 5, 6}, {3, 4, 4, 4, 3}, {6, 5, 5, 5, 6}, {7, 4, 6, 4, 7}, /* A-E */
    {7, 4, 6, 4, 4}, {3, 4, 5, 5, 3}, {5, 5, 7, 5, 5}, {7, 2, 2, 2, 7}, {1, 1, 1, 5, 2}, /* F-J */
    {5, 5, 6, 5, 5}, {4, 4, 4, 4, 7}, {5, 7, 7, 5, 5}, {6, 5, 5, 5, 5}, {2, 5, 5, 5, 2}, /* K-O */
    {6, 5, 6, 4, 4}, {2, 5, 5, 6, 3}, {6, 5, 6, 5, 5}, {3, 4, 2, 1, 6}, {7, 2, 2, 2, 2}, /* P-T */
    {5, 5, 5, 5, 7}, {5, 5, 5, 5, 2}, {5, 5, 7, 7, 5}, {5, 5, 2, 5, 5}, {5, 5, 2, 2, 2}, /* U-Y */
    {7, 1, 2, 4, 7},                                                                     /* Z */
};

_Static_assert(sizeof sched_trace_glyphs / sizeof sched_trace_glyphs[0] == sizeof sched_trace_glyph_chars - 1,
               "one glyph per character");

/* Text with its top-left corner at (x, y), @p scale pixels per font pixel. */
static void sched_trace_text(sched_trace_img *im, int x, int y, const char *s, int scale, unsigned rgb)
{
    for (; *s != '\0'; s++, x += 4 * scale) {
        int ch = *s >= 'a' && *s <= 'z' ? *s - 'a' + 'A' : *s;
        const char *g = ch != '\0' ? strchr(sched_trace_glyph_chars, ch) : NULL;
        if (g == NULL) continue;
        const unsigned char *rows = sched_trace_glyphs[g - sched_trace_glyph_chars];
        for (int r = 0; r < 5; r++)
            for (int c = 0; c < 3; c++)
                if (rows[r] & (4 >> c))
                    sched_trace_fill(im, x + c * scale, y + r * scale, x + (c + 1) * scale, y + (r + 1) * scale, rgb);
    }
}

static int sched_trace_text_width(const char *s, int scale)
{
    return (int)strlen(s) * 4 * scale - scale;
}

/*
 * Tasks of one row: each pixel column gets the colours of the rectangles over it weighted by how
 * much of the column they cover, over black; a column half busy is a dim colour, as in the SVG
 * where the viewer antialiases the same rectangles.
 */
static void sched_trace_raster_row(sched_trace_img *im, const sched_trace_scene *s, size_t r0, size_t r1,
                                   float *acc)
{
    int y0 = sched_trace_row_y(s, s->runs[r0].row);
    memset(acc, 0, (size_t)im->w * 3 * sizeof *acc);
    for (size_t i = r0; i < r1; i++) {
        const sched_trace_run *r = &s->runs[i];
        unsigned rgb = sched_trace_palette[r->level % SCHED_TRACE_NPAL];
        for (int c = CANOPY_MAX((int)floor(r->x0), 0); c < (int)ceil(r->x1) && c < im->w; c++) {
            double cov = CANOPY_MIN(r->x1, c + 1.0) - CANOPY_MAX(r->x0, (double)c);
            if (cov <= 0) continue;
            acc[3 * c] += (float)(cov * (rgb >> 16 & 0xff));
            acc[3 * c + 1] += (float)(cov * (rgb >> 8 & 0xff));
            acc[3 * c + 2] += (float)(cov * (rgb & 0xff));
        }
    }
    /* columns no task touches keep the black of the idle band */
    for (int y = y0; y < y0 + s->rowh && y < im->h; y++) {
        unsigned char *q = im->px + (size_t)y * (size_t)im->w * 3;
        for (int c = 0; c < im->w; c++) {
            if (acc[3 * c] + acc[3 * c + 1] + acc[3 * c + 2] <= 0) continue;
            for (int k = 0; k < 3; k++) {
                float v = acc[3 * c + k] + 0.5f;
                q[3 * c + k] = (unsigned char)(v > 255 ? 255 : v);
            }
        }
    }
}

/* One PNG encoder for the project: numa/probe.c's (8-bit RGB rows, zlib). */
static canopy_status sched_trace_png_write(const sched_trace_img *im, const char *path, canopy_err *err)
{
    return numa_png_write(path, im->w, im->h, im->px, err);
}

canopy_status sched_trace_render_png(const sched_trace_phase *p, int width, const char *path, canopy_err *err)
{
    sched_trace_scene s;
    canopy_status st = sched_trace_scene_build(p, width, &s, err);
    if (st != CANOPY_SUCCESS) return st;
    sched_trace_img im = {.w = s.width, .h = s.height};
    im.px = canopy_alloc((size_t)s.width * (size_t)s.height, 3, "PNG pixels", err);
    float *acc = canopy_alloc((size_t)s.width * 3, sizeof *acc, "PNG row", err);
    if (im.px == NULL || acc == NULL) {
        st = err ? err->status : CANOPY_ERR_NOMEM;
        goto done;
    }
    memset(im.px, 0xff, (size_t)s.width * (size_t)s.height * 3);
    sched_trace_text(&im, s.left, 14, s.title, 2, 0x000000);
    double xw = sched_trace_x(&s, p->wall);
    int scale = s.rowh >= 12 ? 2 : 1;
    for (int t = 0; t < p->nthreads; t++) {
        int y = sched_trace_row_y(&s, t);
        sched_trace_fill(&im, s.left, y, (int)ceil(xw), y + s.rowh, SCHED_TRACE_IDLE);
        if (s.rowh >= 6) {
            char lab[48];
            sched_trace_thread_label(p, t, lab, sizeof lab);
            sched_trace_text(&im, s.left - 6 - sched_trace_text_width(lab, scale), y + (s.rowh - 5 * scale) / 2, lab,
                             scale, 0x000000);
        }
    }
    /* runs are grouped by row: raster each row's group */
    for (size_t i = 0; i < s.nruns;) {
        size_t j = i;
        while (j < s.nruns && s.runs[j].row == s.runs[i].row) j++;
        sched_trace_raster_row(&im, &s, i, j, acc);
        i = j;
    }
    for (size_t i = 0; i < s.nmarks; i++) {
        const sched_trace_mark *m = &s.marks[i];
        int c0 = (int)floor(m->x0), c1 = CANOPY_MAX((int)ceil(m->x1), c0 + 1), y = sched_trace_row_y(&s, m->row);
        int f = sched_trace_strip_framed(&s), h = sched_trace_strip_h(&s);
        if (f) sched_trace_fill(&im, c0 - 1, y, c1 + 1, y + h + 2, 0x000000);
        sched_trace_fill(&im, c0, y + f, c1, y + f + h, sched_trace_steal_colour(m->steal));
    }
    if (p->predicted > 0) {
        int xp = (int)floor(sched_trace_x(&s, p->predicted));
        for (int y = s.top - 4; y < s.axis_y; y += 6)
            sched_trace_fill(&im, xp, y, xp + 1, CANOPY_MIN(y + 3, s.axis_y), SCHED_TRACE_PREDICTED);
    }
    sched_trace_fill(&im, s.left, s.axis_y, s.left + s.plotw + 1, s.axis_y + 1, 0x000000);
    int nt = sched_trace_nticks(&s);
    for (int i = 0; i <= nt; i++) {
        int x = (int)floor(sched_trace_x(&s, i * s.tick));
        char lab[48];
        sched_trace_tick_label(&s, i, lab, sizeof lab);
        sched_trace_fill(&im, x, s.axis_y, x + 1, s.axis_y + 6, 0x000000);
        sched_trace_text(&im, x - sched_trace_text_width(lab, 2) / 2, s.axis_y + 10, lab, 2, 0x000000);
    }
    sched_trace_text(&im, s.left + s.plotw - sched_trace_text_width("time (s)", 2), s.axis_y + 26, "time (s)", 2,
                     0x000000);
    sched_trace_text(&im, s.left - 6 - sched_trace_text_width("level", 2), s.legend_y + 2, "level", 2, 0x000000);
    for (int i = 0; i < s.nlegend; i++) {
        const sched_trace_legend *l = &s.legend[i];
        if (l->dashed)
            for (int y = l->y; y < l->y + 14; y += 6) sched_trace_fill(&im, l->x + 7, y, l->x + 8, y + 3, l->fill);
        else if (l->steal) /* a dark frame, or a white strip would melt into the page */
            sched_trace_fill(&im, l->x - 1, l->y - 1, l->x + 15, l->y + 15, 0x000000);
        if (!l->dashed) sched_trace_fill(&im, l->x, l->y, l->x + 14, l->y + 14, l->fill);
        if (l->steal) {
            sched_trace_fill(&im, l->x, l->y, l->x + 14, l->y + 6, 0x000000);
            sched_trace_fill(&im, l->x + 1, l->y + 1, l->x + 13, l->y + 5, sched_trace_steal_colour(l->steal));
        }
        sched_trace_text(&im, l->x + 18, l->y + 2, l->label, 2, 0x000000);
    }
    st = sched_trace_png_write(&im, path, err);
done:
    canopy_free(im.px);
    canopy_free(acc);
    sched_trace_scene_free(&s);
    return st;
}
