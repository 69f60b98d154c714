/*
 * The factors over several ranks (numeric.h): the memory each rank will hold, the layout of its own
 * panels and fan-in buffers, its share of A's entries, and the fan-in factorization's exchange.
 */
#include "numeric/numeric.h"
#include "numeric/numeric_parts.h"

#include <limits.h>
#include <stdlib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "comm/agree.h"
#include "comm/share.h"
#include "matrix/matrix.h"
#include "numa/placement.h"
#include "numeric/grid_dense.h"

/* Scalars of cblk j's panel. */
static inline int64_t panel_size(const symbolic *S, cint j)
{
    return S->cblk_coef[j + 1] - S->cblk_coef[j];
}

/* Scalars of a fan-in buffer of cblk j holding @p rows of its panel's rows (sched_local). */
/* The message id kind of part p (0: L, 1: U) of a fan-in buffer's message seg (0, 1, ...: a buffer
 * the plan cut goes in several, sched_fanin_cuts). */
static inline int fan_id(int p, int seg)
{
    _Static_assert(SCHED_FANIN_SEGS <= COMM_FANIN_MSGS, "a fan-in buffer's messages need their own tags");
    return seg ? COMM_ID_FANIN_MORE + 2 * (seg - 1) + p : (p ? COMM_ID_FANIN_U : COMM_ID_FANIN_L);
}

static inline int64_t fan_size(const symbolic *S, cint j, cint rows)
{
    return (int64_t)rows * (S->cblk_fcol[j + 1] - S->cblk_fcol[j]);
}

/*
 * The structure a rank of several holds beside its panels, buffers and workspaces, every array
 * counted by its allocator's label (measured on G3_circuit over 4 ranks: 181 MB on rank 0, which
 * the one-rank formula put at 99 MB; bench/README, "The memory prediction"):
 *  - per unknown: the ordering (perm, iperm), col2cblk, the split partition and the rank's
 *    assembled piece's column pointers (global), 4 bytes each; the pivots (LDL^T, LU) and the 2x2
 *    pivots' second diagonal (LDL^T);
 *  - per entry of A the rank holds: its values and row indices, the piece's rows and the assembly
 *    map (sb + 12), and the factorization's entry map, send order and values received (sb + 16);
 *  - per cblk: the plan's ranks and owners (8 bytes: the rest of every rank's plan, about 150
 *    bytes a cblk on G3_circuit and growing with the tasks, is freed once the local plan is
 *    built, sched_plan_keep_local), the rank's local plan (about 54), the symbolic cblk arrays
 *    (about 24) and the factor's per-cblk arrays (offsets, entry-map pointers, ticket locks,
 *    hand-over and solve lists: about 46);
 *  - per blok: the symbolic bloks (4 arrays of 4 bytes);
 *  - per blok of the rank's own cblks, the solve's fan-in lists (8), and per blok of the cblks
 *    whose updates run here into other ranks' buffers, their contribution numbers (4): @p
 *    rank_bloks bytes (rank_structure_bytes).
 */
static double structure_dist(const symbolic *S, canopy_factorization kind, double sb, int64_t local_entries,
                             double rank_bloks)
{
    double per_n = 20.0 + (kind != CANOPY_FACT_LLT ? 4.0 : 0) + (kind == CANOPY_FACT_LDLT ? sb : 0);
    return (double)S->n * per_n + (double)local_entries * (2.0 * sb + 28.0) + (double)S->ncblk * 132.0 +
           (double)S->nblok * 16.0 + rank_bloks;
}

/* Bytes of the structure sized by each rank's own cblks (structure_dist), rb[q] for every rank q
 * in one pass: 8 per off-diagonal blok of q's cblks (the solve's fan-in lists, numeric_build_fan)
 * and 4 per blok of each cblk with a numbered group whose update runs on q (the local plan's
 * contribution numbers, sched_plan_local). Without contribution numbers (blok_contrib NULL) every
 * group counts. @p stamp: R scratch ints. */
static void rank_structure_bytes(const symbolic *S, const sched_plan *P, int R, double *rb, cint *stamp)
{
    for (int q = 0; q < R; q++) rb[q] = 0, stamp[q] = -1;
    for (cint k = 0; k < S->ncblk; k++) {
        cint nb = S->cblk_fblok[k + 1] - S->cblk_fblok[k];
        rb[P->cblk_rank[k]] += 8.0 * (double)(nb - 1);
        if (sched_root_has(&P->root, k)) continue; /* the grid's root sends nothing */
        for (cint b = S->cblk_fblok[k] + 1, e; b < S->cblk_fblok[k + 1]; b = e) {
            e = symbolic_group_end(S, k, b);
            int q = sched_src_rank(P, k, S->blok_fcblk[b]);
            if ((P->blok_contrib == NULL || P->blok_contrib[b] >= 0) && stamp[q] != k) {
                stamp[q] = k;
                rb[q] += 4.0 * (double)nb;
            }
        }
    }
}

double numeric_predict_bytes_counts(const symbolic *S, canopy_factorization kind, canopy_arith arith,
                                    double panel_entries, double workspace, int64_t local_entries, int nranks,
                                    double rank_bloks)
{
    double sb = arith == CANOPY_COMPLEX ? 16.0 : 8.0, parts = kind == CANOPY_FACT_LU ? 2.0 : 1.0;
    double held = sb * parts * panel_entries + workspace;
    if (nranks > 1) return held + structure_dist(S, kind, sb, local_entries, rank_bloks);
    /* one rank, by the allocator's labels the same way (G3_circuit: 476 MB of structure where the
     * earlier formula said 257): per entry, the factor's source copy of A (both triangles:
     * values and rows, sb + 4) and the entry map (16); per unknown, the ordering, col2cblk and
     * column pointers (24), the row sums (8) and the refinement's residual and iterate (2 sb);
     * per cblk, the plan and the local plan (about 190) and the factor's arrays (40); per blok,
     * the bloks (16) and the factor's (8) */
    return held + (double)local_entries * (20.0 + sb) + (double)S->n * (32.0 + 2.0 * sb) +
           (double)S->ncblk * 230.0 + (double)S->nblok * 24.0;
}

double numeric_predict_workspace(canopy_factorization kind, canopy_arith arith, double update_max, double panel_max,
                                 int nthreads, const double *thread_upd, const double *thread_panel)
{
    double sb = arith == CANOPY_COMPLEX ? 16.0 : 8.0, parts = kind == CANOPY_FACT_LU ? 2.0 : 1.0;
    int ldlt = kind == CANOPY_FACT_LDLT;
    /* the calling thread's (numeric.c: sequential runs; one scalar with workers sized by their
     * tasks, several ranks), then each worker's buffer and spares */
    double bytes = thread_upd ? sb : sb * fmax(update_max * parts + (ldlt ? panel_max : 0), 1);
    for (int t = 0; t < nthreads; t++) {
        double u = thread_upd ? thread_upd[t] : update_max, p = thread_panel ? thread_panel[t] : panel_max;
        bytes += sb * (fmax(u * parts + (ldlt ? p : 0), 1) + fmin(u, (double)NUMERIC_SPARE_MAX) * parts * NUMERIC_SPARES);
    }
    return bytes;
}

/* Scalars the root's grid step adds on rank @p q once the tasks are done (numeric/factor_root.c):
 * its tiles (full pr x pc local arrays), the grid's panel buffers, and the runs' lists and
 * datatypes, about 16 bytes per run of at most nb entries on each side (the entries move straight
 * between panels and tiles). */
static double root_scalars(const symbolic *S, const sched_root *r, const int *cblk_rank, int q, canopy_factorization kind)
{
    if (r == NULL || r->n <= 0) return 0;
    grid_dense g = {.comm = MPI_COMM_NULL, .pr = r->pr, .pc = r->pc, .n = r->n, .m = r->n, .nb = r->nb};
    double tiles = q < r->pr * r->pc ? (double)grid_dense_local_size(&g, q) : 0, own = 0;
    for (cint k = r->first; k < S->ncblk; k++)
        if (cblk_rank[k] == q) own += (double)panel_size(S, k) * (kind == CANOPY_FACT_LU ? 2.0 : 1.0);
    /* grid_dense's panel buffers: two steps' rows and columns of the rank's grid row and column */
    double bufs = q < r->pr * r->pc ? 2.0 * (double)r->nb *
                                          (double)(grid_dense_count(r->n, r->nb, r->pr, q / r->pc) +
                                                   grid_dense_count(r->n, r->nb, r->pc, q % r->pc)) : 0;
    return tiles + bufs + 2.0 * 4.0 * (own + tiles) / (double)r->nb;
}

double numeric_predict_bytes(const symbolic *S, const sched_local *L, canopy_factorization kind, canopy_arith arith,
                             canopy_scheduler sched, int64_t local_entries)
{
    /* the own panels, the fan-in buffers alive at once at most (sched_fanin_memory: by the
     * simulated times, from first contribution to send, from arrival to the panel task under
     * static, to their addition on arrival under dynamic), the exchange's sink (the largest
     * receive, one part) */
    double held = 0, parts = kind == CANOPY_FACT_LU ? 2.0 : 1.0;
    for (cint k = 0; k < S->ncblk; k++)
        if (L->cblk_rank[k] == L->rank) held += (double)panel_size(S, k);
    double buffers = (sched == CANOPY_SCHED_DYNAMIC ? L->fanin_peak_arrival : L->fanin_peak) + L->fanin_sink / parts;
    /* the root's grid step comes after the last buffer is gone */
    held += fmax(buffers, root_scalars(S, &L->root, L->cblk_rank, L->rank, kind) / parts);
    int own = L->nranks > 1; /* one rank: every worker sized for the largest (numeric.c) */
    double work = numeric_predict_workspace(kind, arith, L->update_max, L->panel_max, L->nthreads,
                                            own ? L->thread_upd : NULL, own ? L->thread_panel : NULL);
    /* the rank's fan-in lists (its own cblks' off-diagonal bloks) and contribution numbers */
    double own_bloks = 0;
    for (cint k = 0; k < S->ncblk; k++)
        if (L->cblk_rank[k] == L->rank) own_bloks += S->cblk_fblok[k + 1] - S->cblk_fblok[k] - 1;
    return numeric_predict_bytes_counts(S, kind, arith, held, work, local_entries, L->nranks,
                                        8.0 * own_bloks + 4.0 * (double)L->ncontrib_bloks);
}

canopy_status numeric_predict_ranks(const symbolic *S, const sched_plan *P, canopy_factorization kind,
                                    canopy_arith arith, canopy_scheduler sched, double nnz, double *memory, double *fanin,
                                    canopy_err *err)
{
    int R = P->nranks > 0 ? P->nranks : 1, T = P->threads_per_rank > 0 ? P->threads_per_rank : P->nthreads;
    double *own = canopy_calloc(2 * (size_t)R, sizeof(double), "memory prediction", err);
    cint *stamp = canopy_alloc((size_t)R, sizeof(cint), "memory prediction", err);
    if (own == NULL || stamp == NULL) {
        canopy_free(own);
        canopy_free(stamp);
        return err && err->status ? err->status : CANOPY_ERR_NOMEM;
    }
    double *rb = own + R;
    if (R > 1) rank_structure_bytes(S, P, R, rb, stamp);
    canopy_free(stamp);
    const double *v = NULL;
    canopy_status st = sched_plan_memory(S, P, &v, err);
    if (st != CANOPY_SUCCESS) {
        canopy_free(own);
        return st;
    }
    const double *peak = v + (sched == CANOPY_SCHED_DYNAMIC ? R : 0);
    const double *sink = v + 2 * R, *upd = v + 3 * R, *pmax = v + 4 * R;
    double sb = arith == CANOPY_COMPLEX ? 16.0 : 8.0, parts = kind == CANOPY_FACT_LU ? 2.0 : 1.0;
    double tot = (double)S->cblk_coef[S->ncblk];
    for (cint k = 0; k < S->ncblk && st == CANOPY_SUCCESS; k++) own[R > 1 ? P->cblk_rank[k] : 0] += (double)panel_size(S, k);
    for (int q = 0; q < R && st == CANOPY_SUCCESS; q++) {
        /* as numeric_predict_bytes: the own panels, the buffers alive at once, the sink (one part) */
        double buffers = peak[q] + sink[q] / parts;
        int64_t local = (int64_t)(tot > 0 ? nnz * own[q] / tot : 0);
        double after = root_scalars(S, &P->root, P->cblk_rank, q, kind) / parts; /* the root's step, after the buffers */
        const double *tu = R > 1 ? v + 5 * R + (size_t)q * T : NULL, *tp = R > 1 ? v + 5 * R + (size_t)R * T + (size_t)q * T : NULL;
        double work = numeric_predict_workspace(kind, arith, upd[q], pmax[q], T, tu, tp);
        memory[q] = numeric_predict_bytes_counts(S, kind, arith, own[q] + fmax(buffers, after), work, local, R, rb[q]);
        if (fanin) fanin[q] = buffers * parts * sb;
    }
    canopy_free(own);
    return st;
}

/* The layout of this rank's factor (offsets, fan-in slots, entry map pointers): the small arrays
 * the entry distribution needs; the panels come after it (numeric_panels_dist). */
static canopy_status numeric_layout_dist(numeric *F, const symbolic *S, canopy_arith arith, canopy_factorization kind,
                                         canopy_err *err)
{
    const sched_local *L = F->exec.local;
    F->S = S;
    F->kind = kind;
    F->arith = arith;
    F->scalar_bytes = arith == CANOPY_COMPLEX ? 2 * sizeof(double) : sizeof(double);
    for (cint k = 0; k < S->ncblk; k++)
        if (S->cblk_stride[k] > INT_MAX || panel_size(S, k) * (arith == CANOPY_COMPLEX ? 2 : 1) > INT_MAX)
            return canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "column block %" CINT_FMT " is too large for BLAS or MPI", k);
    /* workspaces for this rank's tasks only: a thread runs only tasks of its rank, and every
     * update of a cblk runs on the cblk's rank */
    F->upd_scalars = (size_t)L->update_max;
    /* the workers' buffers are theirs (numeric.c, by sched_thread_work); the calling thread's, for
     * sequential runs, is never used here: several ranks always run on the pool */
    F->work_scalars = 1;
    F->spare_scalars = CANOPY_MIN(F->upd_scalars, (size_t)NUMERIC_SPARE_MAX) * (kind == CANOPY_FACT_LU ? 2 : 1);
    int parts = kind == CANOPY_FACT_LU ? 2 : 1;
    F->lcoef = canopy_alloc((size_t)S->ncblk + 1, sizeof(int64_t), "local panel offsets", err);
    F->send_slot = canopy_alloc((size_t)S->ncblk + 1, sizeof(int), "fan-in slots", err);
    F->fan_recv = canopy_calloc((size_t)L->recv_ptr[S->ncblk] * parts + 1, sizeof(void *), "fan-in buffers", err);
    F->peer_counts = canopy_calloc(4 * (size_t)L->nranks, sizeof(int64_t), "communication counts", err);
    if (L->xuse) {
        F->xsh = canopy_calloc((size_t)S->ncblk + 1, sizeof(void *), "top2d copies", err);
        F->xleft = canopy_calloc((size_t)S->ncblk + 1, sizeof(atomic_int), "top2d copies", err);
        if (!F->xsh || !F->xleft) return err && err->status ? err->status : CANOPY_ERR_NOMEM;
    }
    if (!F->lcoef || !F->send_slot || !F->fan_recv || !F->peer_counts)
        return err && err->status ? err->status : CANOPY_ERR_NOMEM;
    int64_t off = 0;
    for (cint k = 0; k < S->ncblk; k++) {
        F->send_slot[k] = -1;
        F->lcoef[k] = -1;
        if (L->cblk_rank[k] == L->rank) {
            F->lcoef[k] = off;
            off += panel_size(S, k);
        }
    }
    /* fan-in buffers are not in the factor: they come and go during the factorization */
    for (cint q = 0; q < L->nsend; q++) F->send_slot[L->send_cblk[q]] = (int)q * parts;
    /* a buffer cut by the plan (sched_fanin_cuts) has several exchange messages per part */
    F->send_msg = canopy_alloc((size_t)L->nsend + 1, sizeof(int), "fan-in slots", err);
    if (F->send_msg == NULL) return err && err->status ? err->status : CANOPY_ERR_NOMEM;
    F->send_msg[0] = 0;
    if ((int64_t)L->recv_ptr[S->ncblk] * parts > INT_MAX)
        return canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "too many fan-in messages");
    for (cint q = 0; q < L->nsend; q++) {
        if ((int64_t)F->send_msg[q] + (int64_t)L->send_nmsg[q] * parts > INT_MAX)
            return canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "too many fan-in messages");
        F->send_msg[q + 1] = F->send_msg[q] + L->send_nmsg[q] * parts;
    }
    F->fan_send = canopy_calloc((size_t)F->send_msg[L->nsend] + 1, sizeof(void *), "fan-in buffers", err);
    F->send_left = canopy_calloc((size_t)F->send_msg[L->nsend] / parts + 1, sizeof(int), "fan-in slots", err);
    if (F->fan_send == NULL || F->send_left == NULL) return err && err->status ? err->status : CANOPY_ERR_NOMEM;
    F->coef = F->lcoef;
    F->ncoef = off;
    if (!canopy_mul_ok((size_t)(off ? off : 1), F->scalar_bytes, &F->coef_bytes))
        return canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "factor of %lld entries is too large", (long long)off);
    F->amap_ptr = canopy_calloc((size_t)S->ncblk + 1, sizeof(int64_t), "entry map", err);
    return F->amap_ptr ? CANOPY_SUCCESS : err && err->status ? err->status : CANOPY_ERR_NOMEM;
}

/* The panels, fan-in buffers and workspaces of the layout (the bulk of this rank's memory). */
static canopy_status numeric_panels_dist(numeric *F, canopy_err *err)
{
    const symbolic *S = F->S;
    canopy_factorization kind = F->kind;
    F->L = numa_alloc_pages(F->coef_bytes, "factor L", err);
    if (kind == CANOPY_FACT_LU) F->U = numa_alloc_pages(F->coef_bytes, "factor U", err);
    F->fresh = 1;
    if (kind != CANOPY_FACT_LLT) F->ipiv = canopy_calloc((size_t)S->n + 1, sizeof(cint), "pivots", err);
    if (kind == CANOPY_FACT_LDLT) F->dsub = canopy_calloc((size_t)S->n + 1, F->scalar_bytes, "2x2 pivots", err);
    F->work = canopy_alloc(F->work_scalars, F->scalar_bytes, "update buffer", err);
    if (!F->L || (kind == CANOPY_FACT_LU && !F->U) || (kind != CANOPY_FACT_LLT && !F->ipiv) ||
        (kind == CANOPY_FACT_LDLT && !F->dsub) || !F->work)
        return err && err->status ? err->status : CANOPY_ERR_NOMEM;
    return numeric_build_fan(F, F->exec.local->cblk_rank, F->exec.local->rank, err);
}

/*
 * Every rank holding a part of A (rank 0 all of it with centralized input, every rank a block of
 * columns with distributed input; NULL or no columns: nothing) maps its entries and sends each
 * owner the entries of its cblks: once their places (cblk, offset inside the panel; U entries
 * encoded as in amap_dst), then at every factorization their values, in the same order. An
 * owner receives the parts in rank order.
 */
static canopy_status numeric_share_map(numeric *F, const canopy_csc *A, canopy_err *err)
{
    const numeric_exec *x = &F->exec;
    const sched_local *L = x->local;
    const symbolic *S = F->S;
    int R = L->nranks;
    /* (cblk, place in its panel) pairs: a place fits a cint, panels being checked against INT_MAX */
    cint *pairs = NULL, *mine = NULL;
    int64_t *fill = NULL;
    canopy_status st = CANOPY_SUCCESS;
    F->send_counts = canopy_calloc((size_t)R, sizeof(int64_t), "entry distribution", err);
    F->recv_counts = canopy_calloc((size_t)R, sizeof(int64_t), "entry distribution", err);
    fill = canopy_calloc((size_t)R + 1, sizeof(int64_t), "entry distribution", err);
    if (!F->send_counts || !F->recv_counts || !fill) st = err && err->status ? err->status : CANOPY_ERR_NOMEM;
    if (st == CANOPY_SUCCESS && A != NULL && A->colptr != NULL && A->n == S->n) {
        int64_t nnz = matrix_nnz(A);
        /* the map of the part held, in the single-rank layout, then regrouped rank by rank */
        F->amap_src = canopy_alloc((size_t)nnz + 1, sizeof(int64_t), "entry map", err);
        F->amap_dst = canopy_alloc((size_t)nnz + 1, sizeof(int64_t), "entry map", err);
        if (F->amap_src && F->amap_dst) st = numeric_build_amap(F, A, err);
        else st = err && err->status ? err->status : CANOPY_ERR_NOMEM;
        if (st == CANOPY_SUCCESS) {
            F->send_order = canopy_alloc((size_t)F->amap_nnz + 1, sizeof(int64_t), "entry distribution", err);
            pairs = canopy_alloc(2 * (size_t)F->amap_nnz + 2, sizeof(cint), "entry distribution", err);
            if (!F->send_order || !pairs) st = err && err->status ? err->status : CANOPY_ERR_NOMEM;
        }
        if (st == CANOPY_SUCCESS) {
            for (cint k = 0; k < S->ncblk; k++) F->send_counts[L->cblk_rank[k]] += F->amap_ptr[k + 1] - F->amap_ptr[k];
            for (int r = 0; r < R; r++) fill[r + 1] = fill[r] + F->send_counts[r];
            for (cint k = 0; k < S->ncblk; k++) {
                int r = L->cblk_rank[k];
                for (int64_t e = F->amap_ptr[k]; e < F->amap_ptr[k + 1]; e++) {
                    int64_t q = fill[r]++, d = F->amap_dst[e];
                    F->send_order[q] = F->amap_src[e];
                    pairs[2 * q] = k;
                    pairs[2 * q + 1] = (cint)(d >= 0 ? d - S->cblk_coef[k] : -((-d - 2) - S->cblk_coef[k]) - 2);
                }
            }
        }
        canopy_free(F->amap_src);
        canopy_free(F->amap_dst);
        F->amap_src = F->amap_dst = NULL;
    }
    canopy_free(fill);
    if (comm_agree(x->comm, err) < 0) {
        st = err->status;
        goto out;
    }
    if ((st = comm_share_counts(x->comm, F->send_counts, F->recv_counts, err)) != CANOPY_SUCCESS) goto out;
    int64_t cnt = 0;
    for (int r = 0; r < R; r++) cnt += F->recv_counts[r];
    mine = canopy_alloc(2 * (size_t)cnt + 2, sizeof(cint), "entry map", err);
    F->aval = canopy_alloc((size_t)cnt + 1, F->scalar_bytes, "local entries", err);
    if (!(mine && F->aval) && err->status == CANOPY_SUCCESS) canopy_err_set(err, CANOPY_ERR_NOMEM, "entry map");
    if (comm_agree(x->comm, err) < 0) {
        st = err->status;
        goto out;
    }
    st = comm_share_alltoallv(x->comm, pairs, F->send_counts, mine, F->recv_counts, 2 * sizeof(cint), err);
    if (st != CANOPY_SUCCESS) goto out;
    canopy_free(pairs);
    pairs = NULL;
    F->amap_src = canopy_alloc((size_t)cnt + 1, sizeof(int64_t), "entry map", err);
    F->amap_dst = canopy_alloc((size_t)cnt + 1, sizeof(int64_t), "entry map", err);
    if (!(F->amap_src && F->amap_dst) && err->status == CANOPY_SUCCESS) canopy_err_set(err, CANOPY_ERR_NOMEM, "entry map");
    if (comm_agree(x->comm, err) < 0) {
        st = err->status;
        goto out;
    }
    /* the parts of several senders interleave the cblks: group the entries by cblk again (counting
     * sort; amap_src[x] is the entry's place in aval) */
    memset(F->amap_ptr, 0, ((size_t)S->ncblk + 1) * sizeof(int64_t));
    for (int64_t e = 0; e < cnt; e++) F->amap_ptr[mine[2 * e] + 1]++;
    for (cint k = 0; k < S->ncblk; k++) F->amap_ptr[k + 1] += F->amap_ptr[k];
    for (int64_t e = 0; e < cnt; e++) {
        cint k = mine[2 * e];
        int64_t rel = mine[2 * e + 1], at = F->amap_ptr[k]++;
        F->amap_src[at] = e;
        F->amap_dst[at] = rel >= 0 ? rel + F->lcoef[k] : -((-rel - 2) + F->lcoef[k]) - 2;
    }
    /* amap_ptr[k] now holds the end of cblk k: shift back to starts */
    for (cint k = S->ncblk; k > 0; k--) F->amap_ptr[k] = F->amap_ptr[k - 1];
    F->amap_ptr[0] = 0;
    F->amap_nnz = cnt;
    F->amap_nnz_in = cnt;
out:
    canopy_free(pairs);
    canopy_free(mine);
    return st;
}

/* The values of this factorization, from the ranks holding A to the owners (collective). */
static canopy_status numeric_share_values(numeric *F, const canopy_csc *A, canopy_err *err)
{
    const sched_local *L = F->exec.local;
    int R = L->nranks, dps = F->arith == CANOPY_COMPLEX ? 2 : 1;
    int64_t nsend = 0;
    for (int r = 0; r < R; r++) nsend += F->send_counts[r];
    if (nsend > 0 && (A == NULL || A->values == NULL))
        canopy_err_set(err, CANOPY_ERR_INTERNAL, "the entries to send are gone (no matrix on this rank)");
    double *send = canopy_alloc((size_t)nsend * (size_t)dps + 1, sizeof(double), "entry distribution", err);
    if (send != NULL && err->status == CANOPY_SUCCESS) {
        const double *v = A != NULL ? A->values : NULL;
        for (int64_t q = 0; q < nsend; q++)
            for (int c = 0; c < dps; c++) send[q * dps + c] = v[F->send_order[q] * dps + c];
    }
    /* the buffer and the exchange's requests under one agreement */
    size_t elem = (size_t)dps * sizeof(double);
    MPI_Request *req = comm_share_requests(F->exec.comm, F->send_counts, F->recv_counts, elem, err);
    canopy_status st = comm_agree(F->exec.comm, err);
    if (st >= 0) st = comm_share_alltoallv_agreed(F->exec.comm, send, F->send_counts, F->aval, F->recv_counts, elem, req, err);
    else canopy_free(req);
    canopy_free(send);
    return st < 0 ? st : CANOPY_SUCCESS;
}

canopy_status numeric_factorize_dist(numeric *F, const symbolic *S, canopy_csc *A, bool release, canopy_arith arith,
                                     canopy_factorization kind, double threshold, canopy_err *err)
{
    const numeric_exec *x = &F->exec;
    if (x->local == NULL || x->local->nranks < 2 || x->pool == NULL || x->tags == NULL)
        return canopy_err_set(err, CANOPY_ERR_INTERNAL, "numeric_factorize_dist without a distributed plan");
    numeric_forget_inverse(F);
    if (F->L != NULL && (F->S != S || F->kind != kind || F->arith != arith)) numeric_free(F);
    canopy_status st = CANOPY_SUCCESS;
    int first = F->L == NULL;
    /* a first factorization moves the entries before the panels exist, and the caller's copy
     * goes before they are allocated: the map's transient arrays and the matrix never add to
     * the factor's peak */
    if (first) {
        numeric_free(F); /* what a failed first attempt left */
        st = numeric_layout_dist(F, S, arith, kind, err);
        /* a refactorization changed nothing since the caller's last agreement: no round here
         * (first is the same on every rank: the factors' presence follows agreed outcomes) */
        if (comm_agree(x->comm, err) < 0) {
            numeric_free(F);
            return err->status;
        }
    }
    if (first && (st = numeric_share_map(F, A, err)) != CANOPY_SUCCESS) {
        numeric_free(F);
        return st;
    }
    if ((st = numeric_share_values(F, A, err)) != CANOPY_SUCCESS) {
        if (first) numeric_free(F);
        return st;
    }
    if (release && A) matrix_free(A);
    if (first) numeric_panels_dist(F, err);
    /* the panels and the workers' buffers under one agreement */
    if (err->status >= 0) numeric_prepare_threads(F, err);
    if (comm_agree(x->comm, err) < 0) {
        if (first) numeric_free(F);
        return err->status;
    }
    F->threshold = threshold;
    F->stress = comm_stress_enabled();
    F->flops = kind == CANOPY_FACT_LU ? S->flops_lu : S->flops_llt;
    canopy_csc Al = {.n = S->n, .values = F->aval, .arith = arith};
    int old = numeric_blas_single();
    st = arith == CANOPY_COMPLEX ? numeric_factorize_z(F, &Al, err) : numeric_factorize_d(F, &Al, err);
    if (x->local->root.n > 0) {
        /* the root on its grid needs every rank's tasks done: agree on them first */
        if (st < 0 && err->status == CANOPY_SUCCESS) canopy_err_set(err, st, "the factorization failed on a rank");
        double t0 = MPI_Wtime();
        canopy_status ag = comm_agree(x->comm, err);
        F->run.root[0] = MPI_Wtime() - t0;
        if (ag < 0) {
            st = err->status;
        } else {
            int64_t pert = 0;
            canopy_status rs = numeric_root_factor(F, &pert, err);
            F->perturbed += pert;
            if (rs < 0) st = rs;
            else if (rs == CANOPY_WARN_PIVOTS_PERTURBED || F->perturbed > 0) st = CANOPY_WARN_PIVOTS_PERTURBED;
        }
    }
    numeric_blas_restore(old);
    return st;
}

/* top2d flat: doubles of the message of cblk k's facing group at blok b, refused beyond one MPI count */
static canopy_status xmsg_count(const numeric *F, cint k, cint b, int dps, int *count, canopy_err *err)
{
    size_t n = numeric_xmsg_scalars(F->S, F->kind, k, symbolic_group_rows(F->S, k, b)) * (size_t)dps;
    if (n > INT_MAX)
        return canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "column block %" CINT_FMT ": a facing group too large for MPI", k);
    *count = (int)n;
    return CANOPY_SUCCESS;
}

canopy_status numeric_exchange_create(numeric *F, void (*arrived)(void *, int64_t, void *, int, int), void *arg,
                                      canopy_err *err)
{
    const numeric_exec *x = &F->exec;
    const sched_local *L = x->local;
    const symbolic *S = F->S;
    int parts = F->U ? 2 : 1, dps = F->arith == CANOPY_COMPLEX ? 2 : 1;
    int nfrecv = (int)L->recv_ptr[S->ncblk] * parts, nfsend = F->send_msg[L->nsend];
    int64_t nfwd = L->xfwd_ptr ? L->xfwd_ptr[L->nxrecv] : 0;
    if ((int64_t)nfrecv + L->nxrecv > INT_MAX || (int64_t)nfsend + L->nxsend + nfwd > INT_MAX)
        return canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "too many messages");
    int nrecv = nfrecv + (int)L->nxrecv, nsend = nfsend + (int)(L->nxsend + nfwd);
    comm_msg *rv = canopy_alloc((size_t)nrecv + 1, sizeof(comm_msg), "messages", err);
    comm_msg *sd = canopy_alloc((size_t)nsend + 1, sizeof(comm_msg), "messages", err);
    canopy_status st = CANOPY_SUCCESS;
    if (!rv || !sd) {
        st = err && err->status ? err->status : CANOPY_ERR_NOMEM;
        goto out;
    }
    for (cint j = 0, i = 0; j < S->ncblk; j++)
        for (cint q = L->recv_ptr[j]; q < L->recv_ptr[j + 1]; q++)
            for (int p = 0; p < parts; p++, i++) {
                comm_msg *m = &rv[i];
                m->buf = NULL; /* allocated on arrival */
                m->count = (int)(fan_size(S, j, L->recv_rows[q]) * dps);
                m->peer = L->recv_rank[q];
                comm_tags_get(x->tags, comm_tags_id(j, fan_id(p, L->recv_seg[q])), &m->comm, &m->tag);
                m->cookie = ((int64_t)i << 32) | (int64_t)L->cblk_task[j]; /* where it goes, who waits */
            }
    /* top2d flat: the facing groups received, then those sent after each TRSM (sched_local.x*) */
    for (cint q = 0; q < L->nxrecv; q++) {
        comm_msg *m = &rv[nfrecv + q];
        cint b = L->xrecv_blok[q];
        if ((st = xmsg_count(F, L->xrecv_cblk[q], b, dps, &m->count, err)) != CANOPY_SUCCESS) goto out;
        m->buf = NULL;
        m->peer = L->xrecv_peer[q]; /* its parent in the group's tree */
        comm_tags_get(x->tags, numeric_xmsg_id(S, b), &m->comm, &m->tag);
        m->cookie = -1 - (int64_t)q;
        for (int c = L->xfwd_ptr[q]; c < L->xfwd_ptr[q + 1]; c++) { /* forwarded to its children */
            comm_msg *f = &sd[nfsend + L->nxsend + c];
            *f = *m;
            f->peer = L->xfwd_rank[c];
            f->cookie = -1;
        }
    }
    for (int l = 0; L->xsend_ptr && l < L->factor.ntasks; l++)
        for (int q = L->xsend_ptr[l]; q < L->xsend_ptr[l + 1]; q++) {
            comm_msg *m = &sd[nfsend + q];
            cint b = L->factor.first[l];
            if ((st = xmsg_count(F, L->factor.cblk[l], b, dps, &m->count, err)) != CANOPY_SUCCESS) goto out;
            m->buf = NULL;
            m->peer = L->xsend_rank[q];
            comm_tags_get(x->tags, numeric_xmsg_id(S, b), &m->comm, &m->tag);
            m->cookie = -1;
        }
    for (cint q = 0; q < L->nsend; q++) {
        cint j = L->send_cblk[q];
        for (int seg = 0; seg < L->send_nmsg[q]; seg++)
            for (int p = 0; p < parts; p++) {
                comm_msg *m = &sd[F->send_msg[q] + seg * parts + p];
                m->buf = NULL; /* handed over with the send */
                m->count = (int)(fan_size(S, j, L->send_rows[(size_t)q * SCHED_FANIN_SEGS + seg]) * dps);
                m->peer = L->cblk_rank[j];
                comm_tags_get(x->tags, comm_tags_id(j, fan_id(p, seg)), &m->comm, &m->tag);
                m->cookie = -1;
            }
    }
    st = comm_exchange_create(x->comm_threads, L->nranks, rv, nrecv, sd, nsend, arrived, arg, &F->xch, err);
out:
    canopy_free(rv);
    canopy_free(sd);
    return st;
}

canopy_status numeric_exchange_end(numeric *F, canopy_err *err)
{
    if (F->xch == NULL) return CANOPY_SUCCESS;
    canopy_status st = comm_exchange_finish(F->xch, err);
    int R = F->exec.local->nranks;
    comm_exchange_counts(F->xch, F->peer_counts, F->peer_counts + R, F->peer_counts + 2 * R, F->peer_counts + 3 * R);
    F->comm_idle = comm_exchange_idle_time(F->xch);
    comm_exchange_free(F->xch);
    F->xch = NULL;
    return st;
}
