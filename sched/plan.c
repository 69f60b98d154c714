/*
 * The static plan of one rank or of several (see plan.h): the driver. It checks the options and
 * the structure, runs the parts of one plan in order (costs and tree: plan_costs.c; mapping and
 * Snodes: plan_mapping.c; data owners; subtree, 1D and 2D tasks and their edges: plan_tasks.c),
 * chooses the 2D cblks, sets up the simulation (sched/simulate.c) across ranks (the ranks' groups,
 * the delays of their messages, the per-(target, rank) serialization, the top2d grids of
 * sched/grid.c), settles the shared cblks on the ranks the simulation chose, has the contributions
 * numbered, and sweeps the 2D levels and top2d shapes when asked to choose them. Runs nothing:
 * sched/engine.c executes the graphs, src/ supplies the task bodies. The parts share their private
 * tables through plan_parts.h.
 *
 * Everything here is O((cblks + bloks) log) and deterministic: no hash order, no time, ties
 * always broken by the smaller index.
 */
#include "plan_parts.h"
#include "grid.h"
#include "simulate.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* 2D tasks: only for cblks at least this wide (a narrower GEMM runs far from peak) and with at
 * most this many facing groups (the UPDATE2D tasks grow with their square). */
#define PLAN_TWOD_MIN_WIDTH 32
#define PLAN_TWOD_MAX_GROUPS 160
/* top2d (a model, sched/grid.h): a shared cblk's tasks spread over its grid's ranks, so it is tiled
 * up to this many groups. At 160, 100^3 cut at 64 columns on 256 x 16 (the group counts of 215^3
 * at 256) left 862 of 2181 shared cblks whole and gained 5%; at 1000, 59% efficiency against 4.4%,
 * for 3x the tasks (25.8M) */
#define PLAN_TOP2D_MAX_GROUPS 1000

/* 2d-levels=auto tries at most this many levels */
#define PLAN_MAX_LEVELS 64

/* ---- input ---------------------------------------------------------------------------------- */

/* The properties the planner relies on, checked once so that nothing below can index out of
 * bounds on a damaged structure: the parent is the cblk facing the first off-diagonal blok (so
 * it comes later: a postorder), facing cblks later than the source and nondecreasing along its
 * bloks, bloks tiling the panel rows in increasing row order. */
static canopy_status plan_check_structure(const symbolic *S, canopy_err *err)
{
    cint n = S->ncblk;
    if (n < 0 || S->nblok < n)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "plan: bad sizes (%" CINT_FMT " cblks, %" CINT_FMT " bloks)",
                              n, S->nblok);
    if ((int64_t)n + (int64_t)S->nblok >= INT_MAX / 2)
        return canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "plan: %" CINT_FMT " cblks and %" CINT_FMT
                              " bloks exceed the task index range", n, S->nblok);
    if (n == 0) return CANOPY_SUCCESS;
    if (!S->cblk_fcol || !S->cblk_fblok || !S->cblk_stride || !S->cblk_parent || !S->blok_frow || !S->blok_lrow ||
        !S->blok_fcblk || !S->blok_coefrow)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "plan: block structure has missing arrays");
    if (S->cblk_fblok[0] != 0 || S->cblk_fblok[n] != S->nblok)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "plan: cblk_fblok does not cover the bloks");
    for (cint k = 0; k < n; k++) {
        cint b0 = S->cblk_fblok[k], b1 = S->cblk_fblok[k + 1], w = S->cblk_fcol[k + 1] - S->cblk_fcol[k];
        cint par = S->cblk_parent[k];
        if (b1 <= b0 || b1 > S->nblok || w <= 0 || S->blok_fcblk[b0] != k || S->blok_coefrow[b0] != 0 ||
            par != (b1 - b0 > 1 ? S->blok_fcblk[b0 + 1] : -1))
            return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "plan: malformed cblk %" CINT_FMT, k);
        cint row = w, prev = k, last = S->cblk_fcol[k + 1] - 1;
        for (cint b = b0 + 1; b < b1; b++) {
            cint j = S->blok_fcblk[b];
            if (j <= k || j >= n || j < prev || S->blok_frow[b] > S->blok_lrow[b] || S->blok_frow[b] <= last ||
                S->blok_frow[b] < S->cblk_fcol[j] || S->blok_lrow[b] >= S->cblk_fcol[j + 1] ||
                S->blok_coefrow[b] != row)
                return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "plan: malformed blok %" CINT_FMT " of cblk %" CINT_FMT,
                                      b, k);
            row += S->blok_lrow[b] - S->blok_frow[b] + 1;
            prev = j;
            last = S->blok_lrow[b];
        }
        if (row != S->cblk_stride[k])
            return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "plan: bloks of cblk %" CINT_FMT " do not fill its stride", k);
    }
    return CANOPY_SUCCESS;
}

/* ---- several ranks ------------------------------------------------------------------------------ */

static int plan_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/*
 * Several ranks: the updates of one rank into a target sum into that rank's fan-in buffer (or,
 * on the target's rank, into the panel), so only the updates of one rank into one target are
 * applied one at a time. Re-key serial[] by (target, source rank), numbered 0..*nkeys-1; a source
 * whose rank the simulation decides (group -1) keeps a key of its own per target.
 */
static canopy_status plan_serial_by_rank(int ntasks, cint *serial, const int *group, int R, cint *nkeys, canopy_err *err)
{
    int64_t *keys = canopy_alloc((size_t)ntasks + 1, sizeof(int64_t), "plan scratch", err);
    if (!keys) return plan_nomem(err);
    size_t m = 0;
    for (int i = 0; i < ntasks; i++)
        if (serial[i] >= 0) keys[m++] = (int64_t)serial[i] * (R + 1) + (group[i] + 1);
    qsort(keys, m, sizeof *keys, plan_cmp_i64);
    size_t u = 0;
    for (size_t q = 0; q < m; q++)
        if (u == 0 || keys[q] != keys[u - 1]) keys[u++] = keys[q];
    for (int i = 0; i < ntasks; i++) {
        if (serial[i] < 0) continue;
        int64_t key = (int64_t)serial[i] * (R + 1) + (group[i] + 1);
        size_t lo = 0, hi = u;
        while (hi - lo > 1) {
            size_t mid = (lo + hi) / 2;
            if (keys[mid] <= key) lo = mid;
            else hi = mid;
        }
        serial[i] = (cint)lo;
    }
    *nkeys = (cint)u;
    canopy_free(keys);
    return CANOPY_SUCCESS;
}

/* ---- driver ------------------------------------------------------------------------------------- */

/* plan_contributions for a plan built without them: the unit costs again (the same arithmetic). */
static canopy_status plan_contributions_of(const symbolic *S, const sched_cost_model *cm, const sched_plan_opts *o,
                                           sched_plan *P, canopy_err *err)
{
    plan_build B = {.S = S, .cm = cm, .kind = o->kind, .scale = o->complex_arith ? 4.0 : 1.0, .n = S->ncblk};
    B.ucost = canopy_alloc((size_t)S->nblok + 1, sizeof(double), "plan scratch", err);
    B.pcost = canopy_alloc((size_t)S->ncblk + 1, sizeof(double), "plan scratch", err);
    canopy_status st = B.ucost && B.pcost ? CANOPY_SUCCESS : plan_nomem(err);
    if (st == CANOPY_SUCCESS) {
        plan_unit_costs(&B, NULL);
        st = plan_contributions(&B, P, err);
    }
    canopy_free(B.ucost);
    canopy_free(B.pcost);
    if (st != CANOPY_SUCCESS) sched_plan_free(P);
    return st;
}

/*
 * The grid's root cblks (k >= root_first) only gather their updates from below and, after the
 * grid step, hold the factor for the solve: their owners come from memory, not time. Each goes,
 * largest panel first, to the rank holding the fewest bytes so far (its own subtrees' panels
 * counted), and its PANEL task is pinned there before the simulation (the simulation would put a
 * zero-cost task anywhere, and one rank could end with most of the root).
 */
static canopy_status plan_root_owners(const symbolic *S, plan_build *B, sched_plan *P, int TR, const int *gsnode,
                                      int *group, int *pref, double sb, canopy_err *err)
{
    cint n = S->ncblk;
    int R = P->nranks;
    double *load = canopy_calloc((size_t)R, sizeof(double), "plan scratch", err);
    cint *order = canopy_alloc((size_t)(n - B->root_first) + 1, sizeof(cint), "plan scratch", err);
    if (load == NULL || order == NULL) {
        canopy_free(load);
        canopy_free(order);
        return plan_nomem(err);
    }
    for (cint k = 0; k < B->root_first; k++)
        if (P->cblk_rank[k] >= 0) load[P->cblk_rank[k]] += sb * (double)S->cblk_stride[k] * (double)(S->cblk_fcol[k + 1] - S->cblk_fcol[k]);
    cint m = 0;
    for (cint k = B->root_first; k < n; k++) {
        if (B->shared[k]) order[m++] = k;
        else if (P->cblk_rank[k] >= 0) load[P->cblk_rank[k]] += sb * (double)S->cblk_stride[k] * (double)(S->cblk_fcol[k + 1] - S->cblk_fcol[k]);
    }
    /* largest first (insertion sort: a root has tens to hundreds of cblks) */
    for (cint a = 1; a < m; a++) {
        cint k = order[a], b = a;
        double bk = (double)S->cblk_stride[k] * (double)(S->cblk_fcol[k + 1] - S->cblk_fcol[k]);
        while (b > 0 && (double)S->cblk_stride[order[b - 1]] * (double)(S->cblk_fcol[order[b - 1] + 1] - S->cblk_fcol[order[b - 1]]) < bk) {
            order[b] = order[b - 1];
            b--;
        }
        order[b] = k;
    }
    for (cint a = 0; a < m; a++) {
        cint k = order[a];
        int r = 0;
        for (int q = 1; q < R; q++)
            if (load[q] < load[r]) r = q;
        load[r] += sb * (double)S->cblk_stride[k] * (double)(S->cblk_fcol[k + 1] - S->cblk_fcol[k]);
        int pt = P->cblk_task[k];
        group[pt] = r;
        P->factor.snode[pt] = gsnode[r];
        if (pref) pref[pt] = r * TR;
    }
    canopy_free(load);
    canopy_free(order);
    return CANOPY_SUCCESS;
}

/*
 * One plan with 2D tasks in the top @p levels Snode levels (0: none); inputs already checked.
 * @p contrib 0 leaves the contribution numbers out (plan_contributions_of adds them later).
 * @p twod_count, when not NULL: [PLAN_MAX_LEVELS + 1], how many cblks would be 2D with each count of
 * levels 0..PLAN_MAX_LEVELS (what comes before the 2D choice does not depend on @p levels).
 */
static canopy_status plan_build_one(const symbolic *S, const sched_cost_model *cm, const sched_plan_opts *o,
                                    int levels, int contrib, int64_t *twod_count, sched_plan *P, canopy_err *err)
{
    memset(P, 0, sizeof *P);
    canopy_status st = CANOPY_SUCCESS;
    cint n = S->ncblk;
    int R = o->nranks > 1 ? o->nranks : 1, TR = o->nthreads;
    int T = R * TR;
    plan_build B = {.S = S, .cm = cm, .kind = o->kind, .scale = o->complex_arith ? 4.0 : 1.0, .T = T, .n = n, .R = R,
                    .mapping = o->mapping, .pin = o->pin, .root_first = R > 1 && o->root.n > 0 ? o->root.first : n};
    plan_tasks X = {0};
    cint *stamp = NULL;
    size_t n1 = (size_t)n + 1;
    P->nthreads = T;
    P->nranks = R;
    /* sched_fanin_memory's figures, filled on the first request (sched_plan_memory) */
    P->memo = canopy_calloc(5 * (size_t)R + 2 * (size_t)T + 1, sizeof(double), "plan", err);
    if (P->memo == NULL) return plan_nomem(err);
    P->threads_per_rank = TR;
    P->ncblk = n;
    P->cblk_rank = canopy_alloc(n1, sizeof(int), "plan", err);
    P->cblk_ranks = canopy_alloc(2 * n1, sizeof(int), "plan", err);
    B.rank = canopy_alloc(n1, sizeof(int), "plan scratch", err);
    B.shared = canopy_calloc(n1, 1, "plan scratch", err);
    P->factor.nthreads = T;
    P->cblk_t0 = canopy_alloc(n1, sizeof(int), "plan", err);
    P->cblk_t1 = canopy_alloc(n1, sizeof(int), "plan", err);
    P->cblk_snode = canopy_alloc(n1, sizeof(int), "plan", err);
    P->cblk_owner = canopy_alloc(n1, sizeof(int), "plan", err);
    P->cblk_task = canopy_alloc(n1, sizeof(int), "plan", err);
    P->blok_contrib = canopy_alloc((size_t)S->nblok + 1, sizeof(int), "plan", err);
    P->cblk_ncontrib = canopy_alloc(n1, sizeof(int), "plan", err);
    P->cblk_cost = canopy_alloc(n1, sizeof(double), "plan", err);
    B.ucost = canopy_alloc((size_t)S->nblok + 1, sizeof(double), "plan scratch", err);
    B.pcost = canopy_alloc(n1, sizeof(double), "plan scratch", err);
    B.child_ptr = canopy_alloc(n1 + 1, sizeof(cint), "plan scratch", err);
    B.child = canopy_alloc(n1, sizeof(cint), "plan scratch", err);
    B.sub = canopy_alloc(n1, sizeof(double), "plan scratch", err);
    B.first = canopy_alloc(n1, sizeof(cint), "plan scratch", err);
    B.size = canopy_alloc(n1, sizeof(cint), "plan scratch", err);
    B.sroot = canopy_alloc(n1, sizeof(cint), "plan scratch", err);
    B.t0 = canopy_alloc(n1, sizeof(int), "plan scratch", err);
    B.t1 = canopy_alloc(n1, sizeof(int), "plan scratch", err);
    B.pairs = canopy_alloc(n1, sizeof(plan_pair), "plan scratch", err);
    B.tload = canopy_alloc((size_t)T, sizeof(double), "plan scratch", err);
    B.theap = canopy_alloc((size_t)T, sizeof(int), "plan scratch", err);
    B.twod = canopy_calloc(n1, 1, "plan scratch", err);
    B.gstart = canopy_alloc((size_t)S->nblok + 1, sizeof(cint), "plan scratch", err);
    B.cpre = canopy_alloc((size_t)S->nblok + 1, sizeof(cint), "plan scratch", err);
    stamp = canopy_alloc(n1, sizeof(cint), "plan scratch", err);
    int *scount = NULL, *group = NULL, *follow = NULL, *gsnode = NULL;
    double *delay = NULL, *edge_delay = NULL;
    double sb = (o->complex_arith ? 16.0 : 8.0) * (o->kind == CANOPY_FACT_LU ? 2.0 : 1.0);
    if (!P->cblk_rank || !P->cblk_ranks || !B.rank || !B.shared || !P->cblk_t0 || !P->cblk_t1 || !P->cblk_snode || !P->cblk_owner || !P->cblk_task || !P->blok_contrib ||
        !P->cblk_ncontrib || !P->cblk_cost || !B.ucost || !B.pcost || !B.child_ptr || !B.child || !B.sub ||
        !B.first || !B.size || !B.sroot || !B.t0 || !B.t1 || !B.pairs || !B.tload || !B.theap || !B.twod || !B.gstart || !B.cpre || !stamp) {
        st = plan_nomem(err);
        goto out;
    }

    plan_costs_and_tree(&B, P);
    if (R == 1) {
        B.t0[n] = 0;
        B.t1[n] = T;
        plan_split(&B, n);
        for (cint k = n - 1; k >= 0; k--) plan_split(&B, k);
        for (cint k = 0; k < n; k++) {
            P->cblk_ranks[2 * k] = 0;
            P->cblk_ranks[2 * k + 1] = 1;
        }
    } else if ((st = plan_map_ranks(&B, P, err)) != CANOPY_SUCCESS) {
        goto out;
    }
    for (cint k = 0; k < n; k++) P->cblk_rank[k] = B.shared[k] ? -1 : B.t0[k] / TR; /* shared: below */
    for (cint k = 0; k < n; k++) {
        P->cblk_t0[k] = B.t0[k];
        P->cblk_t1[k] = B.t1[k];
    }
    if ((st = plan_snodes(&B, P, err)) != CANOPY_SUCCESS) goto out;

    /* data owners: the only candidate, or round-robin over the candidates in cblk order (shared
     * upper-tree cblks spread their memory over the threads that will work on them) */
    scount = canopy_calloc((size_t)P->factor.nsnodes, sizeof(int), "plan scratch", err);
    if (scount == NULL) {
        st = plan_nomem(err);
        goto out;
    }
    for (cint k = 0; k < n; k++) {
        int p = B.t1[k] - B.t0[k];
        P->cblk_owner[k] = p == 1 ? B.t0[k] : B.t0[k] + scount[P->cblk_snode[k]]++ % p;
    }

    double total = 0;
    for (cint k = 0; k < n; k++) total += P->cblk_cost[k];
    double gran = o->granularity > 0 ? o->granularity : 8.0;
    plan_subtrees(&B, T == 1 ? INFINITY : total / ((double)T * gran));
    /* 2D: wide cblks shared by several threads in the top levels of the Snode tree */
    P->twod_levels = levels;
    if (twod_count)
        for (int l = 0; l <= PLAN_MAX_LEVELS; l++) twod_count[l] = 0;
    for (cint k = 0; k < n && (levels > 0 || twod_count); k++) {
        int depth = P->factor.snode_depth[P->cblk_snode[k]];
        int fit = k < B.root_first && B.sroot[k] < 0 && B.t1[k] - B.t0[k] >= 2 && S->cblk_fcol[k + 1] - S->cblk_fcol[k] >= PLAN_TWOD_MIN_WIDTH &&
                  plan_ngroups(S, k) <= (o->top2d > 0 && B.shared[k] ? PLAN_TOP2D_MAX_GROUPS : PLAN_TWOD_MAX_GROUPS);
        B.twod[k] = fit && depth < levels;
        P->twod_cblks += B.twod[k];
        if (twod_count && fit && depth < PLAN_MAX_LEVELS) twod_count[depth + 1]++; /* 2D from depth + 1 levels on */
    }
    for (int l = 0; twod_count && l < PLAN_MAX_LEVELS; l++) twod_count[l + 1] += twod_count[l];
    /* top2d flat: a tiled cblk's updates of one column group in chunks (plan_chunked) */
    B.xchunk = R > 1 && o->top2d == SCHED_GRID_FLAT ? TR : 0;
    if ((st = plan_make_tasks(&B, P, &X, err)) != CANOPY_SUCCESS) goto out;
    if ((st = plan_edges(&B, P, stamp, err)) != CANOPY_SUCCESS) goto out;
    /* top2d (a model, sched/grid.h): the shared 2D cblks' tiles over grids of their ranks */
    if (R > 1 && o->top2d > 0 && P->twod_cblks > 0) {
        P->grid = canopy_calloc(1, sizeof(sched_grid), "plan", err);
        if (P->grid == NULL) {
            st = plan_nomem(err);
            goto out;
        }
        if ((st = sched_grid_plan(S, &P->factor, P->cblk_task, B.t0, B.t1, R, TR, o->top2d, o->flat_shadow, P->grid, err)) !=
            CANOPY_SUCCESS)
            goto out;
    }
    if ((st = sched_bottom_level(&P->factor, err)) != CANOPY_SUCCESS) goto out;
    if (R > 1) {
        int ntk = P->factor.ntasks;
        group = canopy_alloc((size_t)ntk + 1, sizeof(int), "plan scratch", err);
        delay = canopy_calloc((size_t)ntk + 1, sizeof(double), "plan scratch", err);
        follow = canopy_alloc((size_t)ntk + 1, sizeof(int), "plan scratch", err);
        gsnode = canopy_alloc((size_t)R, sizeof(int), "plan scratch", err);
        if (!group || !delay || !follow || !gsnode) {
            st = plan_nomem(err);
            goto out;
        }
        /* each rank's Snode: the last one whose range is the rank's threads */
        for (int r = 0; r < R; r++) gsnode[r] = -1;
        for (int q = 0; q < P->factor.nsnodes; q++) {
            int t0 = P->factor.snode_t0[q];
            if (t0 % TR == 0 && P->factor.snode_t1[q] == t0 + TR && t0 / TR < R) gsnode[t0 / TR] = q;
        }
        for (int r = 0; r < R; r++) {
            if (gsnode[r] < 0) {
                st = canopy_err_set(err, CANOPY_ERR_INTERNAL, "plan: rank %d has no Snode", r);
                goto out;
            }
        }
        for (int i = 0; i < ntk; i++) {
            cint src = P->factor.cblk[i];
            int shared_src = P->factor.kind[i] != SCHED_TASK_SUBTREE && B.shared[src];
            group[i] = shared_src ? -1 : X.cand_t0[i] / TR;
            int kd = P->factor.kind[i];
            int follows = kd == SCHED_TASK_UPDATE || kd == SCHED_TASK_TRSM || kd == SCHED_TASK_UPDATE2D;
            follow[i] = shared_src && follows ? P->cblk_task[src] : -1;
            if (kd == SCHED_TASK_PANEL || kd == SCHED_TASK_DIAG) {
                cint j = P->factor.cblk[i];
                double bytes = sb * (double)S->cblk_stride[j] * (double)(S->cblk_fcol[j + 1] - S->cblk_fcol[j]);
                delay[i] = o->comm_latency + bytes * o->comm_byte_time;
            }
        }
        if (B.root_first < n && (st = plan_root_owners(S, &B, P, TR, gsnode, group, X.pref, sb, err)) != CANOPY_SUCCESS)
            goto out;
        if (P->grid && (st = sched_grid_place(S, &P->factor, P->grid, TR, gsnode, group, follow, X.pref, delay, sb,
                                              o->comm_latency, o->comm_byte_time, &edge_delay, err)) != CANOPY_SUCCESS)
            goto out;
    }
    cint nserial = n;
    if (R > 1 && (st = plan_serial_by_rank(P->factor.ntasks, X.serial, group, R, &nserial, err)) != CANOPY_SUCCESS)
        goto out;
    sched_sim_groups sg = {.size = TR, .ngroups = R, .group = group, .delay = delay, .follow = follow,
                           .group_snode = gsnode, .edge_delay = edge_delay};
    if ((st = sched_simulate(&P->factor, X.pref, X.serial, nserial, R > 1 ? &sg : NULL, P->task_seq, P->task_start,
                             P->task_end, err)) != CANOPY_SUCCESS)
        goto out;
    /* a shared cblk belongs to the rank its panel went to: all its data and tasks are there */
    for (cint k = 0; R > 1 && k < n; k++) {
        if (!B.shared[k]) continue;
        int pt = P->cblk_task[k], own = P->factor.owner[pt], r = own / TR;
        P->cblk_rank[k] = r;
        P->cblk_t0[k] = r * TR;
        P->cblk_t1[k] = r * TR + TR;
        P->cblk_snode[k] = gsnode[r];
        P->cblk_owner[k] = own;
        P->factor.snode[pt] = gsnode[r];
    }
    for (int i = 0; R > 1 && i < P->factor.ntasks; i++) P->factor.level[i] = P->factor.snode_depth[P->factor.snode[i]];
    if (P->grid && P->grid->shape == SCHED_GRID_FLAT && P->grid->tiled_cblks > 0) {
        /* executed: the tiled cblks' grids, for the fan-in pairs and the local plans */
        const sched_grid *Gr = P->grid;
        int *x = P->cblk_xgrid = canopy_alloc(4 * (size_t)n + 1, sizeof(int), "plan", err);
        if (x == NULL) {
            st = plan_nomem(err);
            goto out;
        }
        for (cint k = 0; k < n; k++) {
            int g = Gr->cblk_grid[k];
            x[k] = g;
            x[(size_t)n + k] = g >= 0 && Gr->shadow ? Gr->grid_r0[g] : -1;
            x[2 * (size_t)n + k] = g >= 0 ? Gr->grid_pc[g] : 0;
            x[3 * (size_t)n + k] = Gr->cblk_pos[k];
        }
    }
    if (P->grid) {
        for (int i = 0; i < P->factor.ntasks; i++) group[i] = P->factor.owner[i] / TR;
        if ((st = sched_grid_count(S, &P->factor, group, sb, P->grid, err)) != CANOPY_SUCCESS) goto out;
    }
    /* the root's grid factorization comes after every task */
    P->root = o->root;
    P->fanin_cuts = o->fanin_cuts;
    P->update_cap = o->update_cap > 0 ? o->update_cap : 0;
    if (B.root_first >= n) P->root = (sched_root){.first = n, .pr = 1, .pc = 1};
    P->root_time = sched_root_time(&P->root, cm, o->kind, B.scale, TR, o->comm_latency, o->comm_byte_time);
    P->factor.predicted_time += P->root_time;
    if (contrib) st = plan_contributions(&B, P, err);
out:
    canopy_free(B.ucost);
    canopy_free(B.pcost);
    canopy_free(B.child_ptr);
    canopy_free(B.child);
    canopy_free(B.sub);
    canopy_free(B.first);
    canopy_free(B.size);
    canopy_free(B.sroot);
    canopy_free(B.t0);
    canopy_free(B.t1);
    canopy_free(B.pairs);
    canopy_free(B.tload);
    canopy_free(B.theap);
    canopy_free(B.twod);
    canopy_free(B.gstart);
    canopy_free(B.cpre);
    canopy_free(B.rank);
    canopy_free(B.shared);
    canopy_free(group);
    canopy_free(delay);
    canopy_free(edge_delay);
    canopy_free(follow);
    canopy_free(gsnode);
    canopy_free(X.cand_t0);
    canopy_free(X.cand_t1);
    canopy_free(X.pref);
    canopy_free(X.serial);
    canopy_free(stamp);
    canopy_free(scount);
    if (st != CANOPY_SUCCESS) sched_plan_free(P);
    return st;
}

/* 2d-levels=auto builds at most this many levels' plans at once */
#define PLAN_SWEEP_MAX 16

/* One level of the 2D-level sweep, built on a thread of its own. */
typedef struct plan_level_job {
    const symbolic *S;
    const sched_cost_model *cm;
    const sched_plan_opts *o;
    int levels;
    sched_plan Q;
    canopy_status st;
    canopy_err err;
} plan_level_job;

static void *plan_level_run(void *arg)
{
    plan_level_job *j = arg;
    j->st = plan_build_one(j->S, j->cm, j->o, j->levels, 0, NULL, &j->Q, &j->err);
    return NULL;
}

/* The @p m jobs, all but the first on threads of their own (a thread that cannot start: here,
 * after the others). */
static void plan_level_jobs(plan_level_job *job, int m)
{
    pthread_t th[PLAN_SWEEP_MAX];
    int started[PLAN_SWEEP_MAX] = {0};
    for (int i = 1; i < m; i++) started[i] = pthread_create(&th[i], NULL, plan_level_run, &job[i]) == 0;
    plan_level_run(&job[0]);
    for (int i = 1; i < m; i++) {
        if (started[i]) pthread_join(th[i], NULL);
        else plan_level_run(&job[i]);
    }
}

canopy_status sched_plan_build(const symbolic *S, const sched_cost_model *cm, const sched_plan_opts *o,
                               sched_plan *P, canopy_err *err)
{
    if (P == NULL || S == NULL || o == NULL)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_plan_build: NULL argument");
    memset(P, 0, sizeof *P);
    if (o->nthreads < 1)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_plan_build: %d threads", o->nthreads);
    if (o->kind != CANOPY_FACT_LLT && o->kind != CANOPY_FACT_LDLT && o->kind != CANOPY_FACT_LU)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_plan_build: factorization kind %d is not LLT, LDLT or LU",
                              (int)o->kind);
    if (o->twod_levels < -1)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_plan_build: 2D levels %d (-1 = auto, 0 = none, or a count)",
                              o->twod_levels);
    canopy_status st = plan_check_structure(S, err);
    if (st != CANOPY_SUCCESS) return st;
    const sched_root *rt = &o->root;
    if (rt->n > 0 && (rt->first < 0 || rt->first >= S->ncblk || rt->n != S->n - S->cblk_fcol[rt->first] || rt->nb < 1 ||
                      rt->pr < 1 || rt->pc < 1 || (int64_t)rt->pr * rt->pc > (o->nranks > 1 ? o->nranks : 1)))
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_plan_build: a root on a grid that does not fit the structure");
    sched_cost_model fixed;
    if (cm == NULL) {
        cost_model_fixed(&fixed);
        cm = &fixed;
    }
    int R = o->nranks > 1 ? o->nranks : 1, TR = o->nthreads;
    if ((int64_t)R * TR > 1 << 20)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_plan_build: %d ranks x %d threads", R, TR);
    int contrib = !o->prediction_only;
    if (o->mapping != SCHED_MAPPING_FLOPS && o->mapping != SCHED_MAPPING_MEMORY)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_plan_build: mapping %d (0 = flops, 1 = memory)", o->mapping);
    if (o->top2d < -1 || o->top2d > SCHED_GRID_TALL)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_plan_build: top2d %d (-1 = auto, 0 = off, 1-3 a shape)",
                              o->top2d);
    if (o->top2d < 0 && R > 1) {
        /* top2d auto: every shape rule, the shortest simulated plan (ties: the first) */
        st = CANOPY_SUCCESS;
        for (int shape = SCHED_GRID_SQUARE; shape <= SCHED_GRID_TALL && st == CANOPY_SUCCESS; shape++) {
            sched_plan_opts os = *o;
            sched_plan Q;
            os.top2d = shape;
            st = sched_plan_build(S, cm, &os, shape == SCHED_GRID_SQUARE ? P : &Q, err);
            if (st != CANOPY_SUCCESS) {
                sched_plan_free(P);
            } else if (shape != SCHED_GRID_SQUARE && Q.factor.predicted_time < P->factor.predicted_time) {
                sched_plan_free(P);
                *P = Q;
            } else if (shape != SCHED_GRID_SQUARE) {
                sched_plan_free(&Q);
            }
        }
        return st;
    }
    if (o->twod_levels >= 0 || R * TR == 1)
        return plan_build_one(S, cm, o, o->twod_levels > 0 ? o->twod_levels : 0, contrib, NULL, P, err);
    /* auto: the simulation decides. One level more at a time from none, while a level brings new
     * 2D cblks; a level replaces the best plan so far only when its predicted makespan is at least
     * 1% shorter. The 2D cblks of every level are known from the first plan, so the levels to
     * build are known before any is built: up to o->sweep_threads of them are built at once
     * (plans are pure functions) and compared in level order, the sequential sweep's choice. The
     * contributions are numbered once, for the plan kept. */
    int64_t count[PLAN_MAX_LEVELS + 1];
    st = plan_build_one(S, cm, o, 0, 0, count, P, err);
    int build_levels[PLAN_MAX_LEVELS], nlevels_built = 0;
    for (int levels = 1, prev = 0; st == CANOPY_SUCCESS && levels <= PLAN_MAX_LEVELS; levels++) {
        if (count[levels] <= prev) {
            /* no new 2D cblk; the grid's root (never 2D) may fill the top levels alone */
            if (count[levels] == 0 && o->root.n > 0 && R > 1) continue;
            break;
        }
        build_levels[nlevels_built++] = levels;
        prev = (int)(count[levels] < INT_MAX ? count[levels] : INT_MAX);
    }
    int width = o->sweep_threads > 1 ? o->sweep_threads : 1;
    if (width > PLAN_SWEEP_MAX) width = PLAN_SWEEP_MAX;
    for (int a = 0; st == CANOPY_SUCCESS && a < nlevels_built; a += width) {
        int m = nlevels_built - a < width ? nlevels_built - a : width;
        plan_level_job job[PLAN_SWEEP_MAX];
        for (int i = 0; i < m; i++)
            job[i] = (plan_level_job){.S = S, .cm = cm, .o = o, .levels = build_levels[a + i]};
        plan_level_jobs(job, m);
        for (int i = 0; i < m; i++) {
            if (st == CANOPY_SUCCESS && job[i].st != CANOPY_SUCCESS)
                st = canopy_err_set(err, job[i].st, "%s", job[i].err.status ? job[i].err.msg : "2D-level sweep: a plan failed");
            if (st != CANOPY_SUCCESS || job[i].st != CANOPY_SUCCESS) {
                if (job[i].st == CANOPY_SUCCESS) sched_plan_free(&job[i].Q);
                continue;
            }
            if (job[i].Q.factor.predicted_time < 0.99 * P->factor.predicted_time) {
                sched_plan_free(P);
                *P = job[i].Q;
            } else {
                sched_plan_free(&job[i].Q);
            }
        }
        if (st != CANOPY_SUCCESS) sched_plan_free(P);
    }
    if (st == CANOPY_SUCCESS && contrib) st = plan_contributions_of(S, cm, o, P, err);
    return st;
}

void sched_plan_keep_local(sched_plan *P)
{
    if (P == NULL) return;
    /* the scalars, root and cblk_rank into a fresh plan: a field added later stays zero here
     * rather than dangling */
    sched_plan keep = {.nthreads = P->nthreads, .nranks = P->nranks, .threads_per_rank = P->threads_per_rank,
                       .cblk_rank = P->cblk_rank, .ncblk = P->ncblk, .twod_levels = P->twod_levels,
                       .twod_cblks = P->twod_cblks, .total_cost = P->total_cost, .root = P->root,
                       .root_time = P->root_time, .fanin_cuts = P->fanin_cuts, .update_cap = P->update_cap,
                       .cblk_owner = P->cblk_owner, .cblk_xgrid = P->cblk_xgrid,
                       .kept_tasks = P->kept_tasks ? P->kept_tasks : P->factor.ntasks};
    keep.factor.predicted_time = P->factor.predicted_time;
    P->cblk_rank = P->cblk_owner = P->cblk_xgrid = NULL;
    sched_plan_free(P);
    *P = keep;
}

void sched_plan_free(sched_plan *P)
{
    if (P == NULL) return;
    canopy_free(P->cblk_rank);
    canopy_free(P->cblk_xgrid);
    canopy_free(P->cblk_ranks);
    canopy_free(P->cblk_t0);
    canopy_free(P->cblk_t1);
    canopy_free(P->cblk_snode);
    canopy_free(P->cblk_owner);
    canopy_free(P->cblk_task);
    canopy_free(P->blok_contrib);
    canopy_free(P->task_contrib);
    canopy_free(P->cblk_ncontrib);
    canopy_free(P->blok_time);
    canopy_free(P->cblk_cost);
    canopy_free(P->task_seq);
    canopy_free(P->task_start);
    canopy_free(P->task_end);
    canopy_free(P->memo);
    sched_grid_free(P->grid);
    canopy_free(P->grid);
    sched_dag_free(&P->factor);
    memset(P, 0, sizeof *P);
}
