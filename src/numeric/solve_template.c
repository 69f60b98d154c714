/*
 * The triangular solves on one rank (numeric_solve_<s>) and the kernels they share with the solve
 * over several ranks (solve_dist_template.c). Part of the translation unit of
 * factor_template.c: not compiled on its own.
 */

/*
 * The solve works on y (n x nrhs, leading dimension n) in the new numbering, one cblk at a time:
 * forward(j) gathers the contributions of every blok facing j (fan-in: it writes only y_j), then
 * applies j's interchanges and diagonal solve; backward(k) applies D^-1 (LDL^T), subtracts the
 * bloks of k times the already final solution rows they face, solves with the transposed diagonal
 * block (U for LU) and undoes the interchanges. Each task writes only its own rows, so the solve
 * needs no lock and gives the same bits for any thread count and scheduler.
 */
/*
 * The solve's own small kernels. With few right-hand sides every blok is a matrix-vector product.
 * A BLAS level-3 call per blok costs more (argument checks, a buffer from the library's pool,
 * packing) than the arithmetic of the many small bloks low in the tree, and on AVX-512 cores
 * OpenBLAS 0.3 sends transposed products with K < 32 (the small bloks of the backward solve)
 * through its full level-3 driver, whose buffer pool is taken under a lock: on 16 threads the
 * backward tasks ran 18x longer than the forward ones over the same subtrees (issue 10). These
 * loops read each blok once, take no lock and touch only their operands; BLAS-3 is kept for
 * products big enough to pay for a call (many right-hand sides).
 */
#define KS_BLAS_NRHS 4    /* fewer right-hand sides: always the loops (bandwidth-bound anyway) */
#define KS_BLAS_MIN 32768 /* fewer multiply-adds in one product: the loops */
#define KS_RHS_CHUNK 64   /* right-hand sides per panel product (bounds the workspace) */

static inline int ks_blas(cint m, cint k, cint nrhs)
{
    return nrhs >= KS_BLAS_NRHS && (double)m * (double)k * (double)nrhs >= KS_BLAS_MIN;
}

/* sum of p[i] x[i] (conj(p[i]) x[i] when cj); four partial sums so that the loads overlap */
static inline SCALAR ks_dot(cint h, const SCALAR *restrict p, const SCALAR *restrict x, int cj)
{
    SCALAR s0 = K_ZERO, s1 = K_ZERO, s2 = K_ZERO, s3 = K_ZERO;
    cint i = 0;
    if (cj) {
        for (; i + 4 <= h; i += 4) {
            s0 += K_CONJ(p[i]) * x[i];
            s1 += K_CONJ(p[i + 1]) * x[i + 1];
            s2 += K_CONJ(p[i + 2]) * x[i + 2];
            s3 += K_CONJ(p[i + 3]) * x[i + 3];
        }
        for (; i < h; i++) s0 += K_CONJ(p[i]) * x[i];
    } else {
        for (; i + 4 <= h; i += 4) {
            s0 += p[i] * x[i];
            s1 += p[i + 1] * x[i + 1];
            s2 += p[i + 2] * x[i + 2];
            s3 += p[i + 3] * x[i + 3];
        }
        for (; i < h; i++) s0 += p[i] * x[i];
    }
    return (s0 + s1) + (s2 + s3);
}

/* y[0..h) += a0 p0 + a1 p1: two columns per pass halve the traffic on y */
static inline void ks_axpy2(cint h, SCALAR a0, const SCALAR *restrict p0, SCALAR a1, const SCALAR *restrict p1,
                            SCALAR *restrict y)
{
    for (cint i = 0; i < h; i++) y[i] += p0[i] * a0 + p1[i] * a1;
}

static inline void ks_axpy(cint h, SCALAR a, const SCALAR *restrict p, SCALAR *restrict y)
{
    for (cint i = 0; i < h; i++) y[i] += p[i] * a;
}

/* y (h x nrhs, ld ldy) += alpha P x, P h x w (ld ldp), x w x nrhs (ld ldx); y and x do not overlap */
static void ks_gemv_n(cint h, cint w, cint nrhs, SCALAR alpha, const SCALAR *P, cint ldp, const SCALAR *x, cint ldx,
                      SCALAR *y, cint ldy)
{
    if (h <= 0 || w <= 0) return;
    if (ks_blas(h, w, nrhs)) {
        K_GEMM(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)h, (int)nrhs, (int)w, K_BS(alpha), P, (int)ldp, x,
               (int)ldx, K_BS(K_ONE), y, (int)ldy);
        return;
    }
    for (cint r = 0; r < nrhs; r++) {
        const SCALAR *xr = x + (size_t)r * ldx;
        SCALAR *yr = y + (size_t)r * ldy;
        cint c = 0;
        for (; c + 2 <= w; c += 2)
            ks_axpy2(h, alpha * xr[c], P + (size_t)c * ldp, alpha * xr[c + 1], P + (size_t)(c + 1) * ldp, yr);
        if (c < w) ks_axpy(h, alpha * xr[c], P + (size_t)c * ldp, yr);
    }
}

/* y (w x nrhs) += alpha op(P)^T x, P h x w, x h x nrhs; op conjugates when cj */
static void ks_gemv_t(cint h, cint w, cint nrhs, int cj, SCALAR alpha, const SCALAR *P, cint ldp, const SCALAR *x,
                      cint ldx, SCALAR *y, cint ldy)
{
    if (h <= 0 || w <= 0) return;
    if (ks_blas(h, w, nrhs)) {
        K_GEMM(CblasColMajor, cj ? K_TRANS_H : CblasTrans, CblasNoTrans, (int)w, (int)nrhs, (int)h, K_BS(alpha), P,
               (int)ldp, x, (int)ldx, K_BS(K_ONE), y, (int)ldy);
        return;
    }
    for (cint c = 0; c < w; c++) {
        const SCALAR *pc = P + (size_t)c * ldp;
        for (cint r = 0; r < nrhs; r++) y[c + (size_t)r * ldy] += alpha * ks_dot(h, pc, x + (size_t)r * ldx, cj);
    }
}

/* x <- T^-1 x, T the lower triangle of a w x w block (unit diagonal when unit) */
static void ks_trsv_ln(cint w, cint nrhs, int unit, const SCALAR *T, cint ldt, SCALAR *x, cint ldx)
{
    if (ks_blas(w, (w + 1) / 2, nrhs)) {
        K_TRSM(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, unit ? CblasUnit : CblasNonUnit, (int)w,
               (int)nrhs, K_BS(K_ONE), T, (int)ldt, x, (int)ldx);
        return;
    }
    for (cint r = 0; r < nrhs; r++) {
        SCALAR *xr = x + (size_t)r * ldx;
        for (cint c = 0; c < w; c++) {
            const SCALAR *tc = T + (size_t)c * ldt;
            if (!unit) xr[c] /= tc[c];
            ks_axpy(w - c - 1, -xr[c], tc + c + 1, xr + c + 1);
        }
    }
}

/* x <- op(T)^-T x, T lower as above; op conjugates when cj */
static void ks_trsv_lt(cint w, cint nrhs, int unit, int cj, const SCALAR *T, cint ldt, SCALAR *x, cint ldx)
{
    if (ks_blas(w, (w + 1) / 2, nrhs)) {
        K_TRSM(CblasColMajor, CblasLeft, CblasLower, cj ? K_TRANS_H : CblasTrans, unit ? CblasUnit : CblasNonUnit,
               (int)w, (int)nrhs, K_BS(K_ONE), T, (int)ldt, x, (int)ldx);
        return;
    }
    for (cint r = 0; r < nrhs; r++) {
        SCALAR *xr = x + (size_t)r * ldx;
        for (cint c = w - 1; c >= 0; c--) {
            const SCALAR *tc = T + (size_t)c * ldt;
            SCALAR s = xr[c] - ks_dot(w - c - 1, tc + c + 1, xr + c + 1, cj);
            if (!unit) s /= cj ? K_CONJ(tc[c]) : tc[c];
            xr[c] = s;
        }
    }
}

/* x <- T^-T x, T the upper triangle of a w x w block (non-unit: U of LU; the transposed solve) */
static void ks_trsv_ut(cint w, cint nrhs, const SCALAR *T, cint ldt, SCALAR *x, cint ldx)
{
    if (ks_blas(w, (w + 1) / 2, nrhs)) {
        K_TRSM(CblasColMajor, CblasLeft, CblasUpper, CblasTrans, CblasNonUnit, (int)w, (int)nrhs, K_BS(K_ONE), T,
               (int)ldt, x, (int)ldx);
        return;
    }
    for (cint r = 0; r < nrhs; r++) {
        SCALAR *xr = x + (size_t)r * ldx;
        for (cint c = 0; c < w; c++) {
            const SCALAR *tc = T + (size_t)c * ldt;
            xr[c] = (xr[c] - ks_dot(c, tc, xr, 0)) / tc[c];
        }
    }
}

/*
 * The transposed solve of LU factors (F->trans): A = L~ U with L~'s diagonal blocks P_j^T L_jj (the
 * interchanges stay inside the block), so A^T = U^T L~^T. Forward runs U^T: the U panels (which hold
 * U^T, shaped like L's) take the place of L's and the diagonal block's upper triangle is solved
 * transposed, with no interchange; backward runs L~^T: L's panels transposed, the unit lower
 * triangle transposed, then P_j^T (the interchanges undone, last first), as LDL^T does.
 */
static inline int ks_tlu(const numeric *F)
{
    return F->trans && F->kind == CANOPY_FACT_LU;
}

/* the panel of cblk k the forward solve reads (L, or U^T in the transposed LU solve) */
static inline const SCALAR *ks_fwd_panel(const numeric *F, cint k)
{
    return (const SCALAR *)(ks_tlu(F) ? F->U : F->L) + F->coef[k];
}

/* the panel of cblk k whose off-diagonal bloks the backward solve reads transposed */
static inline const SCALAR *ks_bwd_panel(const numeric *F, cint k)
{
    return (const SCALAR *)(F->kind == CANOPY_FACT_LU && !F->trans ? F->U : F->L) + F->coef[k];
}

/* x <- T^-1 x, T the upper triangle of a w x w block (non-unit: U of LU) */
static void ks_trsv_un(cint w, cint nrhs, const SCALAR *T, cint ldt, SCALAR *x, cint ldx)
{
    if (ks_blas(w, (w + 1) / 2, nrhs)) {
        K_TRSM(CblasColMajor, CblasLeft, CblasUpper, CblasNoTrans, CblasNonUnit, (int)w, (int)nrhs, K_BS(K_ONE), T,
               (int)ldt, x, (int)ldx);
        return;
    }
    for (cint r = 0; r < nrhs; r++) {
        SCALAR *xr = x + (size_t)r * ldx;
        for (cint c = w - 1; c >= 0; c--) {
            const SCALAR *tc = T + (size_t)c * ldt;
            xr[c] /= tc[c];
            ks_axpy(c, -xr[c], tc, xr);
        }
    }
}

/* the last step of forward(j), once every contribution is in: j's interchanges and diagonal solve */
static void kforward_diag(const numeric *F, cint j, cint nrhs, SCALAR *y)
{
    const symbolic *S = F->S;
    cint n = S->n, fcol = S->cblk_fcol[j], w = S->cblk_fcol[j + 1] - fcol;
    SCALAR *ys = y + fcol;
    if (ks_tlu(F)) {
        ks_trsv_ut(w, nrhs, (const SCALAR *)F->L + F->coef[j], S->cblk_stride[j], ys, n);
        return;
    }
    if (F->kind != CANOPY_FACT_LLT) {
        /* the cblk's interchanges, in order (LDL^T marks a 2x2 pivot's first column with -1) */
        const cint *ipiv = F->ipiv + fcol;
        for (cint c = 0; c < w; c++)
            if (ipiv[c] >= 0 && ipiv[c] != c) kswap_rows(ys, n, c, ipiv[c], 0, nrhs);
    }
    ks_trsv_ln(w, nrhs, F->kind != CANOPY_FACT_LLT, (const SCALAR *)F->L + F->coef[j], S->cblk_stride[j], ys, n);
}

/* y_b -= L_b y_k for an off-diagonal blok b of cblk k */
static inline void kforward_blok(const numeric *F, cint k, cint b, cint nrhs, SCALAR *y)
{
    const symbolic *S = F->S;
    cint wk = S->cblk_fcol[k + 1] - S->cblk_fcol[k], h = S->blok_lrow[b] - S->blok_frow[b] + 1;
    const SCALAR *Pb = ks_fwd_panel(F, k) + S->blok_coefrow[b];
    ks_gemv_n(h, wk, nrhs, K_MONE, Pb, S->cblk_stride[k], y + S->cblk_fcol[k], S->n, y + S->blok_frow[b], S->n);
}

/*
 * forward(j) by fan-in: the bloks facing j, by source cblk; with rank >= 0 only that rank's. With C
 * (the threaded solve), a subtree task's bloks facing j arrive summed in its contribution block C
 * (at its root's bloks): the others of that subtree are skipped.
 */
static void kforward_from(const numeric *F, cint j, cint nrhs, SCALAR *y, int rank, const SCALAR *C)
{
    const symbolic *S = F->S;
    cint n = S->n;
    for (cint q = F->fan_ptr[j]; q < F->fan_ptr[j + 1]; q++) {
        cint b = F->fan_blok[q], k = F->fan_cblk[q];
        if (rank >= 0 && F->exec.local->cblk_rank[k] != rank) continue; /* another rank's block */
        if (C && F->sub_root[k] >= 0) {
            if (F->sub_root[k] != k) continue;
            cint h = S->blok_lrow[b] - S->blok_frow[b] + 1;
            int64_t m = S->cblk_stride[k] - (S->cblk_fcol[k + 1] - S->cblk_fcol[k]);
            const SCALAR *c = C + F->sub_cofs[k] * nrhs + F->sub_cpos[b];
            for (cint r = 0; r < nrhs; r++) {
                SCALAR *yr = y + S->blok_frow[b] + (size_t)r * n;
                const SCALAR *cr = c + r * m;
                for (cint i = 0; i < h; i++) yr[i] += cr[i];
            }
            continue;
        }
        kforward_blok(F, k, b, nrhs, y);
    }
    kforward_diag(F, j, nrhs, y);
}

/*
 * forward over the cblks [first, last] of one subtree, run as one task. Every source of a cblk of
 * the subtree lies in it, so each cblk, once solved, pushes its contributions (fan-out): one
 * product down its whole off-diagonal panel into work (ks_work_scalars), then each blok's rows go
 * to y when it faces the subtree and, with C, to the subtree's contribution block when it faces an
 * ancestor (no other task writes either); without C (one thread: [first, last] is the whole tree)
 * nothing faces outside.
 */
static void kforward_subtree(const numeric *F, cint first, cint last, cint nrhs, SCALAR *y, SCALAR *C,
                             SCALAR *work)
{
    const symbolic *S = F->S;
    cint n = S->n;
    int64_t mc = 0;
    if (C) {
        mc = S->cblk_stride[last] - (S->cblk_fcol[last + 1] - S->cblk_fcol[last]);
        C += F->sub_cofs[last] * nrhs;
        memset(C, 0, (size_t)(mc * nrhs) * sizeof(SCALAR));
    }
    for (cint k = first; k <= last; k++) {
        kforward_diag(F, k, nrhs, y);
        cint w = S->cblk_fcol[k + 1] - S->cblk_fcol[k], m = S->cblk_stride[k] - w;
        const SCALAR *P = ks_fwd_panel(F, k) + w;
        for (cint r0 = 0; m > 0 && r0 < nrhs; r0 += KS_RHS_CHUNK) {
            cint nr = nrhs - r0 < KS_RHS_CHUNK ? nrhs - r0 : KS_RHS_CHUNK;
            memset(work, 0, (size_t)m * (size_t)nr * sizeof(SCALAR));
            ks_gemv_n(m, w, nr, K_ONE, P, S->cblk_stride[k], y + S->cblk_fcol[k] + (size_t)r0 * n, n, work, m);
            for (cint b = S->cblk_fblok[k] + 1; b < S->cblk_fblok[k + 1]; b++) {
                cint h = S->blok_lrow[b] - S->blok_frow[b] + 1, at = S->blok_coefrow[b] - w;
                SCALAR *dst;
                size_t ld;
                if (S->blok_fcblk[b] <= last) dst = y + S->blok_frow[b] + (size_t)r0 * n, ld = (size_t)n;
                else if (C) dst = C + F->sub_cpos[b] + r0 * mc, ld = (size_t)mc;
                else continue;
                for (cint r = 0; r < nr; r++) {
                    SCALAR *dr = dst + r * ld;
                    const SCALAR *tr = work + at + (size_t)r * m;
                    for (cint i = 0; i < h; i++) dr[i] -= tr[i];
                }
            }
        }
    }
}

/* z_k <- D_k^-1 z_k (LDL^T: 1x1 and 2x2 pivots, never across cblks). */
static void kdiag_solve(const numeric *F, cint k, cint nrhs, SCALAR *y)
{
    const symbolic *S = F->S;
    cint n = S->n, fcol = S->cblk_fcol[k], w = S->cblk_fcol[k + 1] - fcol, st = S->cblk_stride[k];
    const SCALAR *P = (const SCALAR *)F->L + F->coef[k];
    const SCALAR *dsub = F->dsub;
    const cint *ipiv = F->ipiv + fcol;
    for (cint j = 0; j < w;) {
        if (ipiv[j] < 0) {
            SCALAR d11, d22, d21;
            kdinv2(P[j + (size_t)j * st], dsub[fcol + j], P[(j + 1) + (size_t)(j + 1) * st], &d11, &d22, &d21);
            for (cint r = 0; r < nrhs; r++) {
                SCALAR *yj = y + fcol + j + (size_t)r * n;
                SCALAR x1 = yj[0], x2 = yj[1];
                yj[0] = d21 * (d11 * x1 - x2);
                yj[1] = d21 * (d22 * x2 - x1);
            }
            j += 2;
        } else {
            SCALAR inv = K_ONE / P[j + (size_t)j * st];
            for (cint r = 0; r < nrhs; r++) y[fcol + j + (size_t)r * n] *= inv;
            j++;
        }
    }
}

/* scalars of workspace one thread needs (the panel products of kforward_subtree and kbackward) */
static size_t ks_work_scalars(const numeric *F, cint nrhs)
{
    return F->S->max_update_rows * (size_t)(nrhs < KS_RHS_CHUNK ? nrhs : KS_RHS_CHUNK) + 1;
}

/*
 * backward(k): the solution rows facing k's off-diagonal bloks are final; they are gathered into
 * work (ks_work_scalars) so that one product runs down the whole panel (one dot product per column
 * with one right-hand side, one BLAS-3 call with many) instead of one per blok. backward reads no
 * other task's result in any other order: the bits are the same for every layout. Its steps are
 * apart so that the solve over several ranks can split the product of a big cblk by columns.
 */
static void kbackward_gather(const numeric *F, cint k, cint r0, cint nr, const SCALAR *y, SCALAR *work)
{
    const symbolic *S = F->S;
    cint n = S->n, w = S->cblk_fcol[k + 1] - S->cblk_fcol[k], m = S->cblk_stride[k] - w;
    for (cint r = 0; r < nr; r++) {
        SCALAR *wr = work + (size_t)r * m;
        const SCALAR *yr = y + (size_t)(r0 + r) * n;
        for (cint b = S->cblk_fblok[k] + 1; b < S->cblk_fblok[k + 1]; b++) {
            cint h = S->blok_lrow[b] - S->blok_frow[b] + 1;
            memcpy(wr + (S->blok_coefrow[b] - w), yr + S->blok_frow[b], (size_t)h * sizeof(SCALAR));
        }
    }
}

/* x_k[c0, c1) of right-hand sides [r0, r0 + nr) -= the panel's columns [c0, c1) times work */
static void kbackward_product(const numeric *F, cint k, cint r0, cint nr, cint c0, cint c1, SCALAR *y,
                              const SCALAR *work)
{
    const symbolic *S = F->S;
    cint n = S->n, fcol = S->cblk_fcol[k], w = S->cblk_fcol[k + 1] - fcol, st = S->cblk_stride[k], m = st - w;
    const SCALAR *X = ks_bwd_panel(F, k);
    ks_gemv_t(m, c1 - c0, nr, F->kind == CANOPY_FACT_LLT, K_MONE, X + w + (size_t)c0 * st, st, work, m,
              y + fcol + c0 + (size_t)r0 * n, n);
}

/* the last step of backward(k): the transposed diagonal solve (U for LU) and the interchanges */
static void kbackward_diag(const numeric *F, cint k, cint nrhs, SCALAR *y)
{
    const symbolic *S = F->S;
    canopy_factorization kind = F->kind;
    cint n = S->n, fcol = S->cblk_fcol[k], w = S->cblk_fcol[k + 1] - fcol, st = S->cblk_stride[k];
    const SCALAR *P = (const SCALAR *)F->L + F->coef[k];
    SCALAR *ys = y + fcol;
    if (kind == CANOPY_FACT_LU && !F->trans)
        ks_trsv_un(w, nrhs, P, st, ys, n);
    else
        ks_trsv_lt(w, nrhs, kind != CANOPY_FACT_LLT, kind == CANOPY_FACT_LLT, P, st, ys, n);
    if (kind == CANOPY_FACT_LDLT || ks_tlu(F)) {
        /* undo the cblk's interchanges (symmetric for LDL^T), last first */
        const cint *ipiv = F->ipiv + fcol;
        for (cint j = w - 1; j >= 0; j--)
            if (ipiv[j] >= 0 && ipiv[j] != j) kswap_rows(ys, n, j, ipiv[j], 0, nrhs);
    }
}

static void kbackward(const numeric *F, cint k, cint nrhs, SCALAR *y, SCALAR *work)
{
    const symbolic *S = F->S;
    cint w = S->cblk_fcol[k + 1] - S->cblk_fcol[k], m = S->cblk_stride[k] - w;
    if (F->kind == CANOPY_FACT_LDLT) kdiag_solve(F, k, nrhs, y);
    for (cint r0 = 0; m > 0 && r0 < nrhs; r0 += KS_RHS_CHUNK) {
        cint nr = nrhs - r0 < KS_RHS_CHUNK ? nrhs - r0 : KS_RHS_CHUNK;
        kbackward_gather(F, k, r0, nr, y, work);
        kbackward_product(F, k, r0, nr, 0, w, y, work);
    }
    kbackward_diag(F, k, nrhs, y);
}

typedef struct ksolve {
    const numeric *F;
    cint nrhs;
    SCALAR *y;
    SCALAR *work; /* ks_work_scalars per thread */
    size_t work_ld;
    SCALAR *C;    /* the subtrees' contribution blocks (NULL: fan-in everywhere) */
} ksolve;

static int ksolve_task(void *ctx, int task, sched_worker *wk)
{
    const ksolve *ks = ctx;
    const sched_dag *d = ks->F->exec.solve;
    cint first = d->first[task], last = d->cblk[task];
    SCALAR *work = ks->work + (size_t)sched_worker_id(wk) * ks->work_ld;
    if (d->kind[task] == SCHED_TASK_FORWARD) {
        if (first < last) kforward_subtree(ks->F, first, last, ks->nrhs, ks->y, ks->C, work);
        else kforward_from(ks->F, last, ks->nrhs, ks->y, -1, ks->C);
    } else {
        for (cint k = last; k >= first; k--) kbackward(ks->F, k, ks->nrhs, ks->y, work);
    }
    return 0;
}

/* y = P b (in) or b = P^T y (out), rows split over the workers: they first touch y, where the
 * solve will read it, and the copies of many right-hand sides do not run on one core */
typedef struct kpermute {
    const cint *perm;
    cint n, nrhs, ldb;
    SCALAR *b, *y;
    int in, nthreads;
} kpermute;

static void kpermute_part(void *arg, int t)
{
    const kpermute *pm = arg;
    cint n = pm->n, i0 = (cint)((int64_t)n * t / pm->nthreads), i1 = (cint)((int64_t)n * (t + 1) / pm->nthreads);
    for (cint r = 0; r < pm->nrhs; r++) {
        SCALAR *yr = pm->y + (size_t)r * n, *br = pm->b + (size_t)r * pm->ldb;
        if (pm->in)
            for (cint i = i0; i < i1; i++) yr[i] = br[pm->perm[i]];
        else
            for (cint i = i0; i < i1; i++) br[pm->perm[i]] = yr[i];
    }
}

static void kpermute_all(const numeric *F, kpermute *pm)
{
    /* a pool for a few thousand rows costs more than it saves */
    int nt = F->exec.pool != NULL && (int64_t)pm->n * pm->nrhs >= 65536 ? sched_pool_threads(F->exec.pool) : 1;
    pm->nthreads = nt;
    if (nt == 1) kpermute_part(pm, 0);
    else sched_pool_run_all(F->exec.pool, kpermute_part, pm);
}

canopy_status KSFX(numeric_solve)(numeric *F, cint nrhs, SCALAR *b, cint ldb, canopy_err *err)
{
    const symbolic *S = F->S;
    cint n = S->n;
    if (nrhs == 0 || n == 0) return CANOPY_SUCCESS;
    size_t ny;
    if (!canopy_mul_ok((size_t)n, (size_t)nrhs, &ny))
        return canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "solve workspace too large");
    SCALAR *y = canopy_alloc(ny, sizeof(SCALAR), "solve workspace", err);
    if (!y) return err && err->status ? err->status : CANOPY_ERR_NOMEM;
    int nt = F->exec.pool != NULL ? sched_pool_threads(F->exec.pool) : 1;
    size_t wld = ks_work_scalars(F, nrhs), nw;
    SCALAR *work = canopy_mul_ok(wld, (size_t)nt, &nw) ? canopy_alloc(nw, sizeof(SCALAR), "solve workspace", err) : NULL;
    if (!work) {
        canopy_free(y);
        return err && err->status ? err->status : canopy_err_set(err, CANOPY_ERR_NOMEM, "solve workspace");
    }
    kpermute pm = {.perm = S->perm, .n = n, .nrhs = nrhs, .b = b, .ldb = ldb, .y = y, .in = 1};
    kpermute_all(F, &pm);
    canopy_status st = CANOPY_SUCCESS;
    SCALAR *C = NULL;
    size_t nc;
    if (F->exec.pool != NULL && F->sub_root != NULL && F->sub_crows > 0) {
        C = canopy_mul_ok((size_t)F->sub_crows, (size_t)nrhs, &nc)
                ? canopy_alloc(nc, sizeof(SCALAR), "solve contribution blocks", err)
                : NULL;
        if (!C) st = err && err->status ? err->status : canopy_err_set(err, CANOPY_ERR_NOMEM, "solve contribution blocks");
    }
    if (st != CANOPY_SUCCESS) {
    } else if (F->exec.pool != NULL) {
        ksolve ks = {F, nrhs, y, work, wld, C};
        numeric_run *r = &F->solve_run;
        sched_run_stats rs = {.busy = r->busy, .steals = r->steals, .tasks_run = r->tasks, .events = r->events};
        int result = 0;
        st = sched_execute(F->exec.pool, F->exec.solve, F->exec.scheduler, ksolve_task, &ks, &rs, &result, err);
        r->wall = rs.wall;
        if (st == CANOPY_SUCCESS && result != 0)
            st = canopy_err_set(err, CANOPY_ERR_INTERNAL, "solve task failed (%d)", result);
    } else {
        kforward_subtree(F, 0, S->ncblk - 1, nrhs, y, NULL, work);
        for (cint k = S->ncblk - 1; k >= 0; k--) kbackward(F, k, nrhs, y, work);
    }
    if (st == CANOPY_SUCCESS) {
        pm.in = 0;
        kpermute_all(F, &pm);
    }
    canopy_free(y);
    canopy_free(work);
    canopy_free(C);
    return st;
}
