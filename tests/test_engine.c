/*
 * The execution engine (sched/engine.c) on hand-made and random task graphs: every task runs once
 * and only after its predecessors, static runs follow the lists, dynamic runs stay on the Snode
 * paths (own path or sons of it), statistics and events add up, abort and the ticket protocol,
 * run_all, pool reuse, bad graphs refused, allocation failures survived. No timing assertions;
 * the empty-task throughput is printed only. Graphs are built and freed here (not sched/dag.c).
 */
#include "testutil.h"
#include <pthread.h>
#include <stdatomic.h>
#include "sched/engine.h"

/* ---- random graphs ----------------------------------------------------------------------------- */

typedef struct tgraph {
    sched_dag d;
    int *pred_ptr, *pred;   /* predecessors, for the checks inside tasks */
} tgraph;

static void *xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n ? n : 1, sz);
    ck_assert_ptr_nonnull(p);
    return p;
}

static void tgraph_free(tgraph *g)
{
    sched_dag *d = &g->d;
    free(d->npred);
    free(d->succ_ptr);
    free(d->succ);
    free(d->owner);
    free(d->snode);
    free(d->prio);
    free(d->list_ptr);
    free(d->list);
    free(d->snode_t0);
    free(d->snode_t1);
    free(d->snode_parent);
    free(d->snode_depth);
    free(g->pred_ptr);
    free(g->pred);
    memset(g, 0, sizeof *g);
}

static int rnd(uint64_t *st, int n) { return (int)(testutil_rand(st) % (uint64_t)n); }

/* Snode over [a, b) under @p parent; sons split the range into 2 or 3 parts down to single threads,
 * sometimes through a son with the same range (a chain of equal candidate sets). */
static void tgraph_split(sched_dag *d, uint64_t *st, int a, int b, int parent, int depth)
{
    int s = d->nsnodes++;
    d->snode_t0[s] = a;
    d->snode_t1[s] = b;
    d->snode_parent[s] = parent;
    d->snode_depth[s] = depth;
    if (b - a == 1 && rnd(st, 8) != 0) return;
    if (b - a == 1 || rnd(st, 10) == 0) {
        tgraph_split(d, st, a, b, s, depth + 1);
        return;
    }
    int parts = 2 + rnd(st, 2);   /* not inside CANOPY_MIN: it evaluates twice */
    parts = CANOPY_MIN(b - a, parts);
    for (int k = 0; k < parts; k++) {
        int left = parts - k - 1, w = k == parts - 1 ? b - a : 1 + rnd(st, b - a - left);
        tgraph_split(d, st, a, a + w, s, depth + 1);
        a += w;
    }
}

/*
 * n tasks over nthreads threads. window == 0: nedges random edges between random tasks, oriented by
 * a random topological order; window > 0: every task gets up to 3 predecessors among the window
 * tasks before it in that order (deep graphs). Owners lie in the task's Snode, except a few.
 */
static void tgraph_random(tgraph *g, int n, int nthreads, int nedges, int window, uint64_t seed)
{
    uint64_t st = seed * 0x9E3779B97F4A7C15ull + 1;
    sched_dag *d = &g->d;
    memset(g, 0, sizeof *g);
    d->nthreads = nthreads;
    d->ntasks = n;
    int maxs = 4 * nthreads + 64;
    d->snode_t0 = xcalloc((size_t)maxs, sizeof(int));
    d->snode_t1 = xcalloc((size_t)maxs, sizeof(int));
    d->snode_parent = xcalloc((size_t)maxs, sizeof(int));
    d->snode_depth = xcalloc((size_t)maxs, sizeof(int));
    do {
        d->nsnodes = 0;
        tgraph_split(d, &st, 0, nthreads, -1, 0);
    } while (d->nsnodes > maxs - 8); /* a long run of equal-range sons: draw again */
    ck_assert_int_le(d->nsnodes, maxs);

    int *order = xcalloc((size_t)n, sizeof(int));
    for (int i = 0; i < n; i++) order[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = rnd(&st, i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    int cap = window > 0 ? 3 * n : nedges, ne = 0;
    int *eu = xcalloc((size_t)cap, sizeof(int)), *ev = xcalloc((size_t)cap, sizeof(int));
    if (window > 0) {
        for (int k = 1; k < n; k++)
            for (int e = rnd(&st, 4); e > 0; e--) {
                int from = k - 1 - rnd(&st, CANOPY_MIN(k, window));
                eu[ne] = order[from];
                ev[ne++] = order[k];
            }
    } else if (n > 1) {
        for (int e = 0; e < nedges; e++) {
            int a = rnd(&st, n), b = rnd(&st, n);
            if (a == b) continue;
            eu[ne] = order[CANOPY_MIN(a, b)];
            ev[ne++] = order[CANOPY_MAX(a, b)];   /* duplicates allowed: counted twice */
        }
    }
    d->npred = xcalloc((size_t)n, sizeof(int));
    d->succ_ptr = xcalloc((size_t)n + 1, sizeof(int));
    d->succ = xcalloc((size_t)ne, sizeof(int));
    g->pred_ptr = xcalloc((size_t)n + 1, sizeof(int));
    g->pred = xcalloc((size_t)ne, sizeof(int));
    for (int e = 0; e < ne; e++) {
        d->succ_ptr[eu[e] + 1]++;
        g->pred_ptr[ev[e] + 1]++;
        d->npred[ev[e]]++;
    }
    for (int i = 0; i < n; i++) {
        d->succ_ptr[i + 1] += d->succ_ptr[i];
        g->pred_ptr[i + 1] += g->pred_ptr[i];
    }
    int *fs = xcalloc((size_t)n, sizeof(int)), *fp = xcalloc((size_t)n, sizeof(int));
    for (int e = 0; e < ne; e++) {
        d->succ[d->succ_ptr[eu[e]] + fs[eu[e]]++] = ev[e];
        g->pred[g->pred_ptr[ev[e]] + fp[ev[e]]++] = eu[e];
    }

    d->owner = xcalloc((size_t)n, sizeof(int));
    d->snode = xcalloc((size_t)n, sizeof(int));
    d->prio = xcalloc((size_t)n, sizeof(double));
    for (int i = 0; i < n; i++) {
        int s = rnd(&st, d->nsnodes);
        d->snode[i] = s;
        d->owner[i] = rnd(&st, 16) == 0 ? rnd(&st, nthreads)
                                         : d->snode_t0[s] + rnd(&st, d->snode_t1[s] - d->snode_t0[s]);
        d->prio[i] = (double)rnd(&st, 16);   /* many ties */
    }
    /* static lists: each owner's tasks in the global topological order */
    d->list_ptr = xcalloc((size_t)nthreads + 1, sizeof(int));
    d->list = xcalloc((size_t)n, sizeof(int));
    for (int i = 0; i < n; i++) d->list_ptr[d->owner[i] + 1]++;
    for (int t = 0; t < nthreads; t++) d->list_ptr[t + 1] += d->list_ptr[t];
    memset(fs, 0, (size_t)n * sizeof(int));
    for (int k = 0; k < n; k++) {
        int i = order[k], t = d->owner[i];
        d->list[d->list_ptr[t] + fs[t]++] = i;
    }
    free(order);
    free(eu);
    free(ev);
    free(fs);
    free(fp);
}

/* The test's own validity check of a generated graph (sched_dag_check lives elsewhere). */
static void tgraph_assert_valid(const tgraph *g)
{
    const sched_dag *d = &g->d;
    int n = d->ntasks;
    int *cnt = xcalloc((size_t)n, sizeof(int)), *pos = xcalloc((size_t)n, sizeof(int));
    for (int i = 0; i < n; i++)
        for (int p = d->succ_ptr[i]; p < d->succ_ptr[i + 1]; p++) cnt[d->succ[p]]++;
    for (int i = 0; i < n; i++) ck_assert_int_eq(cnt[i], d->npred[i]);
    /* lists: every task once, predecessors listed before on the same thread */
    memset(cnt, 0, (size_t)n * sizeof(int));
    for (int t = 0; t < d->nthreads; t++)
        for (int k = d->list_ptr[t]; k < d->list_ptr[t + 1]; k++) {
            cnt[d->list[k]]++;
            pos[d->list[k]] = k;
        }
    for (int i = 0; i < n; i++) ck_assert_int_eq(cnt[i], 1);
    for (int i = 0; i < n; i++)
        for (int p = g->pred_ptr[i]; p < g->pred_ptr[i + 1]; p++)
            if (d->owner[g->pred[p]] == d->owner[i]) ck_assert_int_lt(pos[g->pred[p]], pos[i]);
    /* Snodes: nested in their parent, leaves [t, t+1) */
    ck_assert_int_eq(d->snode_t0[0], 0);
    ck_assert_int_eq(d->snode_t1[0], d->nthreads);
    for (int s = 1; s < d->nsnodes; s++) {
        int p = d->snode_parent[s];
        ck_assert(p >= 0 && p < s);
        ck_assert(d->snode_t0[s] >= d->snode_t0[p] && d->snode_t1[s] <= d->snode_t1[p]);
    }
    free(cnt);
    free(pos);
}

/* ---- checking tasks -------------------------------------------------------------------------- */

typedef struct tctx {
    const tgraph *g;
    canopy_scheduler sched;
    atomic_int *runs, *done;
    atomic_int bad_order, bad_thread, bad_place;
    int nfail, fail_task[4], fail_value[4];
    int work;
} tctx;

static void tctx_init(tctx *c, const tgraph *g, canopy_scheduler sched)
{
    memset(c, 0, sizeof *c);
    c->g = g;
    c->sched = sched;
    c->runs = xcalloc((size_t)g->d.ntasks, sizeof(atomic_int));
    c->done = xcalloc((size_t)g->d.ntasks, sizeof(atomic_int));
    for (int i = 0; i < g->d.ntasks; i++) {
        atomic_init(&c->runs[i], 0);
        atomic_init(&c->done[i], 0);
    }
    atomic_init(&c->bad_order, 0);
    atomic_init(&c->bad_thread, 0);
    atomic_init(&c->bad_place, 0);
}

static void tctx_free(tctx *c)
{
    free(c->runs);
    free(c->done);
}

static bool in_snode(const sched_dag *d, int s, int t) { return s >= 0 && t >= d->snode_t0[s] && t < d->snode_t1[s]; }

static int check_task(void *ctx, int task, sched_worker *w)
{
    tctx *c = ctx;
    const sched_dag *d = &c->g->d;
    int me = sched_worker_id(w);
    if (me < 0 || me >= d->nthreads) atomic_fetch_add(&c->bad_thread, 1);
    for (int p = c->g->pred_ptr[task]; p < c->g->pred_ptr[task + 1]; p++)
        if (!atomic_load_explicit(&c->done[c->g->pred[p]], memory_order_acquire)) atomic_fetch_add(&c->bad_order, 1);
    atomic_fetch_add(&c->runs[task], 1);
    if (c->sched == CANOPY_SCHED_STATIC && me != d->owner[task]) atomic_fetch_add(&c->bad_place, 1);
    if (c->sched == CANOPY_SCHED_DYNAMIC) {
        /* on the worker's path (its Snode holds it) or a son of a path Snode (its parent does) */
        int s = d->snode[task];
        if (!in_snode(d, s, me) && !in_snode(d, d->snode_parent[s], me)) atomic_fetch_add(&c->bad_place, 1);
    }
    for (volatile int k = 0; k < c->work; k++) {
    }
    for (int f = 0; f < c->nfail; f++)
        if (task == c->fail_task[f]) return c->fail_value[f];
    atomic_store_explicit(&c->done[task], 1, memory_order_release);
    return 0;
}

typedef struct tstats {
    sched_run_stats s;
    double busy[64];
    int64_t steals[64], tasks_run[64];
} tstats;

static void tstats_init(tstats *t, int ntasks)
{
    memset(t, 0, sizeof *t);
    t->s.busy = t->busy;
    t->s.steals = t->steals;
    t->s.tasks_run = t->tasks_run;
    t->s.events = xcalloc((size_t)ntasks, sizeof(sched_event));
}

/* Run to completion and check everything a complete run promises. */
static void run_and_check(sched_pool *pool, const tgraph *g, canopy_scheduler sched, int work)
{
    const sched_dag *d = &g->d;
    tctx c;
    tctx_init(&c, g, sched);
    c.work = work;
    tstats ts;
    tstats_init(&ts, d->ntasks);
    canopy_err err = {0};
    int result = -1;
    ck_assert_int_eq(sched_execute(pool, d, sched, check_task, &c, &ts.s, &result, &err), CANOPY_SUCCESS);
    ck_assert_int_eq(result, 0);
    ck_assert_int_eq(atomic_load(&c.bad_order), 0);
    ck_assert_int_eq(atomic_load(&c.bad_thread), 0);
    ck_assert_int_eq(atomic_load(&c.bad_place), 0);
    int64_t per_thread[64] = {0}, stolen[64] = {0}, total = 0, steals = 0;
    double maxend = 0;
    for (int i = 0; i < d->ntasks; i++) {
        ck_assert_int_eq(atomic_load(&c.runs[i]), 1);
        const sched_event *e = &ts.s.events[i];
        ck_assert_int_eq(e->task, i);
        ck_assert(e->thread >= 0 && e->thread < d->nthreads);
        ck_assert(e->start >= 0 && e->end >= e->start);
        maxend = CANOPY_MAX(maxend, e->end);
        per_thread[e->thread]++;
        if (sched == CANOPY_SCHED_STATIC) {
            ck_assert_int_eq(e->victim, -1);
            ck_assert_int_eq(e->thread, d->owner[i]);
        } else if (e->victim >= 0) {
            ck_assert(e->victim < d->nthreads && e->victim != e->thread);
            stolen[e->thread]++;
        }
    }
    for (int t = 0; t < d->nthreads; t++) {
        ck_assert_int_eq(ts.tasks_run[t], per_thread[t]);
        ck_assert_int_eq(ts.steals[t], stolen[t]);
        ck_assert(ts.busy[t] >= 0);
        total += ts.tasks_run[t];
        steals += ts.steals[t];
    }
    ck_assert_int_eq(total, d->ntasks);
    if (sched == CANOPY_SCHED_STATIC) ck_assert_int_eq(steals, 0);
    ck_assert(ts.s.wall == maxend);
    free(ts.s.events);
    tctx_free(&c);
}

/* Two "sockets": distance 10 inside a half, 20 across. */
static int *two_socket_distance(int n)
{
    int *dist = xcalloc((size_t)n * (size_t)n, sizeof(int));
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) dist[a * n + b] = a == b ? 0 : (a < n / 2) == (b < n / 2) ? 10 : 20;
    return dist;
}

static const int thread_counts[] = {1, 2, 3, 4, 8, 16};

START_TEST(random_graphs_both_schedulers)
{
    for (size_t k = 0; k < sizeof thread_counts / sizeof *thread_counts; k++) {
        int nt = thread_counts[k];
        int *dist = nt >= 4 ? two_socket_distance(nt) : NULL;
        sched_pool *pool = NULL;
        canopy_err err = {0};
        ck_assert_int_eq(sched_pool_create(nt, NULL, NULL, dist, &pool, &err), CANOPY_SUCCESS);
        ck_assert_int_eq(sched_pool_threads(pool), nt);
        for (int shape = 0; shape < 2; shape++) {
            tgraph g;
            tgraph_random(&g, 2000, nt, 600, shape ? 40 : 0, 1000u + 7u * (unsigned)nt + (unsigned)shape);
            tgraph_assert_valid(&g);
            run_and_check(pool, &g, CANOPY_SCHED_STATIC, shape ? 50 : 0);
            run_and_check(pool, &g, CANOPY_SCHED_DYNAMIC, shape ? 50 : 0);
            tgraph_free(&g);
        }
        sched_pool_destroy(pool);
        free(dist);
    }
}
END_TEST

START_TEST(pool_reused_for_many_runs)
{
    sched_pool *pool = NULL;
    ck_assert_int_eq(sched_pool_create(4, NULL, NULL, NULL, &pool, NULL), CANOPY_SUCCESS);
    tgraph g[8];
    for (int k = 0; k < 8; k++) tgraph_random(&g[k], 20 + 9 * k, 4, 3 * k, k % 2 ? 5 : 0, 77u + (unsigned)k);
    for (int r = 0; r < 200; r++)
        run_and_check(pool, &g[r % 8], r % 2 ? CANOPY_SCHED_DYNAMIC : CANOPY_SCHED_STATIC, 0);
    for (int k = 0; k < 8; k++) tgraph_free(&g[k]);
    sched_pool_destroy(pool);
}
END_TEST

START_TEST(empty_graph_and_one_thread)
{
    sched_pool *pool = NULL;
    ck_assert_int_eq(sched_pool_create(3, NULL, NULL, NULL, &pool, NULL), CANOPY_SUCCESS);
    sched_dag d = {0};
    d.nthreads = 3;
    tctx c;
    tgraph dummy = {0};
    tctx_init(&c, &dummy, CANOPY_SCHED_STATIC);
    for (int sched = 0; sched < 2; sched++) {
        tstats ts;
        tstats_init(&ts, 0);
        ts.tasks_run[1] = ts.steals[2] = 5;
        ts.busy[0] = 1;
        int result = -1;
        ck_assert_int_eq(sched_execute(pool, &d, (canopy_scheduler)sched, check_task, &c, &ts.s, &result, NULL),
                         CANOPY_SUCCESS);
        ck_assert_int_eq(result, 0);
        ck_assert(ts.s.wall == 0 && ts.busy[0] == 0);
        ck_assert_int_eq(ts.tasks_run[1], 0);
        ck_assert_int_eq(ts.steals[2], 0);
        free(ts.s.events);
    }
    tctx_free(&c);
    sched_pool_destroy(pool);
    sched_pool_destroy(NULL);

    /* one thread: a deep graph, both schedulers, without stats */
    ck_assert_int_eq(sched_pool_create(1, NULL, NULL, NULL, &pool, NULL), CANOPY_SUCCESS);
    tgraph g;
    tgraph_random(&g, 500, 1, 0, 3, 5);
    for (int sched = 0; sched < 2; sched++) {
        tctx_init(&c, &g, (canopy_scheduler)sched);
        int result = -1;
        ck_assert_int_eq(sched_execute(pool, &g.d, (canopy_scheduler)sched, check_task, &c, NULL, &result, NULL),
                         CANOPY_SUCCESS);
        ck_assert_int_eq(result, 0);
        for (int i = 0; i < g.d.ntasks; i++) ck_assert_int_eq(atomic_load(&c.runs[i]), 1);
        ck_assert_int_eq(atomic_load(&c.bad_order), 0);
        tctx_free(&c);
    }
    tgraph_free(&g);
    sched_pool_destroy(pool);
}
END_TEST

/* ---- abort ----------------------------------------------------------------------------------- */

START_TEST(abort_stops_the_run)
{
    const int counts[] = {1, 3, 8};
    for (int k = 0; k < 3; k++) {
        sched_pool *pool = NULL;
        ck_assert_int_eq(sched_pool_create(counts[k], NULL, NULL, NULL, &pool, NULL), CANOPY_SUCCESS);
        /* a deep graph (predecessors among the task just before in the topological order): the
         * successors of the failing task can never start */
        tgraph g;
        tgraph_random(&g, 300, counts[k], 0, 1, 31u + (unsigned)k);
        for (int sched = 0; sched < 2; sched++) {
            tctx c;
            tctx_init(&c, &g, (canopy_scheduler)sched);
            int fail = -1;
            for (int i = 0; i < g.d.ntasks; i++)   /* a task with a long chain after it */
                if (g.d.npred[i] == 0 && g.d.succ_ptr[i + 1] > g.d.succ_ptr[i]) fail = i;
            ck_assert_int_ge(fail, 0);
            c.nfail = 1;
            c.fail_task[0] = fail;
            c.fail_value[0] = 42;
            tstats ts;
            tstats_init(&ts, g.d.ntasks);
            int result = 0;
            ck_assert_int_eq(sched_execute(pool, &g.d, (canopy_scheduler)sched, check_task, &c, &ts.s, &result, NULL),
                             CANOPY_SUCCESS);
            ck_assert_int_eq(result, 42);
            ck_assert_int_eq(atomic_load(&c.bad_order), 0);
            int ran = 0;
            for (int i = 0; i < g.d.ntasks; i++) {
                int r = atomic_load(&c.runs[i]);
                ck_assert_int_le(r, 1);
                ran += r;
                ck_assert_int_eq(ts.s.events[i].thread >= 0, r == 1);
            }
            ck_assert_int_eq(atomic_load(&c.runs[fail]), 1);
            for (int p = g.d.succ_ptr[fail]; p < g.d.succ_ptr[fail + 1]; p++)
                ck_assert_int_eq(atomic_load(&c.runs[g.d.succ[p]]), 0);
            ck_assert_int_lt(ran, g.d.ntasks);
            free(ts.s.events);
            tctx_free(&c);
        }
        tgraph_free(&g);

        /* several failures at once: one of their values comes back */
        tgraph_random(&g, 1000, counts[k], 200, 0, 57u + (unsigned)k);
        tctx c;
        tctx_init(&c, &g, CANOPY_SCHED_DYNAMIC);
        c.nfail = 3;
        for (int f = 0; f < 3; f++) {
            c.fail_task[f] = 100 + 300 * f;
            c.fail_value[f] = 5 + f;
        }
        int result = 0;
        ck_assert_int_eq(sched_execute(pool, &g.d, CANOPY_SCHED_DYNAMIC, check_task, &c, NULL, &result, NULL),
                         CANOPY_SUCCESS);
        ck_assert(result >= 5 && result <= 7);
        tctx_free(&c);
        tgraph_free(&g);
        sched_pool_destroy(pool);
    }
}
END_TEST

/* Task 0 waits for a counter nobody sets; task 1 fails: the wait must end with nonzero. */
typedef struct wait_ctx {
    atomic_int never, wait_result, entered;
} wait_ctx;

static int wait_or_fail(void *ctx, int task, sched_worker *w)
{
    wait_ctx *c = ctx;
    if (task == 0) {
        atomic_store(&c->entered, 1);
        atomic_store(&c->wait_result, sched_wait_equal(w, &c->never, 1));
        return 0;
    }
    while (!atomic_load(&c->entered)) sched_yield();   /* fail only once the other one waits */
    return 9;
}

START_TEST(abort_ends_waits)
{
    static int npred[2], succ_ptr[3], owner[2] = {0, 1}, snode[2] = {1, 2}, list_ptr[3] = {0, 1, 2}, list[2] = {0, 1};
    static int t0[3] = {0, 0, 1}, t1[3] = {2, 1, 2}, parent[3] = {-1, 0, 0};
    static double prio[2];
    sched_dag d = {0};
    d.nthreads = 2;
    d.ntasks = 2;
    d.npred = npred;
    d.succ_ptr = succ_ptr;
    d.owner = owner;
    d.snode = snode;
    d.prio = prio;
    d.list_ptr = list_ptr;
    d.list = list;
    d.nsnodes = 3;
    d.snode_t0 = t0;
    d.snode_t1 = t1;
    d.snode_parent = parent;
    sched_pool *pool = NULL;
    ck_assert_int_eq(sched_pool_create(2, NULL, NULL, NULL, &pool, NULL), CANOPY_SUCCESS);
    for (int sched = 0; sched < 2; sched++) {
        wait_ctx c;
        atomic_init(&c.never, 0);
        atomic_init(&c.wait_result, 0);
        atomic_init(&c.entered, 0);
        int result = 0;
        ck_assert_int_eq(sched_execute(pool, &d, (canopy_scheduler)sched, wait_or_fail, &c, NULL, &result, NULL),
                         CANOPY_SUCCESS);
        ck_assert_int_eq(result, 9);
        ck_assert_int_ne(atomic_load(&c.wait_result), 0);
    }
    sched_pool_destroy(pool);
}
END_TEST

/* ---- ticket protocol ------------------------------------------------------------------------- */

typedef struct ticket_ctx {
    atomic_int ticket;
    int *log;
    double acc;   /* written only by the ticket holder */
    const double *x;
} ticket_ctx;

static int ticket_task(void *ctx, int task, sched_worker *w)
{
    ticket_ctx *c = ctx;
    if (sched_wait_equal(w, &c->ticket, task)) return 1;
    int k = atomic_load_explicit(&c->ticket, memory_order_relaxed);
    c->log[k] = task;
    c->acc = c->acc * 1.0000001 + c->x[task];
    atomic_store_explicit(&c->ticket, k + 1, memory_order_release);
    sched_wake(w);
    return 0;
}

START_TEST(ticket_order_is_exact)
{
    const int counts[] = {2, 4, 16};
    for (int k = 0; k < 3; k++) {
        int nt = counts[k], n = 600;
        /* edges only from smaller to larger tasks, lists increasing: the ticket order (task number)
         * is one global topological order shared by all lists */
        tgraph g;
        uint64_t st = 99u + (unsigned)k;
        sched_dag *d = &g.d;
        memset(&g, 0, sizeof g);
        d->nthreads = nt;
        d->ntasks = n;
        d->npred = xcalloc((size_t)n, sizeof(int));
        d->succ_ptr = xcalloc((size_t)n + 1, sizeof(int));
        d->succ = xcalloc((size_t)n, sizeof(int));
        d->owner = xcalloc((size_t)n, sizeof(int));
        d->list_ptr = xcalloc((size_t)nt + 1, sizeof(int));
        d->list = xcalloc((size_t)n, sizeof(int));
        for (int i = 0; i < n; i++) {
            /* edge i -> i + 1 + r for a third of the tasks */
            int r = i + 1 + rnd(&st, 20);
            if (r < n && rnd(&st, 3) == 0) {
                d->succ[d->succ_ptr[i]] = r;
                d->npred[r]++;
                d->succ_ptr[i + 1] = d->succ_ptr[i] + 1;
            } else {
                d->succ_ptr[i + 1] = d->succ_ptr[i];
            }
            d->owner[i] = rnd(&st, nt);
            d->list_ptr[d->owner[i] + 1]++;
        }
        for (int t = 0; t < nt; t++) d->list_ptr[t + 1] += d->list_ptr[t];
        int *fill = xcalloc((size_t)nt, sizeof(int));
        for (int i = 0; i < n; i++) d->list[d->list_ptr[d->owner[i]] + fill[d->owner[i]]++] = i;
        free(fill);

        double *x = xcalloc((size_t)n, sizeof(double)), expect = 0;
        for (int i = 0; i < n; i++) {
            x[i] = testutil_uniform(&st) - 0.5;
            expect = expect * 1.0000001 + x[i];
        }
        ticket_ctx c = {.log = xcalloc((size_t)n, sizeof(int)), .acc = 0, .x = x};
        atomic_init(&c.ticket, 0);
        sched_pool *pool = NULL;
        ck_assert_int_eq(sched_pool_create(nt, NULL, NULL, NULL, &pool, NULL), CANOPY_SUCCESS);
        int result = -1;
        canopy_err err = {0};
        ck_assert_int_eq(sched_execute(pool, d, CANOPY_SCHED_STATIC, ticket_task, &c, NULL, &result, &err),
                         CANOPY_SUCCESS);
        ck_assert_int_eq(result, 0);
        ck_assert_int_eq(atomic_load(&c.ticket), n);
        for (int i = 0; i < n; i++) ck_assert_int_eq(c.log[i], i);
        ck_assert(c.acc == expect);   /* bit for bit: same order as the sequential sum */
        sched_pool_destroy(pool);
        free(c.log);
        free(x);
        tgraph_free(&g);
    }
}
END_TEST

/* ---- run_all and the init hook ------------------------------------------------------------- */

typedef struct all_ctx {
    atomic_int calls[16], inits[16];
    pthread_t self[16], init_self[16];
} all_ctx;

static void record_init(void *arg, int t)
{
    all_ctx *c = arg;
    c->init_self[t] = pthread_self();
    atomic_fetch_add(&c->inits[t], 1);
}

static void record_call(void *arg, int t)
{
    all_ctx *c = arg;
    c->self[t] = pthread_self();
    atomic_fetch_add(&c->calls[t], 1);
}

START_TEST(run_all_once_per_thread)
{
    enum { NT = 5 };
    all_ctx c;
    for (int t = 0; t < 16; t++) {
        atomic_init(&c.calls[t], 0);
        atomic_init(&c.inits[t], 0);
    }
    sched_pool *pool = NULL;
    ck_assert_int_eq(sched_pool_create(NT, record_init, &c, NULL, &pool, NULL), CANOPY_SUCCESS);
    for (int t = 0; t < NT; t++) ck_assert_int_eq(atomic_load(&c.inits[t]), 1);   /* all ran before create returned */
    for (int round = 1; round <= 3; round++) {
        sched_pool_run_all(pool, record_call, &c);
        for (int t = 0; t < NT; t++) {
            ck_assert_int_eq(atomic_load(&c.calls[t]), round);
            ck_assert(pthread_equal(c.self[t], c.init_self[t]));   /* the same persistent thread */
            ck_assert(!pthread_equal(c.self[t], pthread_self()));  /* the caller is not a worker */
            for (int u = 0; u < t; u++) ck_assert(!pthread_equal(c.self[t], c.self[u]));
        }
    }
    for (int t = NT; t < 16; t++) ck_assert_int_eq(atomic_load(&c.calls[t]), 0);
    sched_pool_run_all(NULL, record_call, &c);
    sched_pool_destroy(pool);
}
END_TEST

/* ---- refusals and allocation failures -------------------------------------------------------- */

static atomic_int nested_status;
static sched_pool *nested_pool;   /* the pool the task tries to re-enter */
static int nested_task(void *ctx, int task, sched_worker *w)
{
    (void)task;
    (void)w;
    const tgraph *g = ctx;
    int r;
    canopy_status st = sched_execute(nested_pool, &g->d, CANOPY_SCHED_STATIC, nested_task, ctx, NULL, &r, NULL);
    atomic_store(&nested_status, (int)st);
    return 0;
}


/*
 * External dependencies (sched_prepare / sched_release / sched_go): a thread outside the pool
 * releases them, some before the run starts and the rest while it runs, in random order; no task
 * starts before its last release, and every task runs once, with both schedulers.
 */
typedef struct ext_ctx {
    const sched_dag *d;
    const int *ext;
    atomic_int *released;
    atomic_int *ran;
} ext_ctx;

static int ext_task(void *ctx, int task, sched_worker *w)
{
    (void)w;
    ext_ctx *c = ctx;
    if (atomic_load(&c->released[task]) != c->ext[task]) return 7;
    atomic_fetch_add(&c->ran[task], 1);
    return 0;
}

typedef struct ext_releaser {
    sched_run *run;
    int *order;
    int n, from;
    atomic_int *released;
} ext_releaser;

static void *ext_release_thread(void *arg)
{
    ext_releaser *r = arg;
    for (int i = r->from; i < r->n; i++) {
        int t = r->order[i];
        atomic_fetch_add(&r->released[t], 1);
        sched_release(r->run, t);
        if (i % 7 == 0) sched_yield();
    }
    return NULL;
}

START_TEST(external_dependencies)
{
    canopy_err err = {0};
    const int counts[] = {1, 2, 4};
    for (size_t q = 0; q < sizeof counts / sizeof *counts; q++) {
        int T = counts[q];
        sched_pool *pool = NULL;
        ck_assert(sched_pool_create(T, NULL, NULL, NULL, &pool, &err) == CANOPY_SUCCESS);
        for (int sc = 0; sc < 2; sc++) {
            canopy_scheduler sched = sc ? CANOPY_SCHED_DYNAMIC : CANOPY_SCHED_STATIC;
            tgraph g;
            tgraph_random(&g, 400, T, 900, 40, 1234u + (unsigned)(17 * q + sc));
            int n = g.d.ntasks;
            uint64_t st = 99u + q;
            int *ext = xcalloc((size_t)n, sizeof(int));
            int total = 0;
            for (int i = 0; i < n; i++) total += ext[i] = rnd(&st, 3);
            int *order = xcalloc((size_t)total + 1, sizeof(int));
            for (int i = 0, p = 0; i < n; i++)
                for (int e = 0; e < ext[i]; e++) order[p++] = i;
            for (int i = total - 1; i > 0; i--) {
                int j = rnd(&st, i + 1), t = order[i];
                order[i] = order[j];
                order[j] = t;
            }
            atomic_int *released = xcalloc((size_t)n, sizeof(atomic_int));
            atomic_int *ran = xcalloc((size_t)n, sizeof(atomic_int));
            ext_ctx c = {&g.d, ext, released, ran};
            sched_run_opts ro = {.ext = ext};
            sched_run *run = NULL;
            ck_assert_msg(sched_prepare(pool, &g.d, sched, ext_task, &c, &ro, NULL, &run, &err) == CANOPY_SUCCESS,
                          "%s", err.msg);
            /* a third before the start, the rest from another thread during the run */
            ext_releaser rel = {run, order, total / 3, 0, released};
            ext_release_thread(&rel);
            rel.n = total;
            rel.from = total / 3;
            pthread_t th;
            ck_assert_int_eq(pthread_create(&th, NULL, ext_release_thread, &rel), 0);
            int result = -1;
            ck_assert(sched_go(run, &result) == CANOPY_SUCCESS);
            pthread_join(th, NULL);
            sched_discard(run);
            ck_assert_int_eq(result, 0);
            for (int i = 0; i < n; i++) ck_assert_int_eq(atomic_load(&ran[i]), 1);
            free(ext);
            free(order);
            free(released);
            free(ran);
            tgraph_free(&g);
        }
        /* a prepared run can be dropped without running */
        tgraph g;
        tgraph_random(&g, 50, T, 80, 10, 7u);
        sched_run *run = NULL;
        ck_assert(sched_prepare(pool, &g.d, CANOPY_SCHED_DYNAMIC, ext_task, NULL, NULL, NULL, &run, &err) ==
                  CANOPY_SUCCESS);
        sched_discard(run);
        tgraph_free(&g);
        sched_pool_destroy(pool);
    }
}
END_TEST

START_TEST(bad_graphs_refused)
{
    sched_pool *pool = NULL;
    canopy_err err = {0};
    ck_assert_int_eq(sched_pool_create(0, NULL, NULL, NULL, &pool, &err), CANOPY_ERR_ARGUMENT);
    ck_assert_ptr_null(pool);
    ck_assert_int_eq(sched_pool_create(2, NULL, NULL, NULL, NULL, NULL), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(sched_pool_create(2, NULL, NULL, NULL, &pool, NULL), CANOPY_SUCCESS);
    tgraph g;
    tgraph_random(&g, 50, 2, 40, 0, 11);
    tctx c;
    tctx_init(&c, &g, CANOPY_SCHED_STATIC);
    int r;
#define REFUSED(sched, fn)                                                                              \
    do {                                                                                                \
        canopy_err e = {0};                                                                             \
        ck_assert_int_eq(sched_execute(pool, &g.d, sched, fn, &c, NULL, &r, &e), CANOPY_ERR_ARGUMENT); \
        ck_assert(e.msg[0] != '\0');                                                                    \
    } while (0)
    REFUSED(CANOPY_SCHED_STATIC, NULL);
    REFUSED((canopy_scheduler)7, check_task);
    g.d.nthreads = 3;
    REFUSED(CANOPY_SCHED_STATIC, check_task);
    g.d.nthreads = 2;
    /* npred inconsistent with the edges */
    int e0 = g.d.succ_ptr[g.d.ntasks] > 0 ? g.d.succ[0] : -1;
    ck_assert_int_ge(e0, 0);
    g.d.npred[e0]++;
    REFUSED(CANOPY_SCHED_STATIC, check_task);
    REFUSED(CANOPY_SCHED_DYNAMIC, check_task);
    g.d.npred[e0]--;
    /* a cycle: add e0 -> src to the edge src -> e0 */
    int src = -1;
    for (int i = 0; i < g.d.ntasks && src < 0; i++)
        if (g.d.succ_ptr[i + 1] > g.d.succ_ptr[i] && g.d.succ[g.d.succ_ptr[i]] == e0) src = i;
    ck_assert_int_ge(src, 0);
    int *succ_save = g.d.succ, *ptr_save = g.d.succ_ptr;
    int n = g.d.ntasks, ne = g.d.succ_ptr[n];
    int *ptr2 = xcalloc((size_t)n + 1, sizeof(int)), *succ2 = xcalloc((size_t)ne + 1, sizeof(int));
    for (int i = 0, q = 0; i < n; i++) {   /* same edges plus e0 -> src */
        for (int p = ptr_save[i]; p < ptr_save[i + 1]; p++) succ2[q++] = succ_save[p];
        if (i == e0) succ2[q++] = src;
        ptr2[i + 1] = q;
    }
    g.d.succ = succ2;
    g.d.succ_ptr = ptr2;
    g.d.npred[src]++;
    REFUSED(CANOPY_SCHED_DYNAMIC, check_task);
    REFUSED(CANOPY_SCHED_STATIC, check_task);
    g.d.npred[src]--;
    g.d.succ = succ_save;
    g.d.succ_ptr = ptr_save;
    free(ptr2);
    free(succ2);
    /* static deadlock: swap a dependent pair listed on the same thread */
    int a = -1, b = -1;
    for (int i = 0; i < n && a < 0; i++)
        for (int p = g.d.succ_ptr[i]; p < g.d.succ_ptr[i + 1]; p++)
            if (g.d.owner[g.d.succ[p]] == g.d.owner[i]) {
                a = i;
                b = g.d.succ[p];
                break;
            }
    ck_assert_int_ge(a, 0);
    int pa = -1, pb = -1;
    for (int k = 0; k < n; k++) {
        if (g.d.list[k] == a) pa = k;
        if (g.d.list[k] == b) pb = k;
    }
    g.d.list[pa] = b;
    g.d.list[pb] = a;
    REFUSED(CANOPY_SCHED_STATIC, check_task);
    g.d.list[pa] = a;
    g.d.list[pb] = b;
    g.d.list[pa] = b;   /* a task listed twice */
    REFUSED(CANOPY_SCHED_STATIC, check_task);
    g.d.list[pa] = a;
    /* Snodes: two leaves [0, 1) under the root leave one off thread 0's path */
    int t0[3] = {0, 0, 0}, t1[3] = {2, 1, 1}, parent[3] = {-1, 0, 0}, *s0 = g.d.snode_t0, *s1 = g.d.snode_t1,
        *sp = g.d.snode_parent, ns = g.d.nsnodes;
    int *snode_save = g.d.snode, *snode2 = xcalloc((size_t)n, sizeof(int));
    g.d.snode_t0 = t0;
    g.d.snode_t1 = t1;
    g.d.snode_parent = parent;
    g.d.nsnodes = 3;
    g.d.snode = snode2;
    REFUSED(CANOPY_SCHED_DYNAMIC, check_task);
    parent[2] = 2;   /* a parent loop */
    REFUSED(CANOPY_SCHED_DYNAMIC, check_task);
    parent[2] = 1;   /* a chain [0,2) > [0,1) > [0,1): valid */
    tctx_free(&c);
    tctx_init(&c, &g, CANOPY_SCHED_DYNAMIC);
    ck_assert_int_eq(sched_execute(pool, &g.d, CANOPY_SCHED_DYNAMIC, check_task, &c, NULL, &r, NULL), CANOPY_SUCCESS);
    ck_assert_int_eq(r, 0);
    snode2[3] = 5;   /* Snode out of range */
    REFUSED(CANOPY_SCHED_DYNAMIC, check_task);
    g.d.snode = snode_save;
    g.d.snode_t0 = s0;
    g.d.snode_t1 = s1;
    g.d.snode_parent = sp;
    g.d.nsnodes = ns;
    free(snode2);
#undef REFUSED
    /* a task calling sched_execute on its own pool gets an error, not a deadlock */
    nested_pool = pool;
    atomic_store(&nested_status, 0);
    ck_assert_int_eq(sched_execute(pool, &g.d, CANOPY_SCHED_STATIC, nested_task, &g, NULL, &r, NULL), CANOPY_SUCCESS);
    ck_assert_int_eq(atomic_load(&nested_status), CANOPY_ERR_ARGUMENT);
    tctx_free(&c);
    tgraph_free(&g);
    sched_pool_destroy(pool);
}
END_TEST

START_TEST(allocation_failures)
{
    size_t base = canopy_mem_current();
    int *dist = two_socket_distance(4);
    for (long k = 0;; k++) {
        sched_pool *pool = NULL;
        canopy_err err = {0};
        canopy_alloc_fail_after(k);
        canopy_status st = sched_pool_create(4, NULL, NULL, dist, &pool, &err);
        canopy_alloc_fail_after(-1);
        if (st == CANOPY_SUCCESS) {
            sched_pool_destroy(pool);
            break;
        }
        ck_assert_int_eq(st, CANOPY_ERR_NOMEM);
        ck_assert_ptr_null(pool);
        ck_assert_uint_eq(canopy_mem_current(), base);
    }
    sched_pool *pool = NULL;
    ck_assert_int_eq(sched_pool_create(4, NULL, NULL, dist, &pool, NULL), CANOPY_SUCCESS);
    size_t with_pool = canopy_mem_current();
    tgraph g;
    tgraph_random(&g, 300, 4, 100, 0, 21);
    for (int sched = 0; sched < 2; sched++)
        for (long k = 0;; k++) {
            tctx c;
            tctx_init(&c, &g, (canopy_scheduler)sched);
            canopy_err err = {0};
            int r = -1;
            canopy_alloc_fail_after(k);
            canopy_status st = sched_execute(pool, &g.d, (canopy_scheduler)sched, check_task, &c, NULL, &r, &err);
            canopy_alloc_fail_after(-1);
            ck_assert_uint_eq(canopy_mem_current(), with_pool);
            int ran = 0;
            for (int i = 0; i < g.d.ntasks; i++) ran += atomic_load(&c.runs[i]);
            tctx_free(&c);
            if (st == CANOPY_SUCCESS) {
                ck_assert_int_eq(ran, g.d.ntasks);
                break;
            }
            ck_assert_int_eq(st, CANOPY_ERR_NOMEM);
            ck_assert_int_eq(ran, 0);   /* nothing starts when the set-up fails */
        }
    tgraph_free(&g);
    sched_pool_destroy(pool);
    free(dist);
    ck_assert_uint_eq(canopy_mem_current(), base);
}
END_TEST

/* ---- stealing order ------------------------------------------------------------------------ */

/* root [0,8) -> A [0,4), B [4,8); A -> C [0,2), D [2,4); C, D -> single threads; B -> 4 single threads */
static void eight_thread_tree(sched_dag *d, int *t0, int *t1, int *parent)
{
    static const int r0[] = {0, 0, 4, 0, 2, 0, 1, 2, 3, 4, 5, 6, 7}, r1[] = {8, 4, 8, 2, 4, 1, 2, 3, 4, 5, 6, 7, 8},
                     pa[] = {-1, 0, 0, 1, 1, 3, 3, 4, 4, 2, 2, 2, 2};
    memset(d, 0, sizeof *d);
    d->nthreads = 8;
    d->nsnodes = 13;
    memcpy(t0, r0, sizeof r0);
    memcpy(t1, r1, sizeof r1);
    memcpy(parent, pa, sizeof pa);
    d->snode_t0 = t0;
    d->snode_t1 = t1;
    d->snode_parent = parent;
}

static void assert_order(sched_pool *pool, const sched_dag *d, int thread, const int *expect, int n)
{
    int snode[64], victim[64], count = -1;
    canopy_err err = {0};
    ck_assert_int_eq(sched_visit_order(pool, d, thread, 64, snode, victim, &count, &err), CANOPY_SUCCESS);
    ck_assert_int_eq(count, n);
    for (int k = 0; k < n; k++) {
        ck_assert_int_eq(snode[k], expect[2 * k]);
        ck_assert_int_eq(victim[k], expect[2 * k + 1]);
    }
}

START_TEST(stealing_order)
{
    int t0[13], t1[13], parent[13];
    sched_dag d;
    eight_thread_tree(&d, t0, t1, parent);
    sched_pool *pool = NULL;
    ck_assert_int_eq(sched_pool_create(8, NULL, NULL, NULL, &pool, NULL), CANOPY_SUCCESS);
    /* (Snode, victim) pairs: own path leaf to root, own part first, then the sons off the path */
    static const int thread0[] = {5, 0, 3, 0, 3, 1, 1, 0, 1, 1, 1, 2, 1, 3, 0, 0, 0, 1, 0, 2, 0, 3, 0, 4,
                                  0, 5, 0, 6, 0, 7, 6, 1, 4, 2, 4, 3, 2, 4, 2, 5, 2, 6, 2, 7};
    assert_order(pool, &d, 0, thread0, 22);
    /* |t - v|, ties by thread: from 5, 4 before 6 */
    static const int thread5[] = {10, 5, 2, 5, 2, 4, 2, 6, 2, 7, 0, 5, 0, 4, 0, 6, 0, 3, 0, 7, 0, 2, 0, 1,
                                  0, 0, 9, 4, 11, 6, 12, 7, 1, 3, 1, 2, 1, 1, 1, 0};
    assert_order(pool, &d, 5, thread5, 20);
    /* a one-slot buffer still reports the full length */
    int s1, v1, count = 0;
    ck_assert_int_eq(sched_visit_order(pool, &d, 5, 1, &s1, &v1, &count, NULL), CANOPY_SUCCESS);
    ck_assert_int_eq(count, 20);
    ck_assert(s1 == 10 && v1 == 5);
    sched_pool_destroy(pool);

    /* two sockets (10 inside, 20 across): the root is visited own socket first */
    int *dist = two_socket_distance(8);
    ck_assert_int_eq(sched_pool_create(8, NULL, NULL, dist, &pool, NULL), CANOPY_SUCCESS);
    static const int thread5s[] = {10, 5, 2, 5, 2, 4, 2, 6, 2, 7, 0, 5, 0, 4, 0, 6, 0, 7, 0, 0, 0, 1, 0, 2,
                                   0, 3, 9, 4, 11, 6, 12, 7, 1, 0, 1, 1, 1, 2, 1, 3};
    assert_order(pool, &d, 5, thread5s, 20);
    parent[12] = 1;   /* [7, 8) under [0, 4): not nested */
    ck_assert_int_eq(sched_visit_order(pool, &d, 5, 0, NULL, NULL, &count, NULL), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(sched_visit_order(pool, &d, 9, 0, NULL, NULL, &count, NULL), CANOPY_ERR_ARGUMENT);
    sched_pool_destroy(pool);
    free(dist);
}
END_TEST

/* ---- overhead (printed, not asserted) ------------------------------------------------------- */

static int empty_task(void *ctx, int task, sched_worker *w)
{
    (void)ctx;
    (void)task;
    (void)w;
    return 0;
}

START_TEST(empty_task_throughput)
{
    sched_pool *pool = NULL;
    ck_assert_int_eq(sched_pool_create(2, NULL, NULL, NULL, &pool, NULL), CANOPY_SUCCESS);
    tgraph g;
    tgraph_random(&g, 20000, 2, 4000, 0, 8);
    for (int sched = 0; sched < 2; sched++) {
        double best = 1e30;
        for (int rep = 0; rep < 3; rep++) {
            int r = -1;
            double t = canopy_wtime();
            ck_assert_int_eq(sched_execute(pool, &g.d, (canopy_scheduler)sched, empty_task, NULL, NULL, &r, NULL),
                             CANOPY_SUCCESS);
            t = canopy_wtime() - t;
            ck_assert_int_eq(r, 0);
            best = CANOPY_MIN(best, t);
        }
        printf("engine: %s scheduler, 2 threads: %.2f M empty tasks/s (%d tasks, %d edges, %.1f us/run)\n",
               sched ? "dynamic" : "static", g.d.ntasks / best * 1e-6, g.d.ntasks, g.d.succ_ptr[g.d.ntasks],
               best * 1e6);
    }
    tgraph_free(&g);
    sched_pool_destroy(pool);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("engine");
    TCase *tc = tcase_create("engine");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, random_graphs_both_schedulers);
    tcase_add_test(tc, pool_reused_for_many_runs);
    tcase_add_test(tc, empty_graph_and_one_thread);
    tcase_add_test(tc, abort_stops_the_run);
    tcase_add_test(tc, abort_ends_waits);
    tcase_add_test(tc, ticket_order_is_exact);
    tcase_add_test(tc, run_all_once_per_thread);
    tcase_add_test(tc, stealing_order);
    tcase_add_test(tc, bad_graphs_refused);
    tcase_add_test(tc, allocation_failures);
    tcase_add_test(tc, external_dependencies);
    tcase_add_test(tc, empty_task_throughput);
    suite_add_tcase(s, tc);
    return testutil_run(s);
}
