/*
 * Selected inversion over the factors (numeric_selinv_<s>), one entry of its result
 * (numeric_inverse_entry_<s>) and entries of the inverse by pruned solves
 * (numeric_inverse_solve_<s>). Part of the translation unit of factor_template.c: not compiled
 * on its own.
 *
 * Notation: Z is the inverse of the factorized matrix in the new numbering (the matrix the
 * factors are of, before the pivoting inside the diagonal blocks). The factors are a block
 * triangular factorization of it: for cblk K with off-diagonal rows I,
 *   Z = M D N with M(:, K) = [Q_K^T L_KK; L(I, K)], N = M^T (LL^H: M^H, D = I; LU: N = U, D = I)
 * where Q_K is K's interchanges inside its diagonal block (the rows of L(I, K) and of every other
 * cblk's bloks facing K are kept in the unpivoted order: the solve applies Q_K when it reaches K).
 * Walking the cblks from the last to the first, with Lh = L(I, K) L_KK^-1 Q_K,
 *   Z(I, K) = -Z(I, I) Lh,   Z(K, K) = Q_K^T (L_KK D_K N_KK)^-1 Q_K - Lh^T Z(I, K)
 * (LU: Uh = U_KK^-1 U(K, I), Z(K, I) = -Uh Z(I, I), Z(K, K) = U_KK^-1 L_KK^-1 Q_K - Uh Z(I, K)),
 * and Z(I, I) is needed only where I x I lies in the block structure (the closure property of
 * symbolic.h), which the cblks of I hold already: its columns are gathered slice by slice, so
 * that each slice takes one product with all the rows of I. The result overwrites the factors:
 * Z(K, K) in full in the diagonal block, Z(I, K) in the L panel, and (LU) Z(K, I)^T in the U
 * panel. Every cblk reads only cblks it faces (its ancestors): the solve graph's backward tasks
 * give the order on threads, and each task writes only its own panels, so the bits do not depend
 * on the threads.
 */

#define KSI_SLICE 128 /* columns of Z(I, I) gathered for one product */

/* the off-diagonal blok of cblk J whose rows hold row r, or -1 */
static cint ksi_find(const symbolic *S, cint J, cint r)
{
    cint lo = S->cblk_fblok[J] + 1, hi = S->cblk_fblok[J + 1] - 1;
    while (lo <= hi) {
        cint mid = lo + (hi - lo) / 2;
        if (S->blok_lrow[mid] < r) lo = mid + 1;
        else if (S->blok_frow[mid] > r) hi = mid - 1;
        else return mid;
    }
    return -1;
}

/* Cblk J's panel in Lx (side 0) or Ux (side 1): its place in the factors, or on several ranks,
 * for a cblk of another rank, the copy the selected inversion received (F->sel_xcoef). */
static inline const SCALAR *ksi_panel(const numeric *F, const SCALAR *Lx, const SCALAR *Ux, int side, cint J)
{
    if (F->sel_xcoef && F->sel_xcoef[J] >= 0) return (const SCALAR *)F->sel_x[side] + F->sel_xcoef[J];
    return (side ? Ux : Lx) + F->coef[J];
}

/* where the h2 x h1 block of Z (tr = 0) or of Z^T (tr = 1) at rows r2.. (cblk J2), columns r1..
 * (cblk J1) is stored: *p with leading dimension *ld, transposed (*op != CblasNoTrans) or not */
static bool ksi_block(const numeric *F, const SCALAR *Lx, const SCALAR *Ux, int tr, cint r2, cint h2, cint J2, cint r1,
                      cint h1, cint J1, const SCALAR **p, cint *ld, CBLAS_TRANSPOSE *op)
{
    const symbolic *S = F->S;
    CBLAS_TRANSPOSE t = F->kind == CANOPY_FACT_LLT ? K_TRANS_H : CblasTrans;
    if (J1 == J2) {
        cint f = S->cblk_fcol[J1];
        *ld = S->cblk_stride[J1];
        *p = ksi_panel(F, Lx, Ux, 0, J1) + (tr ? (r1 - f) + (size_t)(r2 - f) * *ld : (r2 - f) + (size_t)(r1 - f) * *ld);
        *op = tr ? CblasTrans : CblasNoTrans;
        return true;
    }
    /* below the diagonal: in J1's panel (Z^T's lower part is Z's upper part, the U panel) */
    int lower = J2 > J1;
    cint J = lower ? J1 : J2, r = lower ? r2 : r1, h = lower ? h2 : h1, c = lower ? r1 : r2;
    int side = F->kind != CANOPY_FACT_LU ? 0 : (lower == !tr ? 0 : 1);
    cint b = ksi_find(S, J, r);
    if (b < 0 || S->blok_fcblk[b] != (lower ? J2 : J1) || r + h - 1 > S->blok_lrow[b]) return false;
    *ld = S->cblk_stride[J];
    *p = ksi_panel(F, Lx, Ux, side, J) + S->blok_coefrow[b] + (r - S->blok_frow[b]) + (size_t)(c - S->cblk_fcol[J]) * *ld;
    *op = lower ? CblasNoTrans : (F->kind == CANOPY_FACT_LU ? CblasTrans : t);
    return true;
}

/* scalars of workspace kselinv_cblk needs for cblk k */
static size_t ksi_work(const numeric *F, cint k)
{
    const symbolic *S = F->S;
    size_t w = (size_t)(S->cblk_fcol[k + 1] - S->cblk_fcol[k]), m = (size_t)S->cblk_stride[k] - w;
    return 3 * w * w + (F->kind == CANOPY_FACT_LU ? 2 : 1) * m * w + m * KSI_SLICE + 1;
}

/* D^-1 T for the rows of T (w x w): LDL^T's 1x1 and 2x2 pivots of cblk k */
static void ksi_dinv(const numeric *F, cint k, SCALAR *T, cint w)
{
    const symbolic *S = F->S;
    cint fcol = S->cblk_fcol[k], st = S->cblk_stride[k];
    const SCALAR *P = (const SCALAR *)F->L + F->coef[k];
    const SCALAR *dsub = F->dsub;
    for (cint j = 0; j < w;) {
        if (F->ipiv[fcol + j] < 0) {
            SCALAR d11, d22, d21;
            kdinv2(P[j + (size_t)j * st], dsub[fcol + j], P[(j + 1) + (size_t)(j + 1) * st], &d11, &d22, &d21);
            for (cint c = 0; c < w; c++) {
                SCALAR x1 = T[j + (size_t)c * w], x2 = T[j + 1 + (size_t)c * w];
                T[j + (size_t)c * w] = d21 * (d11 * x1 - x2);
                T[j + 1 + (size_t)c * w] = d21 * (d22 * x2 - x1);
            }
            j += 2;
        } else {
            SCALAR inv = K_ONE / P[j + (size_t)j * st];
            for (cint c = 0; c < w; c++) T[j + (size_t)c * w] *= inv;
            j++;
        }
    }
}

/*
 * kselinv_cblk in five steps, all but the first cut into pieces of rows of I or columns of K for
 * several threads (the top of the tree, a cblk shared over ranks: ksi_pieces below):
 *   ksi_diag:  the diagonal block's own inverse G, the interchanges;
 *   ksi_lh:    rows i0..i1-1 of Lh (and Uh^T) in place;
 *   ksi_rows:  rows i0..i1-1 of X = -Z(I, I) Lh (side 0) or Y = -Z(I, I)^T Uh^T (side 1);
 *   ksi_zkk:   columns c0..c1-1 of Z(K, K) = G - Lh^T X;
 *   ksi_store: columns c0..c1-1 of X, Y, Z(K, K) into the panels.
 * The workspace: T, D2, G (w x w each), X (m x w), Y (LU: m x w), then the gather buffer of
 * ksi_rows (m x KSI_SLICE) when the calling thread runs it.
 */
static SCALAR *ksi_x(const numeric *F, cint k, SCALAR *work, int side)
{
    const symbolic *S = F->S;
    cint w = S->cblk_fcol[k + 1] - S->cblk_fcol[k], m = S->cblk_stride[k] - w;
    return work + 3 * (size_t)w * w + (side ? (size_t)m * w : 0);
}

static SCALAR *ksi_gather_buf(const numeric *F, cint k, SCALAR *work)
{
    const symbolic *S = F->S;
    cint w = S->cblk_fcol[k + 1] - S->cblk_fcol[k], m = S->cblk_stride[k] - w;
    return work + 3 * (size_t)w * w + (F->kind == CANOPY_FACT_LU ? 2 : 1) * (size_t)m * w;
}

/* the diagonal block's own inverse G, and the interchanges: pivoted position p holds unpivoted
 * column idx[p]; G comes back in the unpivoted order. Returns whether any column moved. */
static bool ksi_diag(const numeric *F, const SCALAR *Lx, cint k, SCALAR *work, cint *idx)
{
    const symbolic *S = F->S;
    canopy_factorization kind = F->kind;
    cint fcol = S->cblk_fcol[k], w = S->cblk_fcol[k + 1] - fcol, st = S->cblk_stride[k];
    const SCALAR *P = Lx + F->coef[k];
    SCALAR *T = work, *D2 = T + (size_t)w * w, *G = D2 + (size_t)w * w;
    /* Triangular inverses (TRTRI) and a triangular product (TRMM), or LAPACK's POTRI: 2/3 w^3
     * (LL^T), 4/3 w^3 (LDL^T), 5/3 w^3 (LU) flops, where solving with the identity and a full
     * product took 3 w^3 */
    for (cint c = 0; c < w; c++) memcpy(T + (size_t)c * w, P + (size_t)c * st, (size_t)w * sizeof(SCALAR));
    if (kind == CANOPY_FACT_LLT) {
        K_POTRI(LAPACK_COL_MAJOR, 'L', (lapack_int)w, K_LAPACK_PTR(T), (lapack_int)w);
        for (cint c = 0; c < w; c++)
            for (cint r = c; r < w; r++) {
                G[r + (size_t)c * w] = T[r + (size_t)c * w];
                G[c + (size_t)r * w] = K_CONJ(T[r + (size_t)c * w]);
            }
    } else {
        /* T = L_KK^-1 (unit lower: its diagonal and upper part set here) */
        K_TRTRI(LAPACK_COL_MAJOR, 'L', 'U', (lapack_int)w, K_LAPACK_PTR(T), (lapack_int)w);
        for (cint c = 0; c < w; c++) {
            for (cint r = 0; r < c; r++) T[r + (size_t)c * w] = K_ZERO;
            T[c + (size_t)c * w] = K_ONE;
        }
        memcpy(G, T, (size_t)w * w * sizeof(SCALAR));
        if (kind == CANOPY_FACT_LU) {
            /* G = U_KK^-1 L_KK^-1: U's inverse in D2's upper triangle, then one triangular product */
            for (cint c = 0; c < w; c++) memcpy(D2 + (size_t)c * w, P + (size_t)c * st, (size_t)w * sizeof(SCALAR));
            K_TRTRI(LAPACK_COL_MAJOR, 'U', 'N', (lapack_int)w, K_LAPACK_PTR(D2), (lapack_int)w);
            K_TRMM(CblasColMajor, CblasLeft, CblasUpper, CblasNoTrans, CblasNonUnit, (int)w, (int)w, K_BS(K_ONE), D2,
                   (int)w, G, (int)w);
        } else {
            /* G = L_KK^-T D^-1 L_KK^-1 */
            ksi_dinv(F, k, G, w);
            K_TRMM(CblasColMajor, CblasLeft, CblasLower, CblasTrans, CblasUnit, (int)w, (int)w, K_BS(K_ONE), T, (int)w,
                   G, (int)w);
        }
    }
    bool moved = false;
    if (kind != CANOPY_FACT_LLT) {
        for (cint i = 0; i < w; i++) idx[i] = i;
        for (cint c = 0; c < w; c++) {
            cint q = F->ipiv[fcol + c];
            if (q >= 0 && q != c) {
                cint t = idx[c];
                idx[c] = idx[q];
                idx[q] = t;
                moved = true;
            }
        }
    }
    if (moved) {
        /* G's columns (rows too for LDL^T) back to the unpivoted order, through T */
        for (cint p = 0; p < w; p++)
            for (cint q = 0; q < w; q++) {
                cint r = kind == CANOPY_FACT_LDLT ? idx[q] : q;
                T[r + (size_t)idx[p] * w] = G[q + (size_t)p * w];
            }
        memcpy(G, T, (size_t)w * w * sizeof(SCALAR));
    }
    return moved;
}

/* Rows i0..i1-1 of Lh = L(I, K) L_KK^-1 (and Uh^T = U(K, I)^T U_KK^-T) in place, their columns
 * back in the unpivoted order when @p moved (through the same rows of X) */
static void ksi_lh(const numeric *F, SCALAR *Lx, SCALAR *Ux, cint k, SCALAR *work, const cint *idx, bool moved, cint i0,
                   cint i1)
{
    const symbolic *S = F->S;
    canopy_factorization kind = F->kind;
    cint w = S->cblk_fcol[k + 1] - S->cblk_fcol[k], st = S->cblk_stride[k], m = st - w, h = i1 - i0;
    SCALAR *P = Lx + F->coef[k], *Pu = kind == CANOPY_FACT_LU ? Ux + F->coef[k] : NULL, *X = ksi_x(F, k, work, 0);
    if (h <= 0) return;
    K_TRSM(CblasColMajor, CblasRight, CblasLower, CblasNoTrans, kind != CANOPY_FACT_LLT ? CblasUnit : CblasNonUnit,
           (int)h, (int)w, K_BS(K_ONE), P, (int)st, P + w + i0, (int)st);
    if (Pu)
        K_TRSM(CblasColMajor, CblasRight, CblasUpper, CblasTrans, CblasNonUnit, (int)h, (int)w, K_BS(K_ONE), P, (int)st,
               Pu + w + i0, (int)st);
    if (!moved) return;
    for (cint p = 0; p < w; p++)
        for (cint i = i0; i < i1; i++) X[i + (size_t)idx[p] * m] = P[w + i + (size_t)p * st];
    for (cint c = 0; c < w; c++)
        for (cint i = i0; i < i1; i++) P[w + i + (size_t)c * st] = X[i + (size_t)c * m];
}

/* Rows i0..i1-1 (of I, 0..m-1) of out = -Z(I, I) Lh (side 0) or -Z(I, I)^T Uh^T (side 1), out of
 * leading dimension m: for each blok b1 and each slice of at most KSI_SLICE of its rows, the
 * columns of Z(I, I) it multiplies, restricted to those rows, are gathered from the cblks of I
 * into Gb (leading dimension i1 - i0), then one product. Returns false outside the structure. */
static bool ksi_rows(const numeric *F, const SCALAR *Lx, const SCALAR *Ux, cint k, int side, cint i0, cint i1,
                     SCALAR *out, SCALAR *Gb)
{
    const symbolic *S = F->S;
    cint w = S->cblk_fcol[k + 1] - S->cblk_fcol[k], st = S->cblk_stride[k], m = st - w, h = i1 - i0;
    const SCALAR *R = (side ? Ux : Lx) + F->coef[k];
    for (cint c = 0; c < w; c++) memset(out + i0 + (size_t)c * m, 0, (size_t)h * sizeof(SCALAR));
    if (h <= 0) return true;
    for (cint b1 = S->cblk_fblok[k] + 1; b1 < S->cblk_fblok[k + 1]; b1++) {
        cint J1 = S->blok_fcblk[b1];
        for (cint r1 = S->blok_frow[b1]; r1 <= S->blok_lrow[b1]; r1 += KSI_SLICE) {
            cint h1 = S->blok_lrow[b1] - r1 + 1 < KSI_SLICE ? S->blok_lrow[b1] - r1 + 1 : KSI_SLICE;
            for (cint b2 = S->cblk_fblok[k] + 1; b2 < S->cblk_fblok[k + 1]; b2++) {
                /* the rows of b2 inside i0..i1-1 */
                cint at = S->blok_coefrow[b2] - w, n2 = S->blok_lrow[b2] - S->blok_frow[b2] + 1;
                cint lo = at > i0 ? at : i0, hi = at + n2 < i1 ? at + n2 : i1;
                if (lo >= hi) continue;
                cint r2 = S->blok_frow[b2] + (lo - at), h2 = hi - lo, J2 = S->blok_fcblk[b2];
                const SCALAR *Zb;
                cint ld;
                CBLAS_TRANSPOSE op;
                if (!ksi_block(F, Lx, Ux, side, r2, h2, J2, r1, h1, J1, &Zb, &ld, &op)) return false;
                SCALAR *g = Gb + (lo - i0);
                if (op == CblasNoTrans)
                    for (cint c = 0; c < h1; c++) memcpy(g + (size_t)c * h, Zb + (size_t)c * ld, (size_t)h2 * sizeof(SCALAR));
                else if (op == CblasTrans)
                    for (cint c = 0; c < h1; c++)
                        for (cint i = 0; i < h2; i++) g[i + (size_t)c * h] = Zb[c + (size_t)i * ld];
                else
                    for (cint c = 0; c < h1; c++)
                        for (cint i = 0; i < h2; i++) g[i + (size_t)c * h] = K_CONJ(Zb[c + (size_t)i * ld]);
            }
            K_GEMM(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)h, (int)w, (int)h1, K_BS(K_MONE), Gb, (int)h,
                   R + S->blok_coefrow[b1] + (r1 - S->blok_frow[b1]), (int)st, K_BS(K_ONE), out + i0, (int)m);
        }
    }
    return true;
}

#define KSI_ZKK_BLOCK NUMERIC_SELINV_ZKK_BLOCK /* columns per product of a symmetric Z(K, K) */

/* Columns c0..c1-1 of Z(K, K) = G - Lh^T X (LL^H: Lh^H X; LU: Uh X), in G. Z(K, K) of LL^T
 * (LL^H) and LDL^T is symmetric (Hermitian): only rows from each block of columns down, half the
 * product, and ksi_store mirrors them. */
static void ksi_zkk(const numeric *F, const SCALAR *Lx, const SCALAR *Ux, cint k, SCALAR *work, cint c0, cint c1)
{
    const symbolic *S = F->S;
    canopy_factorization kind = F->kind;
    cint w = S->cblk_fcol[k + 1] - S->cblk_fcol[k], st = S->cblk_stride[k], m = st - w;
    const SCALAR *R = (kind == CANOPY_FACT_LU ? Ux : Lx) + F->coef[k] + w;
    SCALAR *G = work + 2 * (size_t)w * w, *X = ksi_x(F, k, work, 0);
    CBLAS_TRANSPOSE ta = kind == CANOPY_FACT_LLT ? K_TRANS_H : CblasTrans;
    if (m <= 0 || c1 <= c0) return;
    if (kind == CANOPY_FACT_LU) {
        K_GEMM(CblasColMajor, ta, CblasNoTrans, (int)w, (int)(c1 - c0), (int)m, K_BS(K_MONE), R, (int)st,
               X + (size_t)c0 * m, (int)m, K_BS(K_ONE), G + (size_t)c0 * w, (int)w);
        return;
    }
    for (cint b = c0; b < c1; b += KSI_ZKK_BLOCK) {
        cint h = c1 - b < KSI_ZKK_BLOCK ? c1 - b : KSI_ZKK_BLOCK;
        K_GEMM(CblasColMajor, ta, CblasNoTrans, (int)(w - b), (int)h, (int)m, K_BS(K_MONE), R + (size_t)b * st,
               (int)st, X + (size_t)b * m, (int)m, K_BS(K_ONE), G + b + (size_t)b * w, (int)w);
    }
}

/* Columns c0..c1-1 of Z(K, K), X (and Y) into the panels: once every column's ksi_zkk is done */
static void ksi_store(const numeric *F, SCALAR *Lx, SCALAR *Ux, cint k, const SCALAR *work, cint c0, cint c1)
{
    const symbolic *S = F->S;
    cint w = S->cblk_fcol[k + 1] - S->cblk_fcol[k], st = S->cblk_stride[k], m = st - w;
    SCALAR *P = Lx + F->coef[k], *Pu = F->kind == CANOPY_FACT_LU ? Ux + F->coef[k] : NULL;
    const SCALAR *G = work + 2 * (size_t)w * w, *X = ksi_x(F, k, (SCALAR *)(uintptr_t)work, 0),
                 *Y = ksi_x(F, k, (SCALAR *)(uintptr_t)work, 1);
    bool lower = F->kind != CANOPY_FACT_LU; /* ksi_zkk's lower part, mirrored */
    for (cint c = c0; c < c1; c++) {
        if (lower) {
            for (cint r = 0; r < c; r++) P[r + (size_t)c * st] = F->kind == CANOPY_FACT_LLT ? K_CONJ(G[c + (size_t)r * w])
                                                                                            : G[c + (size_t)r * w];
            memcpy(P + c + (size_t)c * st, G + c + (size_t)c * w, (size_t)(w - c) * sizeof(SCALAR));
        } else {
            memcpy(P + (size_t)c * st, G + (size_t)c * w, (size_t)w * sizeof(SCALAR));
        }
        if (m > 0) memcpy(P + w + (size_t)c * st, X + (size_t)c * m, (size_t)m * sizeof(SCALAR));
        if (Pu && m > 0) memcpy(Pu + w + (size_t)c * st, Y + (size_t)c * m, (size_t)m * sizeof(SCALAR));
    }
}

/* Z(:, K) and (LU) Z(K, :) of cblk k, over Lx/Ux (the factors on entry, the inverse on return) */
static bool kselinv_cblk(const numeric *F, SCALAR *Lx, SCALAR *Ux, cint k, SCALAR *work, cint *idx)
{
    const symbolic *S = F->S;
    cint w = S->cblk_fcol[k + 1] - S->cblk_fcol[k], m = S->cblk_stride[k] - w;
    ksi_lh(F, Lx, Ux, k, work, idx, ksi_diag(F, Lx, k, work, idx), 0, m);
    for (int side = 0; m > 0 && side < (F->kind == CANOPY_FACT_LU ? 2 : 1); side++)
        if (!ksi_rows(F, Lx, Ux, k, side, 0, m, ksi_x(F, k, work, side), ksi_gather_buf(F, k, work))) return false;
    ksi_zkk(F, Lx, Ux, k, work, 0, w);
    ksi_store(F, Lx, Ux, k, work, 0, w);
    return true;
}

/* flops of kselinv_cblk for cblk k */
static double ksi_flops(const numeric *F, cint k)
{
    const symbolic *S = F->S;
    double w = (double)(S->cblk_fcol[k + 1] - S->cblk_fcol[k]);
    return numeric_selinv_cblk_flops(F->kind, sizeof(SCALAR) > sizeof(double), w, (double)S->cblk_stride[k] - w);
}

typedef struct kselinv {
    const numeric *F;
    SCALAR *Lx, *Ux;
    SCALAR *work; /* per thread */
    size_t wld;
    cint *idx;    /* per thread, max_width */
    const unsigned char *top; /* one rank: the cblks run in pieces before the others (or NULL) */
    atomic_int failed;
} kselinv;

/*
 * kselinv_cblk with its steps cut into pieces that the workers take in any order while the
 * calling thread waits (the top of the tree on one rank, a cblk shared over ranks): rows of I for
 * Lh and the products with Z(I, I), columns of K for Z(K, K) and the stores; the diagonal block's
 * own inverse on the calling thread. The pieces are the same whoever runs them and each writes
 * only its own rows or columns, so the calling thread alone gives the same bits.
 */
#define KSI_PIECE NUMERIC_SPLIT_PIECE /* 64 rows or columns, or a multiple of them: */
#define KSI_PIECES 32                 /* at most this many pieces per step (each repacks operands) */

enum { KSI_LH, KSI_ROWS, KSI_ZKK, KSI_STORE };

typedef struct ksipieces {
    const numeric *F;
    SCALAR *Lx, *Ux;
    const kselinv *q;
    SCALAR *work; /* the calling thread's workspace (G, X, Y) */
    const cint *idx;
    bool moved;
    cint k, n, piece; /* n: the rows (m) or columns (w) the step cuts, into pieces of @p piece */
    int step, side, nt, npieces;
    _Atomic int next;
    atomic_int failed;
} ksipieces;

static void ksi_piece_worker(void *arg, int t)
{
    ksipieces *p = arg;
    for (;;) {
        int i = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
        if (i >= p->npieces) return;
        cint a = (cint)i * p->piece, b = a + p->piece < p->n ? a + p->piece : p->n;
        if (p->step == KSI_LH) {
            ksi_lh(p->F, p->Lx, p->Ux, p->k, p->work, p->idx, p->moved, a, b);
        } else if (p->step == KSI_ROWS) {
            /* a worker gathers into its own (idle) workspace, the calling thread into its own */
            SCALAR *gb = t < p->nt ? p->q->work + (size_t)t * p->q->wld : ksi_gather_buf(p->F, p->k, p->work);
            if (!ksi_rows(p->F, p->Lx, p->Ux, p->k, p->side, a, b, ksi_x(p->F, p->k, p->work, p->side), gb))
                atomic_store(&p->failed, 1);
        } else if (p->step == KSI_ZKK) {
            ksi_zkk(p->F, p->Lx, p->Ux, p->k, p->work, a, b);
        } else {
            ksi_store(p->F, p->Lx, p->Ux, p->k, p->work, a, b);
        }
    }
}

/* one step, on the workers when it holds at least NUMERIC_SPLIT_MIN multiply-adds (@p madds);
 * returns whether they ran it */
static bool ksi_step(ksipieces *p, int step, cint n, double madds)
{
    sched_pool *pool = p->F->exec.pool;
    double least = p->F->sol_split_min > 0 ? p->F->sol_split_min : NUMERIC_SPLIT_MIN;
    p->step = step;
    p->n = n;
    /* the size depends on n alone: so do the bits */
    p->piece = KSI_PIECE;
    while (n > p->piece * (cint)KSI_PIECES) p->piece += KSI_PIECE;
    p->npieces = (int)((n + p->piece - 1) / p->piece);
    atomic_store(&p->next, 0);
    bool split = pool != NULL && p->nt > 1 && p->npieces > 1 && madds >= least;
    if (split) sched_pool_run_all(pool, ksi_piece_worker, p);
    ksi_piece_worker(p, p->nt); /* what is left (all of it when the pool did not run) */
    return split;
}

/* kselinv_cblk of cblk k in pieces; returns false outside the structure, *split + 1 when the
 * workers ran pieces */
static bool ksi_pieces(const numeric *F, SCALAR *Lx, SCALAR *Ux, cint k, const kselinv *q, SCALAR *work, cint *idx,
                       int64_t *split)
{
    const symbolic *S = F->S;
    cint w = S->cblk_fcol[k + 1] - S->cblk_fcol[k], m = S->cblk_stride[k] - w;
    double mw = (double)m * (double)w;
    ksipieces p = {.F = F, .Lx = Lx, .Ux = Ux, .q = q, .work = work, .idx = idx, .k = k,
                   .nt = F->exec.pool != NULL ? sched_pool_threads(F->exec.pool) : 1};
    atomic_init(&p.next, 0);
    atomic_init(&p.failed, 0);
    p.moved = ksi_diag(F, Lx, k, work, idx);
    bool any = ksi_step(&p, KSI_LH, m, mw * (double)w);
    for (int side = 0; m > 0 && side < (F->kind == CANOPY_FACT_LU ? 2 : 1); side++) {
        p.side = side;
        any = ksi_step(&p, KSI_ROWS, m, mw * (double)m) || any;
    }
    any = ksi_step(&p, KSI_ZKK, w, mw * (double)w) || any;
    any = ksi_step(&p, KSI_STORE, w, mw) || any;
    if (any && split) (*split)++;
    return !atomic_load(&p.failed);
}

static int kselinv_task(void *ctx, int task, sched_worker *wk)
{
    kselinv *q = ctx;
    const sched_dag *d = q->F->exec.solve;
    if (d->kind[task] != SCHED_TASK_BACKWARD) return 0;
    if (q->F->exec.stop && atomic_load_explicit(q->F->exec.stop, memory_order_relaxed)) return KSTOPPED;
    int t = sched_worker_id(wk);
    SCALAR *work = q->work + (size_t)t * q->wld;
    cint *idx = q->idx + (size_t)t * ((size_t)q->F->S->max_width + 1);
    for (cint k = d->cblk[task]; k >= d->first[task]; k--)
        if (!q->top[k] && !kselinv_cblk(q->F, q->Lx, q->Ux, k, work, idx)) {
            atomic_store(&q->failed, 1);
            return 1;
        }
    return 0;
}

/*
 * One rank: the top of the tree (numeric_selinv_top: the cblks whose subtree holds at least 1/64
 * of the flops). As tasks, each would run on one thread while the others wait for it (the
 * separators of a 3D problem near the root are the largest blocks of all, and the chain from the
 * root down is a third of its flops): they run one by one from the root down, each in pieces on
 * every worker, before the rest of the tree runs as tasks. The set depends on the structure
 * alone: any thread count gives the same bits.
 */
static unsigned char *ksi_top(const numeric *F, const unsigned char *among, canopy_err *err)
{
    unsigned char *top = canopy_calloc((size_t)F->S->ncblk + 1, 1, "selected inversion: the top of the tree", err);
    if (top && numeric_selinv_top(F->S, F->kind, sizeof(SCALAR) > sizeof(double), among, top, NULL, err) != CANOPY_SUCCESS) {
        canopy_free(top);
        return NULL;
    }
    return top;
}

canopy_status KSFX(numeric_selinv)(numeric *F, SCALAR *Lx, SCALAR *Ux, double *flops, canopy_err *err)
{
    const symbolic *S = F->S;
    int nt = F->exec.pool != NULL ? sched_pool_threads(F->exec.pool) : 1;
    size_t wld = 1;
    double fl = 0;
    for (cint k = 0; k < S->ncblk; k++) {
        size_t x = ksi_work(F, k);
        if (x > wld) wld = x;
        fl += ksi_flops(F, k);
    }
    size_t nw;
    wld = (wld + 63) / 64 * 64; /* every thread's workspace on the same alignment */
    /* one workspace per worker, and the calling thread's (the top of the tree) */
    kselinv q = {.F = F, .Lx = Lx, .Ux = Ux, .wld = wld};
    atomic_init(&q.failed, 0);
    q.work = canopy_mul_ok(wld, (size_t)nt + 1, &nw) ? canopy_alloc(nw, sizeof(SCALAR), "selected inversion workspace", err)
                                                      : NULL;
    q.idx = canopy_alloc(((size_t)S->max_width + 1) * ((size_t)nt + 1), sizeof(cint), "selected inversion workspace", err);
    unsigned char *top = q.work && q.idx ? ksi_top(F, NULL, err) : NULL;
    q.top = top;
    SCALAR *work = q.work ? q.work + (size_t)nt * wld : NULL;
    cint *idx = q.idx ? q.idx + (size_t)nt * ((size_t)S->max_width + 1) : NULL;
    canopy_status st = CANOPY_SUCCESS;
    F->sol_split = 0;
    if (!q.work || !q.idx || !top)
        st = err && err->status ? err->status : canopy_err_set(err, CANOPY_ERR_NOMEM, "selected inversion workspace");
    for (cint k = S->ncblk - 1; st == CANOPY_SUCCESS && k >= 0 && !atomic_load(&q.failed); k--) {
        if (!top[k]) continue;
        if (F->exec.stop && atomic_load_explicit(F->exec.stop, memory_order_relaxed))
            st = canopy_err_set(err, CANOPY_ERR_INTERRUPTED, "canopy_selinv: interrupted (canopy_interrupt)");
        else if (!ksi_pieces(F, Lx, Ux, k, &q, work, idx, &F->sol_split))
            atomic_store(&q.failed, 1);
    }
    if (st != CANOPY_SUCCESS || atomic_load(&q.failed)) {
        /* reported below */
    } else if (nt > 1 && F->exec.solve != NULL) {
        int result = 0;
        sched_run_stats rs = {0};
        st = sched_execute(F->exec.pool, F->exec.solve, F->exec.scheduler, kselinv_task, &q, &rs, &result, err);
        if (st == CANOPY_SUCCESS && result == KSTOPPED)
            st = canopy_err_set(err, CANOPY_ERR_INTERRUPTED, "canopy_selinv: interrupted (canopy_interrupt)");
        else if (st == CANOPY_SUCCESS && result != 0)
            st = CANOPY_ERR_INTERNAL;
    } else {
        for (cint k = S->ncblk - 1; k >= 0; k--)
            if (top[k]) {
                continue;
            } else if (F->exec.stop && atomic_load_explicit(F->exec.stop, memory_order_relaxed)) {
                st = canopy_err_set(err, CANOPY_ERR_INTERRUPTED, "canopy_selinv: interrupted (canopy_interrupt)");
                break;
            } else if (!kselinv_cblk(F, Lx, Ux, k, work, idx)) {
                atomic_store(&q.failed, 1);
                break;
            }
    }
    if (st == CANOPY_SUCCESS && atomic_load(&q.failed))
        st = canopy_err_set(err, CANOPY_ERR_INTERNAL, "selected inversion: a block of the inverse lies outside the "
                                                      "block structure (its closure property does not hold)");
    else if (st == CANOPY_ERR_INTERNAL && err && err->status == CANOPY_SUCCESS)
        st = canopy_err_set(err, CANOPY_ERR_INTERNAL, "selected inversion: a task failed");
    canopy_free(top);
    canopy_free(q.work);
    canopy_free(q.idx);
    if (flops) *flops = fl;
    return st;
}

/* Z(r, c) from the selected inverse over Lx/Ux (new numbering); false outside the structure */
bool KSFX(numeric_inverse_entry)(const numeric *F, const SCALAR *Lx, const SCALAR *Ux, cint r, cint c, SCALAR *v)
{
    const symbolic *S = F->S;
    cint Jr = S->col2cblk[r], Jc = S->col2cblk[c];
    const SCALAR *p;
    cint ld;
    CBLAS_TRANSPOSE op;
    if (!ksi_block(F, Lx, Ux, 0, r, 1, Jr, c, 1, Jc, &p, &ld, &op)) return false;
    *v = op == CblasConjTrans ? K_CONJ(*p) : *p;
    return true;
}

/*
 * Entries Z(r[e], c[e]) by solves with unit vectors, pruned to the cblks that matter (sparse
 * right-hand sides, as MUMPS's ICNTL(30)): e_c is nonzero only on the path from c's cblk to its
 * root, so the forward solve runs those cblks alone (each pushes its panel into the cblks it faces,
 * all on that path); the backward solve needs the rows r only, so it runs the paths from their
 * cblks up, top down. Up to KSI_BATCH columns share one pass.
 */
#define KSI_BATCH 16

canopy_status KSFX(numeric_inverse_solve)(numeric *F, cint nent, const cint *r, const cint *c, SCALAR *v,
                                          canopy_err *err)
{
    const symbolic *S = F->S;
    cint n = S->n, nc = S->ncblk;
    cint *ord = canopy_alloc((size_t)nent + 1, sizeof(cint), "inverse entries", err);
    cint *slot = canopy_alloc((size_t)n + 1, sizeof(cint), "inverse entries", err);
    unsigned char *fw = canopy_alloc((size_t)nc + 1, 1, "inverse entries", err);
    unsigned char *bw = canopy_alloc((size_t)nc + 1, 1, "inverse entries", err);
    SCALAR *y = canopy_alloc((size_t)n * KSI_BATCH + 1, sizeof(SCALAR), "inverse entries", err);
    SCALAR *work = canopy_alloc(ks_work_scalars(F, KSI_BATCH), sizeof(SCALAR), "inverse entries", err);
    if (!ord || !slot || !fw || !bw || !y || !work) {
        canopy_status st = err && err->status ? err->status : canopy_err_set(err, CANOPY_ERR_NOMEM, "inverse entries");
        canopy_free(ord), canopy_free(slot), canopy_free(fw), canopy_free(bw), canopy_free(y), canopy_free(work);
        return st;
    }
    /* entries by column (counting sort: stable, O(n + nent)) */
    for (cint i = 0; i <= n; i++) slot[i] = 0;
    for (cint e = 0; e < nent; e++) slot[c[e] + 1 < n ? c[e] + 1 : n]++;
    for (cint i = 0; i < n; i++) slot[i + 1] += slot[i];
    for (cint e = 0; e < nent; e++) ord[slot[c[e]]++] = e;
    for (cint i = 0; i < n; i++) slot[i] = -1;
    for (cint e0 = 0; e0 < nent;) {
        /* the next batch: up to KSI_BATCH distinct columns */
        cint e1 = e0, ncol = 0;
        while (e1 < nent && (ncol < KSI_BATCH || slot[c[ord[e1]]] >= 0)) {
            cint col = c[ord[e1]];
            if (slot[col] < 0) slot[col] = ncol++;
            e1++;
        }
        memset(fw, 0, (size_t)nc);
        memset(bw, 0, (size_t)nc);
        memset(y, 0, (size_t)n * (size_t)ncol * sizeof(SCALAR));
        for (cint e = e0; e < e1; e++) {
            cint col = c[ord[e]];
            y[col + (size_t)slot[col] * n] = K_ONE;
            for (cint k = S->col2cblk[col]; k >= 0 && !fw[k]; k = S->cblk_parent[k]) fw[k] = 1;
            for (cint k = S->col2cblk[r[ord[e]]]; k >= 0 && !bw[k]; k = S->cblk_parent[k]) bw[k] = 1;
        }
        for (cint k = 0; k < nc; k++) {
            if (!fw[k]) continue;
            kforward_diag(F, k, ncol, y);
            for (cint b = S->cblk_fblok[k] + 1; b < S->cblk_fblok[k + 1]; b++) kforward_blok(F, k, b, ncol, y);
        }
        for (cint k = nc - 1; k >= 0; k--)
            if (bw[k]) kbackward(F, k, ncol, y, work);
        for (cint e = e0; e < e1; e++) {
            cint col = c[ord[e]];
            v[ord[e]] = y[r[ord[e]] + (size_t)slot[col] * n];
        }
        for (cint e = e0; e < e1; e++) slot[c[ord[e]]] = -1;
        e0 = e1;
    }
    canopy_free(ord), canopy_free(slot), canopy_free(fw), canopy_free(bw), canopy_free(y), canopy_free(work);
    return CANOPY_SUCCESS;
}

/* ---- several ranks ------------------------------------------------------------------------ */

/*
 * The selected inversion over the ranks, shaped like the backward solve over the ranks
 * (solve_dist_template.c): cblk K needs the finished Z(:, J) of every cblk J its bloks face.
 * Those of another rank arrive whole, broadcast by J's owner along the tree of J's members (the
 * ranks holding bloks facing J: the restricted broadcast of option tree=flat|binary|shifted), into
 * a copy of J's panel(s) allocated for the inversion and freed at its end (the factorization's
 * fan-in buffers are gone by then, and held only the rows they updated). Each K is then inverted whole on its owner
 * (no reduction: one rank owns all of Z(:, K)). The shared cblks run on the calling thread between
 * messages, the own subtrees afterwards on every worker, a cblk as soon as its parent is done.
 */
typedef struct ksdop {
    comm_tree t;
    comm_tree_op op[2];   /* L panel, U panel (LU) */
    int active;           /* 0 not posted, 1 in flight, 2 done */
} ksdop;

static void ksd_local(void *ctx, cint k, int t)
{
    kselinv *q = ctx;
    SCALAR *work = q->work + (size_t)t * q->wld;
    cint *idx = q->idx + (size_t)t * ((size_t)q->F->S->max_width + 1);
    if (q->top[k]) return; /* done in pieces */
    if (!kselinv_cblk(q->F, q->Lx, q->Ux, k, work, idx)) atomic_store(&q->failed, 1);
}

static void ksd_progress(ksdop *ops, int *act, int *nact, int parts, int *failed, canopy_err *err)
{
    for (int a = 0; a < *nact;) {
        ksdop *o = &ops[act[a]];
        bool all = true;
        for (int p = 0; p < parts; p++) {
            bool done = false;
            if (comm_tree_op_test(&o->op[p], &done, err) != CANOPY_SUCCESS) {
                *failed = 1;
                done = true;
            }
            all = all && done;
        }
        if (all) {
            o->active = 2;
            act[a] = act[--*nact];
        } else {
            a++;
        }
    }
}

canopy_status KSFX(numeric_selinv_dist)(numeric *F, SCALAR *Lx, SCALAR *Ux, double *flops, int64_t sent[2],
                                        canopy_err *err)
{
    const symbolic *S = F->S;
    const sched_local *L = F->exec.local;
    cint nc = S->ncblk;
    int me = L->rank, nm = F->sol_nops, parts = F->kind == CANOPY_FACT_LU ? 2 : 1, failed = 0, nact = 0;
    int nt = F->exec.pool != NULL ? sched_pool_threads(F->exec.pool) : 1;
    int dps = (int)(sizeof(SCALAR) / sizeof(double));
    sent[0] = sent[1] = 0;
    F->sol_split = 0;
    size_t wld = 1;
    double fl = 0;
    for (cint k = 0; k < nc; k++) {
        if (L->cblk_rank[k] != me) continue;
        size_t x = ksi_work(F, k);
        if (x > wld) wld = x;
        fl += ksi_flops(F, k);
    }
    wld = (wld + 63) / 64 * 64;
    /* thread nt's workspace is the calling thread's (the shared cblks) */
    kselinv q = {.F = F, .Lx = Lx, .Ux = Ux, .wld = wld};
    atomic_init(&q.failed, 0);
    size_t nw;
    q.work = canopy_mul_ok(wld, (size_t)nt + 1, &nw) ? canopy_alloc(nw, sizeof(SCALAR), "selected inversion workspace", err)
                                                      : NULL;
    q.idx = canopy_alloc(((size_t)S->max_width + 1) * ((size_t)nt + 1), sizeof(cint), "selected inversion workspace", err);
    ksdop *ops = canopy_calloc((size_t)nm + 1, sizeof(ksdop), "selected inversion messages", err);
    int *act = canopy_alloc((size_t)nm + 1, sizeof(int), "selected inversion messages", err);
    unsigned char *local = canopy_calloc((size_t)nc + 1, 1, "selected inversion messages", err);
    kdlocal lq;
    canopy_status qst = kdl_init(&lq, F, 1, NULL, err);
    canopy_status st = q.work && q.idx && ops && act && local && qst == CANOPY_SUCCESS
                           ? CANOPY_SUCCESS
                           : (err && err->status ? err->status : canopy_err_set(err, CANOPY_ERR_NOMEM, "selected inversion"));
    for (cint x = 0; local && x < F->sol_nlocal; x++) local[F->sol_local[x]] = 1;
    /* the top of the rank's own subtrees, as the top of the tree on one rank */
    unsigned char *ltop = st == CANOPY_SUCCESS ? ksi_top(F, local, err) : NULL;
    if (st == CANOPY_SUCCESS && !ltop) st = err && err->status ? err->status : CANOPY_ERR_NOMEM;
    q.top = ltop;
    /* the panels of the other ranks' cblks this rank faces, received whole */
    int64_t nx = 0;
    F->sel_xcoef = st == CANOPY_SUCCESS ? canopy_alloc((size_t)nc + 1, sizeof(int64_t), "selected inversion panels", err) : NULL;
    if (st == CANOPY_SUCCESS && !F->sel_xcoef) st = err && err->status ? err->status : CANOPY_ERR_NOMEM;
    for (cint k = 0; F->sel_xcoef && k < nc; k++) F->sel_xcoef[k] = -1;
    for (int i = 0; st == CANOPY_SUCCESS && i < nm; i++) {
        cint j = F->sol_cblk[i];
        if (L->cblk_rank[j] == me) continue;
        F->sel_xcoef[j] = nx;
        nx += S->cblk_coef[j + 1] - S->cblk_coef[j];
    }
    for (int pt = 0; st == CANOPY_SUCCESS && pt < parts; pt++) {
        F->sel_x[pt] = canopy_alloc((size_t)nx + 1, sizeof(SCALAR), "selected inversion panels", err);
        if (!F->sel_x[pt]) st = err && err->status ? err->status : CANOPY_ERR_NOMEM;
    }
    for (int i = 0; st == CANOPY_SUCCESS && i < nm; i++) {
        cint j = F->sol_cblk[i];
        const int *mem = F->sol_members + F->sol_mptr[i];
        int p = (int)(F->sol_mptr[i + 1] - F->sol_mptr[i]);
        int count = (int)((S->cblk_coef[j + 1] - S->cblk_coef[j]) * dps);
        if (st == CANOPY_SUCCESS) st = comm_tree_build(mem, p, me, F->exec.tree, (unsigned)j, &ops[i].t, err);
        for (int pt = 0; st == CANOPY_SUCCESS && pt < parts; pt++)
            st = comm_tree_op_init(&ops[i].op[pt], &ops[i].t, mem, COMM_TREE_BCAST, count, err);
    }
    /* nothing has been sent yet: every rank learns here whether all could allocate */
    if (comm_agree(F->exec.comm, err) < 0) {
        st = err->status;
        goto out;
    }
    /* the readers post their broadcasts first, straight into the panels' places */
    for (int i = 0; i < nm && !failed; i++) {
        cint j = F->sol_cblk[i];
        if (L->cblk_rank[j] == me) continue;
        for (int pt = 0; pt < parts && !failed; pt++) {
            MPI_Comm comm;
            int tag;
            comm_tags_get(F->exec.tags, comm_tags_id(j, pt == 0 ? COMM_ID_FANIN_L : COMM_ID_FANIN_U), &comm, &tag);
            if (comm_tree_op_post(&ops[i].op[pt], comm, tag, (double *)ksi_panel(F, Lx, Ux, pt, j), err) != CANOPY_SUCCESS)
                failed = 1;
        }
        ops[i].active = 1;
        act[nact++] = i;
        sent[0] += ops[i].t.nchildren * parts;
        sent[1] += (int64_t)ops[i].t.nchildren * parts * ops[i].op[0].count * (int64_t)sizeof(double);
    }
    SCALAR *work = q.work + (size_t)nt * wld;
    cint *idx = q.idx + (size_t)nt * ((size_t)S->max_width + 1);
    for (cint k = nc - 1; k >= 0 && !failed; k--) {
        if (L->cblk_rank[k] != me) continue;
        /* the panels of the other ranks' cblks that k faces */
        for (cint b = S->cblk_fblok[k] + 1; b < S->cblk_fblok[k + 1] && !failed; b++) {
            cint j = S->blok_fcblk[b];
            if (L->cblk_rank[j] == me) continue;
            ksdop *o = &ops[F->sol_op[j]];
            while (o->active == 1 && !failed) ksd_progress(ops, act, &nact, parts, &failed, err);
        }
        if (failed || local[k]) continue; /* after the loop, on the workers */
        if (!ksi_pieces(F, Lx, Ux, k, &q, work, idx, &F->sol_split)) atomic_store(&q.failed, 1);
        int i = F->sol_op[k];
        if (i >= 0) {
            for (int pt = 0; pt < parts && !failed; pt++) {
                MPI_Comm comm;
                int tag;
                comm_tags_get(F->exec.tags, comm_tags_id(k, pt == 0 ? COMM_ID_FANIN_L : COMM_ID_FANIN_U), &comm, &tag);
                if (comm_tree_op_post(&ops[i].op[pt], comm, tag, (double *)((pt ? Ux : Lx) + F->coef[k]), err) !=
                    CANOPY_SUCCESS)
                    failed = 1;
            }
            ops[i].active = 1;
            act[nact++] = i;
            sent[0] += ops[i].t.nchildren * parts;
            sent[1] += (int64_t)ops[i].t.nchildren * parts * ops[i].op[0].count * (int64_t)sizeof(double);
        }
        ksd_progress(ops, act, &nact, parts, &failed, err);
    }
    while (nact > 0 && !failed) ksd_progress(ops, act, &nact, parts, &failed, err);
    /* every panel the own subtrees face is final now: their top in pieces, then the rest as tasks */
    for (cint k = nc - 1; k >= 0 && !failed; k--)
        if (ltop[k] && !ksi_pieces(F, Lx, Ux, k, &q, work, idx, &F->sol_split)) atomic_store(&q.failed, 1);
    if (!failed) {
        lq.cblk_fn = ksd_local;
        lq.fn_ctx = &q;
        kdl_run(&lq, 1);
    }
    if (failed) st = err && err->status ? err->status : canopy_err_set(err, CANOPY_ERR_MPI, "the selected inversion's messages failed");
    else if (atomic_load(&q.failed))
        st = canopy_err_set(err, CANOPY_ERR_INTERNAL, "selected inversion: a block of the inverse lies outside the "
                                                      "block structure (its closure property does not hold)");
out:
    for (int i = 0; ops && i < nm; i++)
        for (int pt = 0; pt < parts; pt++) comm_tree_op_free(&ops[i].op[pt]);
    canopy_free(ops);
    canopy_free(act);
    canopy_free(local);
    canopy_free(ltop);
    kdl_free(&lq);
    canopy_free(q.work);
    canopy_free(q.idx);
    canopy_free(F->sel_xcoef);
    canopy_free(F->sel_x[0]);
    canopy_free(F->sel_x[1]);
    F->sel_xcoef = NULL;
    F->sel_x[0] = F->sel_x[1] = NULL;
    if (flops) *flops = fl;
    return st;
}
