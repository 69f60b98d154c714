/*
 * Task graph housekeeping (see dag.h): freeing, and the invariant check that the engine relies on
 * before it runs a graph. Builds nothing: the plan makes the graphs
 * (sched/plan_tasks.c the factorization's, sched/solvegraph.c the solve's).
 */
#include "dag.h"
#include "base/common.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sched_dag_free(sched_dag *d)
{
    if (d == NULL) return;
    canopy_free(d->npred);
    canopy_free(d->succ_ptr);
    canopy_free(d->succ);
    canopy_free(d->owner);
    canopy_free(d->snode);
    canopy_free(d->prio);
    canopy_free(d->list_ptr);
    canopy_free(d->list);
    canopy_free(d->kind);
    canopy_free(d->cblk);
    canopy_free(d->first);
    canopy_free(d->tile);
    canopy_free(d->tile_end);
    canopy_free(d->level);
    canopy_free(d->cost);
    canopy_free(d->snode_t0);
    canopy_free(d->snode_t1);
    canopy_free(d->snode_parent);
    canopy_free(d->snode_depth);
    memset(d, 0, sizeof *d);
}

static int dag_fail(char *why, size_t whylen, const char *fmt, ...) CANOPY_PRINTF(3, 4);
static int dag_fail(char *why, size_t whylen, const char *fmt, ...)
{
    if (why && whylen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, whylen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* Snode i's sibling order for the laminarity check: by first thread. */
typedef struct dag_range {
    int parent, t0, t1, id;
} dag_range;

static int dag_range_cmp(const void *a, const void *b)
{
    const dag_range *x = a, *y = b;
    if (x->parent != y->parent) return x->parent < y->parent ? -1 : 1;
    if (x->t0 != y->t0) return x->t0 < y->t0 ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* The Snode tree: root 0 = [0, T), parents valid with depth + 1, children inside their parent,
 * siblings disjoint (with nesting along the tree, this makes the family laminar), and a leaf
 * [t, t + 1) for every thread. */
static int dag_check_snodes(const sched_dag *d, char *why, size_t whylen)
{
    int T = d->nthreads, ns = d->nsnodes;
    if (ns < 1 || !d->snode_t0 || !d->snode_t1 || !d->snode_parent || !d->snode_depth)
        return dag_fail(why, whylen, "no Snode tree");
    if (d->snode_t0[0] != 0 || d->snode_t1[0] != T || d->snode_parent[0] != -1 || d->snode_depth[0] != 0)
        return dag_fail(why, whylen, "Snode 0 is not the root [0, %d)", T);
    for (int s = 1; s < ns; s++) {
        int p = d->snode_parent[s], a = d->snode_t0[s], b = d->snode_t1[s];
        if (p < 0 || p >= ns || p == s) return dag_fail(why, whylen, "Snode %d: bad parent %d", s, p);
        if (!(0 <= a && a < b && b <= T)) return dag_fail(why, whylen, "Snode %d: bad range [%d, %d)", s, a, b);
        if (d->snode_depth[s] != d->snode_depth[p] + 1)
            return dag_fail(why, whylen, "Snode %d: depth %d under a parent of depth %d", s, d->snode_depth[s],
                            d->snode_depth[p]);
        if (a < d->snode_t0[p] || b > d->snode_t1[p])
            return dag_fail(why, whylen, "Snode %d [%d, %d) is not inside its parent %d [%d, %d)", s, a, b, p,
                            d->snode_t0[p], d->snode_t1[p]);
    }
    dag_range *r = canopy_alloc((size_t)ns, sizeof *r, "Snode check", NULL);
    unsigned char *leaf = canopy_calloc((size_t)T, 1, "Snode check", NULL);
    int rc = 0;
    if (!r || !leaf) {
        dag_fail(why, whylen, "out of memory checking the Snodes");
        rc = -2;
        goto out;
    }
    for (int s = 0; s < ns; s++) {
        r[s] = (dag_range){d->snode_parent[s], d->snode_t0[s], d->snode_t1[s], s};
        if (d->snode_t1[s] - d->snode_t0[s] == 1) leaf[d->snode_t0[s]] = 1;
    }
    qsort(r, (size_t)ns, sizeof *r, dag_range_cmp);
    for (int i = 1; i < ns && rc == 0; i++)
        if (r[i].parent == r[i - 1].parent && r[i].t0 < r[i - 1].t1)
            rc = dag_fail(why, whylen, "Snodes %d [%d, %d) and %d [%d, %d) overlap", r[i - 1].id, r[i - 1].t0,
                          r[i - 1].t1, r[i].id, r[i].t0, r[i].t1);
    for (int t = 0; t < T && rc == 0; t++)
        if (!leaf[t]) rc = dag_fail(why, whylen, "thread %d has no leaf Snode", t);
out:
    canopy_free(r);
    canopy_free(leaf);
    return rc;
}

/*
 * The static lists cannot deadlock iff they can all be run to the end, each thread taking its
 * next task only when that task's predecessors are done. Run exactly that: a thread is (re)queued
 * when its head task becomes ready; O(tasks + edges).
 */
static int dag_check_lists_run(const sched_dag *d, const int *list_thread, const int *list_pos, char *why,
                               size_t whylen)
{
    int n = d->ntasks, T = d->nthreads;
    int *cnt = canopy_alloc((size_t)n + 1, sizeof(int), "deadlock check", NULL);
    int *pos = canopy_alloc((size_t)T, sizeof(int), "deadlock check", NULL);
    int *queue = canopy_alloc((size_t)T + (size_t)n + 1, sizeof(int), "deadlock check", NULL);
    int rc = 0;
    if (!cnt || !pos || !queue) {
        dag_fail(why, whylen, "out of memory checking the lists");
        rc = -2;
        goto out;
    }
    memcpy(cnt, d->npred, (size_t)n * sizeof(int));
    int qh = 0, qt = 0, done = 0;
    for (int t = 0; t < T; t++) {
        pos[t] = d->list_ptr[t];
        queue[qt++] = t;
    }
    /* every push is either an initial thread or a task that just became ready: at most T + n */
    while (qh < qt) {
        int t = queue[qh++];
        while (pos[t] < d->list_ptr[t + 1] && cnt[d->list[pos[t]]] == 0) {
            int i = d->list[pos[t]++];
            done++;
            for (int e = d->succ_ptr[i]; e < d->succ_ptr[i + 1]; e++) {
                int s = d->succ[e];
                if (--cnt[s] == 0) {
                    int u = list_thread[s];
                    if (u != t && pos[u] == list_pos[s]) queue[qt++] = u;
                }
            }
        }
    }
    if (done != n) {
        int t = 0;
        while (t < T && pos[t] == d->list_ptr[t + 1]) t++;
        rc = dag_fail(why, whylen,
                      "static lists deadlock: %d of %d tasks can run; thread %d waits at task %d (%d "
                      "predecessors left)",
                      done, n, t, t < T ? d->list[pos[t]] : -1, t < T ? cnt[d->list[pos[t]]] : 0);
    }
out:
    canopy_free(cnt);
    canopy_free(pos);
    canopy_free(queue);
    return rc;
}

int sched_dag_check(const sched_dag *d, char *why, size_t whylen)
{
    if (why && whylen) why[0] = '\0';
    if (d == NULL) return dag_fail(why, whylen, "NULL graph");
    int n = d->ntasks, T = d->nthreads;
    if (T < 1 || n < 0) return dag_fail(why, whylen, "bad sizes: %d threads, %d tasks", T, n);
    if (!d->npred || !d->succ_ptr || !d->owner || !d->snode || !d->list_ptr || (n > 0 && (!d->succ || !d->list)))
        return dag_fail(why, whylen, "missing arrays");
    int src = dag_check_snodes(d, why, whylen);
    if (src) return src;

    /* edges: CSR shape, targets in range, no self loop, no duplicate, counts match */
    if (d->succ_ptr[0] != 0) return dag_fail(why, whylen, "succ_ptr[0] = %d", d->succ_ptr[0]);
    for (int i = 0; i < n; i++)
        if (d->succ_ptr[i + 1] < d->succ_ptr[i])
            return dag_fail(why, whylen, "succ_ptr decreases at task %d", i);
    int *in = canopy_calloc((size_t)n + 1, sizeof(int), "graph check", NULL);
    int *mark = canopy_alloc((size_t)n + 1, sizeof(int), "graph check", NULL);
    int *lthr = canopy_alloc((size_t)n + 1, sizeof(int), "graph check", NULL);
    int *lpos = canopy_alloc((size_t)n + 1, sizeof(int), "graph check", NULL);
    int rc = 0;
    if (!in || !mark || !lthr || !lpos) {
        dag_fail(why, whylen, "out of memory checking the graph");
        rc = -2;
        goto out;
    }
    for (int i = 0; i < n; i++) mark[i] = -1;
    for (int i = 0; i < n && rc == 0; i++)
        for (int e = d->succ_ptr[i]; e < d->succ_ptr[i + 1]; e++) {
            int s = d->succ[e];
            if (s < 0 || s >= n || s == i) {
                rc = dag_fail(why, whylen, "task %d: bad successor %d", i, s);
                break;
            }
            if (mark[s] == i) {
                rc = dag_fail(why, whylen, "duplicate edge %d -> %d", i, s);
                break;
            }
            mark[s] = i;
            in[s]++;
        }
    for (int i = 0; i < n && rc == 0; i++)
        if (in[i] != d->npred[i]) rc = dag_fail(why, whylen, "task %d: npred %d but %d edges in", i, d->npred[i], in[i]);
    if (rc) goto out;

    /* Snodes and owners */
    for (int i = 0; i < n; i++) {
        int s = d->snode[i], o = d->owner[i];
        if (s < 0 || s >= d->nsnodes) {
            rc = dag_fail(why, whylen, "task %d: bad Snode %d", i, s);
            goto out;
        }
        if (o < d->snode_t0[s] || o >= d->snode_t1[s]) {
            rc = dag_fail(why, whylen, "task %d: owner %d outside its Snode %d [%d, %d)", i, o, s, d->snode_t0[s],
                          d->snode_t1[s]);
            goto out;
        }
        if (d->level && d->level[i] != d->snode_depth[s]) {
            rc = dag_fail(why, whylen, "task %d: level %d but Snode depth %d", i, d->level[i], d->snode_depth[s]);
            goto out;
        }
        if (d->kind && (d->kind[i] < SCHED_TASK_PANEL || d->kind[i] >= SCHED_TASK_NKINDS)) {
            rc = dag_fail(why, whylen, "task %d: bad kind %d", i, d->kind[i]);
            goto out;
        }
        if (d->cost && !(d->cost[i] >= 0 && isfinite(d->cost[i]))) {
            rc = dag_fail(why, whylen, "task %d: cost %g", i, d->cost[i]);
            goto out;
        }
        if (d->prio && !isfinite(d->prio[i])) {
            rc = dag_fail(why, whylen, "task %d: priority %g", i, d->prio[i]);
            goto out;
        }
    }

    /* static lists: a partition of the tasks, each task on its owner's list */
    if (d->list_ptr[0] != 0 || d->list_ptr[T] != n) {
        rc = dag_fail(why, whylen, "lists hold %d tasks, graph has %d", d->list_ptr[T] - d->list_ptr[0], n);
        goto out;
    }
    for (int i = 0; i < n; i++) lthr[i] = -1;
    for (int t = 0; t < T; t++) {
        if (d->list_ptr[t + 1] < d->list_ptr[t]) {
            rc = dag_fail(why, whylen, "list_ptr decreases at thread %d", t);
            goto out;
        }
        for (int p = d->list_ptr[t]; p < d->list_ptr[t + 1]; p++) {
            int i = d->list[p];
            if (i < 0 || i >= n || lthr[i] >= 0) {
                rc = dag_fail(why, whylen, "thread %d's list: task %d missing or listed twice", t, i);
                goto out;
            }
            if (d->owner[i] != t) {
                rc = dag_fail(why, whylen, "task %d owned by thread %d is on thread %d's list", i, d->owner[i], t);
                goto out;
            }
            lthr[i] = t;
            lpos[i] = p;
        }
    }
    rc = dag_check_lists_run(d, lthr, lpos, why, whylen);
out:
    canopy_free(in);
    canopy_free(mark);
    canopy_free(lthr);
    canopy_free(lpos);
    return rc;
}
