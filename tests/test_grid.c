/*
 * top2d (sched/grid.h): the shared top's tiles over 2D grids of ranks, as a pure function of
 * (block structure, ranks P, threads T), no MPI. For P in {2, 3, 4, 6, 8, 9, 16, 64, 256, 1024} x a
 * few T, on small 3D Laplacians cut into narrow pieces (many shared 2D cblks), every grid shape:
 *  - the grids: one per tiled rank range, pr x pc = its ranks, the shape the rule gives (recomputed
 *    here by trying every divisor), ranges of the shared cblks laminar along the tree;
 *  - tiles: each tile's owner, recomputed here from the definition (positions counted here), is a
 *    rank of its cblk's Snode; DIAG and TRSM run on their tile's owner, UPDATE2D on the target
 *    tile's owner inside one grid, else on its source tile's owner; the bytes held partition the
 *    factor;
 *  - messages: broadcasts and fan-ins recounted by brute force from the structure equal the plan's;
 *  - the simulation: a topological order where every task starts after each predecessor's end
 *    plus the message delay recomputed here (broadcast level x hop, tile fan-in) across ranks;
 *  - flat (executed): every rank's local plan, up to 1,024 ranks, against counts made here (the
 *    tasks partition by the rule, the group messages the senders list are those the readers
 *    expect, each reader reached once: check_flat_local);
 *  - top2d off: the plan is byte-identical to the one built without the option, and a shape on one
 *    rank or without 2D cblks changes nothing.
 */
#include "testutil.h"
#include "sched/plan.h"
#include "sched/grid.h"
#include "sched/distribute.h"
#include "symbolic/symbolic.h"

#define REQUIRE(cond, ...)                      \
    do {                                        \
        if (!(cond)) ck_abort_msg(__VA_ARGS__); \
    } while (0)

static const int P_list[] = {2, 3, 4, 6, 8, 9, 16, 64, 256, 1024};
#define NP ((int)(sizeof P_list / sizeof *P_list))

#define LAT 2e-6
#define BT 1e-10

/* SCOTCH's structure of an nx x ny x nz Laplacian, cut into @p split-column pieces at the top. */
static void laplacian_structure(int nx, int ny, int nz, cint split, int all, symbolic *S)
{
    canopy_csc A, G;
    canopy_err err = {0};
    ck_assert_int_eq(canopy_generate_laplacian(nx, ny, nz, 7, &A), CANOPY_SUCCESS);
    ck_assert_int_eq(matrix_graph(&A, &G, &err), CANOPY_SUCCESS);
    cint *perm = malloc(sizeof(cint) * ((size_t)G.n + 1)), *iperm = malloc(sizeof(cint) * ((size_t)G.n + 1));
    ck_assert_msg(order_compute(&G, CANOPY_ORDER_SCOTCH, NULL, 1, perm, iperm, &err) == CANOPY_SUCCESS, "%s", err.msg);
    symbolic_opts o = {1, 0.12, split, 1.0 / (2.0 * all)};
    memset(S, 0, sizeof *S);
    ck_assert_msg(symbolic_analyze(&G, perm, &o, S, &err) == CANOPY_SUCCESS, "%s", err.msg);
    free(perm);
    free(iperm);
    matrix_free(&G);
    canopy_csc_free(&A);
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static cint group_end(const symbolic *S, cint k, cint b)
{
    cint e = b + 1;
    while (e < S->cblk_fblok[k + 1] && S->blok_fcblk[e] == S->blok_fcblk[b]) e++;
    return e;
}

static double rows_of(const symbolic *S, cint k, cint b)
{
    cint e = group_end(S, k, b);
    cint end = e < S->cblk_fblok[k + 1] ? S->blok_coefrow[e] : S->cblk_stride[k];
    return (double)(end - S->blok_coefrow[b]);
}

/* the shape rule, by trying every divisor */
static void shape_here(int nr, int shape, int *pr, int *pc)
{
    int best = 1;
    if (shape == SCHED_GRID_TALL) best = nr;
    if (shape == SCHED_GRID_SQUARE)
        for (int d = 1; d <= nr; d++)
            if (nr % d == 0 && d <= nr / d) best = d;
    *pr = best;
    *pc = nr / best;
}

typedef struct ctx {
    const symbolic *S;
    const sched_plan *P;
    const sched_grid *G;
    int *pos;   /* positions counted here */
    int T, R;
    int shadow; /* flat: updates into a tiled cblk of a wider grid on its rank or its shadow (2: lean) */
} ctx;

/* owner of tile (k, j) of tiled k, from the definition */
static int owner_here(const ctx *c, cint k, cint j)
{
    const sched_grid *G = c->G;
    int r0 = G->cblk_r0[k], nr = G->cblk_r1[k] - r0, pr, pc;
    shape_here(nr, G->shape, &pr, &pc);
    return r0 + (c->pos[j] % pr) * pc + c->pos[k] % pc;
}

/* The rank of the update of tiled k's group facing jcol (its columns) by its group facing jrow (its
 * rows), from the definition: on the target tile's owner when jcol is tiled on k's grid; flat with
 * shadows, jcol tiled on another grid: jcol's own rank if it is one of k's ranks, else the rank
 * r0 + pos(jcol) mod p of k's ranks [r0, r0 + p); else on k's tile facing jrow. */
static int update_rank_here(const ctx *c, cint k, cint jcol, cint jrow)
{
    const sched_grid *G = c->G;
    if (G->cblk_grid[jcol] >= 0 && G->cblk_grid[jcol] == G->cblk_grid[k]) return owner_here(c, jcol, jrow);
    if (c->shadow && G->shape == SCHED_GRID_FLAT && G->cblk_grid[jcol] >= 0) {
        int r0 = G->cblk_r0[k], p = G->cblk_r1[k] - r0, rj = owner_here(c, jcol, jcol);
        return rj >= r0 && rj < r0 + p ? rj : r0 + c->pos[jcol] % p;
    }
    return owner_here(c, k, jrow);
}

static double tile_bytes_here(const symbolic *S, cint k, cint b, double sb)
{
    double w = (double)(S->cblk_fcol[k + 1] - S->cblk_fcol[k]);
    return b < 0 ? w * w * sb : rows_of(S, k, b) * w * sb;
}

static int cmpint(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return x < y ? -1 : x > y;
}

static int unique_others(int *r, int m, int own)
{
    qsort(r, (size_t)m, sizeof(int), cmpint);
    int u = 0;
    for (int q = 0; q < m; q++)
        if (r[q] != own && (u == 0 || r[u - 1] != r[q])) r[u++] = r[q];
    return u;
}

static int level_of(int p)
{
    int l = 0;
    while ((1 << (l + 1)) <= p + 1) l++;
    return l;
}

typedef struct grid_stats {
    int64_t plans, tiled_plans, tiles, chunks;
} grid_stats;

/* Facing groups of cblk k whose first bloks lie in [b0, b1). */
static int groups_in(const symbolic *S, cint k, cint b0, cint b1)
{
    int m = 0;
    for (cint b = b0; b < b1; b = group_end(S, k, b)) m++;
    return m;
}

/*
 * Flat's chunks (sched/plan_parts.h, plan_chunked): for every tiled cblk and column group, its
 * UPDATE2Ds' rows are consecutive runs of whole groups from the column group's own to the last,
 * min(groups left, ceil(sched_flat_chunks(threads per rank) / (x + 1))) of them for column group
 * x, balanced to one group; each waits for exactly the TRSMs of its column group and of its rows'
 * groups. Returns how many chunks hold several groups.
 */
static int64_t check_chunks(const symbolic *S, const sched_plan *P, const sched_grid *G, const char *ctxs)
{
    const sched_dag *D = &P->factor;
    int nt = D->ntasks;
    int *npt = calloc((size_t)nt + 1, sizeof(int));
    int64_t multi = 0;
    for (int i = 0; i < nt; i++) {
        if (D->kind[i] != SCHED_TASK_TRSM || G->cblk_grid[D->cblk[i]] < 0) continue;
        for (int e = D->succ_ptr[i]; e < D->succ_ptr[i + 1]; e++) {
            int s = D->succ[e];
            REQUIRE(D->kind[s] == SCHED_TASK_UPDATE2D && D->cblk[s] == D->cblk[i], "%s: TRSM %d -> task %d", ctxs, i, s);
            int inrows = D->first[i] >= D->tile[s] && D->first[i] < D->tile_end[s];
            REQUIRE(D->first[i] == D->first[s] || inrows, "%s: TRSM %d feeds UPDATE2D %d, which does not read it", ctxs, i, s);
            npt[s]++;
        }
    }
    for (int i = 0; i < nt;) {
        cint k = D->cblk[i];
        if (D->kind[i] != SCHED_TASK_UPDATE2D || G->cblk_grid[k] < 0) {
            i++;
            continue;
        }
        cint f = D->first[i], at = f, end = S->cblk_fblok[k + 1];
        int left = groups_in(S, k, f, end), m = 0, lo = left, hi = 0;
        int x = groups_in(S, k, S->cblk_fblok[k] + 1, f), c0 = sched_flat_chunks(P->threads_per_rank);
        int ch = (c0 + x) / (x + 1), want = left < ch ? left : ch;
        for (; i < nt && D->kind[i] == SCHED_TASK_UPDATE2D && D->cblk[i] == k && D->first[i] == f; i++, m++) {
            REQUIRE(D->tile[i] == at && D->tile_end[i] > at && D->tile_end[i] <= end &&
                        (D->tile_end[i] == end || S->blok_fcblk[D->tile_end[i]] != S->blok_fcblk[D->tile_end[i] - 1]),
                    "%s: cblk %d, column group at %d: chunk [%d, %d) after %d", ctxs, (int)k, (int)f, D->tile[i],
                    D->tile_end[i], (int)at);
            int g = groups_in(S, k, D->tile[i], D->tile_end[i]);
            multi += g > 1;
            lo = g < lo ? g : lo;
            hi = g > hi ? g : hi;
            REQUIRE(npt[i] == g + (D->tile[i] != f), "%s: UPDATE2D %d waits for %d TRSMs, reads %d groups", ctxs, i, npt[i],
                    g + (D->tile[i] != f));
            at = D->tile_end[i];
        }
        REQUIRE(at == end && m == want && hi - lo <= 1, "%s: cblk %d, column group at %d: %d chunks (%d..%d groups) to %d, want %d to %d",
                ctxs, (int)k, (int)f, m, lo, hi, (int)at, want, (int)end);
    }
    free(npt);
    return multi;
}

/*
 * top2d flat is executed: every rank's local plan (sched_plan_local) against counts made here. The
 * tasks partition over the ranks by the rule (update_rank_here: an UPDATE2D of k into j on j's rank
 * when both are tiled on the same grid, with shadows on j's rank or shadow among k's ranks when j is
 * tiled on a wider grid, else on k's rank; a tiled cblk on r0 + pos mod p); an UPDATE2D reading
 * another rank's groups waits for one message per group read; the group messages as the senders
 * list them (a TRSM's children, each reader's forwards) are the messages the readers expect (their
 * parents), one per (group, reader): every reader of every group reached exactly once.
 */
static void check_flat_local(const ctx *c, canopy_factorization kind, const char *ctxs, grid_stats *gs)
{
    const symbolic *S = c->S;
    const sched_plan *P = c->P;
    int R = c->R;
    const sched_dag *D = &P->factor;
    const sched_grid *G = P->grid;
    int nt = D->ntasks, parts = kind == CANOPY_FACT_LU ? 2 : 1;
    REQUIRE((P->cblk_xgrid != NULL) == (G->tiled_cblks > 0), "%s: executed grids without tiles, or the reverse", ctxs);
    if (P->cblk_xgrid == NULL) return;
    int *trk = malloc(sizeof(int) * ((size_t)nt + 1)), *covered = calloc((size_t)nt + 1, sizeof(int));
    int deg = 1;
    for (int i = 0; i < nt; i++) deg = D->succ_ptr[i + 1] - D->succ_ptr[i] > deg ? D->succ_ptr[i + 1] - D->succ_ptr[i] : deg;
    int *tmp = malloc(sizeof(int) * ((size_t)deg + 1));
    for (cint k = 0; k < S->ncblk; k++)
        if (G->cblk_grid[k] >= 0)
            REQUIRE(P->cblk_rank[k] == G->grid_r0[G->cblk_grid[k]] + G->cblk_pos[k] % G->grid_pc[G->cblk_grid[k]],
                    "%s: tiled cblk %d on rank %d", ctxs, (int)k, P->cblk_rank[k]);
    int64_t readers = 0;
    for (int i = 0; i < nt; i++) {
        cint k = D->cblk[i];
        trk[i] = P->cblk_rank[k];
        if (D->kind[i] == SCHED_TASK_UPDATE2D && G->cblk_grid[k] >= 0)
            trk[i] = update_rank_here(c, k, S->blok_fcblk[D->first[i]], S->blok_fcblk[D->tile[i]]);
    }
    for (int i = 0; i < nt; i++) {
        if (D->kind[i] != SCHED_TASK_TRSM || G->cblk_grid[D->cblk[i]] < 0) continue;
        int m = 0;
        for (int e = D->succ_ptr[i]; e < D->succ_ptr[i + 1]; e++)
            if (D->kind[D->succ[e]] == SCHED_TASK_UPDATE2D) tmp[m++] = trk[D->succ[e]];
        readers += unique_others(tmp, m, trk[i]);
    }
    size_t cap = (size_t)readers + 1, ns = 0, nr = 0;
    int64_t *sent = malloc(sizeof(int64_t) * cap), *expected = malloc(sizeof(int64_t) * cap);
    canopy_err err = {0};
    for (int r = 0; r < R; r++) {
        sched_local L;
        REQUIRE(sched_plan_local(S, P, r, parts, &L, &err) == CANOPY_SUCCESS, "%s: rank %d: %s", ctxs, r, err.msg);
        for (int l = 0; l < L.factor.ntasks; l++) {
            int g = L.task_global[l];
            REQUIRE(trk[g] == r && covered[g]++ == 0, "%s: task %d on rank %d, rule %d", ctxs, g, r, trk[g]);
            if (D->kind[g] == SCHED_TASK_UPDATE2D && P->cblk_rank[D->cblk[g]] != r)
                REQUIRE(L.ext[l] == groups_in(S, D->cblk[g], D->tile[g], D->tile_end[g]) + (D->first[g] != D->tile[g]),
                        "%s: rank %d: UPDATE2D %d waits for %d messages", ctxs, r, g, L.ext[l]);
            for (int x = L.xsend_ptr[l]; x < L.xsend_ptr[l + 1]; x++) {
                REQUIRE(D->kind[g] == SCHED_TASK_TRSM && ns < cap, "%s: rank %d: a send from task %d", ctxs, r, g);
                sent[ns++] = ((int64_t)D->first[g] * R + r) * R + L.xsend_rank[x];
            }
        }
        for (cint q = 0; q < L.nxrecv; q++) {
            REQUIRE(nr < cap && L.xrecv_ptr[q + 1] > L.xrecv_ptr[q], "%s: rank %d: a receive nobody reads", ctxs, r);
            expected[nr++] = ((int64_t)L.xrecv_blok[q] * R + L.xrecv_peer[q]) * R + r;
            for (int f = L.xfwd_ptr[q]; f < L.xfwd_ptr[q + 1]; f++) {
                REQUIRE(ns < cap, "%s: rank %d: too many forwards", ctxs, r);
                sent[ns++] = ((int64_t)L.xrecv_blok[q] * R + r) * R + L.xfwd_rank[f];
            }
        }
        REQUIRE(L.nxsend == L.xsend_ptr[L.factor.ntasks], "%s: rank %d: sends", ctxs, r);
        sched_local_free(&L);
    }
    for (int i = 0; i < nt; i++) REQUIRE(covered[i] == 1, "%s: task %d on %d ranks", ctxs, i, covered[i]);
    gs->chunks += check_chunks(S, P, G, ctxs);
    REQUIRE((int64_t)ns == readers && (int64_t)nr == readers, "%s: %lld readers, %zu sent, %zu expected", ctxs,
            (long long)readers, ns, nr);
    qsort(sent, ns, sizeof *sent, cmp64);
    qsort(expected, nr, sizeof *expected, cmp64);
    for (size_t q = 0; q < ns; q++) REQUIRE(sent[q] == expected[q], "%s: a group message sent is not the one expected", ctxs);
    free(sent);
    free(expected);
    free(trk);
    free(covered);
    free(tmp);
}

static void check_plan(const symbolic *S, int R, int T, int shape, int shadow, int levels, canopy_factorization kind,
                       const char *what, grid_stats *gs)
{
    char ctxs[200];
    snprintf(ctxs, sizeof ctxs, "%s, %d ranks x %d threads, shape %d%s, 2D levels %d, kind %d", what, R, T, shape,
             shadow == 2 ? " with lean shadows" : shadow ? " with shadows" : "", levels, (int)kind);
    sched_plan_opts o = {.nthreads = T, .kind = kind, .nranks = R, .comm_latency = LAT, .comm_byte_time = BT,
                         .twod_levels = levels, .top2d = shape, .flat_shadow = shadow};
    sched_plan P;
    canopy_err err = {0};
    REQUIRE(sched_plan_build(S, NULL, &o, &P, &err) == CANOPY_SUCCESS, "%s: %s", ctxs, err.msg);
    gs->plans++;
    const sched_dag *D = &P.factor;
    char why[256];
    REQUIRE(sched_dag_check(D, why, sizeof why) == 0, "%s: graph: %s", ctxs, why);
    const sched_grid *G = P.grid;
    cint n = S->ncblk;
    int nt = D->ntasks;
    if (G == NULL) {
        REQUIRE(P.twod_cblks == 0, "%s: 2D cblks but no grid", ctxs);
        sched_plan_free(&P);
        return;
    }
    gs->tiled_plans += G->tiled_cblks > 0;
    REQUIRE(G->shape == shape && G->nranks == R && G->ntasks == nt && G->ncblk == n, "%s: grid sizes", ctxs);
    ctx c = {S, &P, G, malloc(sizeof(int) * ((size_t)n + 1)), T, R, shape == SCHED_GRID_FLAT ? shadow : 0};
    REQUIRE(G->shadow == c.shadow, "%s: shadows %d", ctxs, G->shadow);
    /* positions and ranges: shared cblks numbered in order, ranges nest along the tree */
    int npos = 0;
    int64_t tiled = 0;
    for (cint k = 0; k < n; k++) {
        int sh = G->cblk_r1[k] - G->cblk_r0[k] >= 2;
        c.pos[k] = sh ? npos++ : -1;
        REQUIRE(G->cblk_pos[k] == c.pos[k], "%s: position of cblk %d", ctxs, (int)k);
        if (sh) {
            REQUIRE(G->cblk_r0[k] >= 0 && G->cblk_r1[k] <= R, "%s: cblk %d ranks", ctxs, (int)k);
            cint par = S->cblk_parent[k];
            REQUIRE(par < 0 || (G->cblk_r0[par] <= G->cblk_r0[k] && G->cblk_r1[k] <= G->cblk_r1[par]),
                    "%s: cblk %d ranks [%d, %d) outside its parent's", ctxs, (int)k, G->cblk_r0[k], G->cblk_r1[k]);
        }
        int is_diag = D->kind[P.cblk_task[k]] == SCHED_TASK_DIAG;
        REQUIRE((G->cblk_grid[k] >= 0) == (sh && is_diag), "%s: cblk %d tiled %d, shared %d, 2D %d", ctxs, (int)k,
                G->cblk_grid[k], sh, is_diag);
        if (G->cblk_grid[k] < 0) continue;
        tiled++;
        int g = G->cblk_grid[k], pr, pc;
        shape_here(G->cblk_r1[k] - G->cblk_r0[k], shape, &pr, &pc);
        REQUIRE(G->grid_r0[g] == G->cblk_r0[k] && G->grid_pr[g] == pr && G->grid_pc[g] == pc,
                "%s: grid of cblk %d is %d x %d from %d, rule %d x %d from %d", ctxs, (int)k, G->grid_pr[g], G->grid_pc[g],
                G->grid_r0[g], pr, pc, G->cblk_r0[k]);
    }
    REQUIRE(tiled == G->tiled_cblks, "%s: tiled count", ctxs);
    /* the widest grid: shapes for the counts the issue names */
    for (int g = 0; g < G->ngrids; g++) {
        int nr = G->grid_pr[g] * G->grid_pc[g];
        if (shape == SCHED_GRID_SQUARE) {
            REQUIRE(G->grid_pr[g] <= G->grid_pc[g], "%s: grid %d x %d", ctxs, G->grid_pr[g], G->grid_pc[g]);
            if (nr == 6 || nr == 8 || nr == 2 || nr == 3) REQUIRE(G->grid_pr[g] < G->grid_pc[g], "%s: square grid of %d", ctxs, nr);
            if (nr == 9 || nr == 16 || nr == 64 || nr == 256 || nr == 1024 || nr == 4)
                REQUIRE(G->grid_pr[g] == G->grid_pc[g], "%s: %d ranks as %d x %d", ctxs, nr, G->grid_pr[g], G->grid_pc[g]);
        }
    }

    /* tiles and tasks */
    double sb = kind == CANOPY_FACT_LU ? 16.0 : 8.0;
    double *held = calloc((size_t)R + 1, sizeof(double)), total = 0;
    for (cint k = 0; k < n; k++) {
        total += (double)(S->cblk_coef[k + 1] - S->cblk_coef[k]) * sb;
        if (G->cblk_grid[k] < 0) {
            held[P.cblk_rank[k]] += (double)(S->cblk_coef[k + 1] - S->cblk_coef[k]) * sb;
            continue;
        }
        int o0 = owner_here(&c, k, k);
        REQUIRE(o0 >= G->cblk_r0[k] && o0 < G->cblk_r1[k], "%s: diagonal tile of %d on rank %d", ctxs, (int)k, o0);
        REQUIRE(sched_grid_tile_rank(G, k, k) == o0, "%s: diagonal tile owner of %d", ctxs, (int)k);
        held[o0] += tile_bytes_here(S, k, -1, sb);
        gs->tiles++;
        for (cint b = S->cblk_fblok[k] + 1; b < S->cblk_fblok[k + 1]; b = group_end(S, k, b)) {
            cint j = S->blok_fcblk[b];
            int ot = owner_here(&c, k, j);
            REQUIRE(ot >= G->cblk_r0[k] && ot < G->cblk_r1[k], "%s: tile (%d, %d) on rank %d outside [%d, %d)", ctxs,
                    (int)k, (int)j, ot, G->cblk_r0[k], G->cblk_r1[k]);
            REQUIRE(sched_grid_tile_rank(G, k, j) == ot, "%s: tile (%d, %d) owner", ctxs, (int)k, (int)j);
            held[ot] += tile_bytes_here(S, k, b, sb);
            gs->tiles++;
        }
    }
    double *held_plan = calloc((size_t)R + 1, sizeof(double)), sum = 0;
    sched_grid_held(S, G, P.cblk_rank, sb, held_plan);
    for (int r = 0; r < R; r++) {
        REQUIRE(fabs(held[r] - held_plan[r]) <= 1e-9 * (1 + held[r]), "%s: rank %d holds %g, plan says %g", ctxs, r,
                held[r], held_plan[r]);
        sum += held_plan[r];
    }
    REQUIRE(fabs(sum - total) <= 1e-9 * total, "%s: tiles hold %g bytes of %g", ctxs, sum, total);
    free(held);
    free(held_plan);

    /* task ranks, from the definition; the brute-force messages */
    int *rk = malloc(sizeof(int) * ((size_t)nt + 1)), *tmp = malloc(sizeof(int) * ((size_t)nt + 1));
    for (int i = 0; i < nt; i++) rk[i] = D->owner[i] / T;
    int64_t dmsgs = 0, tmsgs = 0;
    int64_t *pairs = malloc(sizeof(int64_t) * ((size_t)nt + 1));
    size_t np = 0;
    for (int i = 0; i < nt; i++) {
        cint k = D->cblk[i];
        int kd = D->kind[i];
        if (G->cblk_grid[k] < 0 || (kd != SCHED_TASK_DIAG && kd != SCHED_TASK_TRSM && kd != SCHED_TASK_UPDATE2D)) {
            REQUIRE(G->task_rank[i] == -1, "%s: task %d of an untiled cblk pinned", ctxs, i);
            continue;
        }
        if (kd == SCHED_TASK_DIAG) {
            REQUIRE(rk[i] == owner_here(&c, k, k), "%s: DIAG %d off its tile's owner", ctxs, (int)k);
            /* consumers: the TRSMs of k, one per group */
            int m = 0;
            for (cint b = S->cblk_fblok[k] + 1; b < S->cblk_fblok[k + 1]; b = group_end(S, k, b))
                tmp[m++] = owner_here(&c, k, S->blok_fcblk[b]);
            dmsgs += unique_others(tmp, m, rk[i]);
        } else if (kd == SCHED_TASK_TRSM) {
            cint b = D->first[i], j = S->blok_fcblk[b];
            REQUIRE(rk[i] == owner_here(&c, k, j), "%s: TRSM (%d, %d) off its tile's owner", ctxs, (int)k, (int)j);
            /* consumers: UPDATE2D (x, g) for x <= g and (g, y) for y >= g: their ranks by definition */
            int m = 0;
            for (cint bx = S->cblk_fblok[k] + 1; bx < S->cblk_fblok[k + 1]; bx = group_end(S, k, bx)) {
                cint jx = S->blok_fcblk[bx];
                cint jcol = bx <= b ? jx : j, jrow = bx <= b ? j : jx; /* (columns, rows) of the update */
                tmp[m++] = update_rank_here(&c, k, jcol, jrow);
            }
            tmsgs += unique_others(tmp, m, rk[i]);
        } else {
            cint j = S->blok_fcblk[D->first[i]], j2 = S->blok_fcblk[D->tile[i]];
            int want = update_rank_here(&c, k, j, j2);
            REQUIRE(rk[i] == want, "%s: UPDATE2D (%d: %d, %d) on rank %d, rule %d", ctxs, (int)k, (int)j, (int)j2, rk[i],
                    want);
            /* its target: j's tile facing j2 (TRSM) or diagonal (DIAG), or j's panel when j is not tiled */
            int dst = D->succ[D->succ_ptr[i]];
            REQUIRE(D->succ_ptr[i + 1] - D->succ_ptr[i] == 1, "%s: UPDATE2D successors", ctxs);
            if (G->cblk_grid[j] >= 0) {
                if (j2 == j || shape == SCHED_GRID_FLAT) {
                    /* flat is executed: every update into j waits for DIAG(j), which adds the fan-in */
                    REQUIRE(dst == P.cblk_task[j], "%s: diagonal update into %d", ctxs, (int)j);
                } else {
                    REQUIRE(D->kind[dst] == SCHED_TASK_TRSM && D->cblk[dst] == j && S->blok_fcblk[D->first[dst]] == j2,
                            "%s: update into tile (%d, %d) goes to task %d", ctxs, (int)j, (int)j2, dst);
                }
                REQUIRE(rk[dst] == owner_here(&c, j, shape == SCHED_GRID_FLAT ? j : j2), "%s: target tile (%d, %d) task off its owner",
                        ctxs, (int)j, (int)j2);
            } else {
                REQUIRE(dst == P.cblk_task[j], "%s: update into untiled %d", ctxs, (int)j);
            }
            if (rk[dst] != rk[i]) pairs[np++] = (int64_t)dst * R + rk[i];
        }
    }
    qsort(pairs, np, sizeof *pairs, cmp64);
    int64_t fmsgs = 0;
    for (size_t q = 0; q < np; q++) fmsgs += q == 0 || pairs[q] != pairs[q - 1];
    REQUIRE(dmsgs == G->diag_msgs && tmsgs == G->trsm_msgs && fmsgs == G->fanin_msgs,
            "%s: messages diag %lld / %lld, tile %lld / %lld, fan-in %lld / %lld (counted / plan)", ctxs, (long long)dmsgs,
            (long long)G->diag_msgs, (long long)tmsgs, (long long)G->trsm_msgs, (long long)fmsgs,
            (long long)G->fanin_msgs);
    free(pairs);

    /* the simulation: topological, and each start after every predecessor's end + its message */
    double mk = 0;
    for (int i = 0; i < nt; i++) {
        mk = fmax(mk, P.task_end[i]);
        int kd = D->kind[i], pinned = G->task_rank[i] >= 0, m = 0;
        double hop = 0;
        if (pinned && (kd == SCHED_TASK_DIAG || kd == SCHED_TASK_TRSM)) {
            for (int e = D->succ_ptr[i]; e < D->succ_ptr[i + 1]; e++) tmp[m++] = rk[D->succ[e]];
            m = unique_others(tmp, m, rk[i]);
            hop = LAT + tile_bytes_here(S, D->cblk[i], kd == SCHED_TASK_DIAG ? -1 : D->first[i], sb) * BT;
        }
        for (int e = D->succ_ptr[i]; e < D->succ_ptr[i + 1]; e++) {
            int s = D->succ[e];
            REQUIRE(P.task_seq[i] < P.task_seq[s], "%s: edge %d -> %d against the sequence", ctxs, i, s);
            double need = P.task_end[i];
            if (rk[s] != rk[i]) {
                cint j = D->cblk[s];
                double w = (double)(S->cblk_fcol[j + 1] - S->cblk_fcol[j]);
                double d = LAT + sb * (double)S->cblk_stride[j] * w * BT; /* fan-in of a panel, as today */
                if (pinned && kd == SCHED_TASK_UPDATE2D) {
                    double tb = D->kind[s] == SCHED_TASK_TRSM ? tile_bytes_here(S, j, D->first[s], sb)
                              : D->kind[s] == SCHED_TASK_DIAG ? w * w * sb : sb * (double)S->cblk_stride[j] * w;
                    d = LAT + tb * BT;
                } else if (pinned) {
                    int p = 0;
                    while (p < m && tmp[p] != rk[s]) p++;
                    REQUIRE(p < m, "%s: broadcast misses rank %d", ctxs, rk[s]);
                    d = level_of(p + 1) * hop;
                }
                need += d;
            }
            REQUIRE(P.task_start[s] >= need * (1 - 1e-12) - 1e-15, "%s: task %d starts at %g, predecessor %d ends %g + message",
                    ctxs, s, P.task_start[s], i, P.task_end[i]);
        }
    }
    REQUIRE(fabs(mk - D->predicted_time) <= 1e-12 * (1 + mk), "%s: makespan", ctxs);
    if (shape == SCHED_GRID_FLAT) check_flat_local(&c, kind, ctxs, gs);
    free(rk);
    free(tmp);
    free(c.pos);
    sched_plan_free(&P);
}

/* the plan's arrays, byte for byte */
static int same_plan(const sched_plan *A, const sched_plan *B, const symbolic *S)
{
    const sched_dag *a = &A->factor, *b = &B->factor;
    int nt = a->ntasks;
    size_t n = (size_t)S->ncblk;
#define SAME(x, y, m) (memcmp((x), (y), (m) * sizeof *(x)) == 0)
    return nt == b->ntasks && a->predicted_time == b->predicted_time && A->twod_cblks == B->twod_cblks &&
           SAME(a->owner, b->owner, nt) && SAME(a->succ, b->succ, a->succ_ptr[nt]) && SAME(a->succ_ptr, b->succ_ptr, nt + 1) &&
           SAME(a->npred, b->npred, nt) && SAME(a->snode, b->snode, nt) && SAME(a->cost, b->cost, nt) &&
           SAME(a->prio, b->prio, nt) && SAME(a->list, b->list, nt) && SAME(a->list_ptr, b->list_ptr, a->nthreads + 1) &&
           SAME(A->task_seq, B->task_seq, nt) && SAME(A->task_start, B->task_start, nt) &&
           SAME(A->task_end, B->task_end, nt) && SAME(A->cblk_rank, B->cblk_rank, n) &&
           SAME(A->cblk_owner, B->cblk_owner, n) && SAME(A->blok_contrib, B->blok_contrib, (size_t)S->nblok) &&
           SAME(A->task_contrib, B->task_contrib, nt) && SAME(A->cblk_ncontrib, B->cblk_ncontrib, n);
#undef SAME
}

static void check_off(const symbolic *S, int R, int T, int levels)
{
    sched_plan_opts o = {.nthreads = T, .kind = CANOPY_FACT_LDLT, .nranks = R, .comm_latency = LAT,
                         .comm_byte_time = BT, .twod_levels = levels};
    sched_plan A, B;
    canopy_err err = {0};
    ck_assert_msg(sched_plan_build(S, NULL, &o, &A, &err) == CANOPY_SUCCESS, "%s", err.msg);
    ck_assert(A.grid == NULL);
    sched_plan_opts o2 = o;
    o2.top2d = SCHED_GRID_OFF;
    ck_assert_msg(sched_plan_build(S, NULL, &o2, &B, &err) == CANOPY_SUCCESS, "%s", err.msg);
    ck_assert_msg(same_plan(&A, &B, S), "%d x %d: top2d off differs", R, T);
    sched_plan_free(&B);
    /* a shape changes nothing where nothing is tiled: one rank, or no 2D level */
    if (R == 1 || levels == 0) {
        o2.top2d = SCHED_GRID_SQUARE;
        ck_assert_msg(sched_plan_build(S, NULL, &o2, &B, &err) == CANOPY_SUCCESS, "%s", err.msg);
        ck_assert_msg(same_plan(&A, &B, S), "%d x %d, 2D levels %d: a shape changed an untiled plan", R, T, levels);
        ck_assert(B.grid == NULL || B.grid->tiled_cblks == 0);
        sched_plan_free(&B);
    }
    sched_plan_free(&A);
}

START_TEST(grids)
{
    static const int T_list[] = {1, 2, 4, 16};
    grid_stats gs = {0};
    for (int a = 0; a < NP; a++)
        for (int t = 0; t < 4; t++) {
            int R = P_list[a], T = T_list[t];
            if (R * T > 4096 && t != 3) continue;
            symbolic S;
            laplacian_structure(18, 17, 16, 48, R * T, &S);
            for (int shape = SCHED_GRID_SQUARE; shape <= SCHED_GRID_TALL + 1; shape++)
                check_plan(&S, R, T, shape > SCHED_GRID_TALL ? SCHED_GRID_FLAT : shape,
                           shape > SCHED_GRID_TALL ? 1 + (a + t) % 2 : 0, /* shadows, lean or not */
                           shape == SCHED_GRID_SQUARE ? 64 : (a + t) % 2 ? 2 : -1,
                           shape == SCHED_GRID_FLAT ? CANOPY_FACT_LU : shape == SCHED_GRID_TALL ? CANOPY_FACT_LDLT : CANOPY_FACT_LLT,
                           "Laplacian 18x17x16", &gs);
            symbolic_free(&S);
        }
    printf("grids: %lld plans, %lld with tiled cblks, %lld tiles checked, %lld flat chunks of several groups\n",
           (long long)gs.plans, (long long)gs.tiled_plans, (long long)gs.tiles, (long long)gs.chunks);
    ck_assert(gs.tiled_plans > 0);
    ck_assert(gs.chunks > 0);
}
END_TEST

START_TEST(auto_shape)
{
    /* auto keeps one of the three shapes, the shortest */
    symbolic S;
    laplacian_structure(14, 13, 12, 32, 64, &S);
    sched_plan_opts o = {.nthreads = 4, .kind = CANOPY_FACT_LLT, .nranks = 16, .comm_latency = LAT, .comm_byte_time = BT,
                         .twod_levels = 64, .top2d = -1};
    sched_plan P;
    canopy_err err = {0};
    ck_assert_msg(sched_plan_build(&S, NULL, &o, &P, &err) == CANOPY_SUCCESS, "%s", err.msg);
    ck_assert(P.grid != NULL && P.grid->shape >= SCHED_GRID_SQUARE && P.grid->shape <= SCHED_GRID_TALL);
    for (int shape = SCHED_GRID_SQUARE; shape <= SCHED_GRID_TALL; shape++) {
        sched_plan Q;
        o.top2d = shape;
        ck_assert_msg(sched_plan_build(&S, NULL, &o, &Q, &err) == CANOPY_SUCCESS, "%s", err.msg);
        ck_assert(P.factor.predicted_time <= Q.factor.predicted_time);
        if (shape == P.grid->shape) ck_assert(same_plan(&P, &Q, &S));
        sched_plan_free(&Q);
    }
    sched_plan_free(&P);
    o.top2d = 7;
    ck_assert_int_eq(sched_plan_build(&S, NULL, &o, &P, &err), CANOPY_ERR_ARGUMENT);
    symbolic_free(&S);
}
END_TEST

START_TEST(message_heap)
{
    /* the simulation's messages in flight grow their heap as they come (it was sized for every
     * edge): the same plan whether it grows or not, and a failed growth is a clear error */
    symbolic S;
    laplacian_structure(14, 13, 12, 32, 64, &S);
    sched_plan_opts o = {.nthreads = 4, .kind = CANOPY_FACT_LLT, .nranks = 16, .comm_latency = LAT, .comm_byte_time = BT,
                         .twod_levels = 64, .top2d = SCHED_GRID_FLAT, .flat_shadow = 1};
    sched_plan P, Q;
    canopy_err err = {0};
    ck_assert_msg(sched_plan_build(&S, NULL, &o, &P, &err) == CANOPY_SUCCESS, "%s", err.msg);
    ck_assert_msg(sched_plan_build(&S, NULL, &o, &Q, &err) == CANOPY_SUCCESS, "%s", err.msg);
    ck_assert(same_plan(&P, &Q, &S));
    sched_plan_free(&Q);
    /* more than the first 64 messages in flight at once on this layout: the heap grew */
    canopy_alloc_fail_named("simulation messages", 0);
    canopy_status st = sched_plan_build(&S, NULL, &o, &Q, &err);
    int pending = canopy_alloc_fail_named_pending();
    canopy_alloc_fail_named(NULL, 0);
    ck_assert_msg(!pending, "the message heap never grew: the test no longer covers its growth");
    ck_assert_int_eq(st, CANOPY_ERR_NOMEM);
    ck_assert_msg(strstr(err.msg, "simulation") != NULL, "%s", err.msg);
    sched_plan_free(&P);
    symbolic_free(&S);
}
END_TEST

START_TEST(off_is_today)
{
    static const int RT[][2] = {{1, 4}, {2, 2}, {3, 4}, {8, 2}, {64, 4}, {1024, 1}};
    for (int q = 0; q < 6; q++) {
        symbolic S;
        laplacian_structure(14, 13, 12, 32, RT[q][0] * RT[q][1], &S);
        check_off(&S, RT[q][0], RT[q][1], -1);
        check_off(&S, RT[q][0], RT[q][1], 0);
        symbolic_free(&S);
    }
}
END_TEST

START_TEST(shapes)
{
    /* the rule for the counts of the issue */
    static const int want[][3] = {{2, 1, 2}, {3, 1, 3}, {4, 2, 2}, {6, 2, 3}, {8, 2, 4}, {9, 3, 3}, {16, 4, 4},
                                  {64, 8, 8}, {256, 16, 16}, {1024, 32, 32}, {7, 1, 7}, {12, 3, 4}, {1, 1, 1}};
    for (int q = 0; q < (int)(sizeof want / sizeof *want); q++) {
        int pr, pc;
        sched_grid_shape_of(want[q][0], SCHED_GRID_SQUARE, &pr, &pc);
        ck_assert_msg(pr == want[q][1] && pc == want[q][2], "%d ranks: %d x %d", want[q][0], pr, pc);
        sched_grid_shape_of(want[q][0], SCHED_GRID_FLAT, &pr, &pc);
        ck_assert(pr == 1 && pc == want[q][0]);
        sched_grid_shape_of(want[q][0], SCHED_GRID_TALL, &pr, &pc);
        ck_assert(pr == want[q][0] && pc == 1);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("grid");
    TCase *tc = tcase_create("grid");
    tcase_set_timeout(tc, 1200);
    tcase_add_test(tc, shapes);
    tcase_add_test(tc, off_is_today);
    tcase_add_test(tc, auto_shape);
    tcase_add_test(tc, message_heap);
    tcase_add_test(tc, grids);
    suite_add_tcase(s, tc);
    return testutil_run(s);
}
