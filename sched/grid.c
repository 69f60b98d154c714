/*
 * The shared top over 2D grids of ranks (see grid.h): grids, tile owners, the tiled tasks' ranks,
 * their edges to the target tiles, message delays and counts, bytes held. The flat shape is
 * executed (top2d=flat), the others are a model.
 */
#include "grid.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static canopy_status grid_nomem(canopy_err *err)
{
    return err && err->status ? err->status : CANOPY_ERR_NOMEM;
}

static int grid_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int grid_cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return x < y ? -1 : x > y;
}

void sched_grid_shape_of(int nr, int shape, int *pr, int *pc)
{
    int r = 1;
    if (nr < 1) nr = 1;
    if (shape == SCHED_GRID_TALL) {
        r = nr;
    } else if (shape == SCHED_GRID_SQUARE) {
        /* the largest divisor <= sqrt(nr): the grid closest to square that uses every rank (a
         * prime count gets 1 x nr; leaving ranks out would idle them on the top) */
        for (int d = 1; (int64_t)d * d <= nr; d++)
            if (nr % d == 0) r = d;
    }
    *pr = r;
    *pc = nr / r;
}

static inline double grid_width(const symbolic *S, cint k)
{
    return (double)(S->cblk_fcol[k + 1] - S->cblk_fcol[k]);
}

/* Rows of the facing group starting at blok b of cblk k. */
static inline double grid_group_rows(const symbolic *S, cint k, cint b)
{
    return (double)symbolic_group_rows(S, k, b);
}

int sched_grid_tile_rank(const sched_grid *G, cint k, cint j)
{
    int g = G->cblk_grid[k];
    if (g < 0) return -1;
    int pr = G->grid_pr[g], pc = G->grid_pc[g];
    int pj = G->cblk_pos[j] >= 0 ? G->cblk_pos[j] : 0; /* every cblk a shared one faces is shared */
    return G->grid_r0[g] + (pj % pr) * pc + G->cblk_pos[k] % pc;
}

/* First blok of cblk j's facing group towards cblk t, or -1 (its bloks face nondecreasing cblks). */
static cint grid_find_group(const symbolic *S, cint j, cint t)
{
    cint lo = S->cblk_fblok[j] + 1, hi = S->cblk_fblok[j + 1];
    while (lo < hi) {
        cint mid = lo + (hi - lo) / 2;
        if (S->blok_fcblk[mid] < t) lo = mid + 1;
        else hi = mid;
    }
    return lo < S->cblk_fblok[j + 1] && S->blok_fcblk[lo] == t ? lo : -1;
}

canopy_status sched_grid_plan(const symbolic *S, sched_dag *D, const int *cblk_task, const int *t0, const int *t1,
                              int R, int TR, int shape, int shadow, sched_grid *G, canopy_err *err)
{
    memset(G, 0, sizeof *G);
    G->shadow = shape == SCHED_GRID_FLAT && shadow > 0 ? shadow : 0;
    cint n = S->ncblk;
    int nt = D->ntasks;
    G->nranks = R;
    G->shape = shape;
    G->ncblk = n;
    G->ntasks = nt;
    G->cblk_grid = canopy_alloc((size_t)n + 1, sizeof(int), "grid", err);
    G->cblk_pos = canopy_alloc((size_t)n + 1, sizeof(int), "grid", err);
    G->blok_group = canopy_alloc((size_t)S->nblok + 1, sizeof(cint), "grid", err);
    G->cblk_r0 = canopy_alloc((size_t)n + 1, sizeof(int), "grid", err);
    G->cblk_r1 = canopy_alloc((size_t)n + 1, sizeof(int), "grid", err);
    G->task_rank = canopy_alloc((size_t)nt + 1, sizeof(int), "grid", err);
    int64_t *keys = canopy_alloc((size_t)n + 1, sizeof(int64_t), "grid scratch", err);
    canopy_status st = CANOPY_SUCCESS;
    if (!G->cblk_grid || !G->cblk_pos || !G->blok_group || !G->cblk_r0 || !G->cblk_r1 || !G->task_rank || !keys) {
        st = grid_nomem(err);
        goto out;
    }
    /* positions among the shared cblks; the tiled ones' rank ranges */
    int pos = 0;
    size_t nk = 0;
    for (cint k = 0; k < n; k++) {
        int shared = t1[k] - t0[k] > TR;
        G->cblk_pos[k] = shared ? pos++ : -1;
        G->cblk_r0[k] = shared ? t0[k] / TR : 0;
        G->cblk_r1[k] = shared ? t1[k] / TR : 0;
        G->cblk_grid[k] = -1;
        if (shared && D->kind[cblk_task[k]] == SCHED_TASK_DIAG) {
            keys[nk++] = (int64_t)(t0[k] / TR) * (R + 1) + t1[k] / TR;
            G->cblk_grid[k] = 0; /* tiled; its grid below */
            G->tiled_cblks++;
        }
    }
    G->shared_cblks = pos;
    qsort(keys, nk, sizeof *keys, grid_cmp_i64);
    size_t u = 0;
    for (size_t q = 0; q < nk; q++)
        if (u == 0 || keys[q] != keys[u - 1]) keys[u++] = keys[q];
    G->ngrids = (int)u;
    G->grid_r0 = canopy_alloc(u + 1, sizeof(int), "grid", err);
    G->grid_pr = canopy_alloc(u + 1, sizeof(int), "grid", err);
    G->grid_pc = canopy_alloc(u + 1, sizeof(int), "grid", err);
    if (!G->grid_r0 || !G->grid_pr || !G->grid_pc) {
        st = grid_nomem(err);
        goto out;
    }
    for (size_t q = 0; q < u; q++) {
        int r0 = (int)(keys[q] / (R + 1)), r1 = (int)(keys[q] % (R + 1));
        G->grid_r0[q] = r0;
        sched_grid_shape_of(r1 - r0, shape, &G->grid_pr[q], &G->grid_pc[q]);
    }
    for (cint k = 0; k < n; k++) {
        if (G->cblk_grid[k] < 0) continue;
        int64_t key = (int64_t)(t0[k] / TR) * (R + 1) + t1[k] / TR;
        size_t lo = 0, hi = u;
        while (hi - lo > 1) {
            size_t mid = (lo + hi) / 2;
            if (keys[mid] <= key) lo = mid;
            else hi = mid;
        }
        G->cblk_grid[k] = (int)lo;
    }
    for (cint k = 0; k < n; k++) {
        cint b0 = S->cblk_fblok[k], bend = S->cblk_fblok[k + 1], g = 0;
        G->blok_group[b0] = -1;
        for (cint b = b0 + 1; b < bend; g++) {
            cint e = symbolic_group_end(S, k, b);
            for (; b < e; b++) G->blok_group[b] = g;
        }
    }
    /* the tiled tasks' ranks; an UPDATE2D into a tiled cblk waits for its target tile only */
    for (int i = 0; i < nt; i++) {
        cint k = D->cblk[i];
        int kd = D->kind[i];
        G->task_rank[i] = -1;
        if (G->cblk_grid[k] < 0 || (kd != SCHED_TASK_DIAG && kd != SCHED_TASK_TRSM && kd != SCHED_TASK_UPDATE2D))
            continue;
        if (kd == SCHED_TASK_DIAG) {
            G->task_rank[i] = sched_grid_tile_rank(G, k, k);
        } else if (kd == SCHED_TASK_TRSM) {
            G->task_rank[i] = sched_grid_tile_rank(G, k, S->blok_fcblk[D->first[i]]);
        } else {
            cint j = S->blok_fcblk[D->first[i]], j2 = S->blok_fcblk[D->tile[i]];
            int same = G->cblk_grid[j] >= 0 && G->cblk_grid[j] == G->cblk_grid[k];
            G->task_rank[i] = same ? sched_grid_tile_rank(G, j, j2) : sched_grid_tile_rank(G, k, j2);
            if (!same && G->shadow && G->cblk_grid[j] >= 0) { /* as sched_src_rank (plan.h) */
                int g = G->cblk_grid[k], r0 = G->grid_r0[g], p = G->grid_pc[g], rj = sched_grid_tile_rank(G, j, j);
                G->task_rank[i] = rj >= r0 && rj < r0 + p ? rj : r0 + G->cblk_pos[j] % p;
            }
            /* flat is executed, and there an update into j's off-diagonal rows could meet j's
             * DIAG adding its received fan-in (every row): its edge stays on DIAG(j) */
            if (G->cblk_grid[j] >= 0 && j2 != j && shape != SCHED_GRID_FLAT) {
                cint fb = grid_find_group(S, j, j2);
                int dst = fb >= 0 ? cblk_task[j] + 1 + (int)G->blok_group[fb] : -1;
                if (dst >= 0 && dst < nt && D->kind[dst] == SCHED_TASK_TRSM && D->first[dst] == fb)
                    D->succ[D->succ_ptr[i]] = dst; /* the only successor of an UPDATE2D */
            }
        }
    }
    for (int i = 0; i < nt; i++) D->npred[i] = 0;
    for (int e = 0; e < D->succ_ptr[nt]; e++) D->npred[D->succ[e]]++;
out:
    canopy_free(keys);
    if (st != CANOPY_SUCCESS) sched_grid_free(G);
    return st;
}

double sched_grid_target_bytes(const symbolic *S, const sched_dag *D, int dst, double sb)
{
    cint j = D->cblk[dst];
    double w = grid_width(S, j);
    switch (D->kind[dst]) {
    case SCHED_TASK_TRSM: return grid_group_rows(S, j, D->first[dst]) * w * sb;
    case SCHED_TASK_DIAG: return w * w * sb;
    default: return (double)S->cblk_stride[j] * w * sb;
    }
}

/* Bytes of the tile a DIAG or TRSM task broadcasts. */
static double grid_source_bytes(const symbolic *S, const sched_dag *D, int i, double sb)
{
    cint k = D->cblk[i];
    double w = grid_width(S, k);
    return D->kind[i] == SCHED_TASK_DIAG ? w * w * sb : grid_group_rows(S, k, D->first[i]) * w * sb;
}

/* floor(log2(p + 1)): the level of heap position p (comm/tree's binary shape) */
static inline int grid_level(int p)
{
    int l = 0;
    for (unsigned v = (unsigned)p + 1; v > 1; v >>= 1) l++;
    return l;
}

/* Scratch of the broadcasts' member lists: [R + 1] marks, all -1, then [R + 1] for the list (one
 * allocation: canopy_free the marks); NULL when out of memory. */
static int *grid_marks(int R, canopy_err *err)
{
    int *mark = canopy_alloc(2 * ((size_t)R + 1), sizeof(int), "grid scratch", err);
    for (int r = 0; mark && r < R; r++) mark[r] = -1;
    return mark;
}

/*
 * The ranks a broadcast from task i reaches besides its own, ascending, into @p list (returns the
 * count); @p mark ([R], all -1 on entry and on return) is scratch. rank_of: the tasks' ranks.
 */
static int grid_members(const sched_dag *D, int i, const int *rank_of, int *mark, int *list)
{
    int m = 0, own = rank_of[i];
    for (int e = D->succ_ptr[i]; e < D->succ_ptr[i + 1]; e++) {
        int r = rank_of[D->succ[e]];
        if (r < 0 || r == own || mark[r] >= 0) continue;
        mark[r] = m;
        list[m++] = r;
    }
    qsort(list, (size_t)m, sizeof *list, grid_cmp_int);
    for (int q = 0; q < m; q++) mark[list[q]] = q; /* heap position q + 1 (the root is 0) */
    return m;
}

canopy_status sched_grid_delays(const symbolic *S, const sched_dag *D, const sched_grid *G, double sb, double latency,
                                double byte_time, double *edge_delay, canopy_err *err)
{
    int R = G->nranks;
    int *mark = grid_marks(R, err);
    if (!mark) return grid_nomem(err);
    int *list = mark + R + 1;
    for (int i = 0; i < D->ntasks; i++) {
        if (G->task_rank[i] < 0) continue;
        int kd = D->kind[i];
        if (kd == SCHED_TASK_UPDATE2D) {
            int dst = D->succ[D->succ_ptr[i]];
            edge_delay[D->succ_ptr[i]] = latency + sched_grid_target_bytes(S, D, dst, sb) * byte_time;
            continue;
        }
        double hop = latency + grid_source_bytes(S, D, i, sb) * byte_time;
        int m = grid_members(D, i, G->task_rank, mark, list);
        for (int e = D->succ_ptr[i]; e < D->succ_ptr[i + 1]; e++) {
            int r = G->task_rank[D->succ[e]];
            edge_delay[e] = r >= 0 && r != G->task_rank[i] ? grid_level(mark[r] + 1) * hop : 0;
        }
        for (int q = 0; q < m; q++) mark[list[q]] = -1;
    }
    canopy_free(mark);
    return CANOPY_SUCCESS;
}

canopy_status sched_grid_count(const symbolic *S, const sched_dag *D, const int *task_rank_final, double sb,
                               sched_grid *G, canopy_err *err)
{
    int R = G->nranks, nt = D->ntasks;
    int *mark = grid_marks(R, err);
    int64_t *pairs = canopy_alloc((size_t)nt + 1, sizeof(int64_t), "grid scratch", err);
    if (!mark || !pairs) {
        canopy_free(mark);
        canopy_free(pairs);
        return grid_nomem(err);
    }
    int *list = mark + R + 1;
    G->diag_msgs = G->trsm_msgs = G->fanin_msgs = 0;
    G->diag_bytes = G->trsm_bytes = G->fanin_bytes = 0;
    size_t np = 0;
    for (int i = 0; i < nt; i++) {
        if (G->task_rank[i] < 0) continue;
        int kd = D->kind[i];
        if (kd == SCHED_TASK_UPDATE2D) {
            int dst = D->succ[D->succ_ptr[i]];
            if (task_rank_final[dst] != task_rank_final[i]) pairs[np++] = (int64_t)dst * R + task_rank_final[i];
            continue;
        }
        int m = grid_members(D, i, task_rank_final, mark, list);
        double b = grid_source_bytes(S, D, i, sb) * m;
        if (kd == SCHED_TASK_DIAG) {
            G->diag_msgs += m;
            G->diag_bytes += b;
        } else {
            G->trsm_msgs += m;
            G->trsm_bytes += b;
        }
        for (int q = 0; q < m; q++) mark[list[q]] = -1;
    }
    /* fan-in: one buffer per (target tile, source rank) */
    qsort(pairs, np, sizeof *pairs, grid_cmp_i64);
    for (size_t q = 0; q < np; q++) {
        if (q > 0 && pairs[q] == pairs[q - 1]) continue;
        G->fanin_msgs++;
        G->fanin_bytes += sched_grid_target_bytes(S, D, (int)(pairs[q] / R), sb);
    }
    canopy_free(mark);
    canopy_free(pairs);
    return CANOPY_SUCCESS;
}

canopy_status sched_grid_volume(const symbolic *S, const sched_dag *D, const sched_grid *G, const int *task_rank_final,
                                double sb, double *sent, double *recv, canopy_err *err)
{
    int R = G->nranks, nt = D->ntasks;
    int *mark = grid_marks(R, err);
    if (!mark) return grid_nomem(err);
    int *list = mark + R + 1;
    for (int i = 0; i < nt; i++) {
        if (G->task_rank[i] < 0) continue;
        int own = task_rank_final[i];
        if (D->kind[i] == SCHED_TASK_UPDATE2D) continue; /* fan-in: the plan's pairs count it */
        int m = grid_members(D, i, task_rank_final, mark, list);
        double b = grid_source_bytes(S, D, i, sb);
        for (int p = 0; p <= m; p++) { /* heap position p: the root (own), then list[p - 1] */
            int rk = p == 0 ? own : list[p - 1], kids = (2 * p + 1 <= m) + (2 * p + 2 <= m);
            sent[rk] += kids * b;
            if (p > 0) recv[rk] += b;
        }
        for (int q = 0; q < m; q++) mark[list[q]] = -1;
    }
    canopy_free(mark);
    return CANOPY_SUCCESS;
}

canopy_status sched_grid_place(const symbolic *S, sched_dag *D, const sched_grid *G, int TR, const int *gsnode, int *group,
                               int *follow, int *pref, const double *delay, double sb, double latency, double byte_time,
                               double **edge_delay, canopy_err *err)
{
    int nt = D->ntasks;
    size_t ne = (size_t)D->succ_ptr[nt];
    double *ed = canopy_alloc(ne + 1, sizeof(double), "grid edge delays", err);
    if (ed == NULL) return grid_nomem(err);
    for (size_t e = 0; e < ne; e++) ed[e] = delay[D->succ[e]];
    for (int i = 0; i < nt; i++) {
        int r = G->task_rank[i];
        if (r < 0) continue;
        group[i] = r;
        follow[i] = -1;
        D->snode[i] = gsnode[r];
        pref[i] = r * TR + G->cblk_pos[D->cblk[i]] % TR; /* spread the tiled cblks' data over the rank's threads */
    }
    canopy_status st = sched_grid_delays(S, D, G, sb, latency, byte_time, ed, err);
    if (st != CANOPY_SUCCESS) {
        canopy_free(ed);
        return st;
    }
    /* priorities with the messages: a tile's broadcast or fan-in lies on the path it delays. Edges
     * go from smaller to larger ids (the plan's task order), so one descending sweep does it */
    for (int i = nt - 1; i >= 0 && D->prio; i--) {
        double m = 0;
        for (int e = D->succ_ptr[i]; e < D->succ_ptr[i + 1]; e++) {
            int s = D->succ[e];
            double d = group[i] < 0 || group[s] < 0 || group[i] != group[s] ? ed[e] : 0;
            m = fmax(m, D->prio[s] + d);
        }
        D->prio[i] = D->cost[i] + m;
    }
    /* flat with shadows, lean (2): an update reading another rank's groups holds that rank's copy
     * of the cblk until it runs, and an update into an ancestor (a shadow's above all) is far from
     * urgent by its bottom level: it would hold the copy until the end. Ranked as urgent as the
     * group's most urgent reader, the copy's readers run together and the copy goes soon after its
     * groups came (less memory, the critical path's tasks wait more) */
    for (int i = 0; G->shadow == 2 && D->prio && i < nt; i++) {
        if (D->kind[i] != SCHED_TASK_TRSM || G->task_rank[i] < 0) continue;
        double top = D->prio[i] - D->cost[i];
        for (int e = D->succ_ptr[i]; e < D->succ_ptr[i + 1]; e++) {
            int s = D->succ[e];
            if (D->kind[s] == SCHED_TASK_UPDATE2D && group[s] != group[i] && D->prio[s] < top) D->prio[s] = top;
        }
    }
    *edge_delay = ed;
    return CANOPY_SUCCESS;
}

void sched_grid_held(const symbolic *S, const sched_grid *G, const int *cblk_rank, double sb, double *held)
{
    for (cint k = 0; k < S->ncblk; k++) {
        double w = grid_width(S, k);
        if (G->cblk_grid[k] < 0) {
            held[cblk_rank[k]] += (double)(S->cblk_coef[k + 1] - S->cblk_coef[k]) * sb;
            continue;
        }
        held[sched_grid_tile_rank(G, k, k)] += w * w * sb;
        for (cint b = S->cblk_fblok[k] + 1, bend = S->cblk_fblok[k + 1]; b < bend; b = symbolic_group_end(S, k, b))
            held[sched_grid_tile_rank(G, k, S->blok_fcblk[b])] += grid_group_rows(S, k, b) * w * sb;
    }
}

void sched_grid_free(sched_grid *G)
{
    if (G == NULL) return;
    canopy_free(G->grid_r0);
    canopy_free(G->grid_pr);
    canopy_free(G->grid_pc);
    canopy_free(G->cblk_grid);
    canopy_free(G->cblk_pos);
    canopy_free(G->blok_group);
    canopy_free(G->cblk_r0);
    canopy_free(G->cblk_r1);
    canopy_free(G->task_rank);
    memset(G, 0, sizeof *G);
}
