/*
 * Numerical factorization driver: argument checks, arithmetic dispatch, allocation of the factors,
 * buffers and entry map (first call only), BLAS thread control. The arithmetic itself lives in
 * kernels_template.c (instantiated by kernels_d.c and kernels_z.c).
 */
#include "numeric.h"
#include "matrix.h"
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
    canopy_free(F->thread_perturbed);
    canopy_free(F->serving);
    canopy_free(F->tickets);
    canopy_free(F->hand);
    canopy_free(F->pending);
    canopy_free(F->pending_off);
    F->hand = NULL;
    F->pending = NULL;
    F->pending_off = NULL;
    F->npending = 0;
    F->pending_plan = NULL;
    F->thread_work = NULL;
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

static void solve_setup_free(numeric *F);

void numeric_free(numeric *F)
{
    if (F == NULL) return;
    numeric_exec keep = F->exec;
    threads_free(F);
    numa_free_pages(F->L, F->coef_bytes);
    numa_free_pages(F->U, F->coef_bytes);
    canopy_free(F->lcoef);
    canopy_free(F->R);
    canopy_free(F->recv_off);
    canopy_free(F->send_slot);
    canopy_free(F->aval);
    canopy_free(F->send_order);
    canopy_free(F->send_counts);
    canopy_free(F->recv_counts);
    canopy_free(F->peer_counts);
    solve_setup_free(F);
    comm_exchange_free(F->xch);
    canopy_free(F->amap_ptr);
    canopy_free(F->amap_src);
    canopy_free(F->amap_dst);
    canopy_free(F->blok_cblk);
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
    bytes += (size_t)F->work_scalars * F->scalar_bytes * (size_t)(1 + F->nthreads);
    bytes += F->spare_scalars * F->scalar_bytes * NUMERIC_SPARES * (size_t)F->nthreads;
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
static canopy_status build_amap(numeric *F, const canopy_csc *A, canopy_err *err)
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

/* Which cblk owns each blok, and the bloks facing each cblk (the fan-in lists of the solve). */
static canopy_status build_fan(numeric *F, canopy_err *err)
{
    const symbolic *S = F->S;
    F->blok_cblk = canopy_alloc((size_t)S->nblok + 1, sizeof(cint), "blok owners", err);
    F->fan_ptr = canopy_calloc((size_t)S->ncblk + 1, sizeof(cint), "solve fan-in lists", err);
    F->fan_blok = canopy_alloc((size_t)S->nblok + 1, sizeof(cint), "solve fan-in lists", err);
    if (!F->blok_cblk || !F->fan_ptr || !F->fan_blok) return err && err->status ? err->status : CANOPY_ERR_NOMEM;
    for (cint k = 0; k < S->ncblk; k++)
        for (cint b = S->cblk_fblok[k]; b < S->cblk_fblok[k + 1]; b++) {
            F->blok_cblk[b] = k;
            if (b > S->cblk_fblok[k]) F->fan_ptr[S->blok_fcblk[b] + 1]++;
        }
    for (cint j = 0; j < S->ncblk; j++) F->fan_ptr[j + 1] += F->fan_ptr[j];
    cint *next = canopy_alloc((size_t)S->ncblk + 1, sizeof(cint), "solve fan-in lists", err);
    if (!next) return err && err->status ? err->status : CANOPY_ERR_NOMEM;
    memcpy(next, F->fan_ptr, (size_t)S->ncblk * sizeof(cint));
    for (cint k = 0; k < S->ncblk; k++)
        for (cint b = S->cblk_fblok[k] + 1; b < S->cblk_fblok[k + 1]; b++) F->fan_blok[next[S->blok_fcblk[b]]++] = b;
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
    canopy_status st = build_fan(F, err);
    if (st != CANOPY_SUCCESS) return st;
    F->amap_nnz_in = nnz;
    return build_amap(F, A, err);
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
    size_t n = F->work_scalars + NUMERIC_SPARES * F->spare_scalars;
    char *w = canopy_alloc(n, F->scalar_bytes, "worker update buffers", &ta->errs[t]);
    F->thread_work[t] = w;
    if (w == NULL) return;
    /* fault it in now, not inside the first update kernel */
    memset(w, 0, n * F->scalar_bytes);
    numeric_handover *h = F->hand + (size_t)t * (NUMERIC_SPARES + 1);
    h[0].buf = w;
    for (int i = 1; i <= NUMERIC_SPARES; i++)
        h[i].buf = w + (F->work_scalars + (size_t)(i - 1) * F->spare_scalars) * F->scalar_bytes;
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

/* The hand-over slots of the local plan in use: one per contribution this rank makes into each
 * target (recounted every factorization, O(ncblk); reallocated only when it grows). */
static canopy_status prepare_pending(numeric *F, const sched_local *L, canopy_err *err)
{
    int64_t total = 0;
    for (cint j = 0; j < F->S->ncblk; j++) {
        F->pending_off[j] = total;
        total += L->cblk_ncontrib[j];
    }
    F->pending_off[F->S->ncblk] = total;
    if (F->pending == NULL || total > F->npending) {
        canopy_free(F->pending);
        F->npending = 0;
        F->pending = canopy_calloc((size_t)(total > 0 ? total : 1), sizeof *F->pending, "hand-over slots", err);
        if (F->pending == NULL) return err && err->status ? err->status : CANOPY_ERR_NOMEM;
        F->npending = total;
    }
    return CANOPY_SUCCESS;
}

/* Per-worker workspaces, ticket counters and run records for the pool of F->exec (once per pool
 * size), and the hand-over slots (every time). */
static canopy_status prepare_workers(numeric *F, canopy_err *err);

static canopy_status prepare_threads(numeric *F, canopy_err *err)
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
    if (F->nthreads == nt && F->run.ntasks == L->factor.ntasks && F->solve_run.ntasks == nsolve)
        return CANOPY_SUCCESS;
    threads_free(F);
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
static void forget_inverse(numeric *F)
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
    forget_inverse(F);
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
        canopy_status st = prepare_threads(F, err);
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

/* ---- several ranks ------------------------------------------------------------------------ */

/* Scalars of cblk j's panel. */
static inline int64_t panel_size(const symbolic *S, cint j)
{
    return S->cblk_coef[j + 1] - S->cblk_coef[j];
}

double numeric_predict_bytes_counts(const symbolic *S, canopy_factorization kind, canopy_arith arith,
                                    double panel_entries, int nthreads, int64_t local_entries)
{
    double sb = arith == CANOPY_COMPLEX ? 16.0 : 8.0, parts = kind == CANOPY_FACT_LU ? 2.0 : 1.0;
    double wbuf = 0;
    for (cint k = 0; k < S->ncblk; k++) {
        double w = (double)S->cblk_stride[k] * (double)(S->cblk_fcol[k + 1] - S->cblk_fcol[k]);
        if (w > wbuf) wbuf = w;
    }
    double work = (double)S->max_update_buf * parts + (kind == CANOPY_FACT_LDLT ? wbuf : 0);
    double spares = (double)CANOPY_MIN(S->max_update_buf, (size_t)NUMERIC_SPARE_MAX) * parts * NUMERIC_SPARES * nthreads;
    return sb * (parts * panel_entries + work * (nthreads + 1) + spares) + (double)local_entries * (16.0 + sb) +
           (double)S->n * 24.0 + (double)S->ncblk * 40.0 + (double)S->nblok * 8.0;
}

double numeric_predict_bytes(const symbolic *S, const sched_local *L, canopy_factorization kind, canopy_arith arith,
                             int64_t local_entries)
{
    double held = 0;
    for (cint k = 0; k < S->ncblk; k++) {
        if (L->cblk_rank[k] == L->rank) held += (double)panel_size(S, k);
        held += (double)(L->recv_ptr[k + 1] - L->recv_ptr[k]) * (double)panel_size(S, k);
    }
    for (cint q = 0; q < L->nsend; q++) held += (double)panel_size(S, L->send_cblk[q]);
    return numeric_predict_bytes_counts(S, kind, arith, held, L->nthreads, local_entries);
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
    size_t wbuf = 0;
    for (cint k = 0; k < S->ncblk; k++) {
        if (S->cblk_stride[k] > INT_MAX || panel_size(S, k) * (arith == CANOPY_COMPLEX ? 2 : 1) > INT_MAX)
            return canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "column block %" CINT_FMT " is too large for BLAS or MPI", k);
        size_t s = (size_t)S->cblk_stride[k] * (size_t)(S->cblk_fcol[k + 1] - S->cblk_fcol[k]);
        wbuf = s > wbuf ? s : wbuf;
    }
    F->work_scalars = S->max_update_buf * (kind == CANOPY_FACT_LU ? 2 : 1) + (kind == CANOPY_FACT_LDLT ? wbuf : 0);
    if (F->work_scalars == 0) F->work_scalars = 1;
    F->spare_scalars = CANOPY_MIN(S->max_update_buf, (size_t)NUMERIC_SPARE_MAX) * (kind == CANOPY_FACT_LU ? 2 : 1);
    int parts = kind == CANOPY_FACT_LU ? 2 : 1;
    F->lcoef = canopy_alloc((size_t)S->ncblk + 1, sizeof(int64_t), "local panel offsets", err);
    F->send_slot = canopy_alloc((size_t)S->ncblk + 1, sizeof(int), "fan-in slots", err);
    F->recv_off = canopy_alloc((size_t)L->recv_ptr[S->ncblk] + 1, sizeof(int64_t), "fan-in offsets", err);
    F->peer_counts = canopy_calloc(4 * (size_t)L->nranks, sizeof(int64_t), "communication counts", err);
    if (!F->lcoef || !F->send_slot || !F->recv_off || !F->peer_counts) return err && err->status ? err->status : CANOPY_ERR_NOMEM;
    int64_t off = 0, roff = 0;
    for (cint k = 0; k < S->ncblk; k++) {
        F->send_slot[k] = -1;
        F->lcoef[k] = -1;
        if (L->cblk_rank[k] == L->rank) {
            F->lcoef[k] = off;
            off += panel_size(S, k);
        }
        for (cint q = L->recv_ptr[k]; q < L->recv_ptr[k + 1]; q++) {
            F->recv_off[q] = roff;
            roff += panel_size(S, k) * parts;
        }
    }
    for (cint q = 0; q < L->nsend; q++) {
        cint j = L->send_cblk[q];
        F->lcoef[j] = off;
        off += panel_size(S, j);
        F->send_slot[j] = (int)q * parts;
    }
    F->coef = F->lcoef;
    F->ncoef = off;
    F->nrecv_scalars = roff;
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
    F->R = canopy_alloc((size_t)(F->nrecv_scalars ? F->nrecv_scalars : 1), F->scalar_bytes, "received fan-in buffers",
                        err);
    if (kind != CANOPY_FACT_LLT) F->ipiv = canopy_calloc((size_t)S->n + 1, sizeof(cint), "pivots", err);
    if (kind == CANOPY_FACT_LDLT) F->dsub = canopy_calloc((size_t)S->n + 1, F->scalar_bytes, "2x2 pivots", err);
    F->work = canopy_alloc(F->work_scalars, F->scalar_bytes, "update buffer", err);
    if (!F->L || (kind == CANOPY_FACT_LU && !F->U) || !F->R || (kind != CANOPY_FACT_LLT && !F->ipiv) ||
        (kind == CANOPY_FACT_LDLT && !F->dsub) || !F->work)
        return err && err->status ? err->status : CANOPY_ERR_NOMEM;
    return build_fan(F, err);
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
        if (F->amap_src && F->amap_dst) st = build_amap(F, A, err);
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
    canopy_status st = comm_agree(F->exec.comm, err);
    if (st >= 0)
        st = comm_share_alltoallv(F->exec.comm, send, F->send_counts, F->aval, F->recv_counts, (size_t)dps * sizeof(double),
                                  err);
    canopy_free(send);
    return st < 0 ? st : CANOPY_SUCCESS;
}

canopy_status numeric_factorize_dist(numeric *F, const symbolic *S, canopy_csc *A, bool release, canopy_arith arith,
                                     canopy_factorization kind, double threshold, canopy_err *err)
{
    const numeric_exec *x = &F->exec;
    if (x->local == NULL || x->local->nranks < 2 || x->pool == NULL || x->tags == NULL)
        return canopy_err_set(err, CANOPY_ERR_INTERNAL, "numeric_factorize_dist without a distributed plan");
    forget_inverse(F);
    if (F->L != NULL && (F->S != S || F->kind != kind || F->arith != arith)) numeric_free(F);
    canopy_status st = CANOPY_SUCCESS;
    int first = F->L == NULL;
    /* a first factorization moves the entries before the panels exist, and the caller's copy
     * goes before they are allocated: the map's transient arrays and the matrix never add to
     * the factor's peak */
    if (first) {
        numeric_free(F); /* what a failed first attempt left */
        st = numeric_layout_dist(F, S, arith, kind, err);
    }
    if (comm_agree(x->comm, err) < 0) {
        numeric_free(F);
        return err->status;
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
    if (comm_agree(x->comm, err) < 0) {
        if (first) numeric_free(F);
        return err->status;
    }
    st = prepare_threads(F, err);
    if (comm_agree(x->comm, err) < 0) return err->status;
    F->threshold = threshold;
    F->stress = comm_stress_enabled();
    F->flops = kind == CANOPY_FACT_LU ? S->flops_lu : S->flops_llt;
    canopy_csc Al = {.n = S->n, .values = F->aval, .arith = arith};
    int old = numeric_blas_single();
    st = arith == CANOPY_COMPLEX ? numeric_factorize_z(F, &Al, err) : numeric_factorize_d(F, &Al, err);
    numeric_blas_restore(old);
    return st;
}

canopy_status numeric_exchange_create(numeric *F, void (*arrived)(void *, int64_t), void *arg, canopy_err *err)
{
    const numeric_exec *x = &F->exec;
    const sched_local *L = x->local;
    const symbolic *S = F->S;
    int parts = F->U ? 2 : 1, dps = F->arith == CANOPY_COMPLEX ? 2 : 1;
    int nrecv = (int)L->recv_ptr[S->ncblk] * parts, nsend = (int)L->nsend * parts;
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
                m->buf = (char *)F->R + (size_t)(F->recv_off[q] + p * panel_size(S, j)) * F->scalar_bytes;
                m->count = (int)(panel_size(S, j) * dps);
                m->peer = L->recv_rank[q];
                comm_tags_get(x->tags, comm_tags_id(j, p == 0 ? COMM_ID_FANIN_L : COMM_ID_FANIN_U), &m->comm, &m->tag);
                m->cookie = L->cblk_task[j];
            }
    for (cint q = 0; q < L->nsend; q++) {
        cint j = L->send_cblk[q];
        for (int p = 0; p < parts; p++) {
            comm_msg *m = &sd[q * parts + p];
            m->buf = (char *)(p == 0 ? F->L : F->U) + (size_t)F->lcoef[j] * F->scalar_bytes;
            m->count = (int)(panel_size(S, j) * dps);
            m->peer = L->cblk_rank[j];
            comm_tags_get(x->tags, comm_tags_id(j, p == 0 ? COMM_ID_FANIN_L : COMM_ID_FANIN_U), &m->comm, &m->tag);
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

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void solve_setup_free(numeric *F)
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

/* The cblks whose subtree lies on this rank alone, with their tree restricted to them: the
 * children of such a cblk are such cblks too, so only roots have a parent outside. */
static canopy_status solve_setup_local(numeric *F, canopy_err *err)
{
    const symbolic *S = F->S;
    const sched_local *L = F->exec.local;
    cint nc = S->ncblk;
    cint *pos = canopy_alloc((size_t)nc + 1, sizeof(cint), "solve setup", err);
    if (!pos) return err && err->status ? err->status : CANOPY_ERR_NOMEM;
    for (cint k = 0; k < nc; k++) pos[k] = L->cblk_rank[k] == L->rank;
    for (cint k = 0; k < nc; k++) /* children come before their parent */
        if (!pos[k] && S->cblk_parent[k] >= 0) pos[S->cblk_parent[k]] = 0;
    cint nl = 0;
    for (cint k = 0; k < nc; k++) pos[k] = pos[k] ? nl++ : -1;
    F->sol_local = canopy_alloc((size_t)nl + 1, sizeof(cint), "solve setup", err);
    F->sol_lparent = canopy_alloc((size_t)nl + 1, sizeof(cint), "solve setup", err);
    F->sol_kptr = canopy_calloc((size_t)nl + 2, sizeof(cint), "solve setup", err);
    F->sol_kids = canopy_alloc((size_t)nl + 1, sizeof(cint), "solve setup", err);
    if (!F->sol_local || !F->sol_lparent || !F->sol_kptr || !F->sol_kids) {
        canopy_free(pos);
        return err && err->status ? err->status : CANOPY_ERR_NOMEM;
    }
    for (cint k = 0; k < nc; k++) {
        cint x = pos[k];
        if (x < 0) continue;
        cint p = S->cblk_parent[k] >= 0 ? pos[S->cblk_parent[k]] : -1;
        F->sol_local[x] = k;
        F->sol_lparent[x] = p;
        if (p >= 0) F->sol_kptr[p + 2]++;
    }
    for (cint x = 0; x < nl; x++) F->sol_kptr[x + 2] += F->sol_kptr[x + 1];
    for (cint x = 0; x < nl; x++)
        if (F->sol_lparent[x] >= 0) F->sol_kids[F->sol_kptr[F->sol_lparent[x] + 1]++] = x;
    F->sol_nlocal = nl;
    canopy_free(pos);
    return CANOPY_SUCCESS;
}

/* Members of the solve's collectives: for each cblk j, its owner and the ranks whose bloks face
 * it; kept for the cblks that include this rank among several members. All or nothing. */
static canopy_status solve_setup_build(numeric *F, canopy_err *err);

static canopy_status solve_setup(numeric *F, canopy_err *err)
{
    canopy_status st = solve_setup_build(F, err);
    if (st == CANOPY_SUCCESS) st = solve_setup_local(F, err);
    if (st != CANOPY_SUCCESS) solve_setup_free(F);
    return st;
}

static canopy_status solve_setup_build(numeric *F, canopy_err *err)
{
    const symbolic *S = F->S;
    const sched_local *L = F->exec.local;
    int R = L->nranks, me = L->rank;
    size_t np = 0;
    int64_t *pairs = canopy_alloc((size_t)S->nblok + 1, sizeof(int64_t), "solve setup", err);
    F->sol_op = canopy_alloc((size_t)S->ncblk + 1, sizeof(int), "solve setup", err);
    F->solve_counts = canopy_calloc(2, sizeof(int64_t), "solve setup", err);
    if (!pairs || !F->sol_op || !F->solve_counts) {
        canopy_free(pairs);
        return err && err->status ? err->status : CANOPY_ERR_NOMEM;
    }
    for (cint k = 0; k < S->ncblk; k++)
        for (cint b = S->cblk_fblok[k] + 1; b < S->cblk_fblok[k + 1]; b++) {
            cint j = S->blok_fcblk[b];
            if (L->cblk_rank[k] != L->cblk_rank[j]) pairs[np++] = (int64_t)j * R + L->cblk_rank[k];
        }
    qsort(pairs, np, sizeof *pairs, cmp_i64);
    size_t nu = 0;
    for (size_t q = 0; q < np; q++)
        if (nu == 0 || pairs[q] != pairs[nu - 1]) pairs[nu++] = pairs[q];
    /* pass 0 counts, pass 1 fills */
    int nops = 0;
    int64_t nmem = 0;
    for (int pass = 0; pass < 2; pass++) {
        nops = 0;
        nmem = 0;
        for (size_t q = 0; q < nu;) {
            cint j = (cint)(pairs[q] / R);
            size_t e = q;
            int mine = L->cblk_rank[j] == me;
            while (e < nu && pairs[e] / R == j) mine |= (int)(pairs[e++] % R) == me;
            if (mine) {
                if (pass == 1) {
                    F->sol_cblk[nops] = j;
                    F->sol_mptr[nops] = nmem;
                    F->sol_members[nmem] = L->cblk_rank[j];
                    for (size_t z = q; z < e; z++) F->sol_members[nmem + 1 + (int64_t)(z - q)] = (int)(pairs[z] % R);
                }
                nmem += 1 + (int64_t)(e - q);
                nops++;
            }
            q = e;
        }
        if (pass == 0) {
            F->sol_cblk = canopy_alloc((size_t)nops + 1, sizeof(cint), "solve setup", err);
            F->sol_mptr = canopy_alloc((size_t)nops + 2, sizeof(int64_t), "solve setup", err);
            F->sol_members = canopy_alloc((size_t)nmem + 1, sizeof(int), "solve setup", err);
            if (!F->sol_cblk || !F->sol_mptr || !F->sol_members) {
                canopy_free(pairs);
                return err && err->status ? err->status : CANOPY_ERR_NOMEM;
            }
        }
    }
    F->sol_mptr[nops] = nmem;
    F->sol_nops = nops;
    for (cint k = 0; k < S->ncblk; k++) F->sol_op[k] = -1;
    for (int i = 0; i < nops; i++) F->sol_op[F->sol_cblk[i]] = i;
    canopy_free(pairs);
    return CANOPY_SUCCESS;
}

/*
 * Rank 0's permuted right-hand sides (or solution) in the order the ranks' own rows follow: rank
 * by rank, each rank's cblks in order, each cblk's rows column after column. counts and displs
 * (in doubles) say where each rank's share lies.
 */
static void solve_layout(const numeric *F, cint nrhs, int64_t *counts, int64_t *displs)
{
    const sched_local *L = F->exec.local;
    const symbolic *S = F->S;
    int R = L->nranks, dps = F->arith == CANOPY_COMPLEX ? 2 : 1;
    for (int r = 0; r < R; r++) counts[r] = displs[r] = 0;
    for (cint k = 0; k < S->ncblk; k++) counts[L->cblk_rank[k]] += (int64_t)(S->cblk_fcol[k + 1] - S->cblk_fcol[k]) * nrhs * dps;
    for (int r = 1; r < R; r++) displs[r] = displs[r - 1] + counts[r - 1];
}

/* Between the user's b (original numbering, on rank 0) and the ranks' packed rows: to_user 0
 * packs b into all, 1 unpacks all into b. */
static canopy_status solve_pack_user(const numeric *F, cint nrhs, void *b, char *all, const int64_t *displs, int to_user,
                                     canopy_err *err)
{
    const sched_local *L = F->exec.local;
    const symbolic *S = F->S;
    cint n = S->n;
    int R = L->nranks, dps = F->arith == CANOPY_COMPLEX ? 2 : 1;
    size_t sb = F->scalar_bytes;
    int64_t *at = canopy_alloc((size_t)R, sizeof(int64_t), "solve workspace", err);
    if (at == NULL) return err && err->status ? err->status : CANOPY_ERR_NOMEM;
    for (int r = 0; r < R; r++) at[r] = displs[r] / dps;
    char *bb = b;
    for (cint k = 0; k < S->ncblk; k++) {
        int r0 = L->cblk_rank[k];
        cint f = S->cblk_fcol[k], w = S->cblk_fcol[k + 1] - f;
        for (cint r = 0; r < nrhs; r++, at[r0] += w)
            for (cint i = 0; i < w; i++) {
                char *u = bb + ((size_t)S->perm[f + i] + (size_t)r * n) * sb, *v = all + (size_t)(at[r0] + i) * sb;
                if (to_user)
                    memcpy(u, v, sb);
                else
                    memcpy(v, u, sb);
            }
    }
    canopy_free(at);
    return CANOPY_SUCCESS;
}

/* Between this rank's packed rows and y (new numbering, n x nrhs): to_y 1 unpacks, 0 packs. */
static void solve_pack_own(const numeric *F, cint nrhs, char *y, char *pack, int to_y)
{
    const sched_local *L = F->exec.local;
    const symbolic *S = F->S;
    cint n = S->n;
    size_t sb = F->scalar_bytes;
    int64_t p = 0;
    for (cint k = 0; k < S->ncblk; k++) {
        if (L->cblk_rank[k] != L->rank) continue;
        cint f = S->cblk_fcol[k], w = S->cblk_fcol[k + 1] - f;
        for (cint r = 0; r < nrhs; r++, p += w) {
            char *u = y + ((size_t)f + (size_t)r * n) * sb, *v = pack + (size_t)p * sb;
            if (to_y)
                memcpy(u, v, (size_t)w * sb);
            else
                memcpy(v, u, (size_t)w * sb);
        }
    }
}

canopy_status numeric_solve_dist_own(numeric *F, cint nrhs, void *y, canopy_err *err)
{
    canopy_status st = F->sol_op == NULL ? solve_setup(F, err) : CANOPY_SUCCESS;
    if (comm_agree(F->exec.comm, err) < 0) return err->status;
    (void)st;
    F->solve_counts[0] = F->solve_counts[1] = 0;
    int old = numeric_blas_single();
    st = F->arith == CANOPY_COMPLEX ? numeric_solve_dist_z(F, nrhs, (double _Complex *)y, err)
                                    : numeric_solve_dist_d(F, nrhs, y, err);
    numeric_blas_restore(old);
    return comm_agree(F->exec.comm, err);
}

/*
 * The solve over several ranks: rank 0 sends each rank only the rows of its own cblks (one
 * scatter, not the whole right-hand side to everyone), the ranks solve (message-driven, their own
 * subtrees on all threads), and the rows come back the same way.
 */
canopy_status numeric_selinv_dist(numeric *F, void *Lx, void *Ux, double *flops, int64_t sent[2], canopy_err *err)
{
    /* the solve's members and local subtrees: its broadcasts are the ones the inversion makes */
    sent[0] = sent[1] = 0;
    *flops = 0;
    if (F->sol_op == NULL) solve_setup(F, err);
    /* a rank short of memory here must not leave the others in the inversion's collectives (every
     * rank agrees, set up before or not, and all drop the setup on failure) */
    if (comm_agree(F->exec.comm, err) < 0) {
        solve_setup_free(F);
        return err->status;
    }
    canopy_status st;
    int old = numeric_blas_single();
    st = F->arith == CANOPY_COMPLEX ? numeric_selinv_dist_z(F, Lx, Ux, flops, sent, err)
                                    : numeric_selinv_dist_d(F, Lx, Ux, flops, sent, err);
    numeric_blas_restore(old);
    return st;
}

canopy_status numeric_solve_dist(numeric *F, cint nrhs, void *b, canopy_err *err)
{
    const numeric_exec *x = &F->exec;
    const sched_local *L = x->local;
    const symbolic *S = F->S;
    cint n = S->n;
    int R = L->nranks, me = L->rank, dps = F->arith == CANOPY_COMPLEX ? 2 : 1;
    size_t sb = F->scalar_bytes;
    double *y = NULL, *pack = NULL, *all = NULL;
    int64_t *counts = NULL, *displs = NULL;
    canopy_status st = CANOPY_SUCCESS;
    if (F->sol_op == NULL) st = solve_setup(F, err);
    size_t ny = 0;
    if (st == CANOPY_SUCCESS && !canopy_mul_ok((size_t)n, (size_t)nrhs, &ny))
        st = canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "solve workspace too large");
    int64_t mine_rows = 0;
    for (cint k = 0; k < S->ncblk; k++)
        if (L->cblk_rank[k] == me) mine_rows += S->cblk_fcol[k + 1] - S->cblk_fcol[k];
    if (st == CANOPY_SUCCESS) {
        /* zeroed: the rows of other ranks' cblks are written (by their broadcasts) before use */
        y = canopy_calloc(ny + 1, sb, "solve workspace", err);
        pack = canopy_alloc((size_t)mine_rows * (size_t)nrhs + 1, sb, "solve workspace", err);
        counts = canopy_alloc((size_t)R, sizeof(int64_t), "solve workspace", err);
        displs = canopy_alloc((size_t)R, sizeof(int64_t), "solve workspace", err);
        if (me == 0) all = canopy_alloc(ny + 1, sb, "solve workspace", err);
        if (!y || !pack || !counts || !displs || (me == 0 && !all)) st = err && err->status ? err->status : CANOPY_ERR_NOMEM;
    }
    if (st == CANOPY_SUCCESS) {
        solve_layout(F, nrhs, counts, displs);
        if (me == 0) st = solve_pack_user(F, nrhs, b, (char *)all, displs, 0, err);
    }
    if (comm_agree(x->comm, err) < 0) {
        st = err->status;
        goto out;
    }
    /* each rank's own rows of the permuted right-hand side */
    if ((st = comm_share_scatter(x->comm, all, counts, displs, pack, mine_rows * nrhs * dps, err)) != CANOPY_SUCCESS)
        goto out;
    solve_pack_own(F, nrhs, (char *)y, (char *)pack, 1);
    if ((st = numeric_solve_dist_own(F, nrhs, y, err)) != CANOPY_SUCCESS) goto out;
    /* this rank's rows, cblk by cblk, back to rank 0 */
    solve_pack_own(F, nrhs, (char *)y, (char *)pack, 0);
    st = comm_share_gather(x->comm, pack, mine_rows * nrhs * dps, all, counts, displs, err);
    if (st == CANOPY_SUCCESS && me == 0) st = solve_pack_user(F, nrhs, b, (char *)all, displs, 1, err);
    /* rank 0's unpacking may fail alone: the status is agreed, as promised */
    st = comm_agree(x->comm, err);
out:
    canopy_free(all);
    canopy_free(y);
    canopy_free(pack);
    canopy_free(counts);
    canopy_free(displs);
    return st;
}
