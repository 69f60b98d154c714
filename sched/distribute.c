/*
 * One rank's share of a plan (see distribute.h). O((tasks + edges + bloks) log) and
 * deterministic, so that every rank derives the same messages from the same plan.
 */
#include "distribute.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static canopy_status dist_nomem(canopy_err *err)
{
    return err && err->status ? err->status : CANOPY_ERR_NOMEM;
}

static int dist_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* (target, contribution number, blok or local UPDATE2D task) triples, sorted by target then number */
typedef struct dist_contrib {
    cint j;
    int num;
    cint b;    /* first blok of the facing group, or -1: ... */
    int task;  /* ... the local UPDATE2D task */
} dist_contrib;

static int dist_cmp_contrib(const void *a, const void *b)
{
    const dist_contrib *x = a, *y = b;
    if (x->j != y->j) return x->j < y->j ? -1 : 1;
    return x->num < y->num ? -1 : x->num > y->num;
}

/* End of the facing group starting at blok b of cblk k. */
static inline cint dist_group_end(const symbolic *S, cint k, cint b)
{
    cint e = b + 1, bend = S->cblk_fblok[k + 1];
    while (e < bend && S->blok_fcblk[e] == S->blok_fcblk[b]) e++;
    return e;
}

/* A facing group (cblk k, first blok b) of a fan-in pair (index q in the pairs) */
typedef struct dist_group {
    int64_t q;
    cint k, b;
} dist_group;

static int dist_cmp_group(const void *a, const void *b)
{
    const dist_group *x = a, *y = b;
    if (x->q != y->q) return x->q < y->q ? -1 : 1;
    return x->k < y->k ? -1 : x->k > y->k;
}

canopy_status sched_fanin_rows(const symbolic *S, const int *cblk_rank, int nranks, cint root_first, const int64_t *pairs,
                               size_t np, cint *rows, const int64_t *moff, cint *maps, canopy_err *err)
{
    if (S == NULL || cblk_rank == NULL || nranks < 1 || (np > 0 && (pairs == NULL || rows == NULL)))
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_fanin_rows: bad argument");
    cint n = S->ncblk, maxst = 1;
    for (cint j = 0; j < n; j++) maxst = S->cblk_stride[j] > maxst ? S->cblk_stride[j] : maxst;
    dist_group *g = canopy_alloc((size_t)S->nblok + 1, sizeof *g, "fan-in rows scratch", err);
    cint *mark = canopy_alloc((size_t)maxst, sizeof(cint), "fan-in rows scratch", err);
    if (!g || !mark) {
        canopy_free(g);
        canopy_free(mark);
        return dist_nomem(err);
    }
    size_t ng = 0;
    for (cint k = 0; k < root_first && k < n; k++)
        for (cint b = S->cblk_fblok[k] + 1, e; b < S->cblk_fblok[k + 1]; b = e) {
            e = dist_group_end(S, k, b);
            cint j = S->blok_fcblk[b];
            if (cblk_rank[k] == cblk_rank[j]) continue;
            int64_t key = (int64_t)j * nranks + cblk_rank[k];
            const int64_t *at = bsearch(&key, pairs, np, sizeof *pairs, dist_cmp_i64);
            if (at == NULL) continue;
            int64_t q = at - pairs;
            if (moff == NULL || moff[q] >= 0) g[ng++] = (dist_group){q, k, b};
        }
    qsort(g, ng, sizeof *g, dist_cmp_group);
    for (cint i = 0; i < maxst; i++) mark[i] = -1;
    for (size_t q = 0; q < np; q++) rows[q] = 0;
    for (size_t a = 0, z; a < ng; a = z) {
        int64_t q = g[a].q;
        cint j = (cint)(pairs[q] / nranks), st = S->cblk_stride[j], cnt = 0;
        for (z = a; z < ng && g[z].q == q; z++) {
            /* the rows of k's bloks from b on, each source blok inside one blok of j */
            cint k = g[z].k, tb = S->cblk_fblok[j];
            for (cint sb = g[z].b; sb < S->cblk_fblok[k + 1]; sb++) {
                cint fr = S->blok_frow[sb], h = S->blok_lrow[sb] - fr + 1;
                while (S->blok_lrow[tb] < fr) tb++;
                cint trow = S->blok_coefrow[tb] + (fr - S->blok_frow[tb]);
                for (cint i = 0; i < h; i++) mark[trow + i] = 0;
            }
        }
        cint *map = maps && moff ? maps + moff[q] : NULL;
        for (cint i = 0; i < st; i++) {
            if (map) map[i] = mark[i] < 0 ? -1 : cnt;
            cnt += mark[i] >= 0;
            mark[i] = -1;
        }
        rows[q] = cnt;
    }
    canopy_free(g);
    canopy_free(mark);
    return CANOPY_SUCCESS;
}

/* A contribution of a fan-in pair (index q): its number in the plan's order into the target, and
 * the source bloks rb0 .. rb1 - 1 of cblk k whose rows it writes. */
typedef struct dist_crow {
    int64_t q;
    int num;
    cint k, rb0, rb1;
} dist_crow;

static int dist_cmp_crow(const void *a, const void *b)
{
    const dist_crow *x = a, *y = b;
    if (x->q != y->q) return x->q < y->q ? -1 : 1;
    return x->num < y->num ? -1 : x->num > y->num;
}

static int dist_cmp_cint(const void *a, const void *b)
{
    cint x = *(const cint *)a, y = *(const cint *)b;
    return x < y ? -1 : x > y;
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
    dist_crow *c = canopy_alloc(cap, sizeof *c, "fan-in message rows", err);
    char *mark = canopy_calloc((size_t)maxst + 1, 1, "fan-in message rows", err);
    cint *touched = canopy_alloc((size_t)maxst + 1, sizeof(cint), "fan-in message rows", err);
    if (!c || !mark || !touched) {
        canopy_free(c);
        canopy_free(mark);
        canopy_free(touched);
        return dist_nomem(err);
    }
    for (cint k = 0; k < root_first && k < n; k++) /* the grid's root sends nothing */
        for (cint b = S->cblk_fblok[k] + 1, e; b < S->cblk_fblok[k + 1]; b = e) {
            e = dist_group_end(S, k, b);
            cint j = S->blok_fcblk[b];
            if (P->cblk_rank[k] == P->cblk_rank[j] || (numbered && P->blok_contrib[b] < 0)) continue;
            int64_t key = (int64_t)j * R + P->cblk_rank[k];
            const int64_t *at = bsearch(&key, pairs, np, sizeof *pairs, dist_cmp_i64);
            if (at != NULL && (loff == NULL || loff[(size_t)(at - pairs) * SCHED_FANIN_SEGS] != -1))
                c[m++] = (dist_crow){at - pairs, numbered ? P->blok_contrib[b] : 0, k, b, S->cblk_fblok[k + 1]};
        }
    for (int i = 0; numbered && i < G->ntasks; i++) {
        if (G->kind[i] != SCHED_TASK_UPDATE2D) continue;
        cint k = G->cblk[i], j = S->blok_fcblk[G->first[i]];
        if (k >= root_first || P->cblk_rank[k] == P->cblk_rank[j]) continue;
        int64_t key = (int64_t)j * R + P->cblk_rank[k];
        const int64_t *at = bsearch(&key, pairs, np, sizeof *pairs, dist_cmp_i64);
        if (at != NULL && (loff == NULL || loff[(size_t)(at - pairs) * SCHED_FANIN_SEGS] != -1))
            c[m++] = (dist_crow){at - pairs, P->task_contrib[i], k, G->tile[i], dist_group_end(S, k, G->tile[i])};
    }
    qsort(c, m, sizeof *c, dist_cmp_crow);
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
            for (size_t x = lo; x < hi && x < z; x++) {
                cint tb = S->cblk_fblok[j];
                for (cint sb = c[x].rb0; sb < c[x].rb1; sb++) {
                    /* each source blok lies inside one blok of j */
                    cint fr = S->blok_frow[sb], h = S->blok_lrow[sb] - fr + 1;
                    while (S->blok_lrow[tb] < fr) tb++;
                    cint trow = S->blok_coefrow[tb] + (fr - S->blok_frow[tb]);
                    for (cint i = 0; i < h; i++)
                        if (!mark[trow + i]) {
                            mark[trow + i] = 1;
                            touched[cnt++] = trow + i;
                        }
                }
            }
            qsort(touched, (size_t)cnt, sizeof *touched, dist_cmp_cint);
            int64_t o = loff ? loff[(size_t)q * SCHED_FANIN_SEGS + (size_t)s] : -1;
            for (cint i = 0; i < cnt; i++) {
                if (o >= 0 && lists) lists[o + i] = touched[i];
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
#define DIST_FLIGHT 2e-3
#define DIST_FLIGHT_SCALAR (8.0 / 5e9)

/* An event of a buffer's life on a rank: at time t, scalars come (> 0) or go (< 0). */
typedef struct dist_event {
    int rank;
    double t, delta;
} dist_event;

static int dist_cmp_event(const void *a, const void *b)
{
    const dist_event *x = a, *y = b;
    if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return x->delta > y->delta ? -1 : x->delta < y->delta; /* arrivals first: touching lives overlap */
}

/* One contribution of a fan-in pair (index q) at its time in the plan. */
typedef struct dist_ctime {
    int64_t q;
    double t;
} dist_ctime;

static int dist_cmp_ctime(const void *a, const void *b)
{
    const dist_ctime *x = a, *y = b;
    if (x->q != y->q) return x->q < y->q ? -1 : 1;
    return (x->t > y->t) - (x->t < y->t);
}

/*
 * Every contribution into a fan-in pair of @p pairs (sorted (target * R + rank), unique) at the
 * time the plan applies it: an UPDATE or UPDATE2D when its task ends, a SUBTREE task's at
 * blok_time; sorted by pair, then time. Without blok_time (a plan whose contributions were not
 * numbered) a SUBTREE task counts at its start and at its end, and *timed is 0.
 */
static canopy_status dist_pair_times(const symbolic *S, const sched_plan *P, const int64_t *pairs, size_t nu,
                                     dist_ctime **out, size_t *nout, int *timed, canopy_err *err)
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
                    e = dist_group_end(S, k, b);
                    cint j = S->blok_fcblk[b];
                    if ((only >= 0 && j != only) || P->cblk_rank[j] == P->cblk_rank[k]) continue;
                    int64_t key = (int64_t)j * R + P->cblk_rank[k];
                    const int64_t *at = bsearch(&key, pairs, nu, sizeof *pairs, dist_cmp_i64);
                    if (at == NULL) continue;
                    int64_t q = at - pairs;
                    if (kind != SCHED_TASK_SUBTREE) {
                        if (pass) (*out)[m] = (dist_ctime){q, P->task_end[i]};
                        m++;
                    } else if (*timed) {
                        if (pass) (*out)[m] = (dist_ctime){q, P->blok_time[b]};
                        m++;
                    } else {
                        if (pass) {
                            (*out)[m] = (dist_ctime){q, P->task_start[i]};
                            (*out)[m + 1] = (dist_ctime){q, P->task_end[i]};
                        }
                        m += 2;
                    }
                }
            }
        }
        if (pass == 0) {
            *out = canopy_alloc(m + 1, sizeof(dist_ctime), "fan-in pairs", err);
            if (*out == NULL) return dist_nomem(err);
        } else {
            *nout = m;
            qsort(*out, m, sizeof **out, dist_cmp_ctime);
        }
    }
    return CANOPY_SUCCESS;
}

/* Where the buffer whose contributions are c[lo .. hi) (sorted by time) is cut: at every gap of
 * at least @p gap seconds between two of them (at most the SCHED_FANIN_SEGS - 1 widest); cuts[s]
 * gets the contributions before cut s, ascending. Returns the messages (cuts + 1). */
static int dist_cuts(const dist_ctime *c, size_t lo, size_t hi, double gap, int *cuts)
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
static double dist_cut_gap(const sched_plan *P, double scalars)
{
    int cut = P->fanin_cuts == 2 || (P->fanin_cuts == 1 && scalars >= 32768.0);
    return cut && P->factor.predicted_time > 0 ? 0.02 * P->factor.predicted_time : 0;
}

/* The share of its own factor a rank may hold in open fan-in buffers before the plan cuts some
 * (dist_plan_cuts): the heaviest rank's fan-in then stays about its factor's size. */
#define DIST_CAP_SHARE 0.5

/* An event of a rank's sweep over its contributions: contribution i (in time order) of pair q. */
typedef struct dist_sweep {
    int rank;
    double t;
    int64_t q;
    int i;
} dist_sweep;

static int dist_cmp_sweep(const void *a, const void *b)
{
    const dist_sweep *x = a, *y = b;
    if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    if (x->q != y->q) return x->q < y->q ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/*
 * Every pair's cuts, from its contributions c (dist_pair_times, m of them) and its whole rows
 * @p rows: at the gaps of the plan (dist_cuts), then under a cap: a rank whose open buffers
 * (from a message's first contribution to its last, each counted whole) would hold more than
 * DIST_CAP_SHARE of its own factor's scalars cuts, at that moment, the open buffers whose next
 * contribution comes last, until it is under again (a buffer in SCHED_FANIN_SEGS messages at
 * most; under fanin_cuts 1 only buffers of 32768 scalars or more).
 */
static canopy_status dist_plan_cuts(const symbolic *S, const sched_plan *P, const int64_t *pairs, size_t nu, const cint *rows,
                                    const dist_ctime *c, size_t m, int *nmsg, int *cuts, canopy_err *err)
{
    int R = P->nranks > 0 ? P->nranks : 1;
    size_t *lo = canopy_alloc(nu + 1, sizeof(size_t), "fan-in cuts", err);
    if (lo == NULL) return dist_nomem(err);
    for (size_t x = 0, q = 0; q <= nu; q++) {
        while (x < m && c[x].q < (int64_t)q) x++;
        lo[q] = x;
    }
    for (size_t q = 0; q < nu; q++) {
        cint j = (cint)(pairs[q] / R);
        double size = (double)rows[q] * (double)(S->cblk_fcol[j + 1] - S->cblk_fcol[j]);
        nmsg[q] = dist_cuts(c, lo[q], lo[q + 1], dist_cut_gap(P, size), cuts + q * (SCHED_FANIN_SEGS - 1));
    }
    if (R < 2 || m == 0) {
        canopy_free(lo);
        return CANOPY_SUCCESS;
    }
    /* the cap: a sweep over each rank's contributions in time order */
    double *cap = canopy_calloc((size_t)R, sizeof(double), "fan-in cuts", err);
    dist_sweep *ev = canopy_alloc(m + 1, sizeof(dist_sweep), "fan-in cuts", err);
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
        return dist_nomem(err);
    }
    for (cint k = 0; k < S->ncblk; k++) cap[P->cblk_rank[k]] += (double)(S->cblk_coef[k + 1] - S->cblk_coef[k]);
    for (int r = 0; r < R; r++) cap[r] *= DIST_CAP_SHARE;
    for (size_t q = 0; q < nu; q++)
        for (size_t x = lo[q]; x < lo[q + 1]; x++)
            ev[x] = (dist_sweep){(int)(pairs[q] % R), c[x].t, (int64_t)q, (int)(x - lo[q])};
    qsort(ev, m, sizeof *ev, dist_cmp_sweep);
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
    dist_ctime *c = NULL;
    size_t m = 0;
    int timed = 0, R = P->nranks > 0 ? P->nranks : 1;
    cint *rows = canopy_alloc(nu + 1, sizeof(cint), "fan-in cuts", err);
    canopy_status st = rows ? sched_fanin_rows(S, P->cblk_rank, R, P->root.n > 0 ? P->root.first : S->ncblk, pairs, nu, rows, NULL, NULL, err)
                            : dist_nomem(err);
    if (st == CANOPY_SUCCESS) st = dist_pair_times(S, P, pairs, nu, &c, &m, &timed, err);
    if (st == CANOPY_SUCCESS && timed) st = dist_plan_cuts(S, P, pairs, nu, rows, c, m, nmsg, cuts, err);
    canopy_free(rows);
    canopy_free(c);
    return st;
}

canopy_status sched_fanin_memory(const symbolic *S, const sched_plan *P, double *peak, double *peak_arrival, double *sink,
                                 double *upd, double *panel, canopy_err *err)
{
    if (S == NULL || P == NULL || P->ncblk != S->ncblk)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_fanin_memory: bad argument");
    int R = P->nranks > 0 ? P->nranks : 1;
    cint n = S->ncblk;
    for (int r = 0; r < R; r++) {
        if (peak) peak[r] = 0;
        if (peak_arrival) peak_arrival[r] = 0;
        if (sink) sink[r] = 0;
        if (upd) upd[r] = 0;
        if (panel) panel[r] = 0;
    }
    /* the update products: a cblk with 2D tasks computes one tile (a facing group's rows x
     * another's) at a time, the others all their rows from a facing group on */
    const sched_dag *G = &P->factor;
    char *tiled = canopy_calloc((size_t)n + 1, 1, "fan-in memory scratch", err);
    if (tiled == NULL) return dist_nomem(err);
    for (int i = 0; G->tile && i < G->ntasks; i++) {
        if (G->kind[i] != SCHED_TASK_UPDATE2D) continue;
        cint k = G->cblk[i], fb = G->first[i], fe = dist_group_end(S, k, fb), rb = G->tile[i], re = dist_group_end(S, k, rb);
        double h = (double)(S->blok_coefrow[fe - 1] + (S->blok_lrow[fe - 1] - S->blok_frow[fe - 1] + 1) - S->blok_coefrow[fb]);
        double rows = (double)((re < S->cblk_fblok[k + 1] ? S->blok_coefrow[re] : S->cblk_stride[k]) - S->blok_coefrow[rb]);
        tiled[k] = 1;
        if (upd) upd[P->cblk_rank[k]] = fmax(upd[P->cblk_rank[k]], rows * h);
    }
    for (cint k = 0; k < n; k++) {
        int r = P->cblk_rank[k];
        double w = (double)(S->cblk_fcol[k + 1] - S->cblk_fcol[k]);
        if (panel) panel[r] = fmax(panel[r], w * (double)S->cblk_stride[k]);
        /* the grid's root sends no update (sched/root.h) */
        for (cint b = sched_root_has(&P->root, k) || tiled[k] ? S->cblk_fblok[k + 1] : S->cblk_fblok[k] + 1, e; b < S->cblk_fblok[k + 1]; b = e) {
            e = dist_group_end(S, k, b);
            double h = (double)(S->blok_coefrow[e - 1] + (S->blok_lrow[e - 1] - S->blok_frow[e - 1] + 1) - S->blok_coefrow[b]);
            if (upd) upd[r] = fmax(upd[r], (double)(S->cblk_stride[k] - S->blok_coefrow[b]) * h);
        }
    }
    canopy_free(tiled);
    if (R < 2 || (!peak && !peak_arrival && !sink)) return CANOPY_SUCCESS;
    /* the pairs and their rows */
    int64_t *pairs = canopy_alloc((size_t)S->nblok + 1, sizeof(int64_t), "fan-in memory scratch", err);
    if (!pairs) return dist_nomem(err);
    size_t np = 0;
    for (cint k = 0; k < n && !sched_root_has(&P->root, k); k++)
        for (cint b = S->cblk_fblok[k] + 1; b < S->cblk_fblok[k + 1]; b++) {
            cint j = S->blok_fcblk[b];
            if (P->cblk_rank[k] != P->cblk_rank[j]) pairs[np++] = (int64_t)j * R + P->cblk_rank[k];
        }
    qsort(pairs, np, sizeof *pairs, dist_cmp_i64);
    size_t nu = 0;
    for (size_t q = 0; q < np; q++)
        if (nu == 0 || pairs[q] != pairs[nu - 1]) pairs[nu++] = pairs[q];
    cint *rows = canopy_alloc(nu + 1, sizeof(cint), "fan-in memory scratch", err);
    size_t segs = P->fanin_cuts && P->blok_time ? SCHED_FANIN_SEGS : 1;
    dist_event *ev = canopy_alloc(4 * segs * nu + 1, sizeof(dist_event), "fan-in memory scratch", err);
    dist_ctime *c = NULL;
    size_t m = 0;
    int timed = 0;
    /* the whole buffers' rows decide which are cut (sched_fanin_cuts): only with cuts */
    canopy_status st = !rows || !ev ? dist_nomem(err) : !P->fanin_cuts ? CANOPY_SUCCESS
                       : sched_fanin_rows(S, P->cblk_rank, R, P->root.n > 0 ? P->root.first : n, pairs, nu, rows, NULL, NULL, err);
    if (st == CANOPY_SUCCESS) st = dist_pair_times(S, P, pairs, nu, &c, &m, &timed, err);
    /* every pair's cuts (as sched_fanin_cuts), then the rows of each of its messages */
    int *nmsg = st == CANOPY_SUCCESS ? canopy_alloc(nu + 1, sizeof(int), "fan-in memory scratch", err) : NULL;
    int *cuts = nmsg ? canopy_alloc((nu + 1) * (SCHED_FANIN_SEGS - 1), sizeof(int), "fan-in memory scratch", err) : NULL;
    cint *mrows = cuts ? canopy_alloc((nu + 1) * SCHED_FANIN_SEGS, sizeof(cint), "fan-in memory scratch", err) : NULL;
    if (st == CANOPY_SUCCESS && mrows == NULL) st = dist_nomem(err);
    for (size_t q = 0; q < nu && st == CANOPY_SUCCESS; q++) nmsg[q] = 1;
    if (st == CANOPY_SUCCESS && timed && P->fanin_cuts) st = dist_plan_cuts(S, P, pairs, nu, rows, c, m, nmsg, cuts, err);
    if (st == CANOPY_SUCCESS) st = sched_fanin_msgrows(S, P, pairs, nu, nmsg, cuts, mrows, NULL, NULL, err);
    double flight = DIST_FLIGHT;
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
                    ev[ne++] = (dist_event){src, fmin(first, arrival), size};
                    ev[ne++] = (dist_event){src, fmin(panel_at, arrival + flight + size * DIST_FLIGHT_SCALAR), -size};
                    ev[ne++] = (dist_event){dst, arrival, size};
                    ev[ne++] = (dist_event){dst, mode ? arrival : panel_at, -size};
                    if (sink && mode == 0) sink[dst] = fmax(sink[dst], size);
                }
                lo = hi;
            }
            if (out == NULL) continue;
            qsort(ev, ne, sizeof *ev, dist_cmp_event);
            double live = 0;
            for (size_t x = 0; x < ne; x++) {
                if (x > 0 && ev[x].rank != ev[x - 1].rank) live = 0;
                live += ev[x].delta;
                out[ev[x].rank] = fmax(out[ev[x].rank], live);
            }
        }
    }
    canopy_free(pairs);
    canopy_free(rows);
    canopy_free(c);
    canopy_free(ev);
    canopy_free(nmsg);
    canopy_free(cuts);
    canopy_free(mrows);
    return st;
}

/* Each local SUBTREE task's groups into other ranks' cblks, in the order it applies them after the
 * rest of the task (sched_subtree_deferred). */
canopy_status sched_plan_fanin_memory(const symbolic *S, const sched_plan *P, const double **v, canopy_err *err)
{
    if (S == NULL || P == NULL || v == NULL || P->memo == NULL)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_plan_fanin_memory: bad argument");
    size_t R = P->nranks > 0 ? (size_t)P->nranks : 1;
    double *m = P->memo + 1;
    if (P->memo[0] == 0) {
        canopy_status st = sched_fanin_memory(S, P, m, m + R, m + 2 * R, m + 3 * R, m + 4 * R, err);
        if (st != CANOPY_SUCCESS) return st;
        P->memo[0] = 1;
    }
    *v = m;
    return CANOPY_SUCCESS;
}

static canopy_status dist_deferred(const symbolic *S, const sched_plan *P, sched_local *L, canopy_err *err)
{
    const sched_dag *D = &L->factor;
    size_t tot = 0, most = 0;
    L->defer_ptr = canopy_calloc((size_t)D->ntasks + 1, sizeof(int), "local plan", err);
    if (L->defer_ptr == NULL) return dist_nomem(err);
    for (int l = 0; l < D->ntasks; l++) {
        size_t d = D->kind[l] == SCHED_TASK_SUBTREE ? sched_subtree_deferred(S, P, D->first[l], D->cblk[l], NULL) : 0;
        tot += d;
        most = d > most ? d : most;
        if (tot > INT_MAX) return canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "local plan: too many deferred contributions");
        L->defer_ptr[l + 1] = (int)tot;
    }
    L->defer_cblk = canopy_alloc(tot + 1, sizeof(cint), "local plan", err);
    L->defer_blok = canopy_alloc(tot + 1, sizeof(cint), "local plan", err);
    int64_t *keys = canopy_alloc(most + 1, sizeof(int64_t), "local plan scratch", err);
    if (!L->defer_cblk || !L->defer_blok || !keys) {
        canopy_free(keys);
        return dist_nomem(err);
    }
    for (int l = 0; l < D->ntasks; l++) {
        if (L->defer_ptr[l + 1] == L->defer_ptr[l]) continue;
        size_t d = sched_subtree_deferred(S, P, D->first[l], D->cblk[l], keys);
        for (size_t q = 0; q < d; q++) {
            cint b = (cint)(keys[q] % S->nblok);
            /* the source: the cblk whose bloks hold b (a binary search over the task's cblks) */
            cint lo = D->first[l], hi = D->cblk[l];
            while (lo < hi) {
                cint mid = lo + (hi - lo + 1) / 2;
                if (S->cblk_fblok[mid] <= b) lo = mid;
                else hi = mid - 1;
            }
            L->defer_cblk[L->defer_ptr[l] + q] = lo;
            L->defer_blok[L->defer_ptr[l] + q] = b;
        }
    }
    canopy_free(keys);
    return CANOPY_SUCCESS;
}

/* The Snodes of the rank's thread block [lo, hi), renumbered, with [0, T) as root. */
static canopy_status dist_snodes(const sched_dag *G, int lo, int hi, sched_dag *D, int *gmap, canopy_err *err)
{
    int T = hi - lo, cnt = 0, have_root = 0;
    for (int s = 0; s < G->nsnodes; s++) {
        gmap[s] = -1;
        if (G->snode_t0[s] >= lo && G->snode_t1[s] <= hi) {
            cnt++;
            if (G->snode_t0[s] == lo && G->snode_t1[s] == hi) have_root = 1;
        }
    }
    int ns = cnt + !have_root;
    D->nsnodes = ns;
    D->snode_t0 = canopy_alloc((size_t)ns, sizeof(int), "Snodes", err);
    D->snode_t1 = canopy_alloc((size_t)ns, sizeof(int), "Snodes", err);
    D->snode_parent = canopy_alloc((size_t)ns, sizeof(int), "Snodes", err);
    D->snode_depth = canopy_alloc((size_t)ns, sizeof(int), "Snodes", err);
    int *stack = canopy_alloc((size_t)ns, sizeof(int), "Snodes", err);
    if (!D->snode_t0 || !D->snode_t1 || !D->snode_parent || !D->snode_depth || !stack) {
        canopy_free(stack);
        return dist_nomem(err);
    }
    int id = 0;
    if (!have_root) {
        D->snode_t0[0] = 0;
        D->snode_t1[0] = T;
        id = 1;
    }
    /* the plan's Snodes are in preorder (t0 ascending, t1 descending); so is any subset */
    for (int s = 0; s < G->nsnodes; s++)
        if (G->snode_t0[s] >= lo && G->snode_t1[s] <= hi) {
            D->snode_t0[id] = G->snode_t0[s] - lo;
            D->snode_t1[id] = G->snode_t1[s] - lo;
            gmap[s] = id++;
        }
    int sp = 0;
    for (int s = 0; s < ns; s++) {
        while (sp > 0 && D->snode_t1[stack[sp - 1]] <= D->snode_t0[s]) sp--;
        if (sp > 0 && D->snode_t1[stack[sp - 1]] < D->snode_t1[s]) {
            canopy_free(stack);
            return canopy_err_set(err, CANOPY_ERR_INTERNAL, "local plan: Snodes [%d, %d) and [%d, %d) overlap",
                                  D->snode_t0[stack[sp - 1]], D->snode_t1[stack[sp - 1]], D->snode_t0[s], D->snode_t1[s]);
        }
        D->snode_parent[s] = sp > 0 ? stack[sp - 1] : -1;
        D->snode_depth[s] = sp > 0 ? D->snode_depth[stack[sp - 1]] + 1 : 0;
        stack[sp++] = s;
    }
    canopy_free(stack);
    return CANOPY_SUCCESS;
}

canopy_status sched_plan_local(const symbolic *S, const sched_plan *P, int rank, int parts, sched_local *L,
                               canopy_err *err)
{
    if (S == NULL || P == NULL || L == NULL)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_plan_local: NULL argument");
    memset(L, 0, sizeof *L);
    int R = P->nranks > 0 ? P->nranks : 1, T = P->threads_per_rank > 0 ? P->threads_per_rank : P->nthreads;
    if (rank < 0 || rank >= R || P->ncblk != S->ncblk || R * T != P->nthreads || parts < 1 || parts > 2)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_plan_local: rank %d of a plan for %d ranks", rank, R);
    const sched_dag *G = &P->factor;
    cint n = S->ncblk;
    int ng = G->ntasks, lo = rank * T, hi = lo + T;
    L->rank = rank;
    L->nranks = R;
    L->nthreads = T;
    L->cblk_rank = P->cblk_rank;
    L->root = P->root;
    L->fanin_cuts = P->fanin_cuts;
    sched_dag *D = &L->factor;
    D->nthreads = T;
    D->predicted_time = G->predicted_time;

    int *g2l = canopy_alloc((size_t)ng + 1, sizeof(int), "local plan scratch", err);
    int *gmap = canopy_alloc((size_t)G->nsnodes + 1, sizeof(int), "local plan scratch", err);
    int64_t *pairs = NULL;
    int *cut = NULL, *nmsg = NULL;
    dist_contrib *contrib = NULL;
    canopy_status st = CANOPY_SUCCESS;
    if (!g2l || !gmap) {
        st = dist_nomem(err);
        goto out;
    }
    int nl = 0;
    for (int i = 0; i < ng; i++) g2l[i] = P->cblk_rank[G->cblk[i]] == rank ? nl++ : -1;
    D->ntasks = nl;
    size_t m = (size_t)nl + 1;
    D->npred = canopy_calloc(m, sizeof(int), "local tasks", err);
    D->succ_ptr = canopy_calloc(m, sizeof(int), "local tasks", err);
    D->owner = canopy_alloc(m, sizeof(int), "local tasks", err);
    D->snode = canopy_alloc(m, sizeof(int), "local tasks", err);
    D->prio = canopy_alloc(m, sizeof(double), "local tasks", err);
    D->list_ptr = canopy_calloc((size_t)T + 1, sizeof(int), "local tasks", err);
    D->list = canopy_alloc(m, sizeof(int), "local tasks", err);
    D->kind = canopy_alloc(m, sizeof(int), "local tasks", err);
    D->cblk = canopy_alloc(m, sizeof(int), "local tasks", err);
    D->first = canopy_alloc(m, sizeof(int), "local tasks", err);
    if (G->tile) D->tile = canopy_alloc(m, sizeof(int), "local tasks", err);
    L->task_contrib = canopy_alloc(m, sizeof(int), "local tasks", err);
    D->level = canopy_alloc(m, sizeof(int), "local tasks", err);
    D->cost = canopy_alloc(m, sizeof(double), "local tasks", err);
    L->ext = canopy_calloc(m, sizeof(int), "local tasks", err);
    L->task_global = canopy_alloc(m, sizeof(int), "local tasks", err);
    L->cblk_task = canopy_alloc((size_t)n + 1, sizeof(int), "local plan", err);
    L->cblk_owner = canopy_alloc((size_t)n + 1, sizeof(int), "local plan", err);
    L->blok_contrib = canopy_alloc((size_t)S->nblok + 1, sizeof(int), "local plan", err);
    L->cblk_ncontrib = canopy_calloc((size_t)n + 1, sizeof(int), "local plan", err);
    L->recv_ptr = canopy_calloc((size_t)n + 2, sizeof(cint), "local plan", err);
    if (!D->npred || !D->succ_ptr || !D->owner || !D->snode || !D->prio || !D->list_ptr || !D->list || !D->kind ||
        !D->cblk || !D->first || (G->tile && !D->tile) || !L->task_contrib || !D->level || !D->cost || !L->ext || !L->task_global || !L->cblk_task ||
        !L->cblk_owner || !L->blok_contrib || !L->cblk_ncontrib || !L->recv_ptr) {
        st = dist_nomem(err);
        goto out;
    }
    if ((st = dist_snodes(G, lo, hi, D, gmap, err)) != CANOPY_SUCCESS) goto out;

    /* tasks and the edges between this rank's tasks (the others are fan-in messages) */
    for (int i = 0; i < ng; i++) {
        int l = g2l[i];
        if (l < 0) continue;
        L->task_global[l] = i;
        D->owner[l] = G->owner[i] - lo;
        D->snode[l] = gmap[G->snode[i]];
        if (D->snode[l] < 0 || D->owner[l] < 0 || D->owner[l] >= T) {
            st = canopy_err_set(err, CANOPY_ERR_INTERNAL, "local plan: task %d is not on rank %d's threads", i, rank);
            goto out;
        }
        D->prio[l] = G->prio ? G->prio[i] : 0;
        D->kind[l] = G->kind[i];
        D->cblk[l] = G->cblk[i];
        D->first[l] = G->first[i];
        if (D->tile) D->tile[l] = G->tile[i];
        L->task_contrib[l] = -1;
        D->cost[l] = G->cost[i];
        D->level[l] = D->snode_depth[D->snode[l]];
        for (int q = G->succ_ptr[i]; q < G->succ_ptr[i + 1]; q++)
            if (g2l[G->succ[q]] >= 0) D->succ_ptr[l + 1]++;
    }
    for (int l = 0; l < nl; l++) D->succ_ptr[l + 1] += D->succ_ptr[l];
    D->succ = canopy_alloc((size_t)D->succ_ptr[nl] + 1, sizeof(int), "local task edges", err);
    if (D->succ == NULL) {
        st = dist_nomem(err);
        goto out;
    }
    for (int i = 0, e = 0; i < ng; i++) {
        if (g2l[i] < 0) continue;
        for (int q = G->succ_ptr[i]; q < G->succ_ptr[i + 1]; q++)
            if (g2l[G->succ[q]] >= 0) {
                D->succ[e++] = g2l[G->succ[q]];
                D->npred[g2l[G->succ[q]]]++;
            }
    }
    /* static lists: the plan's lists of this rank's threads, in the same (global) order */
    for (int t = 0; t < T; t++) {
        int a = G->list_ptr[lo + t], b = G->list_ptr[lo + t + 1];
        D->list_ptr[t + 1] = D->list_ptr[t] + (b - a);
        for (int q = a; q < b; q++) D->list[D->list_ptr[t] + q - a] = g2l[G->list[q]];
    }
    for (cint k = 0; k < n; k++) {
        int mine = P->cblk_rank[k] == rank;
        L->cblk_task[k] = mine ? g2l[P->cblk_task[k]] : -1;
        L->cblk_owner[k] = mine ? P->cblk_owner[k] - lo : -1;
    }
    if ((st = dist_deferred(S, P, L, err)) != CANOPY_SUCCESS) goto out;

    /* contributions: this rank's, renumbered per target in the plan's order; the (target, rank)
     * pairs that cross ranks are the fan-in buffers */
    size_t ngroups = 0;
    for (int i = 0; i < ng; i++) ngroups += G->kind[i] == SCHED_TASK_UPDATE2D;
    for (cint k = 0; k < n; k++)
        for (cint b = S->cblk_fblok[k] + 1; b < S->cblk_fblok[k + 1]; b = dist_group_end(S, k, b)) ngroups++;
    pairs = canopy_alloc(ngroups + 1, sizeof(int64_t), "local plan scratch", err);
    contrib = canopy_alloc(ngroups + 1, sizeof(dist_contrib), "local plan scratch", err);
    if (!pairs || !contrib) {
        st = dist_nomem(err);
        goto out;
    }
    size_t np = 0, nc = 0;
    for (cint b = 0; b < S->nblok; b++) L->blok_contrib[b] = -1;
    for (cint k = 0; k < n && !sched_root_has(&P->root, k); k++) { /* the grid's root sends nothing */
        int rk = P->cblk_rank[k];
        for (cint b = S->cblk_fblok[k] + 1, e; b < S->cblk_fblok[k + 1]; b = e) {
            e = dist_group_end(S, k, b);
            cint j = S->blok_fcblk[b];
            if (rk != P->cblk_rank[j]) {
                pairs[np++] = (int64_t)j * R + rk;
                int64_t rows = S->cblk_stride[k] - S->blok_coefrow[b];
                int64_t h = S->blok_coefrow[e - 1] + (S->blok_lrow[e - 1] - S->blok_frow[e - 1] + 1) - S->blok_coefrow[b];
                L->update_msgs += parts;
                L->update_entries += rows * h * parts;
            }
            if (rk == rank && P->blok_contrib[b] >= 0) contrib[nc++] = (dist_contrib){j, P->blok_contrib[b], b, -1};
        }
    }
    for (int i = 0; i < ng; i++)
        if (g2l[i] >= 0 && G->kind[i] == SCHED_TASK_UPDATE2D)
            contrib[nc++] = (dist_contrib){S->blok_fcblk[G->first[i]], P->task_contrib[i], -1, g2l[i]};
    qsort(contrib, nc, sizeof *contrib, dist_cmp_contrib);
    for (size_t q = 0; q < nc; q++) {
        int num = L->cblk_ncontrib[contrib[q].j]++;
        if (contrib[q].b >= 0) L->blok_contrib[contrib[q].b] = num;
        else L->task_contrib[contrib[q].task] = num;
    }
    qsort(pairs, np, sizeof *pairs, dist_cmp_i64);
    size_t nu = 0;
    for (size_t q = 0; q < np; q++)
        if (nu == 0 || pairs[q] != pairs[nu - 1]) pairs[nu++] = pairs[q];
    nmsg = canopy_alloc(nu + 1, sizeof(int), "local plan scratch", err);
    cut = canopy_alloc((nu + 1) * (SCHED_FANIN_SEGS - 1), sizeof(int), "local plan scratch", err);
    if (cut == NULL || nmsg == NULL) {
        st = dist_nomem(err);
        goto out;
    }
    if ((st = sched_fanin_cuts(S, P, pairs, nu, nmsg, cut, err)) != CANOPY_SUCCESS) goto out;
    L->cut_hash = 1469598103934665603ull;
    for (size_t q = 0; q < nu; q++)
        for (int x = 0; x < nmsg[q]; x++)
            L->cut_hash = (L->cut_hash ^ (uint64_t)(x + 1 < nmsg[q] ? cut[q * (SCHED_FANIN_SEGS - 1) + x] + 1 : 0) ^
                           ((uint64_t)q << 20)) * 1099511628211ull;
    for (size_t q = 0; q < nu; q++) {
        cint j = (cint)(pairs[q] / R);
        int r = (int)(pairs[q] % R), msgs = nmsg[q];
        L->fanin_msgs += parts * msgs;
        L->fanin_entries += (int64_t)S->cblk_stride[j] * (S->cblk_fcol[j + 1] - S->cblk_fcol[j]) * parts;
        if (P->cblk_rank[j] == rank) L->recv_ptr[j + 1] += msgs;
        if (r == rank) L->nsend++;
    }
    for (cint j = 0; j < n; j++) L->recv_ptr[j + 1] += L->recv_ptr[j];
    L->recv_rank = canopy_alloc((size_t)L->recv_ptr[n] + 1, sizeof(int), "local plan", err);
    L->recv_seg = canopy_alloc((size_t)L->recv_ptr[n] + 1, 1, "local plan", err);
    L->send_cblk = canopy_alloc((size_t)L->nsend + 1, sizeof(cint), "local plan", err);
    L->send_nmsg = canopy_alloc((size_t)L->nsend + 1, sizeof(int), "local plan", err);
    L->send_cut = canopy_alloc(((size_t)L->nsend + 1) * (SCHED_FANIN_SEGS - 1), sizeof(int), "local plan", err);
    if (!L->recv_rank || !L->recv_seg || !L->send_cblk || !L->send_nmsg || !L->send_cut) {
        st = dist_nomem(err);
        goto out;
    }
    cint ns = 0, nr = 0;
    for (size_t q = 0; q < nu; q++) {
        cint j = (cint)(pairs[q] / R);
        int r = (int)(pairs[q] % R);
        for (int seg = 0; P->cblk_rank[j] == rank && seg < nmsg[q]; seg++) {
            L->recv_rank[nr] = r; /* pairs are sorted by (j, r) */
            L->recv_seg[nr++] = (unsigned char)seg;
        }
        if (r == rank) {
            L->send_nmsg[ns] = nmsg[q];
            for (int x = 0; x < SCHED_FANIN_SEGS - 1; x++)
                L->send_cut[(size_t)ns * (SCHED_FANIN_SEGS - 1) + x] = x + 1 < nmsg[q] ? cut[q * (SCHED_FANIN_SEGS - 1) + x] : -1;
            L->send_cblk[ns++] = j;
            /* every message is sent by its last contribution: none may be empty */
            int last = nmsg[q] > 1 ? cut[q * (SCHED_FANIN_SEGS - 1) + nmsg[q] - 2] : 0;
            if (L->cblk_ncontrib[j] <= last) {
                st = canopy_err_set(err, CANOPY_ERR_INTERNAL, "local plan: a fan-in message into cblk %" CINT_FMT " has no contribution", j);
                goto out;
            }
        }
    }
    /* the compressed layout of this rank's messages, sent and received: each holds only the rows its
     * own contributions write (sched_fanin_msgrows) */
    {
        cint nrecv = L->recv_ptr[n];
        size_t nseg = nu * SCHED_FANIN_SEGS;
        L->send_rows = canopy_alloc((size_t)L->nsend * SCHED_FANIN_SEGS + 1, sizeof(cint), "fan-in layout", err);
        L->send_moff = canopy_alloc((size_t)L->nsend * SCHED_FANIN_SEGS + 1, sizeof(int64_t), "fan-in layout", err);
        L->recv_rows = canopy_alloc((size_t)nrecv + 1, sizeof(cint), "fan-in layout", err);
        L->recv_moff = canopy_alloc((size_t)nrecv + 1, sizeof(int64_t), "fan-in layout", err);
        int64_t *loff = canopy_alloc(nseg + 1, sizeof(int64_t), "fan-in layout", err);
        cint *rows = canopy_alloc(nseg + 1, sizeof(cint), "fan-in layout", err), *lists = NULL;
        if (!L->send_rows || !L->send_moff || !L->recv_rows || !L->recv_moff || !loff || !rows) st = dist_nomem(err);
        /* first the counts, of this rank's pairs only */
        for (size_t q = 0; q < nu && st == CANOPY_SUCCESS; q++) {
            cint j = (cint)(pairs[q] / R);
            for (int seg = 0; seg < SCHED_FANIN_SEGS; seg++)
                loff[q * SCHED_FANIN_SEGS + (size_t)seg] = (int)(pairs[q] % R) == rank || P->cblk_rank[j] == rank ? -2 : -1;
        }
        if (st == CANOPY_SUCCESS) st = sched_fanin_msgrows(S, P, pairs, nu, nmsg, cut, rows, loff, NULL, err);
        /* the rows of every message this rank sends or receives, then the pool of row maps: a
         * sent message's map is panel row -> its row (stride of the target), a received
         * message's its panel rows in order */
        int64_t nlist = 0, npool = 0;
        for (size_t q = 0; q < nu && st == CANOPY_SUCCESS; q++) {
            cint j = (cint)(pairs[q] / R);
            int r = (int)(pairs[q] % R);
            for (int seg = 0; seg < nmsg[q]; seg++) {
                size_t x = q * SCHED_FANIN_SEGS + (size_t)seg;
                loff[x] = -1;
                if (r != rank && P->cblk_rank[j] != rank) continue;
                loff[x] = nlist;
                nlist += rows[x];
                npool += r == rank ? S->cblk_stride[j] : rows[x];
            }
        }
        if (st == CANOPY_SUCCESS) {
            lists = canopy_alloc((size_t)nlist + 1, sizeof(cint), "fan-in layout", err);
            L->fan_rmap = canopy_alloc((size_t)npool + 1, sizeof(cint), "fan-in layout", err);
            st = lists && L->fan_rmap ? sched_fanin_msgrows(S, P, pairs, nu, nmsg, cut, rows, loff, lists, err) : dist_nomem(err);
        }
        int64_t at = 0;
        for (size_t q = 0, sq = 0, rcv = 0; q < nu && st == CANOPY_SUCCESS; q++) {
            cint j = (cint)(pairs[q] / R), stj = S->cblk_stride[j];
            int r = (int)(pairs[q] % R);
            for (int seg = 0; seg < nmsg[q]; seg++) {
                size_t x = q * SCHED_FANIN_SEGS + (size_t)seg;
                const cint *list = lists + (loff[x] >= 0 ? loff[x] : 0);
                if (P->cblk_rank[j] == rank) {
                    L->recv_rows[rcv] = rows[x];
                    L->recv_moff[rcv++] = at;
                    memcpy(L->fan_rmap + at, list, (size_t)rows[x] * sizeof(cint));
                    at += rows[x];
                } else if (r == rank) {
                    cint *map = L->fan_rmap + at;
                    for (cint i = 0; i < stj; i++) map[i] = -1;
                    for (cint i = 0; i < rows[x]; i++) map[list[i]] = i;
                    L->send_rows[sq * SCHED_FANIN_SEGS + (size_t)seg] = rows[x];
                    L->send_moff[sq * SCHED_FANIN_SEGS + (size_t)seg] = at;
                    at += stj;
                }
            }
            sq += r == rank;
        }
        canopy_free(loff);
        canopy_free(rows);
        canopy_free(lists);
        if (st != CANOPY_SUCCESS) goto out;
    }
    for (cint j = 0; j < n; j++) {
        cint cnt = L->recv_ptr[j + 1] - L->recv_ptr[j];
        if (cnt == 0) continue;
        int t = L->cblk_task[j];
        if (t < 0 || (D->kind[t] != SCHED_TASK_PANEL && D->kind[t] != SCHED_TASK_DIAG)) {
            st = canopy_err_set(err, CANOPY_ERR_INTERNAL, "local plan: cblk %" CINT_FMT " receives updates but has no panel task",
                                j);
            goto out;
        }
        L->ext[t] = (int)cnt * parts;
    }
    /* this rank's memory: its buffers' peak by the simulation, its workspaces */
    {
        const double *v;
        if ((st = sched_plan_fanin_memory(S, P, &v, err)) != CANOPY_SUCCESS) goto out;
        L->fanin_peak = v[rank];
        L->fanin_peak_arrival = v[R + rank];
        L->fanin_sink = v[2 * R + rank];
        L->update_max = v[3 * R + rank];
        L->panel_max = v[4 * R + rank];
    }
    /* what the engine will check at the factorization, found here at the analysis (agreed) */
    char why[160];
    int bad = sched_dag_check(D, why, sizeof why);
    if (bad)
        st = canopy_err_set(err, bad == -2 ? CANOPY_ERR_NOMEM : CANOPY_ERR_INTERNAL, "local plan of rank %d: %s", rank, why);
out:
    canopy_free(g2l);
    canopy_free(gmap);
    canopy_free(pairs);
    canopy_free(contrib);
    canopy_free(cut);
    canopy_free(nmsg);
    if (st != CANOPY_SUCCESS) sched_local_free(L);
    return st;
}

void sched_local_free(sched_local *L)
{
    if (L == NULL) return;
    sched_dag_free(&L->factor);
    canopy_free(L->ext);
    canopy_free(L->task_global);
    canopy_free(L->cblk_task);
    canopy_free(L->cblk_owner);
    canopy_free(L->blok_contrib);
    canopy_free(L->recv_seg);
    canopy_free(L->send_cut);
    canopy_free(L->send_nmsg);
    canopy_free(L->defer_ptr);
    canopy_free(L->defer_cblk);
    canopy_free(L->defer_blok);
    canopy_free(L->task_contrib);
    canopy_free(L->cblk_ncontrib);
    canopy_free(L->recv_ptr);
    canopy_free(L->recv_rank);
    canopy_free(L->send_cblk);
    canopy_free(L->send_rows);
    canopy_free(L->recv_rows);
    canopy_free(L->send_moff);
    canopy_free(L->recv_moff);
    canopy_free(L->fan_rmap);
    memset(L, 0, sizeof *L);
}
