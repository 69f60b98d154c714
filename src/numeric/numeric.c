/*
 * Numerical factorization driver: argument checks, arithmetic dispatch, allocation of the factors,
 * buffers and entry map (first call only), BLAS thread control. The arithmetic itself lives in
 * factor_template.c (instantiated by kernels_d.c and kernels_z.c).
 */
#include "numeric/numeric.h"
#include "numeric/numeric_parts.h"
#include "matrix/matrix.h"
#include "numa/placement.h"
#include "comm/agree.h"
#include "comm/share.h"

#include <limits.h>
#include <stdlib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#if defined(HAVE_OPENBLAS_GET_NUM_THREADS) && defined(HAVE_OPENBLAS_SET_NUM_THREADS)
#define NUMERIC_BLAS_THREADS 1
/* declared here as well: not every cblas.h that provides them declares them */
void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);
#endif

/* BLAS runs on one thread inside Canopy: our own parallelism is over tasks, and a threaded
 * BLAS nested in worker threads oversubscribes the cores. */
int numeric_blas_single(void)
{
#ifdef NUMERIC_BLAS_THREADS
    int old = openblas_get_num_threads();
    if (old != 1) openblas_set_num_threads(1);
    return old;
#else
    return 1;
#endif
}

void numeric_blas_restore(int old)
{
#ifdef NUMERIC_BLAS_THREADS
    if (old != 1) openblas_set_num_threads(old);
#else
    (void)old;
#endif
}

void numeric_blas_threads(int n)
{
#ifdef NUMERIC_BLAS_THREADS
    if (n >= 1 && openblas_get_num_threads() != n) openblas_set_num_threads(n);
#else
    (void)n;
#endif
}

const cost_kernels numeric_cost_kernels = {
    .lu = numeric_dense_lu_d,
    .ldlt = numeric_dense_ldlt_d,
    .blas_single = numeric_blas_single,
    .blas_restore = numeric_blas_restore,
};

static void run_free(numeric_run *r)
{
    canopy_free(r->busy);
    canopy_free(r->steals);
    canopy_free(r->tasks);
    canopy_free(r->lock_wait);
    canopy_free(r->handed);
    canopy_free(r->events);
    memset(r, 0, sizeof *r);
}

static void threads_free(numeric *F)
{
    for (int t = 0; t < F->nthreads; t++) canopy_free(F->thread_work ? F->thread_work[t] : NULL);
    canopy_free(F->thread_work);
    canopy_free(F->thread_sizes);
    canopy_free(F->thread_perturbed);
    canopy_free(F->serving);
    canopy_free(F->tickets);
    canopy_free(F->hand);
    canopy_free(F->pending);
    canopy_free(F->msg_hand);
    canopy_free(F->pending_off);
    F->hand = NULL;
    F->pending = NULL;
    F->msg_hand = NULL;
    F->pending_off = NULL;
    F->npending = 0;
    F->pending_plan = NULL;
    F->thread_work = NULL;
    F->thread_sizes = NULL;
    F->thread_perturbed = NULL;
    F->serving = F->tickets = NULL;
    F->nthreads = 0;
    run_free(&F->run);
    run_free(&F->solve_run);
    canopy_free(F->sub_root);
    canopy_free(F->sub_cofs);
    canopy_free(F->sub_cpos);
    F->sub_root = NULL;
    F->sub_cofs = F->sub_cpos = NULL;
    F->sub_crows = 0;
}

/* first row of r's off-diagonal rows (in panel order, from 0) holding row i; -1 if r lacks it */
static int64_t sub_row(const symbolic *S, cint r, cint i)
{
    cint lo = S->cblk_fblok[r] + 1, hi = S->cblk_fblok[r + 1] - 1;
    while (lo <= hi) {
        cint mid = lo + (hi - lo) / 2;
        if (S->blok_lrow[mid] < i) lo = mid + 1;
        else if (S->blok_frow[mid] > i) hi = mid - 1;
        else return (int64_t)S->blok_coefrow[mid] - (S->cblk_fcol[r + 1] - S->cblk_fcol[r]) + (i - S->blok_frow[mid]);
    }
    return -1;
}

/*
 * The contribution blocks of the threaded forward solve (sub_* in numeric.h). A blok of a subtree
 * facing an ancestor lands in rows of the subtree root's structure (the structure of a cblk holds
 * that of its descendants beyond themselves); should a structure ever break that, the maps stay
 * NULL and the forward solve falls back to fan-in everywhere.
 */
static canopy_status build_solve_maps(numeric *F, canopy_err *err)
{
    const symbolic *S = F->S;
    const sched_dag *d = F->exec.solve;
    if (d == NULL || S->ncblk == 0) return CANOPY_SUCCESS;
    F->sub_root = canopy_alloc((size_t)S->ncblk, sizeof(cint), "solve contribution maps", err);
    F->sub_cofs = canopy_alloc((size_t)S->ncblk, sizeof(int64_t), "solve contribution maps", err);
    F->sub_cpos = canopy_alloc((size_t)S->nblok + 1, sizeof(int64_t), "solve contribution maps", err);
    if (!F->sub_root || !F->sub_cofs || !F->sub_cpos) return err && err->status ? err->status : CANOPY_ERR_NOMEM;
    for (cint k = 0; k < S->ncblk; k++) F->sub_root[k] = -1, F->sub_cofs[k] = -1;
    for (cint b = 0; b < S->nblok; b++) F->sub_cpos[b] = -1;
    int64_t rows = 0;
    int ok = 1;
    for (int t = 0; t < d->ntasks && ok; t++) {
        cint first = d->first[t], r = d->cblk[t];
        if (d->kind[t] != SCHED_TASK_FORWARD || first >= r) continue;
        F->sub_cofs[r] = rows;
        rows += S->cblk_stride[r] - (S->cblk_fcol[r + 1] - S->cblk_fcol[r]);
        for (cint k = first; k <= r && ok; k++) {
            F->sub_root[k] = r;
            for (cint b = S->cblk_fblok[k] + 1; b < S->cblk_fblok[k + 1] && ok; b++) {
                if (S->blok_fcblk[b] <= r) continue;
                int64_t p = sub_row(S, r, S->blok_frow[b]), q = sub_row(S, r, S->blok_lrow[b]);
                ok = p >= 0 && q - p == S->blok_lrow[b] - S->blok_frow[b];
                F->sub_cpos[b] = p;
            }
        }
    }
    if (!ok) {
        canopy_free(F->sub_root);
        canopy_free(F->sub_cofs);
        canopy_free(F->sub_cpos);
        F->sub_root = NULL;
        F->sub_cofs = F->sub_cpos = NULL;
        rows = 0;
    }
    F->sub_crows = rows;
    return CANOPY_SUCCESS;
}


void numeric_solve_setup_free(numeric *F)
{
    canopy_free(F->sol_cblk);
    canopy_free(F->sol_op);
    canopy_free(F->sol_mptr);
    canopy_free(F->sol_members);
    canopy_free(F->solve_counts);
    F->sol_cblk = NULL;
    F->sol_op = NULL;
    F->sol_mptr = NULL;
    F->sol_members = NULL;
    F->solve_counts = NULL;
    F->sol_nops = 0;
    canopy_free(F->sol_local);
    canopy_free(F->sol_lparent);
    canopy_free(F->sol_kptr);
    canopy_free(F->sol_kids);
    F->sol_local = F->sol_lparent = F->sol_kptr = F->sol_kids = NULL;
    F->sol_nlocal = 0;
}

void numeric_free(numeric *F)
{
    if (F == NULL) return;
    numeric_exec keep = F->exec;
    threads_free(F);
    numa_free_pages(F->L, F->coef_bytes);
    numa_free_pages(F->U, F->coef_bytes);
    canopy_free(F->lcoef);
    canopy_free(F->fan_send); /* the buffers themselves never outlive a factorization */
    canopy_free(F->fan_recv);
    canopy_free(F->send_slot);
    canopy_free(F->send_msg);
    canopy_free(F->send_left);
    canopy_free(F->xsh); /* the copies themselves never outlive a factorization */
    canopy_free((void *)F->xleft);
    canopy_free(F->aval);
    canopy_free(F->send_order);
    canopy_free(F->send_counts);
    canopy_free(F->recv_counts);
    canopy_free(F->peer_counts);
    numeric_solve_setup_free(F);
    comm_exchange_free(F->xch);
    canopy_free(F->amap_ptr);
    canopy_free(F->amap_src);
    canopy_free(F->amap_dst);
    canopy_free(F->fan_cblk);
    canopy_free(F->fan_ptr);
    canopy_free(F->fan_blok);
    canopy_free(F->work);
    canopy_free(F->ipiv);
    canopy_free(F->dsub);
    canopy_free(F->inv_L);
    canopy_free(F->inv_U);
    memset(F, 0, sizeof *F);
    F->exec = keep; /* the execution settings outlive the factors */
}

void numeric_set_exec(numeric *F, const numeric_exec *x)
{
    if (F == NULL) return;
    if (x) F->exec = *x;
    else memset(&F->exec, 0, sizeof F->exec);
}

size_t numeric_bytes(const numeric *F)
{
    if (F == NULL || F->L == NULL) return 0;
    size_t bytes = F->coef_bytes * (F->U ? 2 : 1);
    bytes += (size_t)F->amap_nnz * 2 * sizeof(int64_t) + ((size_t)F->S->ncblk + 1) * sizeof(int64_t);
    bytes += (size_t)F->work_scalars * F->scalar_bytes; /* the calling thread's */
    for (int t = 0; F->thread_sizes && t < F->nthreads; t++)
        bytes += (F->thread_sizes[3 * t + 1] + NUMERIC_SPARES * F->thread_sizes[3 * t + 2]) * F->scalar_bytes;
    if (F->ipiv) bytes += (size_t)F->S->n * sizeof(cint);
    if (F->dsub) bytes += (size_t)F->S->n * F->scalar_bytes;
    return bytes;
}

/* Panel row of (new) row r inside cblk k, by binary search over k's bloks; -1 if absent. */
static cint panel_row(const symbolic *S, cint k, cint r)
{
    cint lo = S->cblk_fblok[k], hi = S->cblk_fblok[k + 1] - 1;
    while (lo <= hi) {
        cint mid = lo + (hi - lo) / 2;
        if (r < S->blok_frow[mid]) hi = mid - 1;
        else if (r > S->blok_lrow[mid]) lo = mid + 1;
        else return S->blok_coefrow[mid] + (r - S->blok_frow[mid]);
    }
    return -1;
}

/*
 * Entry map, grouped by the cblk each entry lands in (so that the owner of a cblk assembles it
 * alone): amap_dst >= 0 is a position in L, <= -2 the position -dst-2 in U (U^T panels); entries
 * of the upper triangle of a symmetric kind are left out. Built once; later factorizations of the
 * same pattern assemble with it directly.
 */
canopy_status numeric_build_amap(numeric *F, const canopy_csc *A, canopy_err *err)
{
    const symbolic *S = F->S;
    int symmetric = F->kind != CANOPY_FACT_LU;
    int64_t *cnt = F->amap_ptr;
    memset(cnt, 0, ((size_t)S->ncblk + 1) * sizeof(int64_t));
    /* two passes: count per cblk, then place (positions computed in the second pass) */
    for (int pass = 0; pass < 2; pass++) {
        for (cint jo = 0; jo < A->n; jo++) {
            cint nc = S->iperm[jo];
            for (cint p = A->colptr[jo]; p < A->colptr[jo + 1]; p++) {
                cint nr = S->iperm[A->rowind[p]];
                cint k;
                if (nr >= nc || (!symmetric && S->col2cblk[nr] == S->col2cblk[nc])) k = S->col2cblk[nc];
                else if (symmetric) continue;
                else k = S->col2cblk[nr];
                if (pass == 0) {
                    cnt[k + 1]++;
                    continue;
                }
                int64_t pos;
                if (k == S->col2cblk[nc]) {
                    /* L panel of cblk(col); for LU the upper part of a diagonal block goes there too */
                    cint pr = panel_row(S, k, nr);
                    if (pr < 0) goto missing;
                    pos = S->cblk_coef[k] + (int64_t)(nc - S->cblk_fcol[k]) * S->cblk_stride[k] + pr;
                } else {
                    /* U^T panel of cblk(row), at the panel row of the column */
                    cint pr = panel_row(S, k, nc);
                    if (pr < 0) goto missing;
                    pos = -(S->cblk_coef[k] + (int64_t)(nr - S->cblk_fcol[k]) * S->cblk_stride[k] + pr) - 2;
                }
                int64_t q = cnt[k]++;
                F->amap_src[q] = p;
                F->amap_dst[q] = pos;
                continue;
            missing:
                return canopy_err_set(err, CANOPY_ERR_INTERNAL,
                                      "entry (%" CINT_FMT ", %" CINT_FMT ") of the matrix is outside the block structure",
                                      A->rowind[p], jo);
            }
        }
        if (pass == 0) {
            for (cint k = 0; k < S->ncblk; k++) cnt[k + 1] += cnt[k];
            F->amap_nnz = cnt[S->ncblk];
        } else {
            /* cnt[k] now holds the end of cblk k: shift back to starts */
            for (cint k = S->ncblk; k > 0; k--) cnt[k] = cnt[k - 1];
            cnt[0] = 0;
        }
    }
    return CANOPY_SUCCESS;
}

/* The bloks facing each cblk and their cblks (the fan-in lists of the solve); with cblk_rank, only
 * rank me's cblks' bloks: on several ranks each rank's share instead of 8 bytes of every blok. */
canopy_status numeric_build_fan(numeric *F, const int *cblk_rank, int me, canopy_err *err)
{
    const symbolic *S = F->S;
    F->fan_ptr = canopy_calloc((size_t)S->ncblk + 1, sizeof(cint), "solve fan-in lists", err);
    if (!F->fan_ptr) return err && err->status ? err->status : CANOPY_ERR_NOMEM;
    for (cint k = 0; k < S->ncblk; k++)
        if (cblk_rank == NULL || cblk_rank[k] == me)
            for (cint b = S->cblk_fblok[k] + 1; b < S->cblk_fblok[k + 1]; b++) F->fan_ptr[S->blok_fcblk[b] + 1]++;
    for (cint j = 0; j < S->ncblk; j++) F->fan_ptr[j + 1] += F->fan_ptr[j];
    size_t m = (size_t)F->fan_ptr[S->ncblk];
    F->fan_blok = canopy_alloc(m + 1, sizeof(cint), "solve fan-in lists", err);
    F->fan_cblk = canopy_alloc(m + 1, sizeof(cint), "solve fan-in lists", err);
    cint *next = canopy_alloc((size_t)S->ncblk + 1, sizeof(cint), "solve fan-in lists", err);
    if (!F->fan_blok || !F->fan_cblk || !next) {
        canopy_free(next);
        return err && err->status ? err->status : CANOPY_ERR_NOMEM;
    }
    memcpy(next, F->fan_ptr, (size_t)S->ncblk * sizeof(cint));
    for (cint k = 0; k < S->ncblk; k++)
        if (cblk_rank == NULL || cblk_rank[k] == me)
            for (cint b = S->cblk_fblok[k] + 1; b < S->cblk_fblok[k + 1]; b++) {
                cint e = next[S->blok_fcblk[b]]++;
                F->fan_blok[e] = b;
                F->fan_cblk[e] = k;
            }
    canopy_free(next);
    return CANOPY_SUCCESS;
}

static canopy_status numeric_allocate(numeric *F, const symbolic *S, const canopy_csc *A,
                                      canopy_factorization kind, canopy_err *err)
{
    F->S = S;
    F->kind = kind;
    F->arith = A->arith;
    F->scalar_bytes = A->arith == CANOPY_COMPLEX ? 2 * sizeof(double) : sizeof(double);
    /* BLAS takes int dimensions */
    size_t wbuf = 0;
    for (cint k = 0; k < S->ncblk; k++) {
        if (S->cblk_stride[k] > INT_MAX)
            return canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "column block %" CINT_FMT " has too many rows for BLAS", k);
        size_t s = (size_t)S->cblk_stride[k] * (size_t)(S->cblk_fcol[k + 1] - S->cblk_fcol[k]);
        wbuf = s > wbuf ? s : wbuf;
    }
    size_t ncoef = (size_t)S->cblk_coef[S->ncblk];
    /* LU's threaded updates keep the L and U sides' products side by side (see kupdate) */
    F->upd_scalars = S->max_update_buf;
    F->work_scalars = S->max_update_buf * (kind == CANOPY_FACT_LU ? 2 : 1) + (kind == CANOPY_FACT_LDLT ? wbuf : 0);
    if (F->work_scalars == 0) F->work_scalars = 1;
    F->spare_scalars = CANOPY_MIN(S->max_update_buf, (size_t)NUMERIC_SPARE_MAX) * (kind == CANOPY_FACT_LU ? 2 : 1);
    F->coef = S->cblk_coef;
    F->ncoef = (int64_t)ncoef;
    if (!canopy_mul_ok(ncoef ? ncoef : 1, F->scalar_bytes, &F->coef_bytes))
        return canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "factor of %zu entries is too large", ncoef);
    /* untouched pages: whoever zeroes a cblk first places it (see numeric.h) */
    F->L = numa_alloc_pages(F->coef_bytes, "factor L", err);
    if (kind == CANOPY_FACT_LU) F->U = numa_alloc_pages(F->coef_bytes, "factor U", err);
    F->fresh = 1;
    if (kind != CANOPY_FACT_LLT)
        F->ipiv = canopy_alloc((size_t)S->n + 1, sizeof(cint), "pivots", err);
    if (kind == CANOPY_FACT_LDLT)
        F->dsub = canopy_calloc((size_t)S->n + 1, F->scalar_bytes, "2x2 pivots", err);
    int64_t nnz = matrix_nnz(A);
    F->amap_ptr = canopy_alloc((size_t)S->ncblk + 1, sizeof(int64_t), "entry map", err);
    F->amap_src = canopy_alloc((size_t)nnz + 1, sizeof(int64_t), "entry map", err);
    F->amap_dst = canopy_alloc((size_t)nnz + 1, sizeof(int64_t), "entry map", err);
    F->work = canopy_alloc(F->work_scalars, F->scalar_bytes, "update buffer", err);
    if (!F->L || !F->amap_ptr || !F->amap_src || !F->amap_dst || !F->work || (kind == CANOPY_FACT_LU && !F->U) ||
        (kind != CANOPY_FACT_LLT && !F->ipiv) || (kind == CANOPY_FACT_LDLT && !F->dsub))
        return err && err->status ? err->status : CANOPY_ERR_NOMEM;
    canopy_status st = numeric_build_fan(F, NULL, 0, err);
    if (st != CANOPY_SUCCESS) return st;
    F->amap_nnz_in = nnz;
    return numeric_build_amap(F, A, err);
}

typedef struct thread_alloc {
    numeric *F;
    canopy_err errs[];
} thread_alloc;

/* Each worker allocates its own workspace and spare update buffers: the pages land on its node. */
static void thread_alloc_fn(void *arg, int t)
{
    thread_alloc *ta = arg;
    numeric *F = ta->F;
    size_t work = F->thread_sizes[3 * t + 1], spare = F->thread_sizes[3 * t + 2];
    size_t n = work + NUMERIC_SPARES * spare;
    char *w = canopy_alloc(n, F->scalar_bytes, "worker update buffers", &ta->errs[t]);
    F->thread_work[t] = w;
    if (w == NULL) return;
    /* fault it in now, not inside the first update kernel */
    memset(w, 0, n * F->scalar_bytes);
    numeric_handover *h = F->hand + (size_t)t * (NUMERIC_SPARES + 1);
    h[0].buf = w;
    for (int i = 1; i <= NUMERIC_SPARES; i++)
        h[i].buf = w + (work + (size_t)(i - 1) * spare) * F->scalar_bytes;
}

static canopy_status run_alloc(numeric_run *r, int nthreads, int ntasks, canopy_err *err)
{
    r->nthreads = nthreads;
    r->ntasks = ntasks;
    r->busy = canopy_calloc((size_t)nthreads, sizeof(double), "run statistics", err);
    r->steals = canopy_calloc((size_t)nthreads, sizeof(int64_t), "run statistics", err);
    r->tasks = canopy_calloc((size_t)nthreads, sizeof(int64_t), "run statistics", err);
    r->lock_wait = canopy_calloc((size_t)nthreads, sizeof(double), "run statistics", err);
    r->handed = canopy_calloc((size_t)nthreads, sizeof(int64_t), "run statistics", err);
    r->events = canopy_calloc((size_t)ntasks + 1, sizeof(sched_event), "task events", err);
    return r->busy && r->steals && r->tasks && r->lock_wait && r->handed && r->events ? CANOPY_SUCCESS : (err && err->status ? err->status : CANOPY_ERR_NOMEM);
}

/* The hand-over slots of the local plan in use: one per ticket of each target, i.e. per
 * contribution this rank makes into it and, with several ranks, per fan-in message it receives
 * for it (scheduler=dynamic adds them under the target's lock on arrival), with a record for such
 * a message (recounted every factorization, O(ncblk); reallocated only when it grows). */
static canopy_status prepare_pending(numeric *F, const sched_local *L, canopy_err *err)
{
    int64_t total = 0;
    int parts = F->kind == CANOPY_FACT_LU ? 2 : 1, dist = L->nranks > 1 && L->recv_ptr != NULL;
    for (cint j = 0; j < F->S->ncblk; j++) {
        F->pending_off[j] = total;
        total += L->cblk_ncontrib[j] + (dist ? (int64_t)(L->recv_ptr[j + 1] - L->recv_ptr[j]) * parts : 0);
    }
    F->pending_off[F->S->ncblk] = total;
    if (F->pending == NULL || total > F->npending || (dist && F->msg_hand == NULL)) {
        canopy_free(F->pending);
        canopy_free(F->msg_hand);
        F->msg_hand = NULL;
        F->npending = 0;
        F->pending = canopy_calloc((size_t)(total > 0 ? total : 1), sizeof *F->pending, "hand-over slots", err);
        if (F->pending == NULL) return err && err->status ? err->status : CANOPY_ERR_NOMEM;
        if (dist) {
            F->msg_hand = canopy_calloc((size_t)(total > 0 ? total : 1), sizeof *F->msg_hand, "hand-over slots", err);
            if (F->msg_hand == NULL) return err && err->status ? err->status : CANOPY_ERR_NOMEM;
        }
        F->npending = total;
    }
    return CANOPY_SUCCESS;
}

/* Per-worker workspaces, ticket counters and run records for the pool of F->exec (once per pool
 * size), and the hand-over slots (every time). */
static canopy_status prepare_workers(numeric *F, canopy_err *err);

canopy_status numeric_prepare_threads(numeric *F, canopy_err *err)
{
    canopy_status st = prepare_workers(F, err);
    return st == CANOPY_SUCCESS ? prepare_pending(F, F->exec.local, err) : st;
}

static canopy_status prepare_workers(numeric *F, canopy_err *err)
{
    const numeric_exec *x = &F->exec;
    int nt = sched_pool_threads(x->pool);
    const sched_local *L = x->local;
    int nsolve = x->solve ? x->solve->ntasks : 0;
    if (x->plan == NULL || L == NULL || L->nthreads != nt || x->plan->ncblk != F->S->ncblk ||
        (L->nranks == 1 && x->solve == NULL))
        return canopy_err_set(err, CANOPY_ERR_INTERNAL, "threaded factorization without a matching plan");
    /* each worker's buffers: on several ranks by the tasks it may run, else the rank's largest */
    size_t *sizes = canopy_alloc(3 * (size_t)nt, sizeof(size_t), "worker buffers", err);
    if (sizes == NULL) return err && err->status ? err->status : CANOPY_ERR_NOMEM;
    size_t parts = F->kind == CANOPY_FACT_LU ? 2 : 1;
    for (int t = 0; t < nt; t++) {
        int own = L->nranks > 1 && L->thread_upd != NULL && L->thread_panel != NULL;
        size_t upd = own ? (size_t)L->thread_upd[t] : F->upd_scalars;
        size_t work = own ? upd * parts + (F->kind == CANOPY_FACT_LDLT ? (size_t)L->thread_panel[t] : 0) : F->work_scalars;
        sizes[3 * t] = upd;
        sizes[3 * t + 1] = work > 0 ? work : 1;
        sizes[3 * t + 2] = own ? CANOPY_MIN(upd, (size_t)NUMERIC_SPARE_MAX) * parts : F->spare_scalars;
    }
    if (F->nthreads == nt && F->run.ntasks == L->factor.ntasks && F->solve_run.ntasks == nsolve && F->thread_sizes &&
        memcmp(F->thread_sizes, sizes, 3 * (size_t)nt * sizeof(size_t)) == 0) {
        canopy_free(sizes);
        return CANOPY_SUCCESS;
    }
    threads_free(F);
    F->thread_sizes = sizes;
    F->thread_work = canopy_calloc((size_t)nt, sizeof(void *), "worker buffers", err);
    F->thread_perturbed = canopy_calloc((size_t)nt, sizeof(int64_t), "worker counters", err);
    F->serving = canopy_calloc((size_t)F->S->ncblk + 1, sizeof(atomic_int), "ticket locks", err);
    F->tickets = canopy_calloc((size_t)F->S->ncblk + 1, sizeof(atomic_int), "ticket locks", err);
    F->hand = canopy_calloc((size_t)nt * (NUMERIC_SPARES + 1), sizeof(numeric_handover), "worker buffers", err);
    F->pending_off = canopy_calloc((size_t)F->S->ncblk + 1, sizeof(int64_t), "hand-over slots", err);
    thread_alloc *ta = canopy_calloc(1, sizeof(thread_alloc) + (size_t)nt * sizeof(canopy_err), "worker setup", err);
    if (!F->thread_work || !F->thread_perturbed || !F->serving || !F->tickets || !F->hand ||
        !F->pending_off || !ta) {
        canopy_free(ta);
        threads_free(F);
        return err && err->status ? err->status : CANOPY_ERR_NOMEM;
    }
    F->nthreads = nt;
    ta->F = F;
    sched_pool_run_all(x->pool, thread_alloc_fn, ta);
    canopy_status st = CANOPY_SUCCESS;
    for (int t = 0; t < nt && st == CANOPY_SUCCESS; t++)
        if (ta->errs[t].status != CANOPY_SUCCESS) st = canopy_err_set(err, ta->errs[t].status, "%s", ta->errs[t].msg);
    canopy_free(ta);
    if (st == CANOPY_SUCCESS) st = run_alloc(&F->run, nt, L->factor.ntasks, err);
    if (st == CANOPY_SUCCESS) st = run_alloc(&F->solve_run, nt, nsolve, err);
    if (st == CANOPY_SUCCESS && L->nranks == 1) st = build_solve_maps(F, err);
    if (st != CANOPY_SUCCESS) threads_free(F);
    return st;
}

/* a new factorization: the selected inverse of the last one is gone */
void numeric_forget_inverse(numeric *F)
{
    canopy_free(F->inv_L);
    canopy_free(F->inv_U);
    F->inv_L = F->inv_U = NULL;
    F->inv_state = 0;
}

canopy_status numeric_factorize(numeric *F, const symbolic *S, const canopy_csc *A,
                                canopy_factorization kind, double threshold, canopy_err *err)
{
    if (F == NULL || S == NULL || A == NULL)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "numeric_factorize: NULL argument");
    numeric_forget_inverse(F);
    if (kind != CANOPY_FACT_LLT && kind != CANOPY_FACT_LDLT && kind != CANOPY_FACT_LU)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "factorization kind %d is not LLT, LDLT or LU", (int)kind);
    if (!(threshold > 0) || !isfinite(threshold))
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "pivot threshold %g must be positive", threshold);
    if (A->n != S->n)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "matrix order %" CINT_FMT " differs from the analysis (%" CINT_FMT ")",
                              A->n, S->n);
    if ((A->arith != CANOPY_REAL && A->arith != CANOPY_COMPLEX) || A->values == NULL)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "matrix has no numerical values");

    /* refactorization reuses everything when the analysis, kind and pattern size are the same */
    if (F->L != NULL && (F->S != S || F->kind != kind || F->arith != A->arith || F->amap_nnz_in != matrix_nnz(A)))
        numeric_free(F);
    if (F->L == NULL) {
        canopy_status st = numeric_allocate(F, S, A, kind, err);
        if (st != CANOPY_SUCCESS) {
            numeric_free(F);
            return st;
        }
    }
    if (F->exec.pool != NULL) {
        canopy_status st = numeric_prepare_threads(F, err);
        if (st != CANOPY_SUCCESS) return st;
    }
    F->threshold = threshold;
    F->stress = comm_stress_enabled();
    F->flops = kind == CANOPY_FACT_LU ? S->flops_lu : S->flops_llt;
    int old = numeric_blas_single();
    canopy_status st = A->arith == CANOPY_COMPLEX ? numeric_factorize_z(F, A, err) : numeric_factorize_d(F, A, err);
    numeric_blas_restore(old);
    return st;
}

canopy_status numeric_solve(numeric *F, cint nrhs, void *b, cint ldb, canopy_err *err)
{
    if (F == NULL || F->L == NULL)
        return canopy_err_set(err, CANOPY_ERR_PHASE, "solve called before a factorization");
    if (nrhs < 0 || (nrhs > 0 && b == NULL) || ldb < CANOPY_MAX(F->S->n, 1))
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "solve: bad right-hand side (nrhs %" CINT_FMT ", ldb %" CINT_FMT ")",
                              nrhs, ldb);
#if CANOPY_INT64
    /* the solve hands n and nrhs to BLAS as int leading dimensions and sizes */
    if (F->S->n > INT_MAX || nrhs > INT_MAX)
        return canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "solve: n = %" CINT_FMT " or nrhs = %" CINT_FMT
                              " exceeds the int range of BLAS", F->S->n, nrhs);
#endif
    if (F->exec.pool != NULL && F->nthreads != sched_pool_threads(F->exec.pool))
        return canopy_err_set(err, CANOPY_ERR_PHASE, "solve: the worker pool changed since the factorization");
    int old = numeric_blas_single();
    canopy_status st = F->arith == CANOPY_COMPLEX ? numeric_solve_z(F, nrhs, b, ldb, err)
                                                  : numeric_solve_d(F, nrhs, b, ldb, err);
    numeric_blas_restore(old);
    return st;
}
