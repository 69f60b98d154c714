/*
 * The plan's tasks (sched/plan.h, private parts in plan_parts.h): the SUBTREE tasks, the 1D
 * (PANEL, UPDATE) and 2D (DIAG, TRSM, UPDATE2D) tasks of the factorization graph with their costs
 * and candidate threads, the graph's edges, and, once the simulation has run, the contribution
 * numbers (the ticket order of scheduler=static). Its own file because it turns a mapped tree
 * into the graph the simulation and the engine run: the only code that knows task ids.
 */
#include "plan_parts.h"

#include <limits.h>
#include <stdlib.h>

/* What running one more task costs the engine (queue, dependencies, wake-up), seconds: charged
 * to the 2D tasks so that the model does not cut a cblk finer than pays. */
#define PLAN_TASK_OVERHEAD 2e-6

/*
 * SUBTREE tasks: maximal subtrees on one thread whose cost is at most @p limit and whose cblks are
 * consecutive (a task runs first..root in order). Parents come after children, so a descending
 * sweep meets every subtree's root first. T == 1: every root's whole tree (limit = infinity).
 */
void plan_subtrees(plan_build *B, double limit)
{
    const symbolic *S = B->S;
    for (cint k = B->n - 1; k >= 0; k--) {
        cint par = S->cblk_parent[k];
        if (par >= 0 && B->sroot[par] >= 0) B->sroot[k] = B->sroot[par];
        else if (k < B->root_first && B->t1[k] - B->t0[k] == 1 && !B->shared[k] && B->sub[k] <= limit && k - B->first[k] + 1 == B->size[k])
            B->sroot[k] = k;
        else B->sroot[k] = -1;
    }
}

/* Task ids in ascending cblk order (PANEL k, then its UPDATEs; a SUBTREE at its root): every
 * edge goes from a smaller id to a larger one. Fills the per-task arrays and cblk_task. */
canopy_status plan_make_tasks(plan_build *B, sched_plan *P, plan_tasks *X, canopy_err *err)
{
    const symbolic *S = B->S;
    sched_dag *D = &P->factor;
    cint n = B->n;
    int64_t nt = 0;
    int any2d = 0;
    for (cint k = 0; k < n; k++) {
        if (B->sroot[k] == k) nt++;
        if (B->sroot[k] >= 0) continue;
        nt++;
        if (k >= B->root_first) continue; /* the grid's root: a PANEL that gathers, no updates */
        int64_t ng = plan_ngroups(S, k);
        if (plan_chunked(B, k)) nt += ng + plan_chunk_prefix(B, (int)ng);
        else nt += B->twod[k] ? ng + ng * (ng + 1) / 2 : ng;
        any2d |= B->twod[k];
    }
    if (nt >= INT_MAX / 2) return canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "plan: %" PRId64 " tasks", nt);
    D->ntasks = (int)nt;
    size_t m = (size_t)nt + 1;
    D->kind = canopy_alloc(m, sizeof(int), "tasks", err);
    D->cblk = canopy_alloc(m, sizeof(int), "tasks", err);
    D->first = canopy_alloc(m, sizeof(int), "tasks", err);
    D->cost = canopy_alloc(m, sizeof(double), "tasks", err);
    D->owner = canopy_alloc(m, sizeof(int), "tasks", err);
    D->snode = canopy_alloc(m, sizeof(int), "tasks", err);
    D->level = canopy_alloc(m, sizeof(int), "tasks", err);
    D->npred = canopy_calloc(m, sizeof(int), "tasks", err);
    D->succ_ptr = canopy_calloc(m, sizeof(int), "tasks", err);
    P->task_seq = canopy_alloc(m, sizeof(int), "tasks", err);
    P->task_start = canopy_alloc(m, sizeof(double), "tasks", err);
    P->task_end = canopy_alloc(m, sizeof(double), "tasks", err);
    X->cand_t0 = canopy_alloc(m, sizeof(int), "tasks", err);
    X->cand_t1 = canopy_alloc(m, sizeof(int), "tasks", err);
    X->pref = canopy_alloc(m, sizeof(int), "tasks", err);
    X->serial = canopy_alloc(m, sizeof(cint), "tasks", err);
    P->task_contrib = canopy_alloc(m, sizeof(int), "tasks", err);
    if (any2d) {
        D->tile = canopy_alloc(m, sizeof(int), "tasks", err);
        D->tile_end = canopy_alloc(m, sizeof(int), "tasks", err);
    }
    if (!P->task_contrib || (any2d && (!D->tile || !D->tile_end)) || !D->kind || !D->cblk || !D->first || !D->cost || !D->owner || !D->snode || !D->level || !D->npred ||
        !D->succ_ptr || !P->task_seq || !P->task_start || !P->task_end || !X->cand_t0 || !X->cand_t1 || !X->pref ||
        !X->serial)
        return plan_nomem(err);
    int id = 0;
    double total = 0;
#define PLAN_TASK(K, C, F, COST, SRC)                                                    \
    do {                                                                                 \
        D->kind[id] = (K);                                                               \
        D->cblk[id] = (int)(C);                                                          \
        D->first[id] = (int)(F);                                                         \
        D->cost[id] = (COST);                                                            \
        D->snode[id] = P->cblk_snode[SRC];                                               \
        D->level[id] = D->snode_depth[D->snode[id]];                                     \
        X->cand_t0[id] = B->t0[SRC];                                                     \
        X->cand_t1[id] = B->t1[SRC];                                                     \
        X->pref[id] = P->cblk_owner[SRC];                                                \
        X->serial[id] = -1;                                                              \
        P->task_contrib[id] = -1;                                                        \
        if (D->tile) D->tile[id] = D->tile_end[id] = -1;                                 \
        total += D->cost[id];                                                            \
    } while (0)
    for (cint k = 0; k < n; k++) {
        if (B->sroot[k] == k) {
            double c = 0;
            for (cint q = B->first[k]; q <= k; q++) {
                c += P->cblk_cost[q];
                P->cblk_task[q] = id;
            }
            PLAN_TASK(SCHED_TASK_SUBTREE, k, B->first[k], c, k);
            id++;
        }
        if (B->sroot[k] >= 0) continue;
        P->cblk_task[k] = id;
        if (B->twod[k]) {
            /* DIAG, a TRSM per facing group, an UPDATE2D per pair (columns g, rows g2 >= g) */
            cint ng = 0, bend = S->cblk_fblok[k + 1];
            for (cint b = S->cblk_fblok[k] + 1; b < bend; b = symbolic_group_end(S, k, b)) B->gstart[ng++] = b;
            PLAN_TASK(SCHED_TASK_DIAG, k, k, plan_diag_cost(B, k) + PLAN_TASK_OVERHEAD, k);
            id++;
            for (cint g = 0; g < ng; g++) {
                cint b = B->gstart[g], e = symbolic_group_end(S, k, b);
                double rows = (double)(plan_row_end(S, k, e) - S->blok_coefrow[b]);
                PLAN_TASK(SCHED_TASK_TRSM, k, b, plan_offdiag_cost(B, k, rows) + PLAN_TASK_OVERHEAD, k);
                id++;
            }
            int chunked = plan_chunked(B, k);
            for (cint g = 0; g < ng && chunked; g++) {
                /* top2d flat: by chunks of consecutive groups (plan_chunked) */
                cint fb0 = B->gstart[g], fb1 = symbolic_group_end(S, k, fb0), left = ng - g;
                int nc = plan_nchunks(B, (int)g, (int)left);
                for (int c = 0; c < nc; c++) {
                    cint a = g + (cint)((int64_t)c * left / nc), z = g + (cint)((int64_t)(c + 1) * left / nc);
                    cint rb0 = B->gstart[a], rb1 = z < ng ? B->gstart[z] : bend;
                    PLAN_TASK(SCHED_TASK_UPDATE2D, k, fb0, plan_update_cost(B, k, fb0, fb1, rb0, rb1) + PLAN_TASK_OVERHEAD,
                              k);
                    D->tile[id] = (int)rb0;
                    D->tile_end[id] = (int)rb1;
                    id++;
                }
            }
            for (cint g = 0; g < ng && !chunked; g++) {
                cint fb0 = B->gstart[g], fb1 = symbolic_group_end(S, k, fb0);
                for (cint g2 = g; g2 < ng; g2++) {
                    cint rb0 = B->gstart[g2], rb1 = symbolic_group_end(S, k, rb0);
                    PLAN_TASK(SCHED_TASK_UPDATE2D, k, fb0, plan_update_cost(B, k, fb0, fb1, rb0, rb1) + PLAN_TASK_OVERHEAD,
                              k);
                    D->tile[id] = (int)rb0;
                    D->tile_end[id] = (int)rb1;
                    id++;
                }
            }
            continue;
        }
        PLAN_TASK(SCHED_TASK_PANEL, k, k, k >= B->root_first ? 0.0 : B->pcost[k], k);
        id++;
        if (k >= B->root_first) continue;
        for (cint b = S->cblk_fblok[k] + 1, bend = S->cblk_fblok[k + 1]; b < bend; b = symbolic_group_end(S, k, b)) {
            PLAN_TASK(SCHED_TASK_UPDATE, k, b, B->ucost[b], k);
            X->serial[id] = S->blok_fcblk[b];
            id++;
        }
    }
#undef PLAN_TASK
    P->total_cost = total;
    return CANOPY_SUCCESS;
}

/*
 * Edges: PANEL k -> its UPDATEs; UPDATE (k -> j) -> the task of j; SUBTREE -> the task of each
 * distinct cblk outside it that it updates. Two sweeps over the bloks (count, then fill); @p stamp
 * ([n], scratch) deduplicates a subtree's targets.
 */
canopy_status plan_edges(plan_build *B, sched_plan *P, cint *stamp, canopy_err *err)
{
    const symbolic *S = B->S;
    sched_dag *D = &P->factor;
    int nt = D->ntasks;
    for (cint k = 0; k < B->n; k++) stamp[k] = -1;
    for (int pass = 0; pass < 2; pass++) {
        int *fill = pass == 0 ? D->succ_ptr + 1 : NULL;
        for (int i = 0; i < nt; i++) {
            int e = 0, base = pass == 1 ? D->succ_ptr[i] : 0;
            cint k = D->cblk[i];
            if (D->kind[i] == SCHED_TASK_UPDATE || D->kind[i] == SCHED_TASK_UPDATE2D) {
                if (pass == 1) D->succ[base] = P->cblk_task[S->blok_fcblk[D->first[i]]];
                e = 1;
            } else if (D->kind[i] == SCHED_TASK_DIAG) {
                /* its TRSMs follow it */
                int ng = (int)plan_ngroups(S, k);
                for (; e < ng; e++)
                    if (pass == 1) D->succ[base + e] = i + 1 + e;
            } else if (D->kind[i] == SCHED_TASK_TRSM) {
                /* the UPDATE2Ds that read its rows: (x, g) for x < g, then (g, y) for y >= g */
                int d0 = P->cblk_task[k], ng = (int)plan_ngroups(S, k), g = i - d0 - 1;
                if (plan_chunked(B, k)) {
                    /* chunked: the chunk holding g of every column group x < g, then g's own */
                    if (g == 0) plan_chunk_prefix(B, ng); /* k's TRSMs come in order: once per k */
                    for (int x = 0; x < g; x++, e++)
                        if (pass == 1) D->succ[base + e] = plan_chunk_id(B, d0, ng, x, g);
                    for (int c = 0, nc = plan_nchunks(B, g, ng - g); c < nc; c++, e++)
                        if (pass == 1) D->succ[base + e] = plan_chunk_id(B, d0, ng, g, g) + c;
                } else {
                    for (int x = 0; x < g; x++, e++)
                        if (pass == 1) D->succ[base + e] = plan_update2d_id(d0, ng, x, g);
                    for (int y = g; y < ng; y++, e++)
                        if (pass == 1) D->succ[base + e] = plan_update2d_id(d0, ng, g, y);
                }
            } else if (D->kind[i] == SCHED_TASK_PANEL) {
                /* the grid's root updates nothing by tasks */
                cint b0 = k >= B->root_first ? S->cblk_fblok[k + 1] : S->cblk_fblok[k] + 1;
                for (cint b = b0, bend = S->cblk_fblok[k + 1]; b < bend; b = symbolic_group_end(S, k, b)) {
                    if (pass == 1) D->succ[base + e] = i + 1 + e;
                    e++;
                }
            } else {
                /* stamps differ between passes: 2 * root + pass */
                for (cint q = D->first[i]; q <= k; q++)
                    for (cint b = S->cblk_fblok[q] + 1, bend = S->cblk_fblok[q + 1]; b < bend; b++) {
                        cint j = S->blok_fcblk[b];
                        if (j <= k || stamp[j] == 2 * k + pass) continue;
                        stamp[j] = 2 * k + pass;
                        if (pass == 1) D->succ[base + e] = P->cblk_task[j];
                        e++;
                    }
            }
            if (pass == 0) fill[i] = e;
        }
        if (pass == 0) {
            int64_t tot = 0;
            for (int i = 0; i < nt; i++) {
                tot += D->succ_ptr[i + 1];
                if (tot > INT_MAX) return canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "plan: too many edges");
                D->succ_ptr[i + 1] = (int)tot;
            }
            D->succ = canopy_alloc((size_t)tot + 1, sizeof(int), "task edges", err);
            if (D->succ == NULL) return plan_nomem(err);
        }
    }
    for (int e = 0; e < D->succ_ptr[nt]; e++) D->npred[D->succ[e]]++;
    return CANOPY_SUCCESS;
}

/* One contribution into cblk j, applied at simulated time t by the task started seq-th (sub: its
 * place inside a SUBTREE task), whose number goes to *dst. */
typedef struct plan_contrib {
    double t;
    int seq, sub;
    cint j;
    int *dst;
} plan_contrib;

static int plan_contrib_cmp(const void *a, const void *b)
{
    const plan_contrib *x = a, *y = b;
    if (x->j != y->j) return x->j < y->j ? -1 : 1;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
    return (x->sub > y->sub) - (x->sub < y->sub);
}

static int plan_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

size_t sched_subtree_deferred(const symbolic *S, const sched_plan *P, cint first, cint root, int64_t *keys)
{
    size_t m = 0;
    if (S == NULL || P == NULL || !P->fanin_cuts || first < 0 || root >= S->ncblk || first > root) return 0;
    const int *cblk_rank = P->cblk_rank;
    int r = cblk_rank[root];
    for (cint k = first; k <= root; k++)
        for (cint b = S->cblk_fblok[k] + 1, bend = S->cblk_fblok[k + 1]; b < bend; b = symbolic_group_end(S, k, b)) {
            cint j = S->blok_fcblk[b];
            if (j > root && cblk_rank[j] != r) {
                if (keys) keys[m] = (int64_t)j * S->nblok + b;
                m++;
            }
        }
    /* bloks are numbered in cblk order: (target, blok) sorts the sources in postorder */
    if (keys && m > 1) qsort(keys, m, sizeof *keys, plan_cmp_i64);
    return m;
}

/*
 * Contribution numbers, the ticket order of scheduler=static: into each target, in the order the
 * simulation applies them. An UPDATE or UPDATE2D applies its product when it ends; a SUBTREE task
 * applies one per (source cblk, facing group) leaving it, each when the subtree's panels and
 * updates before it are done (its start plus their costs, at most its end), those into other
 * ranks' cblks after all the rest, target by target (sched_subtree_deferred; their times go to
 * blok_time for the fan-in buffers' lives). Numbering by start
 * instead made every contribution wait for the long subtree tasks that started first.
 * Times along one thread's list never decrease (ties go by start order), so a contribution never
 * waits for one that comes later in any list; and a wait is always for one applied earlier in
 * the simulation, so the waits cannot form a cycle.
 */
canopy_status plan_contributions(plan_build *B, sched_plan *P, canopy_err *err)
{
    const symbolic *S = B->S;
    sched_dag *D = &P->factor;
    int nt = D->ntasks;
    size_t m = 0, mdef = 0;
    for (cint b = 0; b < S->nblok; b++) P->blok_contrib[b] = -1;
    for (cint k = 0; k < B->n; k++) P->cblk_ncontrib[k] = 0;
    for (int i = 0; i < nt; i++) {
        if (D->kind[i] == SCHED_TASK_UPDATE || D->kind[i] == SCHED_TASK_UPDATE2D) m++;
        else if (D->kind[i] == SCHED_TASK_SUBTREE) {
            for (cint k = D->first[i], root = D->cblk[i]; k <= root; k++)
                for (cint b = S->cblk_fblok[k] + 1, bend = S->cblk_fblok[k + 1]; b < bend; b = symbolic_group_end(S, k, b))
                    m += S->blok_fcblk[b] > root;
            size_t d = sched_subtree_deferred(S, P, D->first[i], D->cblk[i], NULL);
            if (d > mdef) mdef = d;
        }
    }
    plan_contrib *c = canopy_alloc(m + 1, sizeof(plan_contrib), "contribution order", err);
    int64_t *keys = canopy_alloc(mdef + 1, sizeof(int64_t), "contribution order", err);
    if (P->blok_time == NULL) P->blok_time = canopy_alloc((size_t)S->nblok + 1, sizeof(double), "plan", err);
    if (c == NULL || keys == NULL || P->blok_time == NULL) {
        canopy_free(c);
        canopy_free(keys);
        return plan_nomem(err);
    }
    for (cint b = 0; b < S->nblok; b++) P->blok_time[b] = 0;
    m = 0;
    for (int i = 0; i < nt; i++) {
        int kd = D->kind[i], seq = P->task_seq[i];
        if (kd == SCHED_TASK_UPDATE) {
            cint b = D->first[i];
            c[m++] = (plan_contrib){P->task_end[i], seq, 0, S->blok_fcblk[b], &P->blok_contrib[b]};
        } else if (kd == SCHED_TASK_UPDATE2D) {
            c[m++] = (plan_contrib){P->task_end[i], seq, 0, S->blok_fcblk[D->first[i]], &P->task_contrib[i]};
        } else if (kd == SCHED_TASK_SUBTREE) {
            cint root = D->cblk[i];
            int r = P->cblk_rank[root];
            double t = P->task_start[i], end = P->task_end[i];
            int sub = 0;
            for (cint k = D->first[i]; k <= root; k++) {
                t += B->pcost[k];
                for (cint b = S->cblk_fblok[k] + 1, bend = S->cblk_fblok[k + 1]; b < bend; b = symbolic_group_end(S, k, b)) {
                    cint j = S->blok_fcblk[b];
                    if (P->fanin_cuts && j > root && P->cblk_rank[j] != r) continue; /* deferred, below */
                    t += B->ucost[b];
                    if (j > root) {
                        P->blok_time[b] = t < end ? t : end;
                        c[m++] = (plan_contrib){P->blok_time[b], seq, sub++, j, &P->blok_contrib[b]};
                    }
                }
            }
            size_t d = sched_subtree_deferred(S, P, D->first[i], root, keys);
            for (size_t q = 0; q < d; q++) {
                cint b = (cint)(keys[q] % S->nblok), j = (cint)(keys[q] / S->nblok);
                t += B->ucost[b];
                P->blok_time[b] = t < end ? t : end;
                c[m++] = (plan_contrib){P->blok_time[b], seq, sub++, j, &P->blok_contrib[b]};
            }
        }
    }
    qsort(c, m, sizeof *c, plan_contrib_cmp);
    for (size_t q = 0; q < m; q++) *c[q].dst = P->cblk_ncontrib[c[q].j]++;
    canopy_free(c);
    canopy_free(keys);
    return CANOPY_SUCCESS;
}
