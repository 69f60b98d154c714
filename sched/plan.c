/*
 * The static plan of one rank (see plan.h): task costs from the kernel cost model, proportional
 * mapping of the cblk tree onto the threads and its Snodes (papers/numa-scheduler-pastix.txt,
 * sections 5.1-5.2), data owners, subtree tasks, the factorization graph, its simulation
 * (sched/simulate.c) and the order of the contributions into each cblk; the solve graph over the
 * same units. Runs nothing: sched/engine.c executes the graphs, src/ supplies the task bodies.
 *
 * Everything here is O((cblks + bloks) log) and deterministic: no hash order, no time, ties
 * always broken by the smaller index.
 */
#include "plan.h"
#include "grid.h"
#include "simulate.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Column chunk of the symmetric update's diagonal square: K_SQUARE_CHUNK of factor_template.c. */
#define PLAN_SQUARE_CHUNK 192

/* What running one more task costs the engine (queue, dependencies, wake-up), seconds: charged
 * to the 2D tasks so that the model does not cut a cblk finer than pays. */
#define PLAN_TASK_OVERHEAD 2e-6

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

static canopy_status plan_nomem(canopy_err *err)
{
    return err && err->status ? err->status : CANOPY_ERR_NOMEM;
}

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

/* ---- costs ---------------------------------------------------------------------------------- */

typedef struct plan_build {
    const symbolic *S;
    const sched_cost_model *cm;
    canopy_factorization kind;
    double scale;     /* 4 for complex arithmetic */
    int T;
    cint n;           /* ncblk; node n is the virtual root over the roots */
    double *ucost;    /* [nblok] at a group's first blok: its update task's cost */
    double *pcost;    /* [n] panel cost */
    cint *child_ptr;  /* [n + 2] children of node k: child[child_ptr[k] .. child_ptr[k+1]-1], ascending */
    cint *child;      /* [n] */
    double *sub;      /* [n + 1] cost of the subtree */
    cint *first;      /* [n] first (smallest) cblk of the subtree */
    cint *size;       /* [n] cblks in the subtree */
    cint *sroot;      /* [n] root of the SUBTREE task holding the cblk, -1 if none */
    int *t0, *t1;     /* [n + 1] candidate threads (the virtual root: [0, T)) */
    struct plan_pair *pairs; /* [n + 1] mapping scratch */
    double *tload;    /* [T] mapping scratch */
    int *theap;       /* [T] mapping scratch */
    int R;            /* ranks; T = R x threads per rank */
    int *rank;        /* [n] the rank of each cblk (R > 1) */
    unsigned char *shared; /* [n] the cblk had several candidate ranks */
    unsigned char *twod;   /* [n] the cblk's panel and updates are 2D tasks */
    cint *gstart;          /* [nblok] scratch: first bloks of one cblk's facing groups */
} plan_build;

/* Panel row of global row @p row inside cblk j, or -1 (binary search over j's bloks). */
static cint plan_trow(const symbolic *S, cint j, cint row)
{
    cint fc = S->cblk_fcol[j];
    if (row < fc) return -1;
    if (row < S->cblk_fcol[j + 1]) return row - fc;
    cint lo = S->cblk_fblok[j] + 1, hi = S->cblk_fblok[j + 1] - 1;
    while (lo <= hi) {
        cint mid = lo + (hi - lo) / 2;
        if (S->blok_lrow[mid] < row) lo = mid + 1;
        else if (S->blok_frow[mid] > row) hi = mid - 1;
        else return S->blok_coefrow[mid] + (row - S->blok_frow[mid]);
    }
    return -1;
}

/* Panel row just after blok b's rows (the stride after the last blok). */
static inline cint plan_row_end(const symbolic *S, cint k, cint b)
{
    return b < S->cblk_fblok[k + 1] ? S->blok_coefrow[b] : S->cblk_stride[k];
}

/* Do k's panel rows of bloks sb..se-1 land on consecutive rows of j's panel? They are a subset of
 * j's rows (closure), so it suffices that the first and last are as far apart as their count: two
 * binary searches instead of the kernel's walk over all of j's bloks. */
static int plan_contiguous(const symbolic *S, cint k, cint sb, cint se, cint j)
{
    cint count = plan_row_end(S, k, se) - S->blok_coefrow[sb];
    cint r0 = plan_trow(S, j, S->blok_frow[sb]), r1 = plan_trow(S, j, S->blok_lrow[se - 1]);
    return r0 >= 0 && r1 >= 0 && r1 - r0 + 1 == count;
}

/* What kdiag of src/numeric/factor_template.c calls for cblk k. */
static double plan_diag_cost(const plan_build *B, cint k)
{
    double w = (double)(B->S->cblk_fcol[k + 1] - B->S->cblk_fcol[k]);
    switch (B->kind) {
    case CANOPY_FACT_LLT: return cost_potrf(B->cm, w) * B->scale;
    case CANOPY_FACT_LDLT: return cost_sytrf(B->cm, w) * B->scale;
    default: return cost_getrf(B->cm, w) * B->scale;
    }
}

/* What koffdiag calls for m rows of cblk k: one TRSM (two for LU: L and U^T), plus the pass
 * that keeps L*D and scales by D^-1 for LDL^T. */
static double plan_offdiag_cost(const plan_build *B, cint k, double m)
{
    const sched_cost_model *cm = B->cm;
    double w = (double)(B->S->cblk_fcol[k + 1] - B->S->cblk_fcol[k]);
    switch (B->kind) {
    case CANOPY_FACT_LLT: return cost_trsm(cm, m, w) * B->scale;
    case CANOPY_FACT_LDLT: return (cost_trsm(cm, m, w) + cost_scatter(cm, m * w)) * B->scale;
    default: return 2 * cost_trsm(cm, m, w) * B->scale;
    }
}

/* What kpanel calls for cblk k. */
static double plan_panel_cost(const plan_build *B, cint k)
{
    double w = (double)(B->S->cblk_fcol[k + 1] - B->S->cblk_fcol[k]);
    return plan_diag_cost(B, k) + plan_offdiag_cost(B, k, (double)B->S->cblk_stride[k] - w);
}

/* What kupdate_rows calls for k's rows in bloks rb0..rb1-1 against its bloks fb0..fb1-1 facing
 * one cblk (fb0 <= rb0): GEMM(rows x facing height x width of k), the symmetric kinds in column
 * chunks of the lower part when the rows start with the facing square, LU once for L and once
 * for U^T; a scatter when the rows are not contiguous in the target. */
static double plan_update_cost(const plan_build *B, cint k, cint fb0, cint fb1, cint rb0, cint rb1)
{
    const symbolic *S = B->S;
    const sched_cost_model *cm = B->cm;
    cint j = S->blok_fcblk[fb0];
    cint rows = plan_row_end(S, k, rb1) - S->blok_coefrow[rb0], hb = plan_row_end(S, k, fb1) - S->blok_coefrow[fb0];
    double w = (double)(S->cblk_fcol[k + 1] - S->cblk_fcol[k]), dr = (double)rows, dh = (double)hb;
    int single = fb1 - fb0 == 1, square = rb0 == fb0;
    double t = 0;
    if (B->kind != CANOPY_FACT_LU) {
        if (square) {
            for (cint c0 = 0; c0 < hb; c0 += PLAN_SQUARE_CHUNK) {
                cint nc = hb - c0 < PLAN_SQUARE_CHUNK ? hb - c0 : PLAN_SQUARE_CHUNK;
                t += cost_gemm(cm, (double)(rows - c0), (double)nc, w);
            }
        } else {
            t += cost_gemm(cm, dr, dh, w);
        }
        if (!(single && plan_contiguous(S, k, rb0, rb1, j)))
            t += cost_scatter(cm, square ? dr * dh - dh * (dh - 1) / 2 : dr * dh);
    } else {
        t += cost_gemm(cm, dr, dh, w);
        if (!(single && plan_contiguous(S, k, rb0, rb1, j))) t += cost_scatter(cm, dr * dh);
        cint ub0 = rb0 > fb1 ? rb0 : fb1;
        if (ub0 < rb1) {
            double du = (double)(plan_row_end(S, k, rb1) - S->blok_coefrow[ub0]);
            t += cost_gemm(cm, du, dh, w);
            if (!(single && plan_contiguous(S, k, ub0, rb1, j))) t += cost_scatter(cm, du * dh);
        }
    }
    return t * B->scale;
}

/* End of the facing group starting at blok b of cblk k. */
static inline cint plan_group_end(const symbolic *S, cint k, cint b)
{
    cint e = b + 1, bend = S->cblk_fblok[k + 1];
    while (e < bend && S->blok_fcblk[e] == S->blok_fcblk[b]) e++;
    return e;
}

/* Facing groups of cblk k. */
static cint plan_ngroups(const symbolic *S, cint k)
{
    cint ng = 0;
    for (cint b = S->cblk_fblok[k] + 1, bend = S->cblk_fblok[k + 1]; b < bend; b = plan_group_end(S, k, b)) ng++;
    return ng;
}

/* Id of the UPDATE2D task (columns of group x, rows of group y >= x) of the 2D cblk whose DIAG
 * task is d0 with ng facing groups: after the DIAG and the ng TRSMs, by x then y. */
static inline int plan_update2d_id(int d0, int ng, int x, int y)
{
    return d0 + 1 + ng + x * ng - x * (x - 1) / 2 + (y - x);
}

/* Panel and update costs (B->pcost, B->ucost) and cblk costs (@p cblk_cost, when not NULL). */
static void plan_unit_costs(plan_build *B, double *cblk_cost)
{
    const symbolic *S = B->S;
    for (cint k = 0; k < B->n; k++) {
        B->pcost[k] = plan_panel_cost(B, k);
        double c = B->pcost[k];
        for (cint b = S->cblk_fblok[k] + 1, bend = S->cblk_fblok[k + 1]; b < bend;) {
            cint e = plan_group_end(S, k, b);
            B->ucost[b] = plan_update_cost(B, k, b, e, b, S->cblk_fblok[k + 1]);
            c += B->ucost[b];
            b = e;
        }
        if (cblk_cost) cblk_cost[k] = c;
    }
}

/* Panel and update costs, cblk costs, the tree and the subtree sums. */
static void plan_costs_and_tree(plan_build *B, sched_plan *P)
{
    const symbolic *S = B->S;
    cint n = B->n;
    plan_unit_costs(B, P->cblk_cost);
    /* children lists by counting sort on the parent (node n: the roots), ascending */
    for (cint k = 0; k <= n + 1; k++) B->child_ptr[k] = 0;
    for (cint k = 0; k < n; k++) {
        cint p = S->cblk_parent[k] < 0 ? n : S->cblk_parent[k];
        B->child_ptr[p + 1]++;
    }
    for (cint k = 0; k <= n; k++) B->child_ptr[k + 1] += B->child_ptr[k];
    for (cint k = 0; k < n; k++) {
        cint p = S->cblk_parent[k] < 0 ? n : S->cblk_parent[k];
        B->child[B->child_ptr[p]++] = k;
    }
    for (cint k = n; k > 0; k--) B->child_ptr[k] = B->child_ptr[k - 1];
    B->child_ptr[0] = 0;
    /* children come before their parent: one ascending sweep accumulates the subtrees */
    B->sub[n] = 0;
    for (cint k = 0; k < n; k++) {
        B->sub[k] = P->cblk_cost[k];
        B->first[k] = k;
        B->size[k] = 1;
    }
    for (cint k = 0; k < n; k++) {
        cint p = S->cblk_parent[k];
        if (p < 0) {
            B->sub[n] += B->sub[k];
            continue;
        }
        B->sub[p] += B->sub[k];
        B->size[p] += B->size[k];
        if (B->first[k] < B->first[p]) B->first[p] = B->first[k];
    }
}

/* ---- proportional mapping -------------------------------------------------------------------- */

typedef struct plan_pair {
    double key;
    cint idx;
} plan_pair;

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

static void plan_split(plan_build *B, cint node)
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
static canopy_status plan_map_ranks(plan_build *B, sched_plan *P, canopy_err *err)
{
    (void)P;
    const symbolic *S = B->S;
    cint n = B->n;
    int R = B->R, TR = B->T / R;
    int T = B->T;
    B->T = R;
    B->t0[n] = 0;
    B->t1[n] = R;
    plan_split(B, n);
    for (cint k = n - 1; k >= 0; k--) plan_split(B, k);
    B->T = T;
    for (cint k = 0; k < n; k++) {
        B->shared[k] = B->t1[k] - B->t0[k] > 1;
        B->rank[k] = B->shared[k] ? -1 : B->t0[k];
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
static canopy_status plan_snodes(plan_build *B, sched_plan *P, canopy_err *err)
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

/* ---- tasks -------------------------------------------------------------------------------------- */

/* Per-task data the simulation needs besides the graph. */
typedef struct plan_tasks {
    int *cand_t0, *cand_t1; /* [ntasks] candidate threads */
    int *pref;              /* [ntasks] preferred thread on ties: the data owner */
    cint *serial;           /* [ntasks] UPDATE: target cblk (updates into it are serialized), else -1 */
} plan_tasks;

/*
 * SUBTREE tasks: maximal subtrees on one thread whose cost is at most @p limit and whose cblks are
 * consecutive (a task runs first..root in order). Parents come after children, so a descending
 * sweep meets every subtree's root first. T == 1: every root's whole tree (limit = infinity).
 */
static void plan_subtrees(plan_build *B, double limit)
{
    const symbolic *S = B->S;
    for (cint k = B->n - 1; k >= 0; k--) {
        cint par = S->cblk_parent[k];
        if (par >= 0 && B->sroot[par] >= 0) B->sroot[k] = B->sroot[par];
        else if (B->t1[k] - B->t0[k] == 1 && !B->shared[k] && B->sub[k] <= limit && k - B->first[k] + 1 == B->size[k])
            B->sroot[k] = k;
        else B->sroot[k] = -1;
    }
}

/* Task ids in ascending cblk order (PANEL k, then its UPDATEs; a SUBTREE at its root): every
 * edge goes from a smaller id to a larger one. Fills the per-task arrays and cblk_task. */
static canopy_status plan_make_tasks(plan_build *B, sched_plan *P, plan_tasks *X, canopy_err *err)
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
        int64_t ng = plan_ngroups(S, k);
        nt += B->twod[k] ? ng + ng * (ng + 1) / 2 : ng;
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
    if (any2d) D->tile = canopy_alloc(m, sizeof(int), "tasks", err);
    if (!P->task_contrib || (any2d && !D->tile) || !D->kind || !D->cblk || !D->first || !D->cost || !D->owner || !D->snode || !D->level || !D->npred ||
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
        if (D->tile) D->tile[id] = -1;                                                   \
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
            for (cint b = S->cblk_fblok[k] + 1; b < bend; b = plan_group_end(S, k, b)) B->gstart[ng++] = b;
            PLAN_TASK(SCHED_TASK_DIAG, k, k, plan_diag_cost(B, k) + PLAN_TASK_OVERHEAD, k);
            id++;
            for (cint g = 0; g < ng; g++) {
                cint b = B->gstart[g], e = plan_group_end(S, k, b);
                double rows = (double)(plan_row_end(S, k, e) - S->blok_coefrow[b]);
                PLAN_TASK(SCHED_TASK_TRSM, k, b, plan_offdiag_cost(B, k, rows) + PLAN_TASK_OVERHEAD, k);
                id++;
            }
            for (cint g = 0; g < ng; g++) {
                cint fb0 = B->gstart[g], fb1 = plan_group_end(S, k, fb0);
                for (cint g2 = g; g2 < ng; g2++) {
                    cint rb0 = B->gstart[g2], rb1 = plan_group_end(S, k, rb0);
                    PLAN_TASK(SCHED_TASK_UPDATE2D, k, fb0, plan_update_cost(B, k, fb0, fb1, rb0, rb1) + PLAN_TASK_OVERHEAD,
                              k);
                    D->tile[id] = (int)rb0;
                    id++;
                }
            }
            continue;
        }
        PLAN_TASK(SCHED_TASK_PANEL, k, k, B->pcost[k], k);
        id++;
        for (cint b = S->cblk_fblok[k] + 1, bend = S->cblk_fblok[k + 1]; b < bend; b = plan_group_end(S, k, b)) {
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
static canopy_status plan_edges(plan_build *B, sched_plan *P, cint *stamp, canopy_err *err)
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
                for (int x = 0; x < g; x++, e++)
                    if (pass == 1) D->succ[base + e] = plan_update2d_id(d0, ng, x, g);
                for (int y = g; y < ng; y++, e++)
                    if (pass == 1) D->succ[base + e] = plan_update2d_id(d0, ng, g, y);
            } else if (D->kind[i] == SCHED_TASK_PANEL) {
                for (cint b = S->cblk_fblok[k] + 1, bend = S->cblk_fblok[k + 1]; b < bend; b = plan_group_end(S, k, b)) {
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

/*
 * Contribution numbers, the ticket order of scheduler=static: into each target, in the order the
 * simulation applies them. An UPDATE or UPDATE2D applies its product when it ends; a SUBTREE task
 * applies one per (source cblk, facing group) leaving it, each when the subtree's panels and
 * updates before it are done (its start plus their costs, at most its end). Numbering by start
 * instead made every contribution wait for the long subtree tasks that started first.
 * Times along one thread's list never decrease (ties go by start order), so a contribution never
 * waits for one that comes later in any list; and a wait is always for one applied earlier in
 * the simulation, so the waits cannot form a cycle.
 */
static canopy_status plan_contributions(plan_build *B, sched_plan *P, canopy_err *err)
{
    const symbolic *S = B->S;
    sched_dag *D = &P->factor;
    int nt = D->ntasks;
    size_t m = 0;
    for (cint b = 0; b < S->nblok; b++) P->blok_contrib[b] = -1;
    for (cint k = 0; k < B->n; k++) P->cblk_ncontrib[k] = 0;
    for (int i = 0; i < nt; i++) {
        if (D->kind[i] == SCHED_TASK_UPDATE || D->kind[i] == SCHED_TASK_UPDATE2D) m++;
        else if (D->kind[i] == SCHED_TASK_SUBTREE)
            for (cint k = D->first[i], root = D->cblk[i]; k <= root; k++)
                for (cint b = S->cblk_fblok[k] + 1, bend = S->cblk_fblok[k + 1]; b < bend; b = plan_group_end(S, k, b))
                    m += S->blok_fcblk[b] > root;
    }
    plan_contrib *c = canopy_alloc(m + 1, sizeof(plan_contrib), "contribution order", err);
    if (c == NULL) return plan_nomem(err);
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
            double t = P->task_start[i], end = P->task_end[i];
            int sub = 0;
            for (cint k = D->first[i]; k <= root; k++) {
                t += B->pcost[k];
                for (cint b = S->cblk_fblok[k] + 1, bend = S->cblk_fblok[k + 1]; b < bend; b = plan_group_end(S, k, b)) {
                    t += B->ucost[b];
                    cint j = S->blok_fcblk[b];
                    if (j > root) c[m++] = (plan_contrib){t < end ? t : end, seq, sub++, j, &P->blok_contrib[b]};
                }
            }
        }
    }
    qsort(c, m, sizeof *c, plan_contrib_cmp);
    for (size_t q = 0; q < m; q++) *c[q].dst = P->cblk_ncontrib[c[q].j]++;
    canopy_free(c);
    return CANOPY_SUCCESS;
}

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

/* ---- driver ------------------------------------------------------------------------------------- */

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
    plan_build B = {.S = S, .cm = cm, .kind = o->kind, .scale = o->complex_arith ? 4.0 : 1.0, .T = T, .n = n, .R = R};
    plan_tasks X = {0};
    cint *stamp = NULL;
    size_t n1 = (size_t)n + 1;
    P->nthreads = T;
    P->nranks = R;
    P->threads_per_rank = TR;
    P->ncblk = n;
    P->cblk_rank = canopy_alloc(n1, sizeof(int), "plan", err);
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
    stamp = canopy_alloc(n1, sizeof(cint), "plan scratch", err);
    int *scount = NULL, *group = NULL, *follow = NULL, *gsnode = NULL;
    double *delay = NULL, *edge_delay = NULL;
    double sb = (o->complex_arith ? 16.0 : 8.0) * (o->kind == CANOPY_FACT_LU ? 2.0 : 1.0);
    if (!P->cblk_rank || !B.rank || !B.shared || !P->cblk_t0 || !P->cblk_t1 || !P->cblk_snode || !P->cblk_owner || !P->cblk_task || !P->blok_contrib ||
        !P->cblk_ncontrib || !P->cblk_cost || !B.ucost || !B.pcost || !B.child_ptr || !B.child || !B.sub ||
        !B.first || !B.size || !B.sroot || !B.t0 || !B.t1 || !B.pairs || !B.tload || !B.theap || !B.twod || !B.gstart || !stamp) {
        st = plan_nomem(err);
        goto out;
    }

    plan_costs_and_tree(&B, P);
    if (R == 1) {
        B.t0[n] = 0;
        B.t1[n] = T;
        plan_split(&B, n);
        for (cint k = n - 1; k >= 0; k--) plan_split(&B, k);
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
        int fit = B.sroot[k] < 0 && B.t1[k] - B.t0[k] >= 2 && S->cblk_fcol[k + 1] - S->cblk_fcol[k] >= PLAN_TWOD_MIN_WIDTH &&
                  plan_ngroups(S, k) <= (o->top2d > 0 && B.shared[k] ? PLAN_TOP2D_MAX_GROUPS : PLAN_TWOD_MAX_GROUPS);
        B.twod[k] = fit && depth < levels;
        P->twod_cblks += B.twod[k];
        if (twod_count && fit && depth < PLAN_MAX_LEVELS) twod_count[depth + 1]++; /* 2D from depth + 1 levels on */
    }
    for (int l = 0; twod_count && l < PLAN_MAX_LEVELS; l++) twod_count[l + 1] += twod_count[l];
    if ((st = plan_make_tasks(&B, P, &X, err)) != CANOPY_SUCCESS) goto out;
    if ((st = plan_edges(&B, P, stamp, err)) != CANOPY_SUCCESS) goto out;
    /* top2d (a model, sched/grid.h): the shared 2D cblks' tiles over grids of their ranks */
    if (R > 1 && o->top2d > 0 && P->twod_cblks > 0) {
        P->grid = canopy_calloc(1, sizeof(sched_grid), "plan", err);
        if (P->grid == NULL) {
            st = plan_nomem(err);
            goto out;
        }
        if ((st = sched_grid_plan(S, &P->factor, P->cblk_task, B.t0, B.t1, R, TR, o->top2d, P->grid, err)) !=
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
    if (P->grid) {
        for (int i = 0; i < P->factor.ntasks; i++) group[i] = P->factor.owner[i] / TR;
        if ((st = sched_grid_count(S, &P->factor, group, sb, P->grid, err)) != CANOPY_SUCCESS) goto out;
    }
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
    sched_cost_model fixed;
    if (cm == NULL) {
        cost_model_fixed(&fixed);
        cm = &fixed;
    }
    int R = o->nranks > 1 ? o->nranks : 1, TR = o->nthreads;
    if ((int64_t)R * TR > 1 << 20)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_plan_build: %d ranks x %d threads", R, TR);
    int contrib = !o->prediction_only;
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
     * 2D cblks and the predicted makespan drops by at least 1%; keep the best plan. The 2D cblks of
     * every level are known from the first plan, so a level that brings none is not built; the
     * contributions are numbered once, for the plan kept. */
    int64_t count[PLAN_MAX_LEVELS + 1];
    st = plan_build_one(S, cm, o, 0, 0, count, P, err);
    int64_t prev = 0;
    for (int levels = 1; st == CANOPY_SUCCESS && levels <= PLAN_MAX_LEVELS; levels++) {
        if (count[levels] <= prev) break; /* no new 2D cblk */
        sched_plan Q;
        st = plan_build_one(S, cm, o, levels, 0, NULL, &Q, err);
        if (st != CANOPY_SUCCESS) {
            sched_plan_free(P);
            break;
        }
        prev = Q.twod_cblks;
        if (Q.factor.predicted_time < 0.99 * P->factor.predicted_time) {
            sched_plan_free(P);
            *P = Q;
        } else {
            sched_plan_free(&Q);
        }
    }
    if (st == CANOPY_SUCCESS && contrib) st = plan_contributions_of(S, cm, o, P, err);
    return st;
}

void sched_plan_free(sched_plan *P)
{
    if (P == NULL) return;
    canopy_free(P->cblk_rank);
    canopy_free(P->cblk_t0);
    canopy_free(P->cblk_t1);
    canopy_free(P->cblk_snode);
    canopy_free(P->cblk_owner);
    canopy_free(P->cblk_task);
    canopy_free(P->blok_contrib);
    canopy_free(P->task_contrib);
    canopy_free(P->cblk_ncontrib);
    canopy_free(P->cblk_cost);
    canopy_free(P->task_seq);
    canopy_free(P->task_start);
    canopy_free(P->task_end);
    sched_grid_free(P->grid);
    canopy_free(P->grid);
    sched_dag_free(&P->factor);
    memset(P, 0, sizeof *P);
}
