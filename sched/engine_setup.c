/*
 * The checks and set-up of one run of the engine (sched/engine.c, whose top comment describes the
 * queues and the visiting orders): a bad graph would hang or corrupt a run, so every run checks
 * in O(tasks + edges) what the executors rely on (counts equal to the edges, acyclic, static lists
 * free of deadlock, Snode paths) and returns CANOPY_ERR_ARGUMENT instead; then the dynamic run's
 * sub-queues, task placement and each worker's visiting order, all allocated before the workers
 * start.
 */
#include "base/config.h"
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "engine_parts.h"

/* Successor lists in range and npred equal to the in-degrees. @p cnt: [ntasks] scratch. */
static canopy_status sched_check_edges(const sched_dag *d, int *cnt, canopy_err *err)
{
    int n = d->ntasks;
    if (d->succ_ptr[0] != 0)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "task graph: succ_ptr[0] = %d", d->succ_ptr[0]);
    memset(cnt, 0, (size_t)n * sizeof *cnt);
    for (int i = 0; i < n; i++) {
        if (d->succ_ptr[i + 1] < d->succ_ptr[i])
            return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "task graph: succ_ptr decreases at task %d", i);
        for (int p = d->succ_ptr[i]; p < d->succ_ptr[i + 1]; p++) {
            int s = d->succ[p];
            if (s < 0 || s >= n)
                return canopy_err_set(err, CANOPY_ERR_ARGUMENT,
                                      "task graph: successor %d of task %d out of range 0..%d", s, i, n - 1);
            cnt[s]++;
        }
    }
    for (int i = 0; i < n; i++)
        if (cnt[i] != d->npred[i])
            return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "task graph: task %d has npred %d but %d incoming edges", i,
                                  d->npred[i], cnt[i]);
    return CANOPY_SUCCESS;
}

/* Kahn's algorithm: a cycle would leave the dynamic run waiting forever. */
static canopy_status sched_check_acyclic(const sched_dag *d, int *cnt, int *queue, canopy_err *err)
{
    int n = d->ntasks, head = 0, tail = 0;
    for (int i = 0; i < n; i++) {
        cnt[i] = d->npred[i];
        if (cnt[i] == 0) queue[tail++] = i;
    }
    while (head < tail) {
        int t = queue[head++];
        for (int p = d->succ_ptr[t]; p < d->succ_ptr[t + 1]; p++)
            if (--cnt[d->succ[p]] == 0) queue[tail++] = d->succ[p];
    }
    if (tail < n)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "task graph: %d tasks lie on or after a cycle", n - tail);
    return CANOPY_SUCCESS;
}

/* Every task in exactly one list (fills runner), and the lists can all run to the end. */
static canopy_status sched_check_lists(const sched_dag *d, int *runner, int *cnt, int *stack, canopy_err *err)
{
    int n = d->ntasks, nt = d->nthreads;
    if (d->list_ptr[0] != 0 || d->list_ptr[nt] != n)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "task graph: static lists hold %d tasks, not %d",
                              d->list_ptr[nt] - d->list_ptr[0], n);
    for (int i = 0; i < n; i++) runner[i] = -1;
    for (int t = 0; t < nt; t++) {
        if (d->list_ptr[t + 1] < d->list_ptr[t])
            return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "task graph: list_ptr decreases at thread %d", t);
        for (int i = d->list_ptr[t]; i < d->list_ptr[t + 1]; i++) {
            int task = d->list[i];
            if (task < 0 || task >= n || runner[task] >= 0)
                return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "task graph: list entry %d of thread %d is %s", i, t,
                                      task < 0 || task >= n ? "out of range" : "a task already listed");
            runner[task] = t;
        }
    }
    /* Play the static schedule: a thread advances while the head of its list is ready. At most
     * nt + n pushes (each task becomes ready once), so the stack needs n + nt entries. */
    int *pos = stack + n + nt;   /* [nt] */
    int top = 0, done = 0;
    for (int i = 0; i < n; i++) cnt[i] = d->npred[i];
    for (int t = 0; t < nt; t++) {
        pos[t] = d->list_ptr[t];
        stack[top++] = t;
    }
    while (top > 0) {
        int t = stack[--top];
        while (pos[t] < d->list_ptr[t + 1] && cnt[d->list[pos[t]]] == 0) {
            int task = d->list[pos[t]++];
            done++;
            for (int p = d->succ_ptr[task]; p < d->succ_ptr[task + 1]; p++) {
                int s = d->succ[p], r = runner[s];
                if (--cnt[s] == 0 && r != t && pos[r] < d->list_ptr[r + 1] && d->list[pos[r]] == s) stack[top++] = r;
            }
        }
    }
    if (done < n)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "task graph: static lists deadlock after %d of %d tasks",
                              done, n);
    return CANOPY_SUCCESS;
}

static int sched_distance(const sched_pool *pool, int t, int v)
{
    return pool->distance ? pool->distance[(size_t)t * (size_t)pool->nthreads + (size_t)v] : abs(t - v);
}

/* Snode tree scratch, freed at the end of the set-up. */
typedef struct sched_tree {
    int *depth, *leaf, *base, *child_ptr, *child, *path, *key, *thr, *item;
} sched_tree;

/* Append to tr->item the sub-queues of Snode s but thread @p skip, nearest to t first (ties: by
 * thread; within one group a thread appears once, as sons of one Snode are disjoint). */
static int sched_append_sorted(const sched_pool *pool, const sched_dag *d, const sched_tree *tr, int t, int s,
                               int skip, int m)
{
    int *key = tr->key, *thr = tr->thr, *item = tr->item;
    for (int c = d->snode_t0[s]; c < d->snode_t1[s]; c++) {
        if (c == skip) continue;
        int k = sched_distance(pool, t, c), j = m++;
        /* insertion sort: victims are few and the order is built once per run */
        while (j > 0 && (key[j - 1] > k || (key[j - 1] == k && thr[j - 1] > c))) {
            key[j] = key[j - 1];
            thr[j] = thr[j - 1];
            item[j] = item[j - 1];
            j--;
        }
        key[j] = k;
        thr[j] = c;
        item[j] = tr->base[s] + c - d->snode_t0[s];
    }
    return m;
}

/* Visiting order of thread t (see the top of the file); returns its length, writes it if @p out. */
static int sched_build_order(const sched_pool *pool, const sched_dag *d, const sched_tree *tr, int t, int *out)
{
    int len = 0, np = 0;
    for (int s = tr->leaf[t]; s >= 0; s = d->snode_parent[s]) tr->path[np++] = s;
    for (int k = 0; k < np; k++) {
        int s = tr->path[k];
        if (out) {
            out[len] = tr->base[s] + t - d->snode_t0[s];
            int m = sched_append_sorted(pool, d, tr, t, s, t, 0);
            memcpy(out + len + 1, tr->item, (size_t)m * sizeof *out);
        }
        len += d->snode_t1[s] - d->snode_t0[s];
    }
    for (int k = 0; k < np; k++) {
        int s = tr->path[k], m = 0;
        for (int p = tr->child_ptr[s]; p < tr->child_ptr[s + 1]; p++) {
            int u = tr->child[p];
            if (t >= d->snode_t0[u] && t < d->snode_t1[u]) continue;   /* on the path */
            if (out) m = sched_append_sorted(pool, d, tr, t, u, -1, m);
            else m += d->snode_t1[u] - d->snode_t0[u];
        }
        if (out) memcpy(out + len, tr->item, (size_t)m * sizeof *out);
        len += m;
    }
    return len;
}

/* Snode tree checks; fills depth, leaf, base (first sub-queue of each Snode), children. */
static canopy_status sched_check_snodes(const sched_dag *d, sched_tree *tr, int *nsubq, canopy_err *err)
{
    int ns = d->nsnodes, nt = d->nthreads;
    if (ns < 1 || d->snode_t0[0] != 0 || d->snode_t1[0] != nt || d->snode_parent[0] != -1)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "task graph: Snode 0 must be the root [0, %d)", nt);
    int total = 0;
    for (int s = 0; s < ns; s++) {
        int p = d->snode_parent[s], t0 = d->snode_t0[s], t1 = d->snode_t1[s];
        if (t0 < 0 || t1 > nt || t0 >= t1)
            return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "task graph: Snode %d has threads [%d, %d)", s, t0, t1);
        if (s > 0 && (p < 0 || p >= ns || p == s || t0 < d->snode_t0[p] || t1 > d->snode_t1[p]))
            return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "task graph: Snode %d has a bad parent %d", s, p);
        tr->base[s] = total;
        total += t1 - t0;
        tr->depth[s] = s == 0 ? 0 : -1;
    }
    *nsubq = total;
    for (int s = 0; s < ns; s++) {
        /* walk up to a known depth, remembering the way in path[] */
        int m = 0, u = s;
        while (tr->depth[u] < 0) {
            if (m == ns)
                return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "task graph: Snode %d is on a parent cycle", s);
            tr->path[m++] = u;
            u = d->snode_parent[u];
        }
        for (int k = m - 1; k >= 0; k--) tr->depth[tr->path[k]] = tr->depth[d->snode_parent[tr->path[k]]] + 1;
    }
    /* leaf of t: the deepest Snode holding t; every Snode holding t must be on its path */
    int *cnt = tr->key;
    for (int t = 0; t < nt; t++) {
        tr->leaf[t] = 0;
        cnt[t] = 0;
    }
    for (int s = 0; s < ns; s++)
        for (int t = d->snode_t0[s]; t < d->snode_t1[s]; t++) {
            cnt[t]++;
            if (tr->depth[s] > tr->depth[tr->leaf[t]]) tr->leaf[t] = s;
        }
    for (int t = 0; t < nt; t++)
        if (cnt[t] != tr->depth[tr->leaf[t]] + 1)
            return canopy_err_set(err, CANOPY_ERR_ARGUMENT,
                                  "task graph: the Snodes holding thread %d do not form one path to the root", t);
    for (int s = 0; s <= ns; s++) tr->child_ptr[s] = 0;
    for (int s = 1; s < ns; s++) tr->child_ptr[d->snode_parent[s] + 1]++;
    for (int s = 0; s < ns; s++) tr->child_ptr[s + 1] += tr->child_ptr[s];
    for (int s = 1; s < ns; s++) tr->child[tr->child_ptr[d->snode_parent[s]]++] = s;
    for (int s = ns; s > 0; s--) tr->child_ptr[s] = tr->child_ptr[s - 1];
    tr->child_ptr[0] = 0;
    return CANOPY_SUCCESS;
}

void sched_run_free(sched_run *run)
{
    for (int q = 0; q < run->nsubq_init; q++) pthread_mutex_destroy(&run->subq[q].mu);
    canopy_free(run->remaining);
    canopy_free(run->runner);
    canopy_free(run->subq);
    canopy_free(run->task_subq);
    canopy_free(run->heaps);
    canopy_free(run->order_ptr);
    canopy_free(run->order);
}

static void sched_tree_free(sched_tree *tr)
{
    canopy_free(tr->depth);
    canopy_free(tr->leaf);
    canopy_free(tr->base);
    canopy_free(tr->child_ptr);
    canopy_free(tr->child);
    canopy_free(tr->path);
    canopy_free(tr->key);
    canopy_free(tr->thr);
    canopy_free(tr->item);
}

/* Allocate the scratch of the Snode tree and check the tree (sched_check_snodes). */
static canopy_status sched_tree_setup(const sched_dag *d, sched_tree *tr, int *nsubq, canopy_err *err)
{
    int ns = d->nsnodes, nt = d->nthreads;
    if (ns < 1 || !d->snode_t0 || !d->snode_t1 || !d->snode_parent)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "task graph: no Snode tree (need at least the root)");
    size_t nsz = (size_t)ns;
    tr->depth = canopy_alloc(nsz, sizeof(int), "Snode depths", err);
    tr->leaf = canopy_alloc((size_t)nt, sizeof(int), "leaf Snodes", err);
    tr->base = canopy_alloc(nsz, sizeof(int), "Snode queues", err);
    tr->child_ptr = canopy_alloc(nsz + 1, sizeof(int), "Snode sons", err);
    tr->child = canopy_alloc(nsz, sizeof(int), "Snode sons", err);
    tr->path = canopy_alloc(nsz, sizeof(int), "Snode path", err);
    tr->key = canopy_alloc((size_t)nt, sizeof(int), "victim order", err);
    tr->thr = canopy_alloc((size_t)nt, sizeof(int), "victim order", err);
    tr->item = canopy_alloc((size_t)nt, sizeof(int), "victim order", err);
    if (!tr->depth || !tr->leaf || !tr->base || !tr->child_ptr || !tr->child || !tr->path || !tr->key || !tr->thr ||
        !tr->item)
        return sched_nomem(err);
    return sched_check_snodes(d, tr, nsubq, err);
}

/* Queues, task placement and visiting orders of a dynamic run; pushes the initially ready tasks. */
static canopy_status sched_setup_dynamic(const sched_pool *pool, const sched_dag *d, sched_run *run, canopy_err *err)
{
    int n = d->ntasks, nt = d->nthreads, ns = d->nsnodes;
    sched_tree tr = {0};
    canopy_status st = sched_tree_setup(d, &tr, &run->nsubq, err);
    if (st != CANOPY_SUCCESS) goto out;
    run->task_subq = canopy_alloc((size_t)n, sizeof(int), "task queues", err);
    run->heaps = canopy_alloc((size_t)n, sizeof(int), "queue storage", err);
    run->subq = canopy_calloc((size_t)run->nsubq, sizeof *run->subq, "sub-queues", err);
    run->order_ptr = canopy_alloc((size_t)nt + 1, sizeof(int), "visiting orders", err);
    if (!run->task_subq || !run->heaps || !run->subq || !run->order_ptr) {
        st = sched_nomem(err);
        goto out;
    }
    for (int i = 0; i < n; i++) {
        int s = d->snode[i], o = d->owner[i];
        if (s < 0 || s >= ns || o < 0 || o >= nt) {
            st = canopy_err_set(err, CANOPY_ERR_ARGUMENT, "task graph: task %d has Snode %d and owner %d", i, s, o);
            goto out;
        }
        int c = o >= d->snode_t0[s] && o < d->snode_t1[s] ? o : d->snode_t0[s];
        run->task_subq[i] = tr.base[s] + c - d->snode_t0[s];
        run->subq[run->task_subq[i]].n++;   /* capacity count, reset below */
    }
    for (int s = 0, off = 0; s < ns; s++)
        for (int c = d->snode_t0[s]; c < d->snode_t1[s]; c++) {
            sched_subq *q = &run->subq[tr.base[s] + c - d->snode_t0[s]];
            q->heap = run->heaps + off;
            off += q->n;
            q->n = 0;
            q->thread = c;
            atomic_init(&q->size, 0);
        }
    for (; run->nsubq_init < run->nsubq; run->nsubq_init++)
        if (pthread_mutex_init(&run->subq[run->nsubq_init].mu, NULL)) {
            st = canopy_err_set(err, CANOPY_ERR_INTERNAL, "sched_execute: cannot create a queue mutex");
            goto out;
        }
    run->order_ptr[0] = 0;
    for (int t = 0; t < nt; t++) {
        int len = sched_build_order(pool, d, &tr, t, NULL);
        if (len > INT_MAX - run->order_ptr[t]) {
            st = canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "sched_execute: Snode paths too long for %d threads", nt);
            goto out;
        }
        run->order_ptr[t + 1] = run->order_ptr[t] + len;
    }
    run->order = canopy_alloc((size_t)run->order_ptr[nt] + 1, sizeof(int), "visiting orders", err);
    if (run->order == NULL) {
        st = sched_nomem(err);
        goto out;
    }
    for (int t = 0; t < nt; t++) sched_build_order(pool, d, &tr, t, run->order + run->order_ptr[t]);
    for (int i = 0; i < n; i++)
        if (atomic_load_explicit(&run->remaining[i], memory_order_relaxed) == 0) sched_push(run, i);
    st = CANOPY_SUCCESS;
out:
    sched_tree_free(&tr);
    return st;
}

canopy_status sched_setup(const sched_pool *pool, const sched_dag *d, const int *ext, sched_run *run, canopy_err *err)
{
    int n = d->ntasks;
    canopy_status st;
    int *cnt = canopy_alloc((size_t)n, sizeof(int), "task counts", err);
    int *stack = canopy_alloc((size_t)n + 2 * (size_t)d->nthreads, sizeof(int), "task stack", err);
    run->remaining = canopy_alloc((size_t)n, sizeof *run->remaining, "remaining predecessors", err);
    if (!run->dynamic) run->runner = canopy_alloc((size_t)n, sizeof(int), "task runners", err);
    if (!cnt || !stack || !run->remaining || (!run->dynamic && !run->runner)) {
        st = sched_nomem(err);
        goto out;
    }
    if ((st = sched_check_edges(d, cnt, err)) != CANOPY_SUCCESS) goto out;
    if (run->dynamic) st = sched_check_acyclic(d, cnt, stack, err);
    else st = sched_check_lists(d, run->runner, cnt, stack, err);
    if (st != CANOPY_SUCCESS) goto out;
    for (int i = 0; i < n; i++) {
        if (ext && ext[i] < 0) {
            st = canopy_err_set(err, CANOPY_ERR_ARGUMENT, "task graph: task %d has %d external dependencies", i, ext[i]);
            goto out;
        }
        atomic_init(&run->remaining[i], d->npred[i] + (ext ? ext[i] : 0));
    }
    atomic_init(&run->abort, 0);
    atomic_init(&run->result, 0);
    atomic_init(&run->ndone, 0);
    if (run->dynamic) st = sched_setup_dynamic(pool, d, run, err);
out:
    canopy_free(cnt);
    canopy_free(stack);
    return st;
}

canopy_status sched_visit_order(const sched_pool *pool, const sched_dag *dag, int thread, int cap, int *snode,
                                int *victim, int *count, canopy_err *err)
{
    if (count) *count = 0;
    if (pool == NULL || dag == NULL || count == NULL || (cap > 0 && (snode == NULL || victim == NULL)))
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_visit_order: NULL argument");
    if (dag->nthreads != pool->nthreads || thread < 0 || thread >= pool->nthreads)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT,
                              "sched_visit_order: thread %d of a graph for %d threads on a pool of %d", thread,
                              dag->nthreads, pool->nthreads);
    sched_tree tr = {0};
    int nsubq = 0, *order = NULL;
    canopy_status st = sched_tree_setup(dag, &tr, &nsubq, err);
    if (st == CANOPY_SUCCESS) {
        int len = sched_build_order(pool, dag, &tr, thread, NULL);
        order = canopy_alloc((size_t)len + 1, sizeof(int), "visiting order", err);
        if (order == NULL) {
            st = sched_nomem(err);
        } else {
            sched_build_order(pool, dag, &tr, thread, order);
            *count = len;
            for (int k = 0, s = 0; k < CANOPY_MIN(cap, len); k++) {
                for (s = 0; s + 1 < dag->nsnodes && tr.base[s + 1] <= order[k]; s++) {
                }
                snode[k] = s;
                victim[k] = dag->snode_t0[s] + order[k] - tr.base[s];
            }
        }
    }
    canopy_free(order);
    sched_tree_free(&tr);
    return st;
}
