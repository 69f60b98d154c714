/*
 * The fan-in buffers of a plan (see fanin.h): which rows of a target each buffer and each message
 * of a cut buffer holds, where the plan cuts them, and the memory they hold on every rank by the
 * plan's simulated times. Pure functions of the plan, so that every rank derives the same layout.
 */
#include "fanin.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static canopy_status fan_nomem(canopy_err *err)
{
    return err && err->status ? err->status : CANOPY_ERR_NOMEM;
}

static int fan_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* The rows of j's panel that source bloks rb0 .. rb1 - 1 (of a cblk facing j) write, each source
 * blok lying inside one blok of j: those not yet in @p mark are marked and appended to @p touched
 * (@p cnt of them already); returns the new count. */
static cint fan_mark_rows(const symbolic *S, cint j, cint rb0, cint rb1, char *mark, cint *touched, cint cnt)
{
    if (rb0 >= rb1) return cnt;
    /* the first of j's bloks ending at or below the first source row, by bisection: a chunk of a
     * wide separator starts thousands of bloks down its target (walking there from the top for
     * every contribution was a third of canopy-simulate's memory sweep at 1,024 x 64) */
    cint tb = S->cblk_fblok[j], hi = S->cblk_fblok[j + 1] - 1, fr0 = S->blok_frow[rb0];
    while (tb < hi) {
        cint mid = tb + (hi - tb) / 2;
        if (S->blok_lrow[mid] < fr0) tb = mid + 1;
        else hi = mid;
    }
    for (cint sb = rb0; sb < rb1; sb++) {
        cint fr = S->blok_frow[sb], h = S->blok_lrow[sb] - fr + 1;
        while (S->blok_lrow[tb] < fr) tb++;
        cint trow = S->blok_coefrow[tb] + (fr - S->blok_frow[tb]);
        for (cint i = 0; i < h; i++) { /* without a branch: overlaps make it unpredictable */
            touched[cnt] = trow + i;
            cnt += !mark[trow + i];
            mark[trow + i] = 1;
        }
    }
    return cnt;
}

static int fan_cmp_cint(const void *a, const void *b)
{
    cint x = *(const cint *)a, y = *(const cint *)b;
    return x < y ? -1 : x > y;
}

/* A facing group (cblk k, first blok b) of a fan-in pair (index q in the pairs) */
typedef struct fan_group {
    int64_t q;
    cint k, b;
} fan_group;

static int fan_cmp_group(const void *a, const void *b)
{
    const fan_group *x = a, *y = b;
    if (x->q != y->q) return x->q < y->q ? -1 : 1;
    return x->k < y->k ? -1 : x->k > y->k;
}

canopy_status sched_fanin_rows(const symbolic *S, const sched_plan *P, int nranks, cint root_first,
                               const int64_t *pairs, size_t np, cint *rows, const int64_t *moff, cint *maps, canopy_err *err)
{
    const int *cblk_rank = P ? P->cblk_rank : NULL;
    if (S == NULL || cblk_rank == NULL || nranks < 1 || (np > 0 && (pairs == NULL || rows == NULL)))
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_fanin_rows: bad argument");
    cint n = S->ncblk, maxst = 1;
    for (cint j = 0; j < n; j++) maxst = S->cblk_stride[j] > maxst ? S->cblk_stride[j] : maxst;
    fan_group *g = canopy_alloc((size_t)S->nblok + 1, sizeof *g, "fan-in rows scratch", err);
    char *mark = canopy_calloc((size_t)maxst + 1, 1, "fan-in rows scratch", err);
    cint *touched = canopy_alloc((size_t)maxst + 1, sizeof(cint), "fan-in rows scratch", err);
    if (!g || !mark || !touched) {
        canopy_free(g);
        canopy_free(mark);
        canopy_free(touched);
        return fan_nomem(err);
    }
    size_t ng = 0;
    for (cint k = 0; k < root_first && k < n; k++)
        for (cint b = S->cblk_fblok[k] + 1, e; b < S->cblk_fblok[k + 1]; b = e) {
            e = symbolic_group_end(S, k, b);
            cint j = S->blok_fcblk[b];
            int src = sched_src_rank(P, k, j);
            if (src == cblk_rank[j]) continue;
            int64_t key = (int64_t)j * nranks + src;
            const int64_t *at = bsearch(&key, pairs, np, sizeof *pairs, fan_cmp_i64);
            if (at == NULL) continue;
            int64_t q = at - pairs;
            if (moff == NULL || moff[q] >= 0) g[ng++] = (fan_group){q, k, b};
        }
    qsort(g, ng, sizeof *g, fan_cmp_group);
    for (size_t q = 0; q < np; q++) rows[q] = 0;
    for (size_t a = 0, z; a < ng; a = z) {
        int64_t q = g[a].q;
        cint j = (cint)(pairs[q] / nranks), cnt = 0;
        /* the rows of k's bloks from b on */
        for (z = a; z < ng && g[z].q == q; z++) cnt = fan_mark_rows(S, j, g[z].b, S->cblk_fblok[g[z].k + 1], mark, touched, cnt);
        cint *map = maps && moff ? maps + moff[q] : NULL;
        if (map) {
            /* buffer rows numbered in panel order */
            qsort(touched, (size_t)cnt, sizeof *touched, fan_cmp_cint);
            for (cint i = 0; i < S->cblk_stride[j]; i++) map[i] = -1;
            for (cint i = 0; i < cnt; i++) map[touched[i]] = i;
        }
        for (cint i = 0; i < cnt; i++) mark[touched[i]] = 0;
        rows[q] = cnt;
    }
    canopy_free(touched);
    canopy_free(g);
    canopy_free(mark);
    return CANOPY_SUCCESS;
}

/* A contribution of a fan-in pair (index q): its number in the plan's order into the target, and
 * the source bloks rb0 .. rb1 - 1 of cblk k whose rows it writes. */
typedef struct fan_crow {
    int64_t q;
    int num;
    cint k, rb0, rb1;
} fan_crow;

static int fan_cmp_crow(const void *a, const void *b)
{
    const fan_crow *x = a, *y = b;
    if (x->q != y->q) return x->q < y->q ? -1 : 1;
    return x->num < y->num ? -1 : x->num > y->num;
}

canopy_status sched_fanin_msgrows(const symbolic *S, const sched_plan *P, const int64_t *pairs, size_t np, const int *nmsg,
                                  const int *cuts, cint *rows, const int64_t *loff, cint *lists, canopy_err *err)
{
    if (S == NULL || P == NULL || P->ncblk != S->ncblk || (np > 0 && (pairs == NULL || rows == NULL)))
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_fanin_msgrows: bad argument");
    const sched_dag *G = &P->factor;
    int R = P->nranks > 0 ? P->nranks : 1, numbered = P->blok_contrib != NULL && P->task_contrib != NULL;
    cint n = S->ncblk, root_first = P->root.n > 0 ? P->root.first : n, maxst = 1;
    for (size_t x = 0; x < np * SCHED_FANIN_SEGS; x++) rows[x] = 0;
    if (np == 0 || R < 2) return CANOPY_SUCCESS;
    for (cint j = 0; j < n; j++) maxst = S->cblk_stride[j] > maxst ? S->cblk_stride[j] : maxst;
    /* the contributions: a facing group's rows from it on (UPDATE, or one leaving a SUBTREE), an
     * UPDATE2D task's one facing group of rows; without contribution numbers, every group whole */
    size_t m = 0, cap = (size_t)S->nblok + (numbered ? (size_t)G->ntasks : 0) + 1;
    fan_crow *c = canopy_alloc(cap, sizeof *c, "fan-in message rows", err);
    char *mark = canopy_calloc((size_t)maxst + 1, 1, "fan-in message rows", err);
    cint *touched = canopy_alloc((size_t)maxst + 1, sizeof(cint), "fan-in message rows", err);
    if (!c || !mark || !touched) {
        canopy_free(c);
        canopy_free(mark);
        canopy_free(touched);
        return fan_nomem(err);
    }
    for (cint k = 0; k < root_first && k < n; k++) /* the grid's root sends nothing */
        for (cint b = S->cblk_fblok[k] + 1, e; b < S->cblk_fblok[k + 1]; b = e) {
            e = symbolic_group_end(S, k, b);
            cint j = S->blok_fcblk[b];
            int src = sched_src_rank(P, k, j);
            if (src == P->cblk_rank[j] || (numbered && P->blok_contrib[b] < 0)) continue;
            int64_t key = (int64_t)j * R + src;
            const int64_t *at = bsearch(&key, pairs, np, sizeof *pairs, fan_cmp_i64);
            if (at != NULL && (loff == NULL || loff[(size_t)(at - pairs) * SCHED_FANIN_SEGS] != -1))
                c[m++] = (fan_crow){at - pairs, numbered ? P->blok_contrib[b] : 0, k, b, S->cblk_fblok[k + 1]};
        }
    for (int i = 0; numbered && i < G->ntasks; i++) {
        if (G->kind[i] != SCHED_TASK_UPDATE2D) continue;
        cint k = G->cblk[i], j = S->blok_fcblk[G->first[i]];
        int src = sched_src_rank(P, k, j);
        if (k >= root_first || src == P->cblk_rank[j]) continue;
        int64_t key = (int64_t)j * R + src;
        const int64_t *at = bsearch(&key, pairs, np, sizeof *pairs, fan_cmp_i64);
        if (at != NULL && (loff == NULL || loff[(size_t)(at - pairs) * SCHED_FANIN_SEGS] != -1))
            c[m++] = (fan_crow){at - pairs, P->task_contrib[i], k, G->tile[i], G->tile_end[i]};
    }
    qsort(c, m, sizeof *c, fan_cmp_crow);
    for (size_t a = 0, z; a < m; a = z) {
        int64_t q = c[a].q;
        cint j = (cint)(pairs[q] / R);
        for (z = a; z < m && c[z].q == q; z++) {}
        int segs = nmsg ? nmsg[q] : 1;
        const int *cq = cuts ? cuts + (size_t)q * (SCHED_FANIN_SEGS - 1) : NULL;
        for (int s = 0; s < segs; s++) {
            /* this rank's contributions into j numbered lo .. hi - 1 among its own (the ticket order) */
            size_t lo = a + (s ? (size_t)cq[s - 1] : 0), hi = s + 1 < segs ? a + (size_t)cq[s] : z;
            cint cnt = 0;
            for (size_t x = lo; x < hi && x < z; x++) cnt = fan_mark_rows(S, j, c[x].rb0, c[x].rb1, mark, touched, cnt);
            int64_t o = loff && lists ? loff[(size_t)q * SCHED_FANIN_SEGS + (size_t)s] : -1;
            /* the list in panel order only where it is kept: the counts need no order */
            if (o >= 0) qsort(touched, (size_t)cnt, sizeof *touched, fan_cmp_cint);
            for (cint i = 0; i < cnt; i++) {
                if (o >= 0) lists[o + i] = touched[i];
                mark[touched[i]] = 0;
            }
            rows[(size_t)q * SCHED_FANIN_SEGS + s] = cnt;
        }
    }
    canopy_free(c);
    canopy_free(mark);
    canopy_free(touched);
    return CANOPY_SUCCESS;
}

/* A sent buffer's time in flight, in the memory model: the exchange's longest nap while its workers
 * are busy (comm/exchange.h), and the copy at a shared-memory rate of 5 GB/s per scalar of 8 bytes. */
#define FAN_FLIGHT 2e-3
#define FAN_FLIGHT_SCALAR (8.0 / 5e9)

/* An event of a buffer's life on a rank: at time t, scalars come (> 0) or go (< 0). */
typedef struct fan_event {
    int rank;
    double t, delta;
} fan_event;

static int fan_cmp_event(const void *a, const void *b)
{
    const fan_event *x = a, *y = b;
    if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return x->delta > y->delta ? -1 : x->delta < y->delta; /* arrivals first: touching lives overlap */
}

/* One contribution of a fan-in pair (index q) at its time in the plan. */
typedef struct fan_ctime {
    int64_t q;
    double t;
} fan_ctime;

static int fan_cmp_ctime(const void *a, const void *b)
{
    const fan_ctime *x = a, *y = b;
    if (x->q != y->q) return x->q < y->q ? -1 : 1;
    return (x->t > y->t) - (x->t < y->t);
}

/*
 * Every contribution into a fan-in pair of @p pairs (sorted (target * R + rank), unique) at the
 * time the plan applies it: an UPDATE or UPDATE2D when its task ends, a SUBTREE task's at
 * blok_time; sorted by pair, then time. Without blok_time (a plan whose contributions were not
 * numbered) a SUBTREE task counts at its start and at its end, and *timed is 0.
 */
static canopy_status fan_pair_times(const symbolic *S, const sched_plan *P, const int64_t *pairs, size_t nu,
                                     fan_ctime **out, size_t *nout, int *timed, canopy_err *err)
{
    const sched_dag *G = &P->factor;
    int R = P->nranks > 0 ? P->nranks : 1;
    *out = NULL;
    *nout = 0;
    *timed = P->blok_time != NULL;
    if (!P->task_start || !P->task_end)
        return canopy_err_set(err, CANOPY_ERR_INTERNAL, "fan-in pairs: a plan without its simulation");
    for (int pass = 0; pass < 2; pass++) {
        size_t m = 0;
        for (int i = 0; i < G->ntasks; i++) {
            int kind = G->kind[i];
            cint k0, k1, only = -1;
            if (kind == SCHED_TASK_UPDATE || kind == SCHED_TASK_UPDATE2D) {
                k0 = k1 = G->cblk[i];
                only = S->blok_fcblk[G->first[i]];
            } else if (kind == SCHED_TASK_SUBTREE) {
                k0 = G->first[i];
                k1 = G->cblk[i];
            } else {
                continue;
            }
            for (cint k = k0; k <= k1; k++) {
                if (sched_root_has(&P->root, k)) continue; /* the grid's root sends nothing */
                for (cint b = S->cblk_fblok[k] + 1, e; b < S->cblk_fblok[k + 1]; b = e) {
                    e = symbolic_group_end(S, k, b);
                    cint j = S->blok_fcblk[b];
                    int src = sched_src_rank(P, k, j);
                    if ((only >= 0 && j != only) || P->cblk_rank[j] == src) continue;
                    int64_t key = (int64_t)j * R + src;
                    const int64_t *at = bsearch(&key, pairs, nu, sizeof *pairs, fan_cmp_i64);
                    if (at == NULL) continue;
                    int64_t q = at - pairs;
                    if (kind != SCHED_TASK_SUBTREE) {
                        if (pass) (*out)[m] = (fan_ctime){q, P->task_end[i]};
                        m++;
                    } else if (*timed) {
                        if (pass) (*out)[m] = (fan_ctime){q, P->blok_time[b]};
                        m++;
                    } else {
                        if (pass) {
                            (*out)[m] = (fan_ctime){q, P->task_start[i]};
                            (*out)[m + 1] = (fan_ctime){q, P->task_end[i]};
                        }
                        m += 2;
                    }
                }
            }
        }
        if (pass == 0) {
            *out = canopy_alloc(m + 1, sizeof(fan_ctime), "fan-in pairs", err);
            if (*out == NULL) return fan_nomem(err);
        } else {
            *nout = m;
            qsort(*out, m, sizeof **out, fan_cmp_ctime);
        }
    }
    return CANOPY_SUCCESS;
}

/* Where the buffer whose contributions are c[lo .. hi) (sorted by time) is cut: at every gap of
 * at least @p gap seconds between two of them (at most the SCHED_FANIN_SEGS - 1 widest); cuts[s]
 * gets the contributions before cut s, ascending. Returns the messages (cuts + 1). */
static int fan_cuts(const fan_ctime *c, size_t lo, size_t hi, double gap, int *cuts)
{
    int m = 0;
    for (size_t x = lo + 1; gap > 0 && x < hi; x++) {
        double g = c[x].t - c[x - 1].t;
        if (g < gap) continue;
        if (m < SCHED_FANIN_SEGS - 1) {
            cuts[m++] = (int)(x - lo);
            continue;
        }
        /* full: replace the narrowest cut kept so far if this gap is wider */
        int low = 0;
        for (int y = 1; y < m; y++)
            if (c[lo + cuts[y]].t - c[lo + cuts[y] - 1].t < c[lo + cuts[low]].t - c[lo + cuts[low] - 1].t) low = y;
        if (g > c[lo + cuts[low]].t - c[lo + cuts[low] - 1].t) {
            for (int y = low; y + 1 < m; y++) cuts[y] = cuts[y + 1];
            cuts[m - 1] = (int)(x - lo);
        }
    }
    return m + 1;
}

/* The gap worth a message of its own: 2% of the predicted factorization, for a buffer of at least
 * 32768 scalars (256 KiB real) unless every buffer is cut (fanin_cuts 2): smaller ones go whole (a
 * message's cost for little memory). */
static double fan_cut_gap(const sched_plan *P, double scalars)
{
    int cut = P->fanin_cuts == 2 || (P->fanin_cuts == 1 && scalars >= 32768.0);
    return cut && P->factor.predicted_time > 0 ? 0.02 * P->factor.predicted_time : 0;
}

/* The share of its own factor a rank may hold in open fan-in buffers before the plan cuts some
 * (fan_plan_cuts): the heaviest rank's fan-in then stays about its factor's size. */
#define FAN_CAP_SHARE 0.5

/* An event of a rank's sweep over its contributions: contribution i (in time order) of pair q. */
typedef struct fan_sweep {
    int rank;
    double t;
    int64_t q;
    int i;
} fan_sweep;

static int fan_cmp_sweep(const void *a, const void *b)
{
    const fan_sweep *x = a, *y = b;
    if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    if (x->q != y->q) return x->q < y->q ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/*
 * Every pair's cuts, from its contributions c (fan_pair_times, m of them) and its whole rows
 * @p rows: at the gaps of the plan (fan_cuts), then under a cap: a rank whose open buffers
 * (from a message's first contribution to its last, each counted whole) would hold more than
 * FAN_CAP_SHARE of its own factor's scalars cuts, at that moment, the open buffers whose next
 * contribution comes last, until it is under again (a buffer in SCHED_FANIN_SEGS messages at
 * most; under fanin_cuts 1 only buffers of 32768 scalars or more; never one whose next
 * contribution comes before the message would be out of flight).
 */
static canopy_status fan_plan_cuts(const symbolic *S, const sched_plan *P, const int64_t *pairs, size_t nu, const cint *rows,
                                    const fan_ctime *c, size_t m, int *nmsg, int *cuts, canopy_err *err)
{
    int R = P->nranks > 0 ? P->nranks : 1;
    size_t *lo = canopy_alloc(nu + 1, sizeof(size_t), "fan-in cuts", err);
    if (lo == NULL) return fan_nomem(err);
    for (size_t x = 0, q = 0; q <= nu; q++) {
        while (x < m && c[x].q < (int64_t)q) x++;
        lo[q] = x;
    }
    for (size_t q = 0; q < nu; q++) {
        cint j = (cint)(pairs[q] / R);
        double size = (double)rows[q] * (double)(S->cblk_fcol[j + 1] - S->cblk_fcol[j]);
        nmsg[q] = fan_cuts(c, lo[q], lo[q + 1], fan_cut_gap(P, size), cuts + q * (SCHED_FANIN_SEGS - 1));
    }
    if (R < 2 || m == 0) {
        canopy_free(lo);
        return CANOPY_SUCCESS;
    }
    /* the cap: a sweep over each rank's contributions in time order */
    double *cap = canopy_calloc((size_t)R, sizeof(double), "fan-in cuts", err);
    fan_sweep *ev = canopy_alloc(m + 1, sizeof(fan_sweep), "fan-in cuts", err);
    int *done = canopy_calloc(nu + 1, sizeof(int), "fan-in cuts", err);      /* contributions applied */
    char *open = canopy_calloc(nu + 1, 1, "fan-in cuts", err);
    int *extra = canopy_alloc((nu + 1) * (SCHED_FANIN_SEGS - 1), sizeof(int), "fan-in cuts", err);
    int *nextra = canopy_calloc(nu + 1, sizeof(int), "fan-in cuts", err);
    int64_t *live_q = canopy_alloc(m + 1, sizeof(int64_t), "fan-in cuts", err); /* open pairs of the rank (one per event at most) */
    if (!cap || !ev || !done || !open || !extra || !nextra || !live_q) {
        canopy_free(lo);
        canopy_free(cap);
        canopy_free(ev);
        canopy_free(done);
        canopy_free(open);
        canopy_free(extra);
        canopy_free(nextra);
        canopy_free(live_q);
        return fan_nomem(err);
    }
    for (cint k = 0; k < S->ncblk; k++) cap[P->cblk_rank[k]] += (double)(S->cblk_coef[k + 1] - S->cblk_coef[k]);
    for (int r = 0; r < R; r++) cap[r] *= FAN_CAP_SHARE;
    for (size_t q = 0; q < nu; q++)
        for (size_t x = lo[q]; x < lo[q + 1]; x++)
            ev[x] = (fan_sweep){(int)(pairs[q] % R), c[x].t, (int64_t)q, (int)(x - lo[q])};
    qsort(ev, m, sizeof *ev, fan_cmp_sweep);
    double live = 0;
    size_t nlive = 0;
    for (size_t e = 0; e < m; e++) {
        if (e > 0 && ev[e].rank != ev[e - 1].rank) {
            live = 0;
            nlive = 0;
        }
        int64_t q = ev[e].q;
        int i = ev[e].i, total = (int)(lo[q + 1] - lo[q]), r = ev[e].rank;
        cint j = (cint)(pairs[q] / R);
        double w = (double)(S->cblk_fcol[j + 1] - S->cblk_fcol[j]), size = (double)rows[q] * w;
        const int *gq = cuts + q * (SCHED_FANIN_SEGS - 1);
        for (int s = 0; open[q] && s + 1 < nmsg[q]; s++)
            if (gq[s] == i) { /* a gap cut: the message before it is sent */
                open[q] = 0;
                live -= size;
            }
        if (!open[q]) {
            open[q] = 1;
            live += size;
            live_q[nlive++] = q;
        }
        /* over the cap: cut the open buffers (not this one) whose next contribution is the latest */
        while (live > cap[r]) {
            size_t best = nlive;
            double bt = -1;
            for (size_t y = 0; y < nlive; y++) {
                int64_t p = live_q[y];
                cint jp = (cint)(pairs[p] / R);
                double sp = (double)rows[p] * (double)(S->cblk_fcol[jp + 1] - S->cblk_fcol[jp]);
                if (p == q || !open[p] || done[p] == 0 || done[p] >= (int)(lo[p + 1] - lo[p])) continue;
                if (nmsg[p] + nextra[p] >= SCHED_FANIN_SEGS || (P->fanin_cuts == 1 && sp < 32768.0)) continue;
                double nt = c[lo[p] + (size_t)done[p]].t;
                /* a message lives on in flight (sched_fanin_memory's rule): cutting a buffer whose
                 * next contribution comes sooner holds the old message and the new buffer at once */
                if (nt - ev[e].t < FAN_FLIGHT + sp * FAN_FLIGHT_SCALAR) continue;
                if (nt > bt) {
                    bt = nt;
                    best = y;
                }
            }
            if (best == nlive) break;
            int64_t p = live_q[best];
            cint jp = (cint)(pairs[p] / R);
            extra[p * (SCHED_FANIN_SEGS - 1) + nextra[p]++] = done[p];
            open[p] = 0;
            live -= (double)rows[p] * (double)(S->cblk_fcol[jp + 1] - S->cblk_fcol[jp]);
        }
        done[q] = i + 1;
        if (done[q] == total) { /* its last message is sent */
            open[q] = 0;
            live -= size;
        }
        /* forget the closed ones now and then */
        if (nlive > 64 && (e & 63) == 0) {
            size_t z = 0;
            for (size_t y = 0; y < nlive; y++)
                if (open[live_q[y]]) live_q[z++] = live_q[y];
            nlive = z;
        }
    }
    /* the cap's cuts among the gap's, ascending */
    for (size_t q = 0; q < nu; q++) {
        if (nextra[q] == 0) continue;
        int *cq = cuts + q * (SCHED_FANIN_SEGS - 1), n = nmsg[q] - 1;
        for (int x = 0; x < nextra[q]; x++) cq[n++] = extra[q * (SCHED_FANIN_SEGS - 1) + x];
        for (int a = 1; a < n; a++)
            for (int b = a; b > 0 && cq[b - 1] > cq[b]; b--) {
                int t = cq[b];
                cq[b] = cq[b - 1];
                cq[b - 1] = t;
            }
        int u = 0; /* a gap cut where the cap cut already: once */
        for (int a = 0; a < n; a++)
            if (u == 0 || cq[a] != cq[u - 1]) cq[u++] = cq[a];
        nmsg[q] = u + 1;
    }
    canopy_free(lo);
    canopy_free(cap);
    canopy_free(ev);
    canopy_free(done);
    canopy_free(open);
    canopy_free(extra);
    canopy_free(nextra);
    canopy_free(live_q);
    return CANOPY_SUCCESS;
}

canopy_status sched_fanin_cuts(const symbolic *S, const sched_plan *P, const int64_t *pairs, size_t nu, int *nmsg,
                               int *cuts, canopy_err *err)
{
    if (S == NULL || P == NULL || (nu > 0 && (pairs == NULL || nmsg == NULL || cuts == NULL)))
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_fanin_cuts: bad argument");
    for (size_t q = 0; q < nu; q++) nmsg[q] = 1;
    if (nu == 0 || !P->fanin_cuts) return CANOPY_SUCCESS;
    fan_ctime *c = NULL;
    size_t m = 0;
    int timed = 0, R = P->nranks > 0 ? P->nranks : 1;
    cint *rows = canopy_alloc(nu + 1, sizeof(cint), "fan-in cuts", err);
    canopy_status st = rows ? sched_fanin_rows(S, P, R, P->root.n > 0 ? P->root.first : S->ncblk, pairs, nu, rows, NULL, NULL, err)
                            : fan_nomem(err);
    if (st == CANOPY_SUCCESS) st = fan_pair_times(S, P, pairs, nu, &c, &m, &timed, err);
    if (st == CANOPY_SUCCESS && timed) st = fan_plan_cuts(S, P, pairs, nu, rows, c, m, nmsg, cuts, err);
    canopy_free(rows);
    canopy_free(c);
    return st;
}

/* top2d flat (sched_src_rank): rank r's copy of another rank's cblk k, held from the first TRSM of k
 * whose group it receives to the end of its last UPDATE2D reading k (scalars, one part) */
typedef struct fan_copy {
    int64_t key; /* k * R + r */
    double t0, t1, size;
} fan_copy;

static int fan_cmp_copy(const void *a, const void *b)
{
    const fan_copy *x = a, *y = b;
    return x->key < y->key ? -1 : x->key > y->key;
}

static canopy_status fan_copies(const symbolic *S, const sched_plan *P, fan_copy **out, size_t *nout, canopy_err *err)
{
    const sched_dag *G = &P->factor;
    int R = P->nranks;
    size_t m = 0;
    *out = NULL;
    *nout = 0;
    if (!P->task_start || !P->task_end) return CANOPY_SUCCESS;
    for (int i = 0; i < G->ntasks; i++)
        if (G->kind[i] == SCHED_TASK_TRSM)
            for (int e = G->succ_ptr[i]; e < G->succ_ptr[i + 1]; e++) m++;
    fan_copy *c = canopy_alloc(m + 1, sizeof *c, "fan-in memory scratch", err);
    if (c == NULL) return fan_nomem(err);
    m = 0;
    for (int i = 0; i < G->ntasks; i++) {
        if (G->kind[i] != SCHED_TASK_TRSM) continue;
        cint k = G->cblk[i];
        double size = (double)S->cblk_stride[k] * (double)(S->cblk_fcol[k + 1] - S->cblk_fcol[k]);
        for (int e = G->succ_ptr[i]; e < G->succ_ptr[i + 1]; e++) {
            int s = G->succ[e], r = G->kind[s] == SCHED_TASK_UPDATE2D ? sched_task_rank(S, P, s) : P->cblk_rank[k];
            if (r != P->cblk_rank[k]) c[m++] = (fan_copy){(int64_t)k * R + r, P->task_end[i], P->task_end[s], size};
        }
    }
    qsort(c, m, sizeof *c, fan_cmp_copy);
    size_t u = 0;
    for (size_t q = 0; q < m; q++) {
        if (u > 0 && c[u - 1].key == c[q].key) {
            c[u - 1].t0 = fmin(c[u - 1].t0, c[q].t0);
            c[u - 1].t1 = fmax(c[u - 1].t1, c[q].t1);
        } else {
            c[u++] = c[q];
        }
    }
    *out = c;
    *nout = u;
    return CANOPY_SUCCESS;
}

canopy_status sched_fanin_memory(const symbolic *S, const sched_plan *P, double *peak, double *peak_arrival, double *sink,
                                 canopy_err *err)
{
    if (S == NULL || P == NULL || P->ncblk != S->ncblk)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_fanin_memory: bad argument");
    int R = P->nranks > 0 ? P->nranks : 1;
    cint n = S->ncblk;
    for (int r = 0; r < R; r++) {
        if (peak) peak[r] = 0;
        if (peak_arrival) peak_arrival[r] = 0;
        if (sink) sink[r] = 0;
    }
    if (R < 2 || (!peak && !peak_arrival && !sink)) return CANOPY_SUCCESS;
    /* the pairs and their rows */
    int64_t *pairs = canopy_alloc((size_t)S->nblok + 1, sizeof(int64_t), "fan-in memory scratch", err);
    if (!pairs) return fan_nomem(err);
    size_t np = 0;
    for (cint k = 0; k < n && !sched_root_has(&P->root, k); k++)
        for (cint b = S->cblk_fblok[k] + 1; b < S->cblk_fblok[k + 1]; b++) {
            cint j = S->blok_fcblk[b];
            int src = sched_src_rank(P, k, j);
            if (src != P->cblk_rank[j]) pairs[np++] = (int64_t)j * R + src;
        }
    qsort(pairs, np, sizeof *pairs, fan_cmp_i64);
    size_t nu = 0;
    for (size_t q = 0; q < np; q++)
        if (nu == 0 || pairs[q] != pairs[nu - 1]) pairs[nu++] = pairs[q];
    cint *rows = canopy_alloc(nu + 1, sizeof(cint), "fan-in memory scratch", err);
    size_t segs = P->fanin_cuts && P->blok_time ? SCHED_FANIN_SEGS : 1;
    fan_event *ev = canopy_alloc(4 * segs * nu + 1, sizeof(fan_event), "fan-in memory scratch", err);
    fan_ctime *c = NULL;
    size_t m = 0;
    int timed = 0;
    /* the whole buffers' rows decide which are cut (sched_fanin_cuts): only with cuts */
    canopy_status st = !rows || !ev ? fan_nomem(err) : !P->fanin_cuts ? CANOPY_SUCCESS
                       : sched_fanin_rows(S, P, R, P->root.n > 0 ? P->root.first : n, pairs, nu, rows, NULL, NULL, err);
    if (st == CANOPY_SUCCESS) st = fan_pair_times(S, P, pairs, nu, &c, &m, &timed, err);
    /* every pair's cuts (as sched_fanin_cuts), then the rows of each of its messages */
    int *nmsg = st == CANOPY_SUCCESS ? canopy_alloc(nu + 1, sizeof(int), "fan-in memory scratch", err) : NULL;
    int *cuts = nmsg ? canopy_alloc((nu + 1) * (SCHED_FANIN_SEGS - 1), sizeof(int), "fan-in memory scratch", err) : NULL;
    cint *mrows = cuts ? canopy_alloc((nu + 1) * SCHED_FANIN_SEGS, sizeof(cint), "fan-in memory scratch", err) : NULL;
    if (st == CANOPY_SUCCESS && mrows == NULL) st = fan_nomem(err);
    for (size_t q = 0; q < nu && st == CANOPY_SUCCESS; q++) nmsg[q] = 1;
    if (st == CANOPY_SUCCESS && timed && P->fanin_cuts) st = fan_plan_cuts(S, P, pairs, nu, rows, c, m, nmsg, cuts, err);
    if (st == CANOPY_SUCCESS) st = sched_fanin_msgrows(S, P, pairs, nu, nmsg, cuts, mrows, NULL, NULL, err);
    double flight = FAN_FLIGHT;
    size_t ecap = 4 * segs * nu + 1, xn = 0;
    fan_copy *xc = NULL;
    if (st == CANOPY_SUCCESS && P->cblk_xgrid) st = fan_copies(S, P, &xc, &xn, err);
    if (st == CANOPY_SUCCESS) {
        /* mode 0: received buffers held until the panel task (static); mode 1: added on arrival
         * (dynamic), an instant that still counts beside the buffers alive then */
        for (int mode = 0; mode < 2; mode++) {
            double *out = mode ? peak_arrival : peak;
            if (out == NULL && !(mode == 0 && sink)) continue;
            size_t ne = 0;
            for (size_t lo = 0, hi, q = 0; q < nu; q++) {
                cint j = (cint)(pairs[q] / R);
                int src = (int)(pairs[q] % R), dst = P->cblk_rank[j];
                double width = (double)(S->cblk_fcol[j + 1] - S->cblk_fcol[j]);
                double panel_at = P->task_start[P->cblk_task[j]];
                /* this pair's contributions c[lo .. hi) (none found: at the panel) */
                for (hi = lo; hi < m && c[hi].q == (int64_t)q; hi++) {}
                const int *cq = cuts + q * (SCHED_FANIN_SEGS - 1);
                for (int seg = 0; seg < nmsg[q]; seg++) {
                    size_t a = lo + (seg ? (size_t)cq[seg - 1] : 0), z = seg + 1 < nmsg[q] ? lo + (size_t)cq[seg] : hi;
                    /* each message holds the rows of its own contributions */
                    double size = (double)mrows[q * SCHED_FANIN_SEGS + (size_t)seg] * width;
                    double first = a < z ? c[a].t : panel_at, last = a < z ? c[z - 1].t : panel_at;
                    double arrival = fmin(last, panel_at);
                    /* the sender's buffer lives from its first contribution until its receiver
                     * took it: the exchange receives every message as it comes, but the messages
                     * of one burst (the updates of one cblk, sent one after the other) are in
                     * flight together: measured 3-30 ms on 2 ranks, counted here as the cut gap */
                    ev[ne++] = (fan_event){src, fmin(first, arrival), size};
                    ev[ne++] = (fan_event){src, fmin(panel_at, arrival + flight + size * FAN_FLIGHT_SCALAR), -size};
                    ev[ne++] = (fan_event){dst, arrival, size};
                    ev[ne++] = (fan_event){dst, mode ? arrival : panel_at, -size};
                    if (sink && mode == 0) sink[dst] = fmax(sink[dst], size);
                }
                lo = hi;
            }
            if (out == NULL) continue;
            if (xn > 0 && ne + 2 * xn > ecap) {
                fan_event *e2 = canopy_realloc(ev, ne + 2 * xn + 1, sizeof(fan_event), "fan-in memory scratch", err);
                if (e2 == NULL) {
                    st = fan_nomem(err);
                    break;
                }
                ev = e2;
                ecap = ne + 2 * xn + 1;
            }
            for (size_t q = 0; q < xn; q++) { /* top2d flat: the copies of other ranks' cblks */
                ev[ne++] = (fan_event){(int)(xc[q].key % R), xc[q].t0, xc[q].size};
                ev[ne++] = (fan_event){(int)(xc[q].key % R), xc[q].t1, -xc[q].size};
            }
            qsort(ev, ne, sizeof *ev, fan_cmp_event);
            double live = 0;
            for (size_t x = 0; x < ne; x++) {
                if (x > 0 && ev[x].rank != ev[x - 1].rank) live = 0;
                live += ev[x].delta;
                out[ev[x].rank] = fmax(out[ev[x].rank], live);
            }
        }
    }
    canopy_free(xc);
    canopy_free(pairs);
    canopy_free(rows);
    canopy_free(c);
    canopy_free(ev);
    canopy_free(nmsg);
    canopy_free(cuts);
    canopy_free(mrows);
    return st;
}
