/*
 * Arithmetic-generic supernodal factorization and solve over the block layout of symbolic.h.
 * Not compiled on its own: kernels_d.c (and later kernels_z.c) define the macros below and
 * include this file, which generates numeric_factorize_<s>, numeric_solve_<s> and the dense
 * diagonal-block kernels numeric_dense_ldlt_<s> / numeric_dense_lu_<s>.
 *
 * Macros the includer must define:
 *   SCALAR               scalar type (double, double _Complex)
 *   KSFX(name)           name with the arithmetic suffix (name##_d)
 *   K_ABS(x)             modulus, as double
 *   K_ONE, K_MONE, K_ZERO   1, -1, 0 as SCALAR constants
 *   K_BS(x)              how alpha/beta are handed to cblas (value for d, pointer for z)
 *   K_GEMM, K_TRSM       cblas_dgemm / cblas_dtrsm (or the z ones)
 *   K_POTRF              LAPACKE_dpotrf_work (or zpotrf)
 *   K_LAPACK_PTR(p)      cast of a SCALAR* to the LAPACKE array type
 *   K_TRANS_H            transpose used by LL^T (CblasTrans for real, CblasConjTrans for Hermitian)
 *   K_CONJ(x), K_REAL(x) conjugate and real part (identity for real; reserved for a Hermitian LDL^T)
 * LDL^T and LU always use the plain transpose (complex symmetric, U^T storage). A complex build
 * is kernels_z.c with: SCALAR double _Complex, KSFX name##_z, K_ABS cabs, K_BS(x) &(SCALAR){x},
 * cblas_zgemm/cblas_ztrsm, LAPACKE_zpotrf_work, K_LAPACK_PTR (lapack_complex_double *),
 * K_TRANS_H CblasConjTrans, K_CONJ conj, K_REAL creal.
 *
 * The factorization is right-looking, in cblk order, written as two task kinds so that a
 * scheduler can later run them on threads: panel(k) and update(k, facing group). The tasks touch
 * only buffers handed to them; nothing is allocated inside the loop.
 */
#include "numeric/numeric.h"
#include "numa/placement.h"
#include "comm/exchange.h"
#include "comm/tree.h"
#include "comm/agree.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cblas.h>
#include <lapacke.h>

/* Sub-block width of the blocked dense kernels: wide enough for dgemm to run near peak. */
#define KNB 64

/* A tiny pivot keeps its phase (sign for reals) and gets modulus threshold. */
static inline SCALAR kperturb(SCALAR p, double thr)
{
    double a = K_ABS(p);
    return a == 0 ? (SCALAR)thr : p * (thr / a);
}

/* ---- dense diagonal-block kernels ------------------------------------------------------- */

static inline void kswap_rows(SCALAR *A, cint lda, cint r1, cint r2, cint c0, cint c1)
{
    for (cint c = c0; c < c1; c++) {
        SCALAR t = A[r1 + (size_t)c * lda];
        A[r1 + (size_t)c * lda] = A[r2 + (size_t)c * lda];
        A[r2 + (size_t)c * lda] = t;
    }
}

/*
 * Symmetric pivoting inside the diagonal block: Bunch-Kaufman partial pivoting with 1x1 and 2x2
 * pivots (J. R. Bunch and L. Kaufman, "Some stable methods for calculating inertia and solving
 * symmetric linear systems", Math. Comp. 31, 1977), in the blocked form of LAPACK's dsytrf/dlasyf.
 * alpha = (1 + sqrt(17)) / 8 minimizes the bound on element growth per step.
 */
#define KBK_ALPHA 0.64038820320220756872

/* y[0:m] -= A[0:m, 0:kw] * x where x has stride incx: the left-looking update of one column by
 * the columns already factored in the current sub-block. A GEMM with one column (x read as a
 * 1 x kw row) keeps to the template's BLAS macros and measured faster than a plain loop. */
static inline void kcol_update(cint m, cint kw, const SCALAR *A, cint lda, const SCALAR *x, cint incx,
                               SCALAR *y)
{
    if (kw == 0 || m == 0) return;
    K_GEMM(CblasColMajor, CblasNoTrans, CblasTrans, (int)m, 1, (int)kw, K_BS(K_MONE), A, (int)lda, x, (int)incx,
           K_BS(K_ONE), y, (int)m);
}

/* Index (0-based, first on ties) and modulus of the largest entry of x[0:m]; m > 0. */
static inline cint kiamax(cint m, const SCALAR *x, double *amax)
{
    cint imax = 0;
    double best = K_ABS(x[0]);
    for (cint i = 1; i < m; i++) {
        double a = K_ABS(x[i]);
        if (a > best) {
            best = a;
            imax = i;
        }
    }
    *amax = best;
    return imax;
}

/*
 * Coefficients of (x1, x2) -> (x1, x2) D^-1 for a 2x2 pivot D = [[a b][b c]] (symmetric, not
 * Hermitian): x1' = d21 (d11 x1 - x2), x2' = d21 (d22 x2 - x1). Scaled by b as dsytrf does, so
 * nothing overflows when the off-diagonal entry dominates (it always does for a BK 2x2 pivot).
 */
static inline void kdinv2(SCALAR a, SCALAR b, SCALAR c, SCALAR *d11, SCALAR *d22, SCALAR *d21)
{
    SCALAR e11 = c / b, e22 = a / b;
    SCALAR t = K_ONE / (e11 * e22 - K_ONE);
    *d11 = e11;
    *d22 = e22;
    *d21 = t / b;
}

/* A 2x2 pivot is usable when its smaller singular value, at least |det| / (2 max|entry|), reaches
 * the threshold. */
static inline int k2x2_ok(SCALAR a, SCALAR b, SCALAR c, double thr)
{
    double m = K_ABS(a);
    m = K_ABS(b) > m ? K_ABS(b) : m;
    m = K_ABS(c) > m ? K_ABS(c) : m;
    return K_ABS(a * c - b * b) >= 2 * thr * m;
}

/*
 * In-place LDL^T with symmetric interchanges restricted to the n x n block: P A P^T = L D L^T.
 * Sub-blocks of KNB columns are factored left-looking (each column is brought up to date by a
 * matrix-vector product with the sub-block's finished columns, so that the pivot search sees the
 * true trailing values), then the trailing lower part gets one GEMM per KNB column block, as in
 * dlasyf. A sub-block whose last column starts a 2x2 pivot ends one column later (KNB + 1):
 * @p work has n * min(n, KNB + 1) scalars and holds W = L D for the sub-block's columns.
 * Every interchange is applied to all earlier columns, so L is in plain permuted form (not LAPACK's
 * product of interleaved permutations).
 */
cint KSFX(numeric_dense_ldlt)(cint n, SCALAR *A, cint lda, cint *ipiv, SCALAR *dsub, double thr, SCALAR *work)
{
#define KA(i, j) A[(i) + (size_t)(j) * lda]
#define KW(i, j) W[(i) + (size_t)(j) * n]
    SCALAR *W = work;
    cint count = 0;
    for (cint kb = 0; kb < n;) {
        cint k = kb;
        while (k < n && k - kb < KNB) {
            cint kw = k - kb, kstep = 1, kp = k, m = n - k;
            int perturb = 0;
            /* W(k:n, kw) = column k brought up to date by this sub-block's columns */
            memcpy(&KW(k, kw), &KA(k, k), (size_t)m * sizeof(SCALAR));
            kcol_update(m, kw, &KA(k, kb), lda, &KW(k, 0), n, &KW(k, kw));
            double absakk = K_ABS(KW(k, kw)), colmax = 0;
            cint imax = k;
            if (m > 1) imax = k + 1 + kiamax(m - 1, &KW(k + 1, kw), &colmax);
            if (absakk < thr && colmax < thr) {
                /* nothing usable in this column inside the block: static pivoting, no interchange */
                perturb = 1;
            } else if (!(absakk >= KBK_ALPHA * colmax && absakk >= thr)) {
                /* W(k:n, kw+1) = column imax brought up to date (row imax left of the diagonal) */
                SCALAR *wi = &KW(0, kw + 1);
                for (cint c2 = k; c2 < imax; c2++) wi[c2] = KA(imax, c2);
                memcpy(wi + imax, &KA(imax, imax), (size_t)(n - imax) * sizeof(SCALAR));
                kcol_update(m, kw, &KA(k, kb), lda, &KW(imax, 0), n, wi + k);
                double rowmax = 0, r2 = 0;
                if (imax > k) (void)kiamax(imax - k, wi + k, &rowmax);
                if (imax + 1 < n) (void)kiamax(n - imax - 1, wi + imax + 1, &r2);
                rowmax = r2 > rowmax ? r2 : rowmax; /* >= colmax > 0 */
                double absarr = K_ABS(wi[imax]);
                /* Bunch-Kaufman's tests, each 1x1 choice also required to clear the threshold */
                int bk_1x1_k = absakk >= KBK_ALPHA * colmax * (colmax / rowmax);
                int bk_1x1_r = absarr >= KBK_ALPHA * rowmax;
                if (bk_1x1_k && absakk >= thr) {
                    kp = k;
                } else if (bk_1x1_r && absarr >= thr) {
                    kp = imax;
                    memcpy(&KW(k, kw), wi + k, (size_t)m * sizeof(SCALAR));
                } else if ((!bk_1x1_k && !bk_1x1_r) ||
                           k2x2_ok(KW(k, kw), KW(imax, kw), wi[imax], thr)) {
                    /* the 2x2 pivot BK asks for (its determinant is at least (1 - alpha^2) colmax^2),
                     * or the one that replaces a 1x1 pivot below the threshold */
                    kp = imax;
                    kstep = 2;
                } else {
                    perturb = 1;
                }
            }
            /* kk <-> kp symmetrically; kk = k (1x1) or k + 1 (2x2). Columns k (and k + 1) are
             * rewritten from W below, so only column kp needs the old values of column kk. */
            cint kk = k + kstep - 1;
            if (kp != kk) {
                KA(kp, kp) = KA(kk, kk);
                for (cint c2 = kk + 1; c2 < kp; c2++) KA(kp, c2) = KA(c2, kk);
                for (cint r = kp + 1; r < n; r++) KA(r, kp) = KA(r, kk);
                kswap_rows(A, lda, kk, kp, 0, k);
                kswap_rows(W, n, kk, kp, 0, kk - kb + 1);
            }
            if (kstep == 1) {
                if (perturb || K_ABS(KW(k, kw)) < thr) {
                    KW(k, kw) = kperturb(KW(k, kw), thr);
                    count++;
                }
                memcpy(&KA(k, k), &KW(k, kw), (size_t)m * sizeof(SCALAR));
                SCALAR inv = K_ONE / KA(k, k);
                for (cint r = k + 1; r < n; r++) KA(r, k) *= inv;
                ipiv[k] = kp;
                dsub[k] = K_ZERO;
            } else {
                SCALAR d11, d22, d21;
                kdinv2(KW(k, kw), KW(k + 1, kw), KW(k + 1, kw + 1), &d11, &d22, &d21);
                for (cint r = k + 2; r < n; r++) {
                    SCALAR x1 = KW(r, kw), x2 = KW(r, kw + 1);
                    KA(r, k) = d21 * (d11 * x1 - x2);
                    KA(r, k + 1) = d21 * (d22 * x2 - x1);
                }
                KA(k, k) = KW(k, kw);
                KA(k + 1, k + 1) = KW(k + 1, kw + 1);
                dsub[k] = KW(k + 1, kw);
                dsub[k + 1] = K_ZERO;
                KA(k + 1, k) = K_ZERO; /* L is unit lower with L(k+1, k) = 0 inside a 2x2 pivot */
                ipiv[k] = -1;
                ipiv[k + 1] = kp;
            }
            k += kstep;
        }
        /* trailing lower part A22 -= L21 W^T, block column by block column */
        cint nb = k - kb;
        for (cint jb = k; jb < n; jb += KNB) {
            cint js = CANOPY_MIN(KNB, n - jb);
            K_GEMM(CblasColMajor, CblasNoTrans, CblasTrans, (int)(n - jb), (int)js, (int)nb, K_BS(K_MONE),
                   &KA(jb, kb), (int)lda, &KW(jb, 0), (int)n, K_BS(K_ONE), &KA(jb, jb), (int)lda);
        }
        kb = k;
    }
    return count;
#undef KA
#undef KW
}

cint KSFX(numeric_dense_lu)(cint n, SCALAR *A, cint lda, cint *ipiv, double thr)
{
    cint count = 0;
    for (cint kb = 0; kb < n; kb += KNB) {
        cint bs = CANOPY_MIN(KNB, n - kb), ke = kb + bs;
        /* unblocked LU of the panel (rows kb..n-1, columns kb..ke-1) with partial pivoting */
        for (cint j = kb; j < ke; j++) {
            SCALAR *cj = A + (size_t)j * lda;
            cint p = j;
            double best = K_ABS(cj[j]);
            for (cint r = j + 1; r < n; r++) {
                double a = K_ABS(cj[r]);
                if (a > best) {
                    best = a;
                    p = r;
                }
            }
            if (best < thr) {
                /* no usable pivot inside the block: static pivoting, no swap */
                cj[j] = kperturb(cj[j], thr);
                count++;
                p = j;
            }
            ipiv[j] = p;
            if (p != j) kswap_rows(A, lda, j, p, kb, ke);
            SCALAR inv = K_ONE / cj[j];
            for (cint r = j + 1; r < n; r++) cj[r] *= inv;
            for (cint c = j + 1; c < ke; c++) {
                SCALAR *cc = A + (size_t)c * lda;
                SCALAR t = cc[j];
                if (t == K_ZERO) continue;
                for (cint r = j + 1; r < n; r++) cc[r] -= cj[r] * t;
            }
        }
        /* the panel's interchanges on the columns left and right of it */
        for (cint j = kb; j < ke; j++)
            if (ipiv[j] != j) {
                kswap_rows(A, lda, j, ipiv[j], 0, kb);
                kswap_rows(A, lda, j, ipiv[j], ke, n);
            }
        if (ke < n) {
            SCALAR *A11 = A + kb + (size_t)kb * lda;
            SCALAR *A12 = A + kb + (size_t)ke * lda;
            K_TRSM(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasUnit, (int)bs, (int)(n - ke),
                   K_BS(K_ONE), A11, (int)lda, A12, (int)lda);
            K_GEMM(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)(n - ke), (int)(n - ke), (int)bs,
                   K_BS(K_MONE), A11 + bs, (int)lda, A12, (int)lda, K_BS(K_ONE), A12 + bs, (int)lda);
        }
    }
    return count;
}

/* ---- sparse factorization tasks ---------------------------------------------------------- */

typedef struct kctx {
    const symbolic *S;
    const int64_t *coef;    /* panel offsets in L and U (numeric.h: F->coef) */
    canopy_factorization kind;
    SCALAR *L, *U;
    cint *ipiv;
    SCALAR *dsub;
    double thr;
    const numeric *F;       /* several ranks: where the fan-in buffers of remote targets are */
    const sched_local *fan; /* several ranks: their layout (NULL on one rank) */
    void *const *xsh;       /* top2d flat: copies of other ranks' cblks (numeric.h), or NULL */
} kctx;

/* The panel an update of cblk k reads: its own, or the copy of another rank's (top2d flat). */
static inline const SCALAR *ksrc(const kctx *c, cint k)
{
    return c->xsh && c->xsh[k] ? (const SCALAR *)c->xsh[k] : c->L + c->coef[k];
}

static inline const SCALAR *ksrc_u(const kctx *c, cint k)
{
    if (c->xsh && c->xsh[k])
        return (const SCALAR *)c->xsh[k] + (size_t)c->S->cblk_stride[k] * (size_t)(c->S->cblk_fcol[k + 1] - c->S->cblk_fcol[k]);
    return c->U + c->coef[k];
}

/*
 * Where the updates into cblk j go: its panel (leading dimension its stride, every row), or on
 * several ranks for a cblk of another rank this rank's fan-in buffer of it, message @p seg (the
 * plan may cut it, sched_fanin_cuts): only the rows its contributions write (@p map: panel row ->
 * buffer row), leading dimension that row count.
 */
static inline void ktarget(const kctx *c, cint j, int seg, SCALAR **Lj, SCALAR **Uj, cint *ld, const cint **map)
{
    const sched_local *L = c->fan;
    if (L == NULL || L->cblk_rank[j] == L->rank) {
        *Lj = c->L + c->coef[j];
        *Uj = c->U ? c->U + c->coef[j] : NULL;
        *ld = c->S->cblk_stride[j];
        *map = NULL;
        return;
    }
    int parts = c->U ? 2 : 1, q = c->F->send_slot[j] / parts, m = c->F->send_msg[q] + seg * parts;
    size_t x = (size_t)q * SCHED_FANIN_SEGS + (size_t)seg;
    *Lj = c->F->fan_send[m];
    *Uj = c->U ? c->F->fan_send[m + 1] : NULL;
    *ld = L->send_rows[x];
    *map = L->fan_rmap + L->send_moff[x];
}

/*
 * Diagonal block of cblk k: POTRF, the LDL^T kernel or the LU kernel (static pivoting inside the
 * block). @p W is the dense LDL^T kernel's scratch. Returns the perturbed pivots, or -1 - info
 * when LL^T meets a non-positive pivot.
 */
static int64_t kdiag(const kctx *c, cint k, SCALAR *W)
{
    const symbolic *S = c->S;
    cint fcol = S->cblk_fcol[k], w = S->cblk_fcol[k + 1] - fcol, st = S->cblk_stride[k];
    SCALAR *P = c->L + c->coef[k];
    switch (c->kind) {
    case CANOPY_FACT_LLT: {
        lapack_int info = K_POTRF(LAPACK_COL_MAJOR, 'L', (lapack_int)w, K_LAPACK_PTR(P), (lapack_int)st);
        return info > 0 ? -1 - (int64_t)info : 0;
    }
    case CANOPY_FACT_LDLT:
        return KSFX(numeric_dense_ldlt)(w, P, st, c->ipiv + fcol, c->dsub + fcol, c->thr, W);
    default:
        return KSFX(numeric_dense_lu)(w, P, st, c->ipiv + fcol, c->thr);
    }
}

/* Columns j and ipiv[j] of the panel rows X[0:m] (leading dimension st) exchanged, for each j
 * whose pivot moved: the diagonal block's interchanges as seen from the rows below it. */
static void kswap_cols(SCALAR *X, cint m, cint st, cint w, const cint *ipiv)
{
    for (cint j = 0; j < w; j++)
        if (ipiv[j] >= 0 && ipiv[j] != j) {
            SCALAR *a = X + (size_t)j * st, *b = X + (size_t)ipiv[j] * st;
            for (cint r = 0; r < m; r++) {
                SCALAR t = a[r];
                a[r] = b[r];
                b[r] = t;
            }
        }
}

/*
 * Panel rows r0..r1-1 of cblk k (r0 >= its width) against its factored diagonal block: every row
 * on its own, so that the 2D tasks can split the rows of a wide cblk by facing group.
 */
static void koffdiag(const kctx *c, cint k, cint r0, cint r1)
{
    const symbolic *S = c->S;
    cint fcol = S->cblk_fcol[k], w = S->cblk_fcol[k + 1] - fcol, st = S->cblk_stride[k], m = r1 - r0;
    SCALAR *P = c->L + c->coef[k];
    if (m <= 0) return;
    switch (c->kind) {
    case CANOPY_FACT_LLT:
        K_TRSM(CblasColMajor, CblasRight, CblasLower, K_TRANS_H, CblasNonUnit, (int)m, (int)w, K_BS(K_ONE), P,
               (int)st, P + r0, (int)st);
        break;
    case CANOPY_FACT_LDLT: {
        const cint *ipiv = c->ipiv + fcol;
        const SCALAR *dsub = c->dsub + fcol;
        SCALAR *X = P + r0;
        /* the block's symmetric interchanges are column interchanges of the rows below it */
        kswap_cols(X, m, st, w, ipiv);
        /* X = A_off P^T L^-T = L_off D, then L_off = X D^-1 (the updates rebuild the rows of
         * L_off D they need: see kupdate) */
        K_TRSM(CblasColMajor, CblasRight, CblasLower, CblasTrans, CblasUnit, (int)m, (int)w, K_BS(K_ONE), P,
               (int)st, X, (int)st);
        for (cint j = 0; j < w;) {
            SCALAR *col = X + (size_t)j * st;
            if (ipiv[j] < 0) {
                SCALAR d11, d22, d21;
                kdinv2(P[j + (size_t)j * st], dsub[j], P[(j + 1) + (size_t)(j + 1) * st], &d11, &d22, &d21);
                SCALAR *col2 = col + st;
                for (cint r = 0; r < m; r++) {
                    SCALAR x1 = col[r], x2 = col2[r];
                    col[r] = d21 * (d11 * x1 - x2);
                    col2[r] = d21 * (d22 * x2 - x1);
                }
                j += 2;
            } else {
                SCALAR inv = K_ONE / P[j + (size_t)j * st];
                for (cint r = 0; r < m; r++) col[r] *= inv;
                j++;
            }
        }
        break;
    }
    default: { /* LU */
        SCALAR *UT = c->U + c->coef[k];
        K_TRSM(CblasColMajor, CblasRight, CblasUpper, CblasNoTrans, CblasNonUnit, (int)m, (int)w, K_BS(K_ONE), P,
               (int)st, P + r0, (int)st);
        /* row interchanges of the block are column interchanges of U^T */
        kswap_cols(UT + r0, m, st, w, c->ipiv + fcol);
        K_TRSM(CblasColMajor, CblasRight, CblasLower, CblasTrans, CblasUnit, (int)m, (int)w, K_BS(K_ONE), P,
               (int)st, UT + r0, (int)st);
        break;
    }
    }
}

/* Panel task of cblk k: the diagonal block, then all its off-diagonal rows at once. */
static int64_t kpanel(const kctx *c, cint k, SCALAR *W)
{
    int64_t count = kdiag(c, k, W);
    if (count >= 0) koffdiag(c, k, c->S->cblk_fcol[k + 1] - c->S->cblk_fcol[k], c->S->cblk_stride[k]);
    return count;
}

/* Column chunk of the symmetric update's diagonal square (see kcontribute). */
#ifndef K_SQUARE_CHUNK
#define K_SQUARE_CHUNK 192
#endif

/*
 * Target panel row of the rows of source bloks sb0..sb1-1 in cblk j, if they land on
 * consecutive rows of j's panel (then one GEMM can write straight into the target); -1 if not.
 * (Consecutive panel rows that all receive updates are consecutive rows of a fan-in buffer too.)
 */
static cint kcontiguous_target(const symbolic *S, cint sb0, cint sb1, cint j)
{
    cint tb = S->cblk_fblok[j], first = -1, next = -1;
    for (cint sb = sb0; sb < sb1; sb++) {
        cint fr = S->blok_frow[sb];
        while (S->blok_lrow[tb] < fr) tb++;
        cint trow = S->blok_coefrow[tb] + (fr - S->blok_frow[tb]);
        if (sb == sb0) first = trow;
        else if (trow != next) return -1;
        next = trow + (S->blok_lrow[sb] - fr + 1);
    }
    return first;
}

/*
 * T -= C rectangle by rectangle: C (ldc) holds the product for source bloks sb0..sb1-1 (rows)
 * times facing bloks fb0..fb1-1 (columns). Each source blok lies inside one blok of target j
 * (closure), found by walking j's bloks forward; columns are the facing rows minus fcol[j].
 * @p lower_only skips rectangles above the diagonal of j's diagonal block (symmetric kinds).
 */
static void kscatter_sub(const symbolic *S, const SCALAR *C, cint ldc, cint sb0, cint sb1, cint fb0,
                         cint fb1, cint j, SCALAR *T, cint ldt, const cint *map, int lower_only)
{
    cint tb = S->cblk_fblok[j], fcolj = S->cblk_fcol[j];
    cint crow0 = S->blok_coefrow[sb0], ccol0 = S->blok_coefrow[fb0];
    for (cint sb = sb0; sb < sb1; sb++) {
        cint fr = S->blok_frow[sb], h = S->blok_lrow[sb] - fr + 1;
        while (S->blok_lrow[tb] < fr) tb++;
        cint trow = S->blok_coefrow[tb] + (fr - S->blok_frow[tb]);
        if (map) trow = map[trow]; /* the blok's rows are consecutive in a fan-in buffer too */
        const SCALAR *Cs = C + (S->blok_coefrow[sb] - crow0);
        for (cint fb = fb0; fb < fb1; fb++) {
            if (lower_only && sb < fb) continue;
            cint hf = S->blok_lrow[fb] - S->blok_frow[fb] + 1;
            cint ccol = S->blok_coefrow[fb] - ccol0, tcol = S->blok_frow[fb] - fcolj;
            /* a blok facing itself lands on j's diagonal: only its lower triangle is computed */
            int diag = lower_only && sb == fb;
            for (cint q = 0; q < hf; q++) {
                SCALAR *t = T + (size_t)(tcol + q) * ldt + trow;
                const SCALAR *s = Cs + (size_t)(ccol + q) * ldc;
                for (cint i = diag ? q : 0; i < h; i++) t[i] -= s[i];
            }
        }
    }
}

/* What kcontribute / kupdate do: everything (private target), or the two halves of an update of
 * a shared target: the product into the worker's buffer (no lock), then the subtraction from the
 * target (under its ticket lock, see numeric.h), so the lock is held for a memory pass only. */
enum { KC_ALL = 0, KC_COMPUTE = 1, KC_APPLY = 2 };

/*
 * One contribution: T[rows of sb0..sb1-1, columns of fb0..fb1-1] -= A_rows * B_facing^T where
 * A_rows starts at panel row coefrow[sb0] (lda) and B_facing has hb rows (ldb). With KC_ALL,
 * straight into the target with beta = 1 when rows and columns are both contiguous there, else
 * through buf; KC_COMPUTE only fills buf, KC_APPLY only subtracts buf from the target. @p map
 * (NULL: none) turns j's panel rows into the rows of T, a fan-in buffer (ktarget).
 */
static void kcontribute(const symbolic *S, cint sb0, cint sb1, cint fb0, cint fb1, cint j, int w,
                        const SCALAR *Arows, cint lda, const SCALAR *Bf, cint ldb, CBLAS_TRANSPOSE tb,
                        SCALAR *T, cint ldt, const cint *map, SCALAR *buf, int lower_only, int phase)
{
    cint rows = 0;
    for (cint sb = sb0; sb < sb1; sb++) rows += S->blok_lrow[sb] - S->blok_frow[sb] + 1;
    cint hb = 0;
    for (cint fb = fb0; fb < fb1; fb++) hb += S->blok_lrow[fb] - S->blok_frow[fb] + 1;
    if (rows == 0 || hb == 0) return;
    /* facing bloks of one cblk are never adjacent (a gap separates them), so the columns are
     * contiguous only for a single facing blok */
#ifdef KERNELS_NO_DIRECT_GEMM /* only to measure what the direct path gains */
    cint trow = -1;
    (void)kcontiguous_target;
#else
    cint trow = fb1 - fb0 == 1 && phase == KC_ALL ? kcontiguous_target(S, sb0, sb1, j) : -1;
#endif
    /* Symmetric kinds only need the lower part of the hb x hb square of facing rows (their rows
     * come first: sb0 == fb0): computing it in column chunks skips all but CHUNK^2/2 of its upper
     * half, which is up to half the update flops of a cblk facing one large separator. */
    cint chunk = lower_only ? K_SQUARE_CHUNK : hb;
    if (trow >= 0 && map) trow = map[trow];
    if (trow >= 0) {
        cint tcol = S->blok_frow[fb0] - S->cblk_fcol[j];
        SCALAR *T0 = T + trow + (size_t)tcol * ldt;
        for (cint c0 = 0; c0 < hb; c0 += chunk) {
            cint nc = hb - c0 < chunk ? hb - c0 : chunk;
            K_GEMM(CblasColMajor, CblasNoTrans, tb, (int)(rows - c0), (int)nc, w, K_BS(K_MONE), Arows + c0,
                   (int)lda, Bf + c0, (int)ldb, K_BS(K_ONE), T0 + c0 + (size_t)c0 * ldt, (int)ldt);
        }
    } else {
        if (phase != KC_APPLY)
            for (cint c0 = 0; c0 < hb; c0 += chunk) {
                cint nc = hb - c0 < chunk ? hb - c0 : chunk;
                K_GEMM(CblasColMajor, CblasNoTrans, tb, (int)(rows - c0), (int)nc, w, K_BS(K_ONE), Arows + c0,
                       (int)lda, Bf + c0, (int)ldb, K_BS(K_ZERO), buf + c0 + (size_t)c0 * rows, (int)rows);
            }
        if (phase != KC_COMPUTE) kscatter_sub(S, buf, rows, sb0, sb1, fb0, fb1, j, T, ldt, map, lower_only);
    }
}

/*
 * Rows r0 .. r0+h-1 of cblk k's L_off D (LDL^T) into DL (h x w, leading dimension h): the B side
 * of an update, rebuilt per update so that no L D panel has to outlive its panel task.
 */
static void kld_rows(const kctx *c, cint k, cint r0, cint h, SCALAR *DL)
{
    const symbolic *S = c->S;
    cint fcol = S->cblk_fcol[k], w = S->cblk_fcol[k + 1] - fcol, st = S->cblk_stride[k];
    const SCALAR *P = ksrc(c, k);
    const cint *ipiv = c->ipiv + fcol;
    const SCALAR *dsub = c->dsub + fcol;
    if (c->xsh && c->xsh[k]) { /* the copy: panel, then dsub (w), then the pivots (w cint) */
        dsub = P + (size_t)st * (size_t)w;
        ipiv = (const cint *)(dsub + w);
    }
    for (cint j = 0; j < w;) {
        const SCALAR *l1 = P + r0 + (size_t)j * st;
        SCALAR *o1 = DL + (size_t)j * h;
        SCALAR d11 = P[j + (size_t)j * st];
        if (ipiv[j] < 0) {
            const SCALAR *l2 = l1 + st;
            SCALAR *o2 = o1 + h;
            SCALAR d21 = dsub[j], d22 = P[(j + 1) + (size_t)(j + 1) * st];
            for (cint r = 0; r < h; r++) {
                o1[r] = l1[r] * d11 + l2[r] * d21;
                o2[r] = l1[r] * d21 + l2[r] * d22;
            }
            j += 2;
        } else {
            for (cint r = 0; r < h; r++) o1[r] = l1[r] * d11;
            j++;
        }
    }
}

/*
 * Update: cblk k's bloks fb0..fb1-1 all face cblk j; apply the contribution of k's rows in bloks
 * rb0..rb1-1 (fb0 <= rb0: all the rows from the facing group on for an UPDATE task, one facing
 * group's rows for an UPDATE2D task) to j (@p seg: the message of this rank's fan-in buffer of j
 * it goes in, when j is another rank's). Phase: KC_ALL, or KC_COMPUTE then KC_APPLY with the
 * same buffer. @p W is scratch for the L*D rows (LDL^T only, stride * width scalars), @p buf the
 * update buffer (at least the product: F->upd_scalars on one rank, the worker's thread_sizes on
 * several; twice that for LU: the U side's product follows the L side's).
 */
static void kupdate_rows(const kctx *c, cint k, cint fb0, cint fb1, cint rb0, cint rb1, int seg, SCALAR *W,
                         SCALAR *buf, int phase)
{
    const symbolic *S = c->S;
    cint j = S->blok_fcblk[fb0], bend = S->cblk_fblok[k + 1];
    cint w = S->cblk_fcol[k + 1] - S->cblk_fcol[k], st = S->cblk_stride[k];
    cint r0 = S->blok_coefrow[fb0], q0 = S->blok_coefrow[rb0];
    int square = rb0 == fb0; /* the rows start with the facing rows: j's diagonal square */
    const SCALAR *P = ksrc(c, k);
    SCALAR *Lj = NULL, *Uj = NULL;
    cint stj = 0;
    const cint *map = NULL;
    if (phase != KC_COMPUTE) ktarget(c, j, seg, &Lj, &Uj, &stj, &map); /* the product alone touches no target */
    switch (c->kind) {
    case CANOPY_FACT_LLT:
        kcontribute(S, rb0, rb1, fb0, fb1, j, (int)w, P + q0, st, P + r0, st, K_TRANS_H, Lj, stj, map, buf, square,
                    phase);
        break;
    case CANOPY_FACT_LDLT: {
        cint hb = S->blok_coefrow[fb1 - 1] + (S->blok_lrow[fb1 - 1] - S->blok_frow[fb1 - 1] + 1) - r0;
        if (phase != KC_APPLY) kld_rows(c, k, r0, hb, W);
        kcontribute(S, rb0, rb1, fb0, fb1, j, (int)w, P + q0, st, W, hb, CblasTrans, Lj, stj, map, buf, square, phase);
        break;
    }
    default: {
        const SCALAR *UT = ksrc_u(c, k);
        /* L side: the rows against U^T of the facing rows */
        kcontribute(S, rb0, rb1, fb0, fb1, j, (int)w, P + q0, st, UT + r0, st, CblasTrans, Lj, stj, map, buf, 0, phase);
        /* U side: U^T rows strictly after the facing bloks, against L of the facing rows; its
         * product goes after the L side's (rows of the L side x facing height) */
        cint ub0 = rb0 > fb1 ? rb0 : fb1;
        if (ub0 < rb1) {
            cint hb = 0;
            for (cint fb = fb0; fb < fb1; fb++) hb += S->blok_lrow[fb] - S->blok_frow[fb] + 1;
            cint q1 = rb1 < bend ? S->blok_coefrow[rb1] : st;
            SCALAR *ubuf = phase == KC_ALL ? buf : buf + (size_t)(q1 - q0) * (size_t)hb;
            kcontribute(S, ub0, rb1, fb0, fb1, j, (int)w, UT + S->blok_coefrow[ub0], st, P + r0, st, CblasTrans, Uj,
                        stj, map, ubuf, 0, phase);
        }
        break;
    }
    }
}

/* Update task: all of k's rows from the facing group fb0..fb1-1 on, into the cblk it faces. */
static void kupdate(const kctx *c, cint k, cint fb0, cint fb1, SCALAR *W, SCALAR *buf, int phase)
{
    kupdate_rows(c, k, fb0, fb1, fb0, c->S->cblk_fblok[k + 1], 0, W, buf, phase);
}

/*
 * Zero [c0, c1) of a panel array. Fresh pages (the first factorization) are zero already: one
 * write per page, inside the range only, is enough to place them (first touch) and costs a page
 * fault instead of a page fault plus a pass over the page.
 */
/* Zero [c0, c1) of X, unless it is still fresh from numa_alloc_pages and already populated. */
static void kzero(SCALAR *X, int64_t c0, int64_t c1, int fresh)
{
    if (!fresh) memset(X + c0, 0, (size_t)(c1 - c0) * sizeof(SCALAR));
}

/* Fault in the fresh pages of scalars [c0, c1) of L and U in one call each: zero pages from the
 * kernel need no zeroing of ours. */
static void kpopulate(const numeric *F, int64_t c0, int64_t c1)
{
    if (!F->fresh || c1 <= c0) return;
    numa_populate((SCALAR *)F->L + c0, (size_t)(c1 - c0) * sizeof(SCALAR));
    if (F->U) numa_populate((SCALAR *)F->U + c0, (size_t)(c1 - c0) * sizeof(SCALAR));
}

/* Zero cblk k's panels (populated first when fresh) and assemble A's entries that land in it. */
static void kassemble(const numeric *F, const SCALAR *Ax, cint k)
{
    const symbolic *S = F->S;
    SCALAR *L = F->L, *U = F->U;
    int64_t c0 = F->coef[k], c1 = c0 + (S->cblk_coef[k + 1] - S->cblk_coef[k]);
    kzero(L, c0, c1, F->fresh);
    if (U) kzero(U, c0, c1, F->fresh);
    for (int64_t e = F->amap_ptr[k]; e < F->amap_ptr[k + 1]; e++) {
        int64_t d = F->amap_dst[e];
        if (d >= 0) L[d] = Ax[F->amap_src[e]];
        else U[-d - 2] = Ax[F->amap_src[e]];
    }
}

/* The error of a non-positive LL^T pivot at local column info - 1 of cblk k. */
static canopy_status knot_spd(const symbolic *S, cint k, int64_t info, canopy_err *err)
{
    cint col = S->cblk_fcol[k] + (cint)info - 1;
    return canopy_err_set(err, CANOPY_ERR_NOT_SPD,
                          "matrix is not positive definite: pivot of column %" CINT_FMT
                          " (original numbering, 0-based) is <= 0", S->perm[col]);
}

/* the threaded factorization on one or several ranks: the same translation unit */
#include "numeric/factor_par_template.c"

canopy_status KSFX(numeric_factorize)(numeric *F, const canopy_csc *A, canopy_err *err)
{
    const symbolic *S = F->S;
    kctx c = {S, F->coef, F->kind, F->L, F->U, F->ipiv, F->dsub, F->threshold, F,
              F->exec.local && F->exec.local->nranks > 1 ? F->exec.local : NULL, F->xsh};
    const SCALAR *Ax = A->values;
    F->perturbed = 0;
    if (F->exec.pool != NULL) return kfactorize_threaded(F, &c, Ax, err);

    /* sequential reference: cblk order, the calling thread's buffers */
    double tf0 = canopy_wtime();
    kpopulate(F, 0, F->ncoef);
    for (cint k = 0; k < S->ncblk; k++) kassemble(F, Ax, k);
    F->run.fill = canopy_wtime() - tf0;
    F->fresh = 0;
    SCALAR *buf = F->work;
    SCALAR *W = buf + F->upd_scalars;
    int64_t perturbed = 0;
    for (cint k = 0; k < S->ncblk; k++) {
        if (F->exec.stop && atomic_load_explicit(F->exec.stop, memory_order_relaxed))
            return canopy_err_set(err, CANOPY_ERR_INTERRUPTED, "canopy_factorize: interrupted (canopy_interrupt)");
        int64_t r = kpanel(&c, k, W);
        if (r < 0) return knot_spd(S, k, -r - 1, err);
        perturbed += r;
        for (cint b = S->cblk_fblok[k] + 1, bend = S->cblk_fblok[k + 1]; b < bend;) {
            cint e = b + 1;
            while (e < bend && S->blok_fcblk[e] == S->blok_fcblk[b]) e++;
            kupdate(&c, k, b, e, W, buf, KC_ALL);
            b = e;
        }
    }
    F->perturbed = perturbed;
    return perturbed > 0 ? CANOPY_WARN_PIVOTS_PERTURBED : CANOPY_SUCCESS;
}

/* the solve (one rank, then several): the same translation unit, it uses the kernels above */
#include "numeric/solve_template.c"
#include "numeric/solve_dist_template.c"
#include "numeric/selinv_template.c"
