/*
 * One rank's share of a plan (see distribute.h). O((tasks + edges + bloks) log) and
 * deterministic, so that every rank derives the same messages from the same plan.
 */
#include "distribute.h"
#include "comm/tree.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static canopy_status dist_nomem(canopy_err *err)
{
    return err && err->status ? err->status : CANOPY_ERR_NOMEM;
}

static int dist_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* (target, contribution number, blok or local UPDATE2D task) triples, sorted by target then number */
typedef struct dist_contrib {
    cint j;
    int num;
    cint b;    /* first blok of the facing group, or -1: ... */
    int task;  /* ... the local UPDATE2D task */
    cint k;    /* the blok's cblk */
} dist_contrib;

static int dist_cmp_contrib(const void *a, const void *b)
{
    const dist_contrib *x = a, *y = b;
    if (x->j != y->j) return x->j < y->j ? -1 : 1;
    return x->num < y->num ? -1 : x->num > y->num;
}

/* Each local SUBTREE task's groups into other ranks' cblks, in the order it applies them after the
 * rest of the task (sched_subtree_deferred). */
static canopy_status dist_deferred(const symbolic *S, const sched_plan *P, sched_local *L, canopy_err *err)
{
    const sched_dag *D = &L->factor;
    size_t tot = 0, most = 0;
    L->defer_ptr = canopy_calloc((size_t)D->ntasks + 1, sizeof(int), "local plan", err);
    if (L->defer_ptr == NULL) return dist_nomem(err);
    for (int l = 0; l < D->ntasks; l++) {
        size_t d = D->kind[l] == SCHED_TASK_SUBTREE ? sched_subtree_deferred(S, P, D->first[l], D->cblk[l], NULL) : 0;
        tot += d;
        most = d > most ? d : most;
        if (tot > INT_MAX) return canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "local plan: too many deferred contributions");
        L->defer_ptr[l + 1] = (int)tot;
    }
    L->defer_cblk = canopy_alloc(tot + 1, sizeof(cint), "local plan", err);
    L->defer_blok = canopy_alloc(tot + 1, sizeof(cint), "local plan", err);
    int64_t *keys = canopy_alloc(most + 1, sizeof(int64_t), "local plan scratch", err);
    if (!L->defer_cblk || !L->defer_blok || !keys) {
        canopy_free(keys);
        return dist_nomem(err);
    }
    for (int l = 0; l < D->ntasks; l++) {
        if (L->defer_ptr[l + 1] == L->defer_ptr[l]) continue;
        size_t d = sched_subtree_deferred(S, P, D->first[l], D->cblk[l], keys);
        for (size_t q = 0; q < d; q++) {
            cint b = (cint)(keys[q] % S->nblok);
            /* the source: the cblk whose bloks hold b (a binary search over the task's cblks) */
            cint lo = D->first[l], hi = D->cblk[l];
            while (lo < hi) {
                cint mid = lo + (hi - lo + 1) / 2;
                if (S->cblk_fblok[mid] <= b) lo = mid;
                else hi = mid - 1;
            }
            L->defer_cblk[L->defer_ptr[l] + q] = lo;
            L->defer_blok[L->defer_ptr[l] + q] = b;
        }
    }
    canopy_free(keys);
    return CANOPY_SUCCESS;
}

/* The Snodes of the rank's thread block [lo, hi), renumbered, with [0, T) as root. */
static canopy_status dist_snodes(const sched_dag *G, int lo, int hi, sched_dag *D, int *gmap, canopy_err *err)
{
    int T = hi - lo, cnt = 0, have_root = 0;
    for (int s = 0; s < G->nsnodes; s++) {
        gmap[s] = -1;
        if (G->snode_t0[s] >= lo && G->snode_t1[s] <= hi) {
            cnt++;
            if (G->snode_t0[s] == lo && G->snode_t1[s] == hi) have_root = 1;
        }
    }
    int ns = cnt + !have_root;
    D->nsnodes = ns;
    D->snode_t0 = canopy_alloc((size_t)ns, sizeof(int), "Snodes", err);
    D->snode_t1 = canopy_alloc((size_t)ns, sizeof(int), "Snodes", err);
    D->snode_parent = canopy_alloc((size_t)ns, sizeof(int), "Snodes", err);
    D->snode_depth = canopy_alloc((size_t)ns, sizeof(int), "Snodes", err);
    int *stack = canopy_alloc((size_t)ns, sizeof(int), "Snodes", err);
    if (!D->snode_t0 || !D->snode_t1 || !D->snode_parent || !D->snode_depth || !stack) {
        canopy_free(stack);
        return dist_nomem(err);
    }
    int id = 0;
    if (!have_root) {
        D->snode_t0[0] = 0;
        D->snode_t1[0] = T;
        id = 1;
    }
    /* the plan's Snodes are in preorder (t0 ascending, t1 descending); so is any subset */
    for (int s = 0; s < G->nsnodes; s++)
        if (G->snode_t0[s] >= lo && G->snode_t1[s] <= hi) {
            D->snode_t0[id] = G->snode_t0[s] - lo;
            D->snode_t1[id] = G->snode_t1[s] - lo;
            gmap[s] = id++;
        }
    int sp = 0;
    for (int s = 0; s < ns; s++) {
        while (sp > 0 && D->snode_t1[stack[sp - 1]] <= D->snode_t0[s]) sp--;
        if (sp > 0 && D->snode_t1[stack[sp - 1]] < D->snode_t1[s]) {
            canopy_free(stack);
            return canopy_err_set(err, CANOPY_ERR_INTERNAL, "local plan: Snodes [%d, %d) and [%d, %d) overlap",
                                  D->snode_t0[stack[sp - 1]], D->snode_t1[stack[sp - 1]], D->snode_t0[s], D->snode_t1[s]);
        }
        D->snode_parent[s] = sp > 0 ? stack[sp - 1] : -1;
        D->snode_depth[s] = sp > 0 ? D->snode_depth[stack[sp - 1]] + 1 : 0;
        stack[sp++] = s;
    }
    canopy_free(stack);
    return CANOPY_SUCCESS;
}

double sched_update_need(const symbolic *S, cint k, cint fb0, cint rb0, cint rb1, int64_t cap)
{
    cint fb1 = symbolic_group_end(S, k, fb0), end = S->cblk_fblok[k + 1];
    /* the group's rows: its bloks lie one after the other in the panel */
    double h = (double)(S->blok_coefrow[fb1 - 1] + (S->blok_lrow[fb1 - 1] - S->blok_frow[fb1 - 1] + 1) -
                        S->blok_coefrow[fb0]);
    cint q1 = rb1 < end ? S->blok_coefrow[rb1] : S->cblk_stride[k];
    double whole = (double)(q1 - S->blok_coefrow[rb0]) * h;
    if (cap <= 0 || whole <= (double)cap) return whole;
    /* in chunks of whole bloks: the facing group's square first (when the rows start there), then
     * any single blok */
    double need = rb0 == fb0 ? h * h : 0;
    for (cint b = rb0 == fb0 ? fb1 : rb0; b < rb1; b++)
        need = fmax(need, (double)(S->blok_lrow[b] - S->blok_frow[b] + 1) * h);
    return fmax(need, (double)cap);
}

/* The largest buffer cblk k's facing groups need as its UPDATE tasks and a SUBTREE task compute
 * them (all the rows from each group on; in chunks above @p cap). */
static double dist_cblk_need(const symbolic *S, cint k, int64_t cap)
{
    double most = 0;
    for (cint b = S->cblk_fblok[k] + 1; b < S->cblk_fblok[k + 1]; b = symbolic_group_end(S, k, b))
        most = fmax(most, sched_update_need(S, k, b, b, S->cblk_fblok[k + 1], cap));
    return most;
}

canopy_status sched_thread_work(const symbolic *S, const sched_plan *P, double *upd, double *panel, canopy_err *err)
{
    if (S == NULL || P == NULL || upd == NULL || panel == NULL || P->ncblk != S->ncblk)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_thread_work: bad argument");
    const sched_dag *G = &P->factor;
    int R = P->nranks > 0 ? P->nranks : 1, T = G->nthreads, TR = T / R, ns = G->nsnodes;
    for (int t = 0; t < T; t++) upd[t] = panel[t] = 0;
    if (ns < 1 || TR < 1) return CANOPY_SUCCESS;
    /* each Snode's largest product and panel among its tasks, then with its sons' (a thread takes
     * from the sons of its path's Snodes), in [4 * ns] */
    double *m = canopy_calloc(4 * (size_t)ns + 2 * (size_t)R, sizeof(double), "thread workspaces", err);
    if (m == NULL) return dist_nomem(err);
    double *mu = m, *mp = m + ns, *su = m + 2 * (size_t)ns, *sp = m + 3 * (size_t)ns;
    double *ru = m + 4 * (size_t)ns, *rp = ru + R; /* the sons of each rank's root (its top Snodes) */
    for (int i = 0; i < G->ntasks; i++) {
        cint k = G->cblk[i];
        double u = 0, pn = 0;
        switch (G->kind[i]) {
        case SCHED_TASK_UPDATE:
            u = sched_update_need(S, k, G->first[i], G->first[i], S->cblk_fblok[k + 1], P->update_cap);
            break;
        case SCHED_TASK_UPDATE2D: /* the columns' group x its rows' groups, in chunks above the cap */
            u = sched_update_need(S, k, G->first[i], G->tile[i], G->tile_end[i], P->update_cap);
            break;
        case SCHED_TASK_SUBTREE:
            for (cint q = G->first[i]; q <= k; q++) {
                u = fmax(u, dist_cblk_need(S, q, P->update_cap));
                pn = fmax(pn, (double)S->cblk_stride[q] * (double)(S->cblk_fcol[q + 1] - S->cblk_fcol[q]));
            }
            break;
        case SCHED_TASK_PANEL:
        case SCHED_TASK_DIAG:
            /* the grid's root is factored by the grid, not by the task (factor_root.c) */
            if (!sched_root_has(&P->root, k))
                pn = (double)S->cblk_stride[k] * (double)(S->cblk_fcol[k + 1] - S->cblk_fcol[k]);
            break;
        default:
            break;
        }
        int s = G->snode[i];
        mu[s] = fmax(mu[s], u);
        mp[s] = fmax(mp[s], pn);
    }
    /* a rank's own Snodes lie inside its block of threads (sched_plan_local); its local tree has
     * them under one root (the block's Snode, or one of its own), whose sons any of its threads
     * may take */
    for (int s = 0; s < ns; s++) {
        su[s] = mu[s];
        sp[s] = mp[s];
    }
    for (int s = 0; s < ns; s++) {
        int t0 = G->snode_t0[s], r = t0 / TR, p = G->snode_parent[s];
        if ((G->snode_t1[s] - 1) / TR != r) continue; /* shared by several ranks: no task */
        if (p >= 0 && G->snode_t0[p] / TR == r && (G->snode_t1[p] - 1) / TR == r) {
            su[p] = fmax(su[p], mu[s]);
            sp[p] = fmax(sp[p], mp[s]);
        } else {
            ru[r] = fmax(ru[r], mu[s]);
            rp[r] = fmax(rp[r], mp[s]);
        }
    }
    for (int t = 0; t < T; t++) {
        upd[t] = ru[t / TR];
        panel[t] = rp[t / TR];
    }
    for (int s = 0; s < ns; s++) {
        int t0 = G->snode_t0[s], t1 = G->snode_t1[s];
        if ((t1 - 1) / TR != t0 / TR) continue;
        for (int t = t0; t < t1; t++) {
            upd[t] = fmax(upd[t], su[s]);
            panel[t] = fmax(panel[t], sp[s]);
        }
    }
    canopy_free(m);
    return CANOPY_SUCCESS;
}

canopy_status sched_plan_memory(const symbolic *S, const sched_plan *P, const double **v, canopy_err *err)
{
    if (S == NULL || P == NULL || v == NULL || P->memo == NULL)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_plan_memory: bad argument");
    size_t R = P->nranks > 0 ? (size_t)P->nranks : 1;
    double *m = P->memo + 1;
    if (P->memo[0] == 0) {
        size_t T = P->factor.nthreads > 0 ? (size_t)P->factor.nthreads : 1;
        canopy_status st = sched_fanin_memory(S, P, m, m + R, m + 2 * R, err);
        if (st == CANOPY_SUCCESS) st = sched_thread_work(S, P, m + 5 * R, m + 5 * R + T, err);
        if (st != CANOPY_SUCCESS) return st;
        /* each rank's largest update buffer and panel: several ranks, its workers' (the buffers
         * they allocate); one rank, the largest product and panel anywhere (numeric.c sizes every
         * worker so) */
        double *upd = m + 3 * R, *pan = m + 4 * R;
        for (size_t r = 0; r < R; r++) upd[r] = pan[r] = 0;
        if (R > 1) {
            for (size_t t = 0, TR = T / R; TR > 0 && t < TR * R; t++) {
                upd[t / TR] = fmax(upd[t / TR], m[5 * R + t]);
                pan[t / TR] = fmax(pan[t / TR], m[5 * R + T + t]);
            }
        } else {
            upd[0] = (double)S->max_update_buf;
            pan[0] = symbolic_max_panel(S);
        }
        P->memo[0] = 1;
    }
    *v = m;
    return CANOPY_SUCCESS;
}

typedef struct dist_xpair {
    cint b;   /* first blok of the facing group */
    cint k;   /* its cblk */
    int task; /* local task that reads it */
} dist_xpair;

static int dist_cmp_xpair(const void *a, const void *b)
{
    const dist_xpair *x = a, *y = b;
    if (x->b != y->b) return x->b < y->b ? -1 : 1;
    return x->task < y->task ? -1 : x->task > y->task;
}

static int dist_cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return x < y ? -1 : x > y;
}

/* The facing groups of UPDATE2D task @p i's rows (tile .. tile_end), their first bloks into
 * @p xp[].b and .k when not NULL; returns the count. */
static cint dist_tile_groups(const symbolic *S, const sched_dag *G, int i, dist_xpair *xp)
{
    cint k = G->cblk[i], m = 0;
    for (cint b = G->tile[i]; b < G->tile_end[i]; b = symbolic_group_end(S, k, b), m++)
        if (xp) xp[m] = (dist_xpair){b, k, -1};
    return m;
}

/* The ranks besides k's own whose UPDATE2Ds read the group of TRSM task @p i, ascending, into
 * @p list (@p mark: [R] zeros, left zero); returns the count. */
static int dist_readers(const symbolic *S, const sched_plan *P, int i, int *mark, int *list)
{
    const sched_dag *G = &P->factor;
    int own = P->cblk_rank[G->cblk[i]], m = 0;
    for (int e = G->succ_ptr[i]; e < G->succ_ptr[i + 1]; e++) {
        int s = G->succ[e];
        int r = G->kind[s] == SCHED_TASK_UPDATE2D ? sched_task_rank(S, P, s) : own;
        if (r != own && !mark[r]) {
            mark[r] = 1;
            list[m++] = r;
        }
    }
    qsort(list, (size_t)m, sizeof *list, dist_cmp_int);
    for (int q = 0; q < m; q++) mark[list[q]] = 0;
    return m;
}

/*
 * top2d flat, executed (sched_src_rank): each facing group of a tiled cblk goes from its TRSM to the
 * ranks whose UPDATE2Ds read it along comm/tree's binary tree over [k's rank, those ranks
 * ascending] (the shape sched/grid.c's delays assume): the root sends to its children, every
 * reader receives from its parent and forwards to its children. This rank's part: the children of
 * its own TRSMs (xsend_*), and per group it reads its parent, its children (xrecv_peer, xfwd_*) and
 * the local UPDATE2Ds it releases (one external dependency per group read); per remote cblk the
 * local UPDATE2Ds reading it (its copy's life).
 */
static canopy_status dist_fanout(const symbolic *S, const sched_plan *P, sched_local *L, const int *g2l, canopy_err *err)
{
    const sched_dag *G = &P->factor;
    sched_dag *D = &L->factor;
    int ng = G->ntasks, nl = D->ntasks, rank = L->rank, R = L->nranks;
    cint n = S->ncblk;
    L->xsend_ptr = canopy_calloc((size_t)nl + 2, sizeof(int), "local plan", err);
    L->xsend_rank = canopy_alloc(2 * (size_t)nl + 1, sizeof(int), "local plan", err);
    L->xuse = canopy_calloc((size_t)n + 1, sizeof(int), "local plan", err);
    int *mark = canopy_calloc((size_t)R + 1, sizeof(int), "local plan scratch", err);
    int *list = canopy_alloc((size_t)R + 2, sizeof(int), "local plan scratch", err);
    dist_xpair *xp = NULL;
    canopy_status st = CANOPY_SUCCESS;
    if (!L->xsend_ptr || !L->xsend_rank || !L->xuse || !mark || !list) {
        st = dist_nomem(err);
        goto out;
    }
    /* receives: the remote groups each local UPDATE2D reads (its columns' group, its rows' groups) */
    size_t nx = 0;
    for (int i = 0; i < ng; i++)
        if (g2l[i] >= 0 && G->kind[i] == SCHED_TASK_UPDATE2D && P->cblk_rank[G->cblk[i]] != rank)
            nx += 1 + (size_t)dist_tile_groups(S, G, i, NULL);
    xp = canopy_alloc(nx + 1, sizeof *xp, "local plan scratch", err);
    if (xp == NULL) {
        st = dist_nomem(err);
        goto out;
    }
    nx = 0;
    for (int i = 0; i < ng; i++) {
        int l = g2l[i];
        cint k = G->cblk[i];
        if (l < 0 || G->kind[i] != SCHED_TASK_UPDATE2D || P->cblk_rank[k] == rank) continue;
        size_t nx0 = nx;
        if (G->tile[i] != G->first[i]) xp[nx++] = (dist_xpair){G->first[i], k, l};
        nx += (size_t)dist_tile_groups(S, G, i, xp + nx);
        for (size_t q = nx0; q < nx; q++) xp[q].task = l;
        L->ext[l] += (int)(nx - nx0);
        L->xuse[k]++;
    }
    qsort(xp, nx, sizeof *xp, dist_cmp_xpair);
    cint nu = 0;
    for (size_t q = 0; q < nx; q++) nu += q == 0 || xp[q].b != xp[q - 1].b;
    L->nxrecv = nu;
    L->xrecv_blok = canopy_alloc((size_t)nu + 1, sizeof(cint), "local plan", err);
    L->xrecv_cblk = canopy_alloc((size_t)nu + 1, sizeof(cint), "local plan", err);
    L->xrecv_peer = canopy_alloc((size_t)nu + 1, sizeof(int), "local plan", err);
    L->xrecv_ptr = canopy_alloc((size_t)nu + 2, sizeof(int), "local plan", err);
    L->xrecv_task = canopy_alloc(nx + 1, sizeof(int), "local plan", err);
    L->xfwd_ptr = canopy_calloc((size_t)nu + 2, sizeof(int), "local plan", err);
    L->xfwd_rank = canopy_alloc(2 * (size_t)nu + 1, sizeof(int), "local plan", err);
    if (!L->xrecv_blok || !L->xrecv_cblk || !L->xrecv_peer || !L->xrecv_ptr || !L->xrecv_task || !L->xfwd_ptr ||
        !L->xfwd_rank) {
        st = dist_nomem(err);
        goto out;
    }
    nu = 0;
    L->xrecv_ptr[0] = 0;
    for (size_t q = 0; q < nx; q++) {
        if (q == 0 || xp[q].b != xp[q - 1].b) {
            L->xrecv_cblk[nu] = xp[q].k;
            L->xrecv_peer[nu] = -1;
            L->xrecv_blok[nu++] = xp[q].b;
            L->xrecv_ptr[nu] = L->xrecv_ptr[nu - 1];
        }
        L->xrecv_task[L->xrecv_ptr[nu]++] = xp[q].task;
    }
    /* every group's tree; this rank's place in those it belongs to */
    int64_t nsend = 0;
    int *fwd_n = L->xfwd_ptr + 1; /* counts first, then prefix sums */
    for (int i = 0; i < ng; i++) {
        if (G->kind[i] != SCHED_TASK_TRSM || P->cblk_xgrid[G->cblk[i]] < 0) continue;
        int own = P->cblk_rank[G->cblk[i]], l = g2l[i];
        cint q = -1;
        if (own != rank) {
            cint lo = 0, hi = nu, b = G->first[i];
            while (lo < hi) {
                cint mid = lo + (hi - lo) / 2;
                if (L->xrecv_blok[mid] < b) lo = mid + 1;
                else hi = mid;
            }
            if (lo == nu || L->xrecv_blok[lo] != b) continue; /* not a reader of this group */
            q = lo;
        }
        list[0] = own;
        int m = dist_readers(S, P, i, mark, list + 1);
        if (m == 0) continue;
        comm_tree t;
        if ((st = comm_tree_build(list, m + 1, rank, CANOPY_TREE_BINARY, 0, &t, err)) != CANOPY_SUCCESS) goto out;
        if (t.nchildren > 2) {
            st = canopy_err_set(err, CANOPY_ERR_INTERNAL, "local plan: a binary tree node with %d children", t.nchildren);
            goto out;
        }
        if (own == rank) {
            if (l < 0) {
                st = canopy_err_set(err, CANOPY_ERR_INTERNAL, "local plan: a TRSM of cblk %" CINT_FMT " off its rank",
                                    G->cblk[i]);
                goto out;
            }
            for (int c = 0; c < t.nchildren; c++) L->xsend_rank[2 * l + c] = comm_tree_child(&t, list, c);
            L->xsend_ptr[l + 1] = t.nchildren;
            nsend += t.nchildren;
        } else {
            L->xrecv_peer[q] = t.parent;
            for (int c = 0; c < t.nchildren; c++) L->xfwd_rank[2 * q + c] = comm_tree_child(&t, list, c);
            fwd_n[q] = t.nchildren;
        }
    }
    for (cint q = 0; q < nu; q++) {
        if (L->xrecv_peer[q] < 0) {
            st = canopy_err_set(err, CANOPY_ERR_INTERNAL, "local plan: no sender for the group at blok %" CINT_FMT,
                                L->xrecv_blok[q]);
            goto out;
        }
    }
    /* compact: a TRSM's children from xsend_ptr[l], a receive's from xfwd_ptr[q] */
    for (int l = 0, at = 0; l < nl; l++) {
        int c = L->xsend_ptr[l + 1];
        for (int x = 0; x < c; x++) L->xsend_rank[at + x] = L->xsend_rank[2 * l + x];
        L->xsend_ptr[l + 1] = L->xsend_ptr[l] + c;
        at += c;
    }
    for (cint q = 0, at = 0; q < nu; q++) {
        int c = L->xfwd_ptr[q + 1];
        for (int x = 0; x < c; x++) L->xfwd_rank[at + x] = L->xfwd_rank[2 * q + x];
        L->xfwd_ptr[q + 1] = L->xfwd_ptr[q] + c;
        at += c;
    }
    L->nxsend = nsend;
out:
    canopy_free(mark);
    canopy_free(list);
    canopy_free(xp);
    return st;
}

canopy_status sched_plan_local(const symbolic *S, const sched_plan *P, int rank, int parts, sched_local *L,
                               canopy_err *err)
{
    if (S == NULL || P == NULL || L == NULL)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_plan_local: NULL argument");
    memset(L, 0, sizeof *L);
    int R = P->nranks > 0 ? P->nranks : 1, T = P->threads_per_rank > 0 ? P->threads_per_rank : P->nthreads;
    if (rank < 0 || rank >= R || P->ncblk != S->ncblk || R * T != P->nthreads || parts < 1 || parts > 2)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_plan_local: rank %d of a plan for %d ranks", rank, R);
    const sched_dag *G = &P->factor;
    cint n = S->ncblk;
    int ng = G->ntasks, lo = rank * T, hi = lo + T;
    L->rank = rank;
    L->nranks = R;
    L->nthreads = T;
    L->cblk_rank = P->cblk_rank;
    L->root = P->root;
    L->fanin_cuts = P->fanin_cuts;
    sched_dag *D = &L->factor;
    D->nthreads = T;
    D->predicted_time = G->predicted_time;

    int *g2l = canopy_alloc((size_t)ng + 1, sizeof(int), "local plan scratch", err);
    int *gmap = canopy_alloc((size_t)G->nsnodes + 1, sizeof(int), "local plan scratch", err);
    int64_t *pairs = NULL;
    int *cut = NULL, *nmsg = NULL;
    dist_contrib *contrib = NULL;
    canopy_status st = CANOPY_SUCCESS;
    if (!g2l || !gmap) {
        st = dist_nomem(err);
        goto out;
    }
    int nl = 0;
    for (int i = 0; i < ng; i++) g2l[i] = sched_task_rank(S, P, i) == rank ? nl++ : -1;
    D->ntasks = nl;
    size_t m = (size_t)nl + 1;
    D->npred = canopy_calloc(m, sizeof(int), "local tasks", err);
    D->succ_ptr = canopy_calloc(m, sizeof(int), "local tasks", err);
    D->owner = canopy_alloc(m, sizeof(int), "local tasks", err);
    D->snode = canopy_alloc(m, sizeof(int), "local tasks", err);
    D->prio = canopy_alloc(m, sizeof(double), "local tasks", err);
    D->list_ptr = canopy_calloc((size_t)T + 1, sizeof(int), "local tasks", err);
    D->list = canopy_alloc(m, sizeof(int), "local tasks", err);
    D->kind = canopy_alloc(m, sizeof(int), "local tasks", err);
    D->cblk = canopy_alloc(m, sizeof(int), "local tasks", err);
    D->first = canopy_alloc(m, sizeof(int), "local tasks", err);
    if (G->tile) {
        D->tile = canopy_alloc(m, sizeof(int), "local tasks", err);
        D->tile_end = canopy_alloc(m, sizeof(int), "local tasks", err);
    }
    L->task_contrib = canopy_alloc(m, sizeof(int), "local tasks", err);
    D->level = canopy_alloc(m, sizeof(int), "local tasks", err);
    D->cost = canopy_alloc(m, sizeof(double), "local tasks", err);
    L->ext = canopy_calloc(m, sizeof(int), "local tasks", err);
    L->task_global = canopy_alloc(m, sizeof(int), "local tasks", err);
    L->cblk_task = canopy_alloc((size_t)n + 1, sizeof(int), "local plan", err);
    L->cblk_owner = canopy_alloc((size_t)n + 1, sizeof(int), "local plan", err);
    L->contrib_base = canopy_alloc((size_t)n + 1, sizeof(cint), "local plan", err);
    L->cblk_ncontrib = canopy_calloc((size_t)n + 1, sizeof(int), "local plan", err);
    L->recv_ptr = canopy_calloc((size_t)n + 2, sizeof(cint), "local plan", err);
    if (!D->npred || !D->succ_ptr || !D->owner || !D->snode || !D->prio || !D->list_ptr || !D->list || !D->kind ||
        !D->cblk || !D->first || (G->tile && (!D->tile || !D->tile_end)) || !L->task_contrib || !D->level || !D->cost || !L->ext || !L->task_global || !L->cblk_task ||
        !L->cblk_owner || !L->contrib_base || !L->cblk_ncontrib || !L->recv_ptr) {
        st = dist_nomem(err);
        goto out;
    }
    if ((st = dist_snodes(G, lo, hi, D, gmap, err)) != CANOPY_SUCCESS) goto out;

    /* tasks and the edges between this rank's tasks (the others are fan-in messages) */
    for (int i = 0; i < ng; i++) {
        int l = g2l[i];
        if (l < 0) continue;
        L->task_global[l] = i;
        D->owner[l] = G->owner[i] - lo;
        D->snode[l] = gmap[G->snode[i]];
        if (D->snode[l] < 0 || D->owner[l] < 0 || D->owner[l] >= T) {
            st = canopy_err_set(err, CANOPY_ERR_INTERNAL, "local plan: task %d is not on rank %d's threads", i, rank);
            goto out;
        }
        D->prio[l] = G->prio ? G->prio[i] : 0;
        D->kind[l] = G->kind[i];
        D->cblk[l] = G->cblk[i];
        D->first[l] = G->first[i];
        if (D->tile) {
            D->tile[l] = G->tile[i];
            D->tile_end[l] = G->tile_end[i];
        }
        L->task_contrib[l] = -1;
        D->cost[l] = G->cost[i];
        D->level[l] = D->snode_depth[D->snode[l]];
        for (int q = G->succ_ptr[i]; q < G->succ_ptr[i + 1]; q++)
            if (g2l[G->succ[q]] >= 0) D->succ_ptr[l + 1]++;
    }
    for (int l = 0; l < nl; l++) D->succ_ptr[l + 1] += D->succ_ptr[l];
    D->succ = canopy_alloc((size_t)D->succ_ptr[nl] + 1, sizeof(int), "local task edges", err);
    if (D->succ == NULL) {
        st = dist_nomem(err);
        goto out;
    }
    for (int i = 0, e = 0; i < ng; i++) {
        if (g2l[i] < 0) continue;
        for (int q = G->succ_ptr[i]; q < G->succ_ptr[i + 1]; q++)
            if (g2l[G->succ[q]] >= 0) {
                D->succ[e++] = g2l[G->succ[q]];
                D->npred[g2l[G->succ[q]]]++;
            }
    }
    /* static lists: the plan's lists of this rank's threads, in the same (global) order */
    for (int t = 0; t < T; t++) {
        int a = G->list_ptr[lo + t], b = G->list_ptr[lo + t + 1];
        D->list_ptr[t + 1] = D->list_ptr[t] + (b - a);
        for (int q = a; q < b; q++) D->list[D->list_ptr[t] + q - a] = g2l[G->list[q]];
    }
    for (cint k = 0; k < n; k++) {
        int mine = P->cblk_rank[k] == rank;
        L->cblk_task[k] = mine ? g2l[P->cblk_task[k]] : -1;
        L->cblk_owner[k] = mine ? P->cblk_owner[k] - lo : -1;
    }
    if ((st = dist_deferred(S, P, L, err)) != CANOPY_SUCCESS) goto out;
    if (P->cblk_xgrid && (st = dist_fanout(S, P, L, g2l, err)) != CANOPY_SUCCESS) goto out;

    /* contributions: this rank's, renumbered per target in the plan's order; the (target, rank)
     * pairs that cross ranks are the fan-in buffers */
    size_t ngroups = 0;
    for (int i = 0; i < ng; i++) ngroups += G->kind[i] == SCHED_TASK_UPDATE2D;
    for (cint k = 0; k < n; k++)
        for (cint b = S->cblk_fblok[k] + 1; b < S->cblk_fblok[k + 1]; b = symbolic_group_end(S, k, b)) ngroups++;
    pairs = canopy_alloc(ngroups + 1, sizeof(int64_t), "local plan scratch", err);
    contrib = canopy_alloc(ngroups + 1, sizeof(dist_contrib), "local plan scratch", err);
    if (!pairs || !contrib) {
        st = dist_nomem(err);
        goto out;
    }
    size_t np = 0, nc = 0;
    /* the contribution numbers only of the cblks that contribute from this rank */
    int64_t nb = 0;
    for (cint k = 0; k < n; k++) {
        L->contrib_base[k] = -1;
        if (sched_root_has(&P->root, k)) continue;
        for (cint b = S->cblk_fblok[k] + 1, e; b < S->cblk_fblok[k + 1] && L->contrib_base[k] < 0; b = e) {
            e = symbolic_group_end(S, k, b);
            if (P->blok_contrib[b] >= 0 && sched_src_rank(P, k, S->blok_fcblk[b]) == rank) {
                L->contrib_base[k] = (cint)nb; /* at most nblok */
                nb += S->cblk_fblok[k + 1] - S->cblk_fblok[k];
            }
        }
    }
    L->ncontrib_bloks = nb;
    L->blok_contrib = canopy_alloc((size_t)nb + 1, sizeof(int), "local plan", err);
    if (!L->blok_contrib) {
        st = dist_nomem(err);
        goto out;
    }
    for (int64_t x = 0; x < nb; x++) L->blok_contrib[x] = -1;
    for (cint k = 0; k < n && !sched_root_has(&P->root, k); k++) { /* the grid's root sends nothing */
        for (cint b = S->cblk_fblok[k] + 1, e; b < S->cblk_fblok[k + 1]; b = e) {
            e = symbolic_group_end(S, k, b);
            cint j = S->blok_fcblk[b];
            int rk = sched_src_rank(P, k, j);
            if (rk != P->cblk_rank[j]) {
                pairs[np++] = (int64_t)j * R + rk;
                int64_t rows = S->cblk_stride[k] - S->blok_coefrow[b];
                int64_t h = S->blok_coefrow[e - 1] + (S->blok_lrow[e - 1] - S->blok_frow[e - 1] + 1) - S->blok_coefrow[b];
                L->update_msgs += parts;
                L->update_entries += rows * h * parts;
            }
            if (rk == rank && P->blok_contrib[b] >= 0) contrib[nc++] = (dist_contrib){j, P->blok_contrib[b], b, -1, k};
        }
    }
    for (int i = 0; i < ng; i++)
        if (g2l[i] >= 0 && G->kind[i] == SCHED_TASK_UPDATE2D)
            contrib[nc++] = (dist_contrib){S->blok_fcblk[G->first[i]], P->task_contrib[i], -1, g2l[i], -1};
    qsort(contrib, nc, sizeof *contrib, dist_cmp_contrib);
    for (size_t q = 0; q < nc; q++) {
        int num = L->cblk_ncontrib[contrib[q].j]++;
        if (contrib[q].b >= 0) {
            cint b = contrib[q].b, k = contrib[q].k;
            L->blok_contrib[L->contrib_base[k] + (b - S->cblk_fblok[k])] = num;
        }
        else L->task_contrib[contrib[q].task] = num;
    }
    qsort(pairs, np, sizeof *pairs, dist_cmp_i64);
    size_t nu = 0;
    for (size_t q = 0; q < np; q++)
        if (nu == 0 || pairs[q] != pairs[nu - 1]) pairs[nu++] = pairs[q];
    nmsg = canopy_alloc(nu + 1, sizeof(int), "local plan scratch", err);
    cut = canopy_alloc((nu + 1) * (SCHED_FANIN_SEGS - 1), sizeof(int), "local plan scratch", err);
    if (cut == NULL || nmsg == NULL) {
        st = dist_nomem(err);
        goto out;
    }
    if ((st = sched_fanin_cuts(S, P, pairs, nu, nmsg, cut, err)) != CANOPY_SUCCESS) goto out;
    L->cut_hash = 1469598103934665603ull;
    for (size_t q = 0; q < nu; q++)
        for (int x = 0; x < nmsg[q]; x++)
            L->cut_hash = (L->cut_hash ^ (uint64_t)(x + 1 < nmsg[q] ? cut[q * (SCHED_FANIN_SEGS - 1) + x] + 1 : 0) ^
                           ((uint64_t)q << 20)) * 1099511628211ull;
    for (size_t q = 0; q < nu; q++) {
        cint j = (cint)(pairs[q] / R);
        int r = (int)(pairs[q] % R), msgs = nmsg[q];
        L->fanin_msgs += parts * msgs;
        L->fanin_entries += (int64_t)S->cblk_stride[j] * (S->cblk_fcol[j + 1] - S->cblk_fcol[j]) * parts;
        if (P->cblk_rank[j] == rank) L->recv_ptr[j + 1] += msgs;
        if (r == rank) L->nsend++;
    }
    for (cint j = 0; j < n; j++) L->recv_ptr[j + 1] += L->recv_ptr[j];
    L->recv_rank = canopy_alloc((size_t)L->recv_ptr[n] + 1, sizeof(int), "local plan", err);
    L->recv_seg = canopy_alloc((size_t)L->recv_ptr[n] + 1, 1, "local plan", err);
    L->send_cblk = canopy_alloc((size_t)L->nsend + 1, sizeof(cint), "local plan", err);
    L->send_nmsg = canopy_alloc((size_t)L->nsend + 1, sizeof(int), "local plan", err);
    L->send_cut = canopy_alloc(((size_t)L->nsend + 1) * (SCHED_FANIN_SEGS - 1), sizeof(int), "local plan", err);
    if (!L->recv_rank || !L->recv_seg || !L->send_cblk || !L->send_nmsg || !L->send_cut) {
        st = dist_nomem(err);
        goto out;
    }
    cint ns = 0, nr = 0;
    for (size_t q = 0; q < nu; q++) {
        cint j = (cint)(pairs[q] / R);
        int r = (int)(pairs[q] % R);
        for (int seg = 0; P->cblk_rank[j] == rank && seg < nmsg[q]; seg++) {
            L->recv_rank[nr] = r; /* pairs are sorted by (j, r) */
            L->recv_seg[nr++] = (unsigned char)seg;
        }
        if (r == rank) {
            L->send_nmsg[ns] = nmsg[q];
            for (int x = 0; x < SCHED_FANIN_SEGS - 1; x++)
                L->send_cut[(size_t)ns * (SCHED_FANIN_SEGS - 1) + x] = x + 1 < nmsg[q] ? cut[q * (SCHED_FANIN_SEGS - 1) + x] : -1;
            L->send_cblk[ns++] = j;
            /* every message is sent by its last contribution: none may be empty */
            int last = nmsg[q] > 1 ? cut[q * (SCHED_FANIN_SEGS - 1) + nmsg[q] - 2] : 0;
            if (L->cblk_ncontrib[j] <= last) {
                st = canopy_err_set(err, CANOPY_ERR_INTERNAL, "local plan: a fan-in message into cblk %" CINT_FMT " has no contribution", j);
                goto out;
            }
        }
    }
    /* the compressed layout of this rank's messages, sent and received: each holds only the rows its
     * own contributions write (sched_fanin_msgrows) */
    {
        cint nrecv = L->recv_ptr[n];
        size_t nseg = nu * SCHED_FANIN_SEGS;
        L->send_rows = canopy_alloc((size_t)L->nsend * SCHED_FANIN_SEGS + 1, sizeof(cint), "fan-in layout", err);
        L->send_moff = canopy_alloc((size_t)L->nsend * SCHED_FANIN_SEGS + 1, sizeof(int64_t), "fan-in layout", err);
        L->recv_rows = canopy_alloc((size_t)nrecv + 1, sizeof(cint), "fan-in layout", err);
        L->recv_moff = canopy_alloc((size_t)nrecv + 1, sizeof(int64_t), "fan-in layout", err);
        int64_t *loff = canopy_alloc(nseg + 1, sizeof(int64_t), "fan-in layout", err);
        cint *rows = canopy_alloc(nseg + 1, sizeof(cint), "fan-in layout", err), *lists = NULL;
        if (!L->send_rows || !L->send_moff || !L->recv_rows || !L->recv_moff || !loff || !rows) st = dist_nomem(err);
        /* first the counts, of this rank's pairs only */
        for (size_t q = 0; q < nu && st == CANOPY_SUCCESS; q++) {
            cint j = (cint)(pairs[q] / R);
            for (int seg = 0; seg < SCHED_FANIN_SEGS; seg++)
                loff[q * SCHED_FANIN_SEGS + (size_t)seg] = (int)(pairs[q] % R) == rank || P->cblk_rank[j] == rank ? -2 : -1;
        }
        if (st == CANOPY_SUCCESS) st = sched_fanin_msgrows(S, P, pairs, nu, nmsg, cut, rows, loff, NULL, err);
        /* the rows of every message this rank sends or receives, then the pool of row maps: a
         * sent message's map is panel row -> its row (stride of the target), a received
         * message's its panel rows in order */
        int64_t nlist = 0, npool = 0;
        for (size_t q = 0; q < nu && st == CANOPY_SUCCESS; q++) {
            cint j = (cint)(pairs[q] / R);
            int r = (int)(pairs[q] % R);
            for (int seg = 0; seg < nmsg[q]; seg++) {
                size_t x = q * SCHED_FANIN_SEGS + (size_t)seg;
                loff[x] = -1;
                if (r != rank && P->cblk_rank[j] != rank) continue;
                loff[x] = nlist;
                nlist += rows[x];
                npool += r == rank ? S->cblk_stride[j] : rows[x];
            }
        }
        if (st == CANOPY_SUCCESS) {
            lists = canopy_alloc((size_t)nlist + 1, sizeof(cint), "fan-in layout", err);
            L->fan_rmap = canopy_alloc((size_t)npool + 1, sizeof(cint), "fan-in layout", err);
            st = lists && L->fan_rmap ? sched_fanin_msgrows(S, P, pairs, nu, nmsg, cut, rows, loff, lists, err) : dist_nomem(err);
        }
        int64_t at = 0;
        for (size_t q = 0, sq = 0, rcv = 0; q < nu && st == CANOPY_SUCCESS; q++) {
            cint j = (cint)(pairs[q] / R), stj = S->cblk_stride[j];
            int r = (int)(pairs[q] % R);
            for (int seg = 0; seg < nmsg[q]; seg++) {
                size_t x = q * SCHED_FANIN_SEGS + (size_t)seg;
                const cint *list = lists + (loff[x] >= 0 ? loff[x] : 0);
                if (P->cblk_rank[j] == rank) {
                    L->recv_rows[rcv] = rows[x];
                    L->recv_moff[rcv++] = at;
                    memcpy(L->fan_rmap + at, list, (size_t)rows[x] * sizeof(cint));
                    at += rows[x];
                } else if (r == rank) {
                    cint *map = L->fan_rmap + at;
                    for (cint i = 0; i < stj; i++) map[i] = -1;
                    for (cint i = 0; i < rows[x]; i++) map[list[i]] = i;
                    L->send_rows[sq * SCHED_FANIN_SEGS + (size_t)seg] = rows[x];
                    L->send_moff[sq * SCHED_FANIN_SEGS + (size_t)seg] = at;
                    at += stj;
                }
            }
            sq += r == rank;
        }
        canopy_free(loff);
        canopy_free(rows);
        canopy_free(lists);
        if (st != CANOPY_SUCCESS) goto out;
    }
    for (cint j = 0; j < n; j++) {
        cint cnt = L->recv_ptr[j + 1] - L->recv_ptr[j];
        if (cnt == 0) continue;
        int t = L->cblk_task[j];
        if (t < 0 || (D->kind[t] != SCHED_TASK_PANEL && D->kind[t] != SCHED_TASK_DIAG)) {
            st = canopy_err_set(err, CANOPY_ERR_INTERNAL, "local plan: cblk %" CINT_FMT " receives updates but has no panel task",
                                j);
            goto out;
        }
        L->ext[t] = (int)cnt * parts;
    }
    /* this rank's memory: its buffers' peak by the simulation, its workspaces */
    {
        const double *v;
        if ((st = sched_plan_memory(S, P, &v, err)) != CANOPY_SUCCESS) goto out;
        L->fanin_peak = v[rank];
        L->fanin_peak_arrival = v[R + rank];
        L->fanin_sink = v[2 * R + rank];
        L->update_max = v[3 * R + rank];
        L->panel_max = v[4 * R + rank];
        /* each thread's buffers, by the tasks it may run */
        size_t TP = (size_t)P->factor.nthreads, t0 = (size_t)rank * (size_t)L->nthreads;
        L->thread_upd = canopy_alloc((size_t)L->nthreads, sizeof(double), "local plan", err);
        L->thread_panel = canopy_alloc((size_t)L->nthreads, sizeof(double), "local plan", err);
        if (!L->thread_upd || !L->thread_panel || t0 + (size_t)L->nthreads > TP) {
            st = !L->thread_upd || !L->thread_panel ? dist_nomem(err)
                                                     : canopy_err_set(err, CANOPY_ERR_INTERNAL, "local plan: threads");
            goto out;
        }
        memcpy(L->thread_upd, v + 5 * R + t0, (size_t)L->nthreads * sizeof(double));
        memcpy(L->thread_panel, v + 5 * R + TP + t0, (size_t)L->nthreads * sizeof(double));
    }
    /* what the engine will check at the factorization, found here at the analysis (agreed) */
    char why[160];
    int bad = sched_dag_check(D, why, sizeof why);
    if (bad)
        st = canopy_err_set(err, bad == -2 ? CANOPY_ERR_NOMEM : CANOPY_ERR_INTERNAL, "local plan of rank %d: %s", rank, why);
out:
    canopy_free(g2l);
    canopy_free(gmap);
    canopy_free(pairs);
    canopy_free(contrib);
    canopy_free(cut);
    canopy_free(nmsg);
    if (st != CANOPY_SUCCESS) sched_local_free(L);
    return st;
}

void sched_local_free(sched_local *L)
{
    if (L == NULL) return;
    sched_dag_free(&L->factor);
    canopy_free(L->thread_upd);
    canopy_free(L->thread_panel);
    canopy_free(L->ext);
    canopy_free(L->task_global);
    canopy_free(L->cblk_task);
    canopy_free(L->cblk_owner);
    canopy_free(L->blok_contrib);
    canopy_free(L->contrib_base);
    canopy_free(L->recv_seg);
    canopy_free(L->send_cut);
    canopy_free(L->send_nmsg);
    canopy_free(L->defer_ptr);
    canopy_free(L->defer_cblk);
    canopy_free(L->defer_blok);
    canopy_free(L->task_contrib);
    canopy_free(L->cblk_ncontrib);
    canopy_free(L->recv_ptr);
    canopy_free(L->recv_rank);
    canopy_free(L->send_cblk);
    canopy_free(L->send_rows);
    canopy_free(L->recv_rows);
    canopy_free(L->send_moff);
    canopy_free(L->recv_moff);
    canopy_free(L->fan_rmap);
    canopy_free(L->xsend_ptr);
    canopy_free(L->xsend_rank);
    canopy_free(L->xrecv_blok);
    canopy_free(L->xrecv_cblk);
    canopy_free(L->xrecv_peer);
    canopy_free(L->xfwd_ptr);
    canopy_free(L->xfwd_rank);
    canopy_free(L->xrecv_ptr);
    canopy_free(L->xrecv_task);
    canopy_free(L->xuse);
    memset(L, 0, sizeof *L);
}
