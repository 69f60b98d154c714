/*
 * The plan's mapping (sched/plan.h, private parts in plan_parts.h): proportional mapping of the
 * cblk tree onto the threads (papers/numa-scheduler-pastix.txt, sections 5.1-5.2), on several
 * ranks in two levels (ranks first, then each rank's part onto its threads), and the Snode tree
 * of the resulting candidate ranges. Its own file because it decides only where a cblk may run:
 * it reads the tree and its subtree costs (plan_costs.c) and knows nothing of tasks.
 */
#include "plan_parts.h"

#include <math.h>
#include <stdlib.h>

/* ---- proportional mapping -------------------------------------------------------------------- */

/* key descending, index ascending: a total order, so qsort's result is deterministic */
static int plan_pair_desc(const void *a, const void *b)
{
    const plan_pair *x = a, *y = b;
    if (x->key != y->key) return x->key > y->key ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Min-heap of the threads of a range by (load, thread). */
static inline int plan_lighter(const double *load, int a, int b)
{
    return load[a] < load[b] || (load[a] == load[b] && a < b);
}

static void plan_heap_down(int *h, int n, int i, const double *load)
{
    int x = h[i];
    for (;;) {
        int c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && plan_lighter(load, h[c + 1], h[c])) c++;
        if (!plan_lighter(load, h[c], x)) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

/*
 * Give node's candidate threads [a, b) to its children, in proportion to their subtree costs
 * (papers/numa-scheduler-pastix.txt section 5.1). A child worth at least one thread gets its own
 * consecutive threads (neighbouring subtrees on neighbouring threads, hence on neighbouring cores
 * once bound breadth-first); the counts are rounded by largest remainder. Children worth less
 * are packed whole onto single threads, largest first onto the least loaded thread (LPT), the
 * threads of a big child starting with that child's per-thread load: sharing a thread between
 * several small subtrees balances better than giving each a thread of its own.
 */
static void plan_split_list(plan_build *B, int a, int b, const cint *ch, cint nc)
{
    int p = b - a;
    if (nc == 0) return;
    if (p == 1) {
        for (cint q = 0; q < nc; q++) {
            B->t0[ch[q]] = a;
            B->t1[ch[q]] = b;
        }
        return;
    }
    double tot = 0;
    for (cint q = 0; q < nc; q++) tot += B->sub[ch[q]];
#define PLAN_SHARE(c) (tot > 0 ? (double)p * B->sub[c] / tot : (double)p / (double)nc)
    int nbig = 0;
    double sbig = 0;
    for (cint q = 0; q < nc; q++) {
        double s = PLAN_SHARE(ch[q]);
        if (s >= 1) {
            nbig++;
            sbig += s;
        }
    }
    int used_threads = 0;
    if (nbig > 0) {
        /* threads for the big children: their total share rounded, at least one each */
        int pb = (int)floor(sbig + 0.5);
        pb = pb < nbig ? nbig : pb > p ? p : pb;
        int extra = pb - nbig, np = 0, used = 0;
        double ebig = sbig - nbig;
        for (cint q = 0; q < nc; q++) {
            cint c = ch[q];
            double s = PLAN_SHARE(c);
            if (s < 1) continue;
            double x = ebig > 0 ? (s - 1) * (double)extra / ebig : 0;
            int f = (int)floor(x);
            if (f > extra - used) f = extra - used; /* rounding can never give more, but be sure */
            B->t1[c] = 1 + f; /* count for now */
            used += f;
            B->pairs[np++] = (plan_pair){x - floor(x), c};
        }
        qsort(B->pairs, (size_t)np, sizeof *B->pairs, plan_pair_desc);
        for (int q = 0; q < np && used < extra; q++, used++) B->t1[B->pairs[q].idx]++;
        int pos = a;
        for (cint q = 0; q < nc; q++) {
            cint c = ch[q];
            if (PLAN_SHARE(c) < 1) continue;
            int cnt = B->t1[c];
            B->t0[c] = pos;
            B->t1[c] = pos + cnt;
            pos += cnt;
        }
        used_threads = pos - a;
    }
    if (nbig == nc) return;
    for (int t = 0; t < p; t++) B->tload[t] = 0;
    for (cint q = 0; q < nc && used_threads > 0; q++) {
        cint c = ch[q];
        if (PLAN_SHARE(c) < 1) continue;
        double per = B->sub[c] / (double)(B->t1[c] - B->t0[c]);
        for (int t = B->t0[c]; t < B->t1[c]; t++) B->tload[t - a] = per;
    }
    int np = 0;
    for (cint q = 0; q < nc; q++)
        if (PLAN_SHARE(ch[q]) < 1) B->pairs[np++] = (plan_pair){B->sub[ch[q]], ch[q]};
#undef PLAN_SHARE
    qsort(B->pairs, (size_t)np, sizeof *B->pairs, plan_pair_desc);
    for (int t = 0; t < p; t++) B->theap[t] = t;
    for (int i = p / 2 - 1; i >= 0; i--) plan_heap_down(B->theap, p, i, B->tload);
    for (int q = 0; q < np; q++) {
        cint c = B->pairs[q].idx;
        int t = B->theap[0];
        B->t0[c] = a + t;
        B->t1[c] = a + t + 1;
        B->tload[t] += B->sub[c];
        plan_heap_down(B->theap, p, 0, B->tload);
    }
}
void plan_split(plan_build *B, cint node)
{
    cint c0 = B->child_ptr[node];
    plan_split_list(B, B->t0[node], B->t1[node], B->child + c0, B->child_ptr[node + 1] - c0);
}

/*
 * Two-level mapping (plan.h): ranks first, in rank units in t0/t1, then threads. A cblk with one
 * candidate rank is that rank's, and the tops of each rank's part share the rank's threads; a
 * shared cblk keeps every thread of its candidate ranks, and the simulation decides its rank
 * (sched_simulate's groups); below the top, each rank's part is split over its threads.
 */
canopy_status plan_map_ranks(plan_build *B, sched_plan *P, canopy_err *err)
{
    const symbolic *S = B->S;
    cint n = B->n;
    int R = B->R, TR = B->T / R;
    int T = B->T;
    /* memory mapping: the ranks' split weighs each subtree by its factor entries (panel stride x
     * width, summed like the costs: children before parents); the threads' split below keeps the
     * flops */
    int mem = B->mapping == SCHED_MAPPING_MEMORY;
    double *flops = B->sub, *msub = NULL;
    if (mem) {
        msub = canopy_alloc((size_t)n + 1, sizeof(double), "plan scratch", err);
        if (!msub) return plan_nomem(err);
        msub[n] = 0;
        for (cint k = 0; k < n; k++) msub[k] = (double)S->cblk_stride[k] * (double)(S->cblk_fcol[k + 1] - S->cblk_fcol[k]);
        for (cint k = 0; k < n; k++) msub[S->cblk_parent[k] >= 0 ? S->cblk_parent[k] : n] += msub[k];
        B->sub = msub;
    }
    B->T = R;
    B->t0[n] = 0;
    B->t1[n] = R;
    plan_split(B, n);
    for (cint k = n - 1; k >= 0; k--) plan_split(B, k);
    B->T = T;
    B->sub = flops;
    canopy_free(msub);
    for (cint k = 0; k < n; k++) {
        B->shared[k] = B->t1[k] - B->t0[k] > 1;
        B->rank[k] = B->shared[k] ? -1 : B->t0[k];
        P->cblk_ranks[2 * k] = B->t0[k];
        P->cblk_ranks[2 * k + 1] = B->t1[k];
    }
    if (mem || B->pin) {
        /* the simulation places a shared cblk by time and may pile the top's panels onto one
         * rank. Here each gets one rank of its candidates instead: its pin, or (memory) the
         * largest first onto the rank holding the fewest factor entries so far (LPT). It stays
         * "shared": the simulation settles it, now among that rank's threads */
        double *load = B->tload; /* [T >= R] */
        for (int r = 0; r < R; r++) load[r] = 0;
        int np = 0;
        for (cint k = 0; k < n; k++) {
            double e = (double)S->cblk_stride[k] * (double)(S->cblk_fcol[k + 1] - S->cblk_fcol[k]);
            int pr = B->pin && B->shared[k] ? B->pin[k] : -1;
            if (pr >= B->t0[k] && pr < B->t1[k]) {
                B->t0[k] = pr;
                B->t1[k] = pr + 1;
            }
            if (B->t1[k] - B->t0[k] > 1) B->pairs[np++] = (plan_pair){e, k};
            else load[B->t0[k]] += e;
        }
        qsort(B->pairs, (size_t)np, sizeof *B->pairs, plan_pair_desc);
        for (int q = 0; q < np && mem; q++) {
            cint k = B->pairs[q].idx;
            int best = B->t0[k];
            for (int r = B->t0[k] + 1; r < B->t1[k]; r++)
                if (load[r] < load[best]) best = r;
            load[best] += B->pairs[q].key;
            B->t0[k] = best;
            B->t1[k] = best + 1;
        }
    }
    /* thread units. The tops of a rank's part (its cblks under a shared cblk or at a root) may
     * be several subtrees; they share the rank's threads as the children of one node would, so
     * that their ranges nest (mapping each onto all TR threads on its own gives overlapping,
     * non-laminar ranges as soon as TR > 2). Then top-down (a parent's plan_split sets its
     * children's thread ranges). */
    cint *tops = canopy_alloc((size_t)n + 1, sizeof(cint), "plan scratch", err);
    cint *tptr = canopy_alloc((size_t)R + 1, sizeof(cint), "plan scratch", err);
    if (!tops || !tptr) {
        canopy_free(tops);
        canopy_free(tptr);
        return plan_nomem(err);
    }
    for (int r = 0; r <= R; r++) tptr[r] = 0;
    for (cint k = 0; k < n; k++) {
        cint par = S->cblk_parent[k];
        if (!B->shared[k] && (par < 0 || B->shared[par])) tptr[B->rank[k] + 1]++;
    }
    for (int r = 0; r < R; r++) tptr[r + 1] += tptr[r];
    for (cint k = 0; k < n; k++) {
        cint par = S->cblk_parent[k];
        if (!B->shared[k] && (par < 0 || B->shared[par])) tops[tptr[B->rank[k]]++] = k;
    }
    for (int r = R; r > 0; r--) tptr[r] = tptr[r - 1];
    tptr[0] = 0;
    for (int r = 0; r < R; r++) plan_split_list(B, r * TR, r * TR + TR, tops + tptr[r], tptr[r + 1] - tptr[r]);
    canopy_free(tops);
    canopy_free(tptr);
    B->t0[n] = 0;
    B->t1[n] = T;
    for (cint k = n - 1; k >= 0; k--) {
        if (B->shared[k]) {
            B->t0[k] *= TR;
            B->t1[k] *= TR;
        } else {
            plan_split(B, k);
        }
    }
    return CANOPY_SUCCESS;
}

/* ---- Snodes ----------------------------------------------------------------------------------- */

/* Distinct ranges by (t0 ascending, t1 descending): a preorder of the containment tree, root
 * [0, T) first. */
static int plan_range_cmp(const void *a, const void *b)
{
    const int *x = a, *y = b;
    if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
    return x[1] > y[1] ? -1 : x[1] < y[1];
}

/*
 * The Snodes are the distinct candidate ranges plus a leaf per thread. A laminar family on T
 * threads has at most T - 1 ranges of two threads or more, so the multi-thread ranges are found
 * through a small open-addressing table keyed by the range; single-thread ranges are the leaves.
 */
canopy_status plan_snodes(plan_build *B, sched_plan *P, canopy_err *err)
{
    int T = B->T;
    cint n = B->n;
    sched_dag *D = &P->factor;
    size_t cap = 16;
    while (cap < 4 * (size_t)T + 8) cap *= 2;
    int64_t *hkey = canopy_alloc(cap, sizeof(int64_t), "Snode table", err);
    int *hval = canopy_alloc(cap, sizeof(int), "Snode table", err);
    int *rng = canopy_alloc(2 * (size_t)T + 2, 2 * sizeof(int), "Snode ranges", err);
    int *leaf = canopy_alloc((size_t)T, sizeof(int), "Snode leaves", err);
    int *stack = canopy_alloc(2 * (size_t)T + 2, sizeof(int), "Snode stack", err);
    canopy_status st = CANOPY_SUCCESS;
    if (!hkey || !hval || !rng || !leaf || !stack) {
        st = plan_nomem(err);
        goto out;
    }
    for (size_t i = 0; i < cap; i++) hkey[i] = -1;
    int nr = 0;
    /* pass 0 collects the ranges, pass 1 finds each cblk's Snode */
    /* the ranks' thread blocks are Snodes too (the simulation moves shared cblks' updates there) */
    int TR = T / B->R, nblocks = B->R > 1 && TR > 1 ? B->R : 0;
    for (int pass = 0; pass < 2; pass++) {
        for (cint k = -1 - nblocks; k < n; k++) {
            if (k < -1 && pass == 1) continue;
            int a = k < -1 ? (int)(-2 - k) * TR : k < 0 ? 0 : B->t0[k];
            int b = k < -1 ? a + TR : k < 0 ? T : B->t1[k];
            if (b - a == 1 && k >= 0) {
                if (pass == 1) P->cblk_snode[k] = leaf[a];
                continue;
            }
            if (b - a == 1) continue; /* T == 1: the root is the leaf */
            int64_t key = (int64_t)a * ((int64_t)T + 1) + b;
            size_t h = (size_t)((uint64_t)key * 0x9E3779B97F4A7C15ull >> 7) & (cap - 1);
            while (hkey[h] != -1 && hkey[h] != key) h = (h + 1) & (cap - 1);
            if (pass == 1) {
                if (k >= 0) P->cblk_snode[k] = hval[h];
                continue;
            }
            if (hkey[h] == key) continue;
            if (nr >= T) {
                st = canopy_err_set(err, CANOPY_ERR_INTERNAL, "plan: candidate ranges are not laminar");
                goto out;
            }
            hkey[h] = key;
            hval[h] = nr;
            rng[2 * nr] = a;
            rng[2 * nr + 1] = b;
            nr++;
        }
        if (pass == 1) break;
        for (int t = 0; t < T; t++) {
            rng[2 * nr] = t;
            rng[2 * nr + 1] = t + 1;
            nr++;
        }
        qsort(rng, (size_t)nr, 2 * sizeof(int), plan_range_cmp);
        D->nsnodes = nr;
        D->snode_t0 = canopy_alloc((size_t)nr, sizeof(int), "Snodes", err);
        D->snode_t1 = canopy_alloc((size_t)nr, sizeof(int), "Snodes", err);
        D->snode_parent = canopy_alloc((size_t)nr, sizeof(int), "Snodes", err);
        D->snode_depth = canopy_alloc((size_t)nr, sizeof(int), "Snodes", err);
        if (!D->snode_t0 || !D->snode_t1 || !D->snode_parent || !D->snode_depth) {
            st = plan_nomem(err);
            goto out;
        }
        /* containment tree along the preorder: the parent is the innermost open range, which
         * must contain the new one (an overlap would give a thread two paths to the root: the
         * simulation's idle counts and the engine's queues would then disagree) */
        int sp = 0;
        for (int s = 0; s < nr; s++) {
            int a = rng[2 * s], b = rng[2 * s + 1];
            while (sp > 0 && D->snode_t1[stack[sp - 1]] <= a) sp--;
            if (sp > 0 && D->snode_t1[stack[sp - 1]] < b) {
                st = canopy_err_set(err, CANOPY_ERR_INTERNAL, "plan: candidate ranges [%d, %d) and [%d, %d) overlap",
                                    D->snode_t0[stack[sp - 1]], D->snode_t1[stack[sp - 1]], a, b);
                goto out;
            }
            D->snode_t0[s] = a;
            D->snode_t1[s] = b;
            D->snode_parent[s] = sp > 0 ? stack[sp - 1] : -1;
            D->snode_depth[s] = sp > 0 ? D->snode_depth[stack[sp - 1]] + 1 : 0;
            stack[sp++] = s;
            if (b - a == 1) {
                leaf[a] = s;
                continue;
            }
            int64_t key = (int64_t)a * ((int64_t)T + 1) + b;
            size_t h = (size_t)((uint64_t)key * 0x9E3779B97F4A7C15ull >> 7) & (cap - 1);
            while (hkey[h] != key) h = (h + 1) & (cap - 1);
            hval[h] = s;
        }
    }
out:
    canopy_free(hkey);
    canopy_free(hval);
    canopy_free(rng);
    canopy_free(leaf);
    canopy_free(stack);
    return st;
}
