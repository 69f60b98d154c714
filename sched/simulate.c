/*
 * Simulated factorization (see simulate.h): the greedy list scheduling of the static scheduler
 * described for PaStiX in papers/numa-scheduler-pastix.txt section 5.1 (tasks by critical-path
 * priority, each given to the candidate thread able to start it soonest). Knows nothing of cblks:
 * sched/plan.c hands it the graph, the candidate ranges and the serialization keys.
 */
#include "simulate.h"

#include <limits.h>
#include <math.h>
#include <string.h>

canopy_status sched_bottom_level(sched_dag *d, canopy_err *err)
{
    int n = d->ntasks;
    if (d->prio == NULL) {
        d->prio = canopy_alloc((size_t)n + 1, sizeof(double), "task priorities", err);
        if (d->prio == NULL) return err && err->status ? err->status : CANOPY_ERR_NOMEM;
    }
    int *cnt = canopy_alloc((size_t)n + 1, sizeof(int), "priority scratch", err);
    int *order = canopy_alloc((size_t)n + 1, sizeof(int), "priority scratch", err);
    canopy_status st = CANOPY_SUCCESS;
    if (!cnt || !order) {
        st = err && err->status ? err->status : CANOPY_ERR_NOMEM;
        goto out;
    }
    /* a topological order (Kahn), then the longest paths backwards along it */
    memcpy(cnt, d->npred, (size_t)n * sizeof(int));
    int qt = 0;
    for (int i = 0; i < n; i++)
        if (cnt[i] == 0) order[qt++] = i;
    for (int qh = 0; qh < qt; qh++) {
        int i = order[qh];
        for (int e = d->succ_ptr[i]; e < d->succ_ptr[i + 1]; e++)
            if (--cnt[d->succ[e]] == 0) order[qt++] = d->succ[e];
    }
    if (qt != n) {
        st = canopy_err_set(err, CANOPY_ERR_INTERNAL, "task graph has a cycle (%d of %d tasks ordered)", qt, n);
        goto out;
    }
    for (int q = n - 1; q >= 0; q--) {
        int i = order[q];
        double m = 0;
        for (int e = d->succ_ptr[i]; e < d->succ_ptr[i + 1]; e++) m = d->prio[d->succ[e]] > m ? d->prio[d->succ[e]] : m;
        d->prio[i] = d->cost[i] + m;
    }
out:
    canopy_free(cnt);
    canopy_free(order);
    return st;
}

/*
 * Heaps of (key, id) entries stored in pooled arrays (each task sits in at most one heap at a
 * time; a key never changes while its entry is in a heap, so it is kept in the entry: comparing
 * two entries reads no other array). mode 0: larger key first (priorities); mode 1: smaller key
 * first (end times). Ties: lower id, which keeps the whole simulation deterministic.
 */
typedef struct sim_ent {
    double key;
    int id;
} sim_ent;

static inline int sim_first(int mode, sim_ent a, sim_ent b)
{
    if (a.key != b.key) return mode ? a.key < b.key : a.key > b.key;
    return a.id < b.id;
}

static inline void sim_push(sim_ent *h, int *n, int x, double key, int mode)
{
    sim_ent e = {key, x};
    int i = (*n)++;
    while (i > 0) {
        int p = (i - 1) / 2;
        if (!sim_first(mode, e, h[p])) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = e;
}

static inline int sim_pop(sim_ent *h, int *n, int mode)
{
    int top = h[0].id, i = 0;
    sim_ent x = h[--(*n)];
    for (;;) {
        int c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && sim_first(mode, h[c + 1], h[c])) c++;
        if (!sim_first(mode, h[c], x)) break;
        h[i] = h[c];
        i = c;
    }
    if (*n > 0) h[i] = x;
    return top;
}

typedef struct sim_state {
    sched_dag *d;
    int *pref;
    sched_sim_groups *g;
    const cint *serial;
    sim_ent **heap;
    int *hn, *hcap;           /* ready heap of each Snode (grown on demand: an update of a shared cblk
                                 lands in the Snode of whichever rank its panel went to) */
    int oom;                  /* a heap could not grow */
    int *poff, *pn;
    sim_ent *ppool;           /* parked updates of each serial key (target busy) */
    unsigned char *busy;      /* [nserial] a contribution into the key is running */
    int *nidle;               /* [nsnodes] idle threads in the Snode's range */
    int *leaf;                /* [nthreads] the thread's leaf Snode */
    int *path_ptr, *path;     /* thread t's Snodes from its leaf up: path[path_ptr[t] .. path_ptr[t + 1]),
                                 or NULL (too many: walk snode_parent instead) */
    /* the eligible Snodes (a ready task and an idle thread), best top task first */
    int *sh, *spos, nsh;
} sim_state;

/* Snode a's best ready task comes before Snode b's */
static inline int sim_sfirst(const sim_state *S, int a, int b)
{
    return sim_first(0, S->heap[a][0], S->heap[b][0]);
}

static void sim_sset(sim_state *S, int i, int s)
{
    S->sh[i] = s;
    S->spos[s] = i;
}

static void sim_sup(sim_state *S, int i)
{
    int s = S->sh[i];
    while (i > 0 && sim_sfirst(S, s, S->sh[(i - 1) / 2])) {
        sim_sset(S, i, S->sh[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    sim_sset(S, i, s);
}

static void sim_sdown(sim_state *S, int i)
{
    int s = S->sh[i];
    for (;;) {
        int c = 2 * i + 1;
        if (c >= S->nsh) break;
        if (c + 1 < S->nsh && sim_sfirst(S, S->sh[c + 1], S->sh[c])) c++;
        if (!sim_sfirst(S, S->sh[c], s)) break;
        sim_sset(S, i, S->sh[c]);
        i = c;
    }
    sim_sset(S, i, s);
}

/* Snode s's ready heap or idle count changed: update its place among the eligible Snodes.
 * O(log nsnodes), so picking the next task never scans all Snodes. */
static void sim_touch(sim_state *S, int s)
{
    int eligible = S->hn[s] > 0 && S->nidle[s] > 0, i = S->spos[s];
    if (i < 0) {
        if (!eligible) return;
        S->sh[S->nsh] = s;
        S->spos[s] = S->nsh++;
        sim_sup(S, S->nsh - 1);
    } else if (!eligible) {
        S->spos[s] = -1;
        int last = S->sh[--S->nsh];
        if (i == S->nsh) return;
        sim_sset(S, i, last);
        sim_sup(S, i);
        sim_sdown(S, S->spos[last]);
    } else {
        sim_sup(S, i);
        sim_sdown(S, S->spos[s]);
    }
}

/* A task whose predecessors are done: ready in its Snode, or parked behind the running
 * contribution into its target. */
static void sim_release(sim_state *S, int i)
{
    sched_sim_groups *g = S->g;
    if (g && g->follow[i] >= 0) {
        /* an update of a shared cblk: on the rank its panel went to, near the panel's thread */
        int owner = S->d->owner[g->follow[i]];
        g->group[i] = owner / g->size;
        S->d->snode[i] = g->group_snode[g->group[i]];
        if (S->pref) S->pref[i] = owner;
    }
    cint key = S->serial ? S->serial[i] : -1;
    if (key >= 0 && S->busy[key]) {
        sim_push(S->ppool + S->poff[key], &S->pn[key], i, S->d->prio[i], 0);
        return;
    }
    int s = S->d->snode[i];
    if (S->hn[s] == S->hcap[s]) {
        int cap = S->hcap[s] < 4 ? 8 : 2 * S->hcap[s];
        canopy_err e = {0};
        sim_ent *h = canopy_realloc(S->heap[s], (size_t)cap, sizeof(sim_ent), "simulation heap", &e);
        if (h == NULL) {
            S->oom = 1;
            return;
        }
        S->heap[s] = h;
        S->hcap[s] = cap;
    }
    sim_push(S->heap[s], &S->hn[s], i, S->d->prio[i], 0);
    sim_touch(S, s);
}

/* Thread t becomes idle (+1) or busy (-1): every Snode containing it, i.e. its leaf's path;
 * eligibility changes only where the count leaves or reaches zero. */
static void sim_idle(sim_state *S, int t, int delta)
{
    int edge = delta > 0 ? 1 : 0;
    if (S->path) {
        for (int x = S->path_ptr[t], e = S->path_ptr[t + 1]; x < e; x++) {
            int s = S->path[x];
            if ((S->nidle[s] += delta) == edge) sim_touch(S, s);
        }
        return;
    }
    for (int s = S->leaf[t]; s >= 0; s = S->d->snode_parent[s])
        if ((S->nidle[s] += delta) == edge) sim_touch(S, s);
}

/* The threads' paths (sim_state.path), unless they would hold more than 64 Snodes per thread and
 * Snode on average (deep Snode trees): then S->path stays NULL. */
static canopy_status sim_paths(sim_state *S, int T, int ns, canopy_err *err)
{
    const int *parent = S->d->snode_parent;
    int64_t total = 0, cap = 64 * ((int64_t)T + ns);
    for (int t = 0; t < T && total <= cap; t++)
        for (int s = S->leaf[t]; s >= 0 && total <= cap; s = parent[s]) total++;
    if (total > cap || total >= INT_MAX) return CANOPY_SUCCESS;
    S->path_ptr = canopy_alloc((size_t)T + 1, sizeof(int), "simulation", err);
    S->path = canopy_alloc((size_t)total + 1, sizeof(int), "simulation", err);
    if (!S->path_ptr || !S->path) {
        canopy_free(S->path_ptr);
        canopy_free(S->path);
        S->path_ptr = S->path = NULL;
        return err && err->status ? err->status : CANOPY_ERR_NOMEM;
    }
    int x = 0;
    for (int t = 0; t < T; t++) {
        S->path_ptr[t] = x;
        for (int s = S->leaf[t]; s >= 0; s = parent[s]) S->path[x++] = s;
    }
    S->path_ptr[T] = x;
    return CANOPY_SUCCESS;
}

canopy_status sched_simulate(sched_dag *d, int *pref, const cint *serial, cint nserial, sched_sim_groups *groups,
                             int *seq, double *start, double *end, canopy_err *err)
{
    int n = d->ntasks, T = d->nthreads, ns = d->nsnodes;
    canopy_status st = CANOPY_SUCCESS;
    const int *group = groups ? groups->group : NULL;
    const double *delay = groups ? groups->delay : NULL;
    size_t n1 = (size_t)n + 1, k1 = (size_t)(nserial > 0 ? nserial : 0) + 1;
    sim_state S = {.d = d, .pref = pref, .g = groups, .serial = serial};
    int *cnt = canopy_alloc(n1, sizeof(int), "simulation", err);
    int *order = canopy_alloc(n1, sizeof(int), "simulation", err);
    sim_ent *ev = canopy_alloc(n1, sizeof(sim_ent), "simulation", err);
    double *tend = end ? end : canopy_alloc(n1, sizeof(double), "simulation", err);
    S.heap = canopy_calloc((size_t)ns + 1, sizeof(sim_ent *), "simulation", err);
    S.hn = canopy_calloc((size_t)ns + 1, sizeof(int), "simulation", err);
    S.hcap = canopy_calloc((size_t)ns + 1, sizeof(int), "simulation", err);
    S.poff = canopy_calloc(k1, sizeof(int), "simulation", err);
    S.pn = canopy_calloc(k1, sizeof(int), "simulation", err);
    S.ppool = canopy_alloc(n1, sizeof(sim_ent), "simulation", err);
    S.busy = canopy_calloc(k1, 1, "simulation", err);
    unsigned char *idle = canopy_alloc((size_t)T, 1, "simulation", err);
    S.nidle = canopy_alloc((size_t)ns, sizeof(int), "simulation", err);
    S.sh = canopy_alloc((size_t)ns, sizeof(int), "simulation", err);
    S.spos = canopy_alloc((size_t)ns, sizeof(int), "simulation", err);
    int *leaf = S.leaf = canopy_alloc((size_t)T, sizeof(int), "simulation", err);
    int *fill = canopy_alloc((size_t)T, sizeof(int), "simulation", err);
    /* messages between groups (ranks): one arrival event per crossing edge, in a heap grown as the
     * messages in flight at once need (sized for every edge it was 16 bytes an edge: 5.4 GB of a
     * 215^3 plan's 340 M edges on 256 x 16) */
    size_t ne = (size_t)(n > 0 ? d->succ_ptr[n] : 0) + 1, mhcap = ne < 64 ? ne : 64;
    sim_ent *mh = group ? canopy_alloc(mhcap, sizeof(sim_ent), "simulation", err) : NULL;
    int nmh = 0;
    if (d->list_ptr == NULL) d->list_ptr = canopy_alloc((size_t)T + 1, sizeof(int), "static lists", err);
    if (d->list == NULL) d->list = canopy_alloc(n1, sizeof(int), "static lists", err);
    if (!cnt || !order || !ev || !tend || !S.heap || !S.hn || !S.hcap || !S.poff || !S.pn || !S.ppool || !S.busy ||
        !idle || !S.nidle || !S.sh || !S.spos || !leaf || !fill || !d->list_ptr || !d->list ||
        (group && (!mh || !delay))) {
        st = err && err->status ? err->status : CANOPY_ERR_NOMEM;
        goto out;
    }
    for (int i = 0; i < n; i++) {
        if (!(groups && groups->follow[i] >= 0)) S.hcap[d->snode[i]]++;
        if (serial && serial[i] >= 0) S.poff[serial[i] + 1]++;
    }
    for (int s = 0; s < ns && st == CANOPY_SUCCESS; s++)
        if (S.hcap[s] > 0 && (S.heap[s] = canopy_alloc((size_t)S.hcap[s], sizeof(sim_ent), "simulation", err)) == NULL)
            st = err && err->status ? err->status : CANOPY_ERR_NOMEM;
    if (st != CANOPY_SUCCESS) goto out;
    for (cint k = 0; k < nserial; k++) S.poff[k + 1] += S.poff[k];
    for (int t = 0; t < T; t++) {
        idle[t] = 1;
        leaf[t] = -1;
    }
    for (int s = 0; s < ns; s++) {
        S.nidle[s] = d->snode_t1[s] - d->snode_t0[s];
        S.spos[s] = -1;
        if (S.nidle[s] == 1) leaf[d->snode_t0[s]] = s;
    }
    for (int t = 0; t < T; t++)
        if (leaf[t] < 0) {
            st = canopy_err_set(err, CANOPY_ERR_INTERNAL, "simulation: thread %d has no leaf Snode", t);
            goto out;
        }
    if ((st = sim_paths(&S, T, ns, err)) != CANOPY_SUCCESS) goto out;
    memcpy(cnt, d->npred, (size_t)n * sizeof(int));
    for (int i = 0; i < n; i++)
        if (cnt[i] == 0) sim_release(&S, i);

    /*
     * Event-driven list scheduling: at each instant, while some thread is idle, the ready task
     * of highest priority among the Snodes holding an idle thread starts on its data owner if
     * that one is idle, else on the lowest idle candidate; then time jumps to the next task end.
     * Tasks therefore start in the order they are assigned: the static lists and the numbering
     * of contributions (both by assignment order) follow time, so an update rarely waits for a
     * lower-numbered one. Updates into one target are serialized: one that finds its target
     * busy is parked until the running contribution ends.
     */
    int nev = 0, nseq = 0;
    double now = 0, makespan = 0;
    for (;;) {
        for (;;) {
            if (S.nsh == 0) break;
            int bs = S.sh[0];
            int bi = sim_pop(S.heap[bs], &S.hn[bs], 0);
            sim_touch(&S, bs);
            cint key = serial ? serial[bi] : -1;
            if (key >= 0 && S.busy[key]) { /* its target got busy since it became ready */
                sim_push(S.ppool + S.poff[key], &S.pn[key], bi, d->prio[bi], 0);
                continue;
            }
            int a = d->snode_t0[bs], b = d->snode_t1[bs], who = -1;
            if (pref && pref[bi] >= a && pref[bi] < b && idle[pref[bi]]) who = pref[bi];
            for (int t = a; t < b && who < 0; t++)
                if (idle[t]) who = t;
            if (who < 0) { /* the idle counts say otherwise: the Snodes do not nest */
                st = canopy_err_set(err, CANOPY_ERR_INTERNAL, "simulation: Snode [%d, %d) counts an idle thread but has none",
                                    a, b);
                goto out;
            }
            d->owner[bi] = who;
            if (groups && groups->group[bi] < 0) groups->group[bi] = who / groups->size; /* a shared panel placed */
            idle[who] = 0;
            sim_idle(&S, who, -1);
            if (key >= 0) S.busy[key] = 1;
            if (start) start[bi] = now;
            tend[bi] = now + d->cost[bi];
            if (tend[bi] > makespan) makespan = tend[bi];
            if (seq) seq[bi] = nseq;
            order[nseq++] = bi;
            sim_push(ev, &nev, bi, tend[bi], 1);
        }
        if (nev == 0 && nmh == 0) break;
        now = nev == 0 ? mh[0].key : nmh == 0 ? ev[0].key : fmin(ev[0].key, mh[0].key);
        while (nmh > 0 && mh[0].key == now) {
            int q = sim_pop(mh, &nmh, 1);
            if (--cnt[d->succ[q]] == 0) sim_release(&S, d->succ[q]);
        }
        while (nev > 0 && ev[0].key == now) {
            int i = sim_pop(ev, &nev, 1);
            idle[d->owner[i]] = 1;
            sim_idle(&S, d->owner[i], +1);
            cint key = serial ? serial[i] : -1;
            if (key >= 0) {
                S.busy[key] = 0;
                /* one parked update at a time: releasing all would park all but one again */
                if (S.pn[key] > 0) sim_release(&S, sim_pop(S.ppool + S.poff[key], &S.pn[key], 0));
            }
            for (int q = d->succ_ptr[i]; q < d->succ_ptr[i + 1]; q++) {
                int sq = d->succ[q];
                int gs = group ? group[sq] : -1;
                if (group && gs < 0 && groups->follow[sq] >= 0 && groups->follow[sq] == i)
                    gs = d->owner[i] / groups->size; /* the panel's own updates stay on its rank */
                double dl = group ? (groups->edge_delay ? groups->edge_delay[q] : delay[sq]) : 0;
                if (group && (gs < 0 || gs != group[i]) && dl > 0) {
                    if ((size_t)nmh == mhcap) { /* each edge at most once: ne bounds it */
                        size_t cap = 2 * mhcap < ne ? 2 * mhcap : ne;
                        canopy_err e = {0};
                        sim_ent *h = canopy_realloc(mh, cap, sizeof(sim_ent), "simulation messages", &e);
                        if (h == NULL) {
                            S.oom = 1; /* the successor never starts: reported below */
                            continue;
                        }
                        mh = h;
                        mhcap = cap;
                    }
                    sim_push(mh, &nmh, q, now + dl, 1);
                } else if (--cnt[sq] == 0) {
                    sim_release(&S, sq);
                }
            }
        }
    }
    if (S.oom) {
        st = canopy_err_set(err, CANOPY_ERR_NOMEM, "out of memory growing the simulation's heaps");
        goto out;
    }
    if (nseq != n) {
        st = canopy_err_set(err, CANOPY_ERR_INTERNAL, "simulation stalled: %d of %d tasks scheduled", nseq, n);
        goto out;
    }
    d->predicted_time = makespan;
    /* each thread's list in assignment order: all lists follow the one global order */
    for (int t = 0; t <= T; t++) d->list_ptr[t] = 0;
    for (int i = 0; i < n; i++) d->list_ptr[d->owner[i] + 1]++;
    for (int t = 0; t < T; t++) d->list_ptr[t + 1] += d->list_ptr[t];
    for (int t = 0; t < T; t++) fill[t] = d->list_ptr[t];
    for (int q = 0; q < n; q++) d->list[fill[d->owner[order[q]]]++] = order[q];
out:
    canopy_free(cnt);
    canopy_free(order);
    canopy_free(ev);
    if (tend != end) canopy_free(tend);
    for (int s = 0; S.heap && s < ns; s++) canopy_free(S.heap[s]);
    canopy_free(S.heap);
    canopy_free(S.hcap);
    canopy_free(S.hn);
    canopy_free(S.poff);
    canopy_free(S.pn);
    canopy_free(S.ppool);
    canopy_free(S.busy);
    canopy_free(idle);
    canopy_free(S.nidle);
    canopy_free(S.sh);
    canopy_free(S.spos);
    canopy_free(leaf);
    canopy_free(S.path_ptr);
    canopy_free(S.path);
    canopy_free(fill);
    canopy_free(mh);
    return st;
}
