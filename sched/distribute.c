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

canopy_status sched_fanin_memory(const symbolic *S, const sched_plan *P, double *peak, double *peak_arrival, double *sink,
                                 double *upd, double *panel, canopy_err *err)
{
    if (S == NULL || P == NULL || P->ncblk != S->ncblk)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_fanin_memory: bad argument");
    int R = P->nranks > 0 ? P->nranks : 1;
    cint n = S->ncblk;
    const sched_dag *G = &P->factor;
    for (int r = 0; r < R; r++) {
        if (peak) peak[r] = 0;
        if (peak_arrival) peak_arrival[r] = 0;
        if (sink) sink[r] = 0;
        if (upd) upd[r] = 0;
        if (panel) panel[r] = 0;
    }
    for (cint k = 0; k < n; k++) {
        int r = P->cblk_rank[k];
        double w = (double)(S->cblk_fcol[k + 1] - S->cblk_fcol[k]);
        if (panel) panel[r] = fmax(panel[r], w * (double)S->cblk_stride[k]);
        /* the grid's root sends no update (sched/root.h) */
        for (cint b = sched_root_has(&P->root, k) ? S->cblk_fblok[k + 1] : S->cblk_fblok[k] + 1, e; b < S->cblk_fblok[k + 1]; b = e) {
            e = dist_group_end(S, k, b);
            double h = (double)(S->blok_coefrow[e - 1] + (S->blok_lrow[e - 1] - S->blok_frow[e - 1] + 1) - S->blok_coefrow[b]);
            if (upd) upd[r] = fmax(upd[r], (double)(S->cblk_stride[k] - S->blok_coefrow[b]) * h);
        }
    }
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
    double *first = canopy_alloc(nu + 1, sizeof(double), "fan-in memory scratch", err);
    double *last = canopy_alloc(nu + 1, sizeof(double), "fan-in memory scratch", err);
    dist_event *ev = canopy_alloc(4 * nu + 1, sizeof(dist_event), "fan-in memory scratch", err);
    canopy_status st = rows && first && last && ev ? sched_fanin_rows(S, P->cblk_rank, R, P->root.n > 0 ? P->root.first : n, pairs, nu, rows, NULL, NULL, err)
                                                  : dist_nomem(err);
    if (st == CANOPY_SUCCESS && (!P->task_start || !P->task_end))
        st = canopy_err_set(err, CANOPY_ERR_INTERNAL, "sched_fanin_memory: a plan without its simulation");
    if (st == CANOPY_SUCCESS) {
        for (size_t q = 0; q < nu; q++) {
            first[q] = INFINITY;
            last[q] = -INFINITY;
        }
        /* each task's contributions to other ranks' cblks: when they start and end */
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
            for (cint k = k0; k <= k1; k++)
                for (cint b = S->cblk_fblok[k] + 1, e; b < S->cblk_fblok[k + 1]; b = e) {
                    e = dist_group_end(S, k, b);
                    cint j = S->blok_fcblk[b];
                    if ((only >= 0 && j != only) || P->cblk_rank[j] == P->cblk_rank[k]) continue;
                    int64_t key = (int64_t)j * R + P->cblk_rank[k];
                    const int64_t *at = bsearch(&key, pairs, nu, sizeof *pairs, dist_cmp_i64);
                    if (at == NULL) continue;
                    size_t q = (size_t)(at - pairs);
                    first[q] = fmin(first[q], P->task_start[i]);
                    last[q] = fmax(last[q], P->task_end[i]);
                }
        }
        /* mode 0: received buffers held until the panel task (static); mode 1: added on arrival
         * (dynamic), an instant that still counts beside the buffers alive then */
        for (int mode = 0; mode < 2; mode++) {
            double *out = mode ? peak_arrival : peak;
            if (out == NULL && !(mode == 0 && sink)) continue;
            size_t ne = 0;
            for (size_t q = 0; q < nu; q++) {
                cint j = (cint)(pairs[q] / R);
                int src = (int)(pairs[q] % R), dst = P->cblk_rank[j];
                double size = (double)rows[q] * (double)(S->cblk_fcol[j + 1] - S->cblk_fcol[j]);
                double panel_at = P->task_start[P->cblk_task[j]];
                if (first[q] > last[q]) first[q] = last[q] = panel_at; /* no task found: at the panel */
                double arrival = fmin(last[q], panel_at);
                ev[ne++] = (dist_event){src, first[q], size};
                ev[ne++] = (dist_event){src, fmax(panel_at, last[q]), -size};
                ev[ne++] = (dist_event){dst, arrival, size};
                ev[ne++] = (dist_event){dst, mode ? arrival : panel_at, -size};
                if (sink && mode == 0) sink[dst] = fmax(sink[dst], size);
            }
            if (out == NULL) continue;
            qsort(ev, ne, sizeof *ev, dist_cmp_event);
            double live = 0;
            for (size_t a = 0; a < ne; a++) {
                if (a > 0 && ev[a].rank != ev[a - 1].rank) live = 0;
                live += ev[a].delta;
                out[ev[a].rank] = fmax(out[ev[a].rank], live);
            }
        }
    }
    canopy_free(pairs);
    canopy_free(rows);
    canopy_free(first);
    canopy_free(last);
    canopy_free(ev);
    return st;
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
    sched_dag *D = &L->factor;
    D->nthreads = T;
    D->predicted_time = G->predicted_time;

    int *g2l = canopy_alloc((size_t)ng + 1, sizeof(int), "local plan scratch", err);
    int *gmap = canopy_alloc((size_t)G->nsnodes + 1, sizeof(int), "local plan scratch", err);
    int64_t *pairs = NULL;
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
    for (size_t q = 0; q < nu; q++) {
        cint j = (cint)(pairs[q] / R);
        int r = (int)(pairs[q] % R);
        L->fanin_msgs += parts;
        L->fanin_entries += (int64_t)S->cblk_stride[j] * (S->cblk_fcol[j + 1] - S->cblk_fcol[j]) * parts;
        if (P->cblk_rank[j] == rank) L->recv_ptr[j + 1]++;
        if (r == rank) L->nsend++;
    }
    for (cint j = 0; j < n; j++) L->recv_ptr[j + 1] += L->recv_ptr[j];
    L->recv_rank = canopy_alloc((size_t)L->recv_ptr[n] + 1, sizeof(int), "local plan", err);
    L->send_cblk = canopy_alloc((size_t)L->nsend + 1, sizeof(cint), "local plan", err);
    if (!L->recv_rank || !L->send_cblk) {
        st = dist_nomem(err);
        goto out;
    }
    cint ns = 0, nr = 0;
    for (size_t q = 0; q < nu; q++) {
        cint j = (cint)(pairs[q] / R);
        int r = (int)(pairs[q] % R);
        if (P->cblk_rank[j] == rank) L->recv_rank[nr++] = r; /* pairs are sorted by (j, r) */
        if (r == rank) L->send_cblk[ns++] = j;
    }
    /* the compressed layout of this rank's buffers, sent and received */
    {
        cint nrecv = L->recv_ptr[n];
        L->send_rows = canopy_alloc((size_t)L->nsend + 1, sizeof(cint), "fan-in layout", err);
        L->recv_rows = canopy_alloc((size_t)nrecv + 1, sizeof(cint), "fan-in layout", err);
        L->send_moff = canopy_alloc((size_t)L->nsend + 1, sizeof(int64_t), "fan-in layout", err);
        L->recv_moff = canopy_alloc((size_t)nrecv + 1, sizeof(int64_t), "fan-in layout", err);
        int64_t *moff = canopy_alloc(nu + 1, sizeof(int64_t), "fan-in layout", err);
        cint *rows = canopy_alloc(nu + 1, sizeof(cint), "fan-in layout", err);
        int64_t nmap = 0;
        if (L->send_rows && L->recv_rows && L->send_moff && L->recv_moff && moff && rows) {
            for (size_t q = 0; q < nu; q++) {
                cint j = (cint)(pairs[q] / R);
                int r = (int)(pairs[q] % R);
                moff[q] = -1;
                if (r == rank || P->cblk_rank[j] == rank) {
                    moff[q] = nmap;
                    nmap += S->cblk_stride[j];
                }
            }
            L->fan_rmap = canopy_alloc((size_t)nmap + 1, sizeof(cint), "fan-in layout", err);
        }
        if (L->fan_rmap) st = sched_fanin_rows(S, P->cblk_rank, R, P->root.n > 0 ? P->root.first : n, pairs, nu, rows, moff, L->fan_rmap, err);
        else st = dist_nomem(err);
        for (size_t q = 0, sq = 0, rcv = 0; q < nu && st == CANOPY_SUCCESS; q++) {
            cint j = (cint)(pairs[q] / R);
            int r = (int)(pairs[q] % R);
            if (P->cblk_rank[j] == rank) {
                L->recv_rows[rcv] = rows[q];
                L->recv_moff[rcv++] = moff[q];
            }
            if (r == rank) {
                L->send_rows[sq] = rows[q];
                L->send_moff[sq++] = moff[q];
            }
        }
        canopy_free(moff);
        canopy_free(rows);
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
        double *v = canopy_alloc(5 * (size_t)R, sizeof(double), "local plan scratch", err);
        if (v == NULL) {
            st = dist_nomem(err);
            goto out;
        }
        st = sched_fanin_memory(S, P, v, v + 4 * R, v + R, v + 2 * R, v + 3 * R, err);
        L->fanin_peak = v[rank];
        L->fanin_peak_arrival = v[4 * R + rank];
        L->fanin_sink = v[R + rank];
        L->update_max = v[2 * R + rank];
        L->panel_max = v[3 * R + rank];
        canopy_free(v);
        if (st != CANOPY_SUCCESS) goto out;
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
