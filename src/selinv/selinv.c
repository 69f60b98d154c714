/*
 * canopy_selinv: selected entries of the inverse of the user's matrix. The inversion itself runs
 * over the factors in the new numbering (selinv_template.c); this file keeps where its result
 * lives (over the factors or in a copy) and turns the entries of that inverse, Z, into entries of
 * A^-1 in the user's numbering. With As = Dr Pm A Dc the scaled and row-matched matrix and
 * Z(p, q) = As^-1(perm[p], perm[q]):
 *   A^-1 = Dc As^-1 Dr Pm,  so  A^-1(i, j) = Dc(i) Z(iperm[i], iperm[m(j)]) Dr(m(j)),
 * with m(j) = row_perm[j], the row of As that A's row j became.
 */
#include "solver/solver.h"
#include "numeric/numeric.h"
#include "matrix/matrix.h"
#include "selinv/selinv.h"

#include <complex.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static canopy_status nomem(canopy_solver *s)
{
    return s->err.status < 0 ? s->err.status : canopy_err_set(&s->err, CANOPY_ERR_NOMEM, "canopy_selinv: out of memory");
}

/* the inverse over the factors or beside them, computed once per factorization */
static canopy_status ensure_inverse(canopy_solver *s, double *flops)
{
    numeric *F = &s->F;
    *flops = 0;
    if (F->inv_state != 0) return CANOPY_SUCCESS;
    void *Lx = F->L, *Ux = F->U;
    if (s->opts.selinv_memory == CANOPY_SELINV_SEPARATE) {
        F->inv_L = canopy_alloc(F->coef_bytes + 1, 1, "selected inverse (selinv-memory=separate)", &s->err);
        F->inv_U = F->U ? canopy_alloc(F->coef_bytes + 1, 1, "selected inverse (selinv-memory=separate)", &s->err) : NULL;
        if (!F->inv_L || (F->U && !F->inv_U)) {
            canopy_free(F->inv_L);
            canopy_free(F->inv_U);
            F->inv_L = F->inv_U = NULL;
            return nomem(s);
        }
        memcpy(F->inv_L, F->L, F->coef_bytes);
        if (F->U) memcpy(F->inv_U, F->U, F->coef_bytes);
        Lx = F->inv_L;
        Ux = F->inv_U;
    }
    int old = numeric_blas_single();
    canopy_status st = F->arith == CANOPY_COMPLEX ? numeric_selinv_z(F, Lx, Ux, flops, &s->err)
                                                  : numeric_selinv_d(F, Lx, Ux, flops, &s->err);
    numeric_blas_restore(old);
    if (st == CANOPY_SUCCESS) {
        F->inv_state = s->opts.selinv_memory == CANOPY_SELINV_SEPARATE ? 2 : 1;
    } else if (s->opts.selinv_memory != CANOPY_SELINV_SEPARATE) {
        /* half inverted, half factors: neither is usable */
        F->inv_state = 3;
    } else {
        canopy_free(F->inv_L);
        canopy_free(F->inv_U);
        F->inv_L = F->inv_U = NULL;
    }
    return st;
}

static const void *inv_L(const numeric *F) { return F->inv_state == 2 ? F->inv_L : F->L; }
static const void *inv_U(const numeric *F) { return F->inv_state == 2 ? F->inv_U : F->U; }

bool selinv_z_entry(const numeric *F, cint r, cint c, double *v)
{
    if (F->arith == CANOPY_COMPLEX) return numeric_inverse_entry_z(F, inv_L(F), inv_U(F), r, c, (double _Complex *)v);
    return numeric_inverse_entry_d(F, inv_L(F), inv_U(F), r, c, v);
}

static bool z_entry(const canopy_solver *s, cint r, cint c, double *v) { return selinv_z_entry(&s->F, r, c, v); }

void selinv_unscale(const canopy_solver *s, cint i, cint m, double *v, int vsz)
{
    double f = (s->sc.col ? s->sc.col[i] : 1.0) * (s->sc.row ? s->sc.row[m] : 1.0);
    for (int c = 0; c < vsz; c++) v[c] *= f;
}

static void unscale(const canopy_solver *s, cint i, cint m, double *v, int vsz) { selinv_unscale(s, i, m, v, vsz); }

cint selinv_matched(const canopy_solver *s, cint j) { return s->sc.row_perm ? s->sc.row_perm[j] : j; }

static cint matched(const canopy_solver *s, cint j) { return selinv_matched(s, j); }

bool selinv_in_structure(const symbolic *S, cint r, cint c)
{
    cint Jr = S->col2cblk[r], Jc = S->col2cblk[c];
    if (Jr == Jc) return true;
    /* below the diagonal, in the panel of the lower-numbered cblk */
    cint J = Jr < Jc ? Jr : Jc, row = Jr < Jc ? c : r;
    cint lo = S->cblk_fblok[J] + 1, hi = S->cblk_fblok[J + 1] - 1;
    while (lo <= hi) {
        cint mid = lo + (hi - lo) / 2;
        if (S->blok_lrow[mid] < row) lo = mid + 1;
        else if (S->blok_frow[mid] > row) hi = mid - 1;
        else return true;
    }
    return false;
}

/*
 * Entries A^-1(rows[e], cols[e]) into vals: from the inverse where it holds them, the others by
 * pruned solves over the factors (refused when the factors are gone). With @p invert (DIAG), the
 * inversion runs after those solves, so that an in-place inversion does not take the factors
 * they need (a matched matrix's diagonal of A^-1 may lie outside the factors' pattern); its
 * flops and seconds go to *flops and *secs.
 */
static canopy_status entries(canopy_solver *s, cint ne, const cint *rows, const cint *cols, double *vals, bool invert,
                             double *flops, double *secs)
{
    const symbolic *S = &s->S;
    int vsz = s->F.arith == CANOPY_COMPLEX ? 2 : 1;
    cint *r = canopy_alloc((size_t)ne + 1, sizeof(cint), "canopy_selinv entries", &s->err);
    cint *c = canopy_alloc((size_t)ne + 1, sizeof(cint), "canopy_selinv entries", &s->err);
    cint *at = canopy_alloc((size_t)ne + 1, sizeof(cint), "canopy_selinv entries", &s->err);
    double *v = canopy_alloc((size_t)ne * (size_t)vsz + 1, sizeof(double), "canopy_selinv entries", &s->err);
    unsigned char *held = canopy_alloc((size_t)ne + 1, 1, "canopy_selinv entries", &s->err);
    canopy_status st = CANOPY_SUCCESS;
    if (!r || !c || !at || !v || !held) {
        st = nomem(s);
        goto out;
    }
    bool inverse = invert || s->F.inv_state != 0; /* the inverse will hold what its structure holds */
    cint left = 0;
    for (cint e = 0; e < ne; e++) {
        cint zr = S->iperm[rows[e]], zc = S->iperm[matched(s, cols[e])];
        held[e] = inverse && selinv_in_structure(S, zr, zc);
        if (held[e]) continue;
        r[left] = zr;
        c[left] = zc;
        at[left++] = e;
    }
    if (left > 0 && s->F.inv_state == 1) {
        st = canopy_err_set(&s->err, CANOPY_ERR_PHASE,
                            "canopy_selinv: entry (%" CINT_FMT ", %" CINT_FMT ") of the inverse lies outside the "
                            "factors' pattern, and the factors were overwritten by an earlier canopy_selinv "
                            "(selinv-memory=inplace): factorize again, or use selinv-memory=separate",
                            rows[at[0]], cols[at[0]]);
        goto out;
    }
    if (left > 0) {
        int old = numeric_blas_single();
        st = s->F.arith == CANOPY_COMPLEX ? numeric_inverse_solve_z(&s->F, left, r, c, (double _Complex *)v, &s->err)
                                          : numeric_inverse_solve_d(&s->F, left, r, c, v, &s->err);
        numeric_blas_restore(old);
        for (cint q = 0; st == CANOPY_SUCCESS && q < left; q++)
            memcpy(vals + (size_t)at[q] * vsz, v + (size_t)q * vsz, (size_t)vsz * sizeof(double));
    }
    if (st == CANOPY_SUCCESS && invert) {
        double t0 = canopy_wtime();
        st = ensure_inverse(s, flops);
        *secs = canopy_wtime() - t0;
    }
    for (cint e = 0; st == CANOPY_SUCCESS && e < ne; e++)
        if (held[e] && !z_entry(s, S->iperm[rows[e]], S->iperm[matched(s, cols[e])], vals + (size_t)e * vsz))
            st = canopy_err_set(&s->err, CANOPY_ERR_INTERNAL, "canopy_selinv: entry outside the structure");
    for (cint e = 0; st == CANOPY_SUCCESS && e < ne; e++) unscale(s, rows[e], matched(s, cols[e]), vals + (size_t)e * vsz, vsz);
out:
    canopy_free(r);
    canopy_free(c);
    canopy_free(at);
    canopy_free(v);
    canopy_free(held);
    return st;
}

static int cmp_row(const void *a, const void *b)
{
    cint x = *(const cint *)a, y = *(const cint *)b;
    return (x > y) - (x < y);
}

canopy_status selinv_pattern(canopy_solver *s, const numeric *F, canopy_csc *out)
{
    const symbolic *S = &s->S;
    cint n = S->n;
    int vsz = F->arith == CANOPY_COMPLEX ? 2 : 1;
    const cint *perm = S->perm;
    cint *rpinv = NULL;
    memset(out, 0, sizeof *out);
    if (s->sc.row_perm) {
        rpinv = canopy_alloc((size_t)n, sizeof(cint), "canopy_selinv pattern", &s->err);
        if (!rpinv) return nomem(s);
        for (cint j = 0; j < n; j++) rpinv[s->sc.row_perm[j]] = j;
    }
    /* Z(p, q) lands at A^-1(perm[p], rpinv[perm[q]]): count per user column, then place */
    int64_t total = 0;
    for (cint k = 0; k < S->ncblk; k++) {
        int64_t w = S->cblk_fcol[k + 1] - S->cblk_fcol[k], m = S->cblk_stride[k] - w;
        total += w * w + 2 * m * w;
    }
    out->n = n;
    out->base = 0;
    out->arith = F->arith;
    out->kind = CANOPY_KIND_GENERAL;
    out->triangle = CANOPY_TRIANGLE_BOTH;
    out->colptr = canopy_calloc((size_t)n + 1, sizeof(cint), "canopy_selinv pattern", &s->err);
    out->rowind = canopy_alloc((size_t)total + 1, sizeof(cint), "canopy_selinv pattern", &s->err);
    out->values = canopy_alloc((size_t)total * (size_t)vsz + 1, sizeof(double), "canopy_selinv pattern", &s->err);
    cint *fill = canopy_alloc((size_t)n + 1, sizeof(cint), "canopy_selinv pattern", &s->err);
    if (!out->colptr || !out->rowind || !out->values || !fill) {
        canopy_free(rpinv);
        canopy_free(fill);
        matrix_free(out);
        return nomem(s);
    }
#define USER_COL(q) (rpinv ? rpinv[perm[q]] : perm[q])
    for (int pass = 0; pass < 2; pass++) {
        for (cint k = 0; k < S->ncblk; k++) {
            cint f = S->cblk_fcol[k], w = S->cblk_fcol[k + 1] - f;
            for (cint q = f; q < f + w; q++)
                for (cint b = S->cblk_fblok[k]; b < S->cblk_fblok[k + 1]; b++)
                    for (cint p = S->blok_frow[b]; p <= S->blok_lrow[b]; p++)
                        for (int t = 0; t < (b == S->cblk_fblok[k] ? 1 : 2); t++) {
                            /* (p, q), and below the diagonal block also (q, p) */
                            cint zr = t ? q : p, zc = t ? p : q, j = USER_COL(zc);
                            if (pass == 0) {
                                out->colptr[j + 1]++;
                                continue;
                            }
                            cint at = fill[j]++;
                            out->rowind[at] = perm[zr];
                            double *v = (double *)out->values + (size_t)at * vsz;
                            if (!selinv_z_entry(F, zr, zc, v)) {
                                canopy_free(rpinv);
                                canopy_free(fill);
                                matrix_free(out);
                                return canopy_err_set(&s->err, CANOPY_ERR_INTERNAL,
                                                      "canopy_selinv: entry outside the structure");
                            }
                            unscale(s, perm[zr], perm[zc], v, vsz);
                        }
        }
        if (pass == 0) {
            for (cint j = 0; j < n; j++) out->colptr[j + 1] += out->colptr[j];
            memcpy(fill, out->colptr, (size_t)n * sizeof(cint));
        }
    }
#undef USER_COL
    /* rows in order within each column: sort (row, value) pairs through a permutation */
    cint *key = NULL;
    double *tmp = NULL;
    size_t maxc = 0;
    for (cint j = 0; j < n; j++)
        if ((size_t)(out->colptr[j + 1] - out->colptr[j]) > maxc) maxc = (size_t)(out->colptr[j + 1] - out->colptr[j]);
    key = canopy_alloc(2 * maxc + 1, sizeof(cint), "canopy_selinv pattern", &s->err);
    tmp = canopy_alloc(maxc * (size_t)vsz + 1, sizeof(double), "canopy_selinv pattern", &s->err);
    if (!key || !tmp) {
        canopy_free(rpinv), canopy_free(fill), canopy_free(key), canopy_free(tmp);
        matrix_free(out);
        return nomem(s);
    }
    for (cint j = 0; j < n; j++) {
        cint a = out->colptr[j], len = out->colptr[j + 1] - a;
        for (cint q = 0; q < len; q++) key[2 * q] = out->rowind[a + q], key[2 * q + 1] = q;
        qsort(key, (size_t)len, 2 * sizeof(cint), cmp_row);
        double *v = (double *)out->values + (size_t)a * vsz;
        memcpy(tmp, v, (size_t)len * vsz * sizeof(double));
        for (cint q = 0; q < len; q++) {
            out->rowind[a + q] = key[2 * q];
            memcpy(v + (size_t)q * vsz, tmp + (size_t)key[2 * q + 1] * vsz, (size_t)vsz * sizeof(double));
        }
    }
    canopy_free(rpinv), canopy_free(fill), canopy_free(key), canopy_free(tmp);
    return CANOPY_SUCCESS;
}

bool selinv_request_ok(canopy_solver *s, canopy_selinv_what what, const canopy_selinv_request *req)
{
    if (req == NULL) {
        canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT, "canopy_selinv: NULL request");
        return false;
    }
    cint n = s->S.n;
    switch (what) {
    case CANOPY_SELINV_DIAG:
        if (req->diag == NULL) canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT, "canopy_selinv: DIAG needs req->diag (n scalars)");
        break;
    case CANOPY_SELINV_PATTERN:
        break;
    case CANOPY_SELINV_ENTRIES:
        if (req->nentries < 0 || (req->nentries > 0 && (!req->rows || !req->cols || !req->values))) {
            canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT,
                           "canopy_selinv: ENTRIES needs nentries >= 0 and rows, cols and values arrays");
            break;
        }
        for (cint e = 0; e < req->nentries; e++)
            if (req->rows[e] < 0 || req->rows[e] >= n || req->cols[e] < 0 || req->cols[e] >= n) {
                canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT,
                               "canopy_selinv: entry %" CINT_FMT " is (%" CINT_FMT ", %" CINT_FMT
                               "), outside 0..%" CINT_FMT,
                               e, req->rows[e], req->cols[e], n - 1);
                break;
            }
        break;
    default:
        canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT, "canopy_selinv: unknown request %d (DIAG, PATTERN or ENTRIES)",
                       (int)what);
    }
    return s->err.status == CANOPY_SUCCESS;
}

canopy_status selinv_run(canopy_solver *s, canopy_selinv_what what, canopy_selinv_request *req)
{
    numeric *F = &s->F;
    cint n = s->S.n;
    if (!selinv_request_ok(s, what, req)) return s->err.status;
    double t0 = canopy_wtime(), flops = 0, secs = 0;
    canopy_status st = CANOPY_SUCCESS;
    if (what == CANOPY_SELINV_PATTERN) {
        st = ensure_inverse(s, &flops);
        secs = canopy_wtime() - t0;
    }
    int64_t count = 0;
    if (st == CANOPY_SUCCESS && what == CANOPY_SELINV_DIAG) {
        cint *idx = canopy_alloc((size_t)n + 1, sizeof(cint), "canopy_selinv diagonal", &s->err);
        if (!idx) st = nomem(s);
        for (cint i = 0; idx && i < n; i++) idx[i] = i;
        if (idx) st = entries(s, n, idx, idx, req->diag, true, &flops, &secs);
        canopy_free(idx);
        count = n;
    } else if (st == CANOPY_SUCCESS && what == CANOPY_SELINV_PATTERN) {
        st = selinv_pattern(s, F, &req->pattern);
        count = st == CANOPY_SUCCESS ? req->pattern.colptr[n] : 0;
    } else if (st == CANOPY_SUCCESS) {
        st = entries(s, req->nentries, req->rows, req->cols, req->values, false, &flops, &secs);
        count = req->nentries;
    }
    s->stats.time_selinv = canopy_wtime() - t0;
    s->stats.flops_selinv = flops;
    s->stats.gflops_selinv = flops > 0 && secs > 0 ? flops / secs * 1e-9 : 0;
    s->stats.selinv_entries = st == CANOPY_SUCCESS ? count : 0;
    req->perturbed_pivots = F->perturbed;
    if (st == CANOPY_SUCCESS && F->perturbed > 0)
        st = canopy_err_set(&s->err, CANOPY_WARN_PIVOTS_PERTURBED,
                            "canopy_selinv: %" PRId64 " pivots were perturbed in the factorization: the entries are "
                            "of the inverse of the perturbed matrix",
                            F->perturbed);
    return st;
}

/* ---- the structure of the inversion ------------------------------------------------------- */

double numeric_selinv_cblk_flops(canopy_factorization kind, bool cx, double w, double m)
{
    /* the diagonal block's inverse (POTRI; TRTRI and TRMM), Lh's (and Uh's) TRSM, the products
     * with Z(I, I), Z(K, K)'s update (the lower part in blocks of columns unless LU) */
    double lu = kind == CANOPY_FACT_LU ? 2.0 : 1.0;
    double inv = kind == CANOPY_FACT_LLT ? 2.0 / 3.0 : kind == CANOPY_FACT_LDLT ? 4.0 / 3.0 : 5.0 / 3.0;
    double zb = NUMERIC_SELINV_ZKK_BLOCK < w ? NUMERIC_SELINV_ZKK_BLOCK : w;
    double zkk = kind == CANOPY_FACT_LU ? 2.0 * m * w * w : m * w * (w + zb);
    double f = w * w * w * inv + lu * (m * w * w + 2.0 * m * m * w) + zkk;
    return cx ? 4.0 * f : f;
}

canopy_status numeric_selinv_top(const symbolic *S, canopy_factorization kind, bool cx, const unsigned char *among,
                                 unsigned char *top, numeric_selinv_profile *prof, canopy_err *err)
{
    cint nc = S->ncblk;
    double *v = canopy_calloc(3 * ((size_t)nc + 1), sizeof(double), "selected inversion: the top of the tree", err);
    unsigned char *mine = top ? NULL : canopy_calloc((size_t)nc + 1, 1, "selected inversion: the top of the tree", err);
    if (!v || (!top && !mine)) {
        canopy_free(v);
        canopy_free(mine);
        return err && err->status ? err->status : CANOPY_ERR_NOMEM;
    }
    if (!top) top = mine;
    double *sub = v, *own = v + nc + 1, *chain = v + 2 * ((size_t)nc + 1), total = 0;
#define IN(k) (among == NULL || among[k])
#define ROOT(k, p) ((p) <= (k) || (p) >= nc || !IN(p)) /* no parent among those considered */
    for (cint k = 0; k < nc; k++) { /* children before parents */
        top[k] = 0;
        if (!IN(k)) continue;
        double w = (double)(S->cblk_fcol[k + 1] - S->cblk_fcol[k]);
        own[k] = numeric_selinv_cblk_flops(kind, cx, w, (double)S->cblk_stride[k] - w);
        sub[k] += own[k];
        cint p = S->cblk_parent[k];
        if (!ROOT(k, p)) sub[p] += sub[k];
        else total += sub[k];
    }
    numeric_selinv_profile pr = {.flops = total};
    double serial_top = 0, below = 0, all = 0;
    for (cint k = nc - 1; k >= 0; k--) { /* parents before children */
        if (!IN(k)) continue;
        cint p = S->cblk_parent[k];
        bool root = ROOT(k, p);
        top[k] = sub[k] * NUMERIC_SELINV_TOP_SHARE >= total && (root || top[p]);
        chain[k] = own[k] + (root ? 0 : chain[p]);
        if (chain[k] > all) all = chain[k];
        if (top[k]) {
            double w = (double)(S->cblk_fcol[k + 1] - S->cblk_fcol[k]);
            pr.top_share += own[k];
            pr.top_cblks++;
            serial_top += numeric_selinv_cblk_flops(kind, cx, w, 0); /* its diagonal block's inverse */
        }
    }
    /* the longest chain of cblks below the top (the top's own not counted) */
    for (cint k = nc - 1; k >= 0; k--) {
        if (!IN(k)) continue;
        cint p = S->cblk_parent[k];
        chain[k] = top[k] ? 0 : own[k] + (ROOT(k, p) ? 0 : chain[p]);
        if (chain[k] > below) below = chain[k];
    }
#undef ROOT
#undef IN
    if (total > 0) {
        pr.top_share /= total;
        pr.serial_share = (serial_top + below) / total;
        pr.task_serial_share = all / total;
    }
    if (prof) *prof = pr;
    canopy_free(v);
    canopy_free(mine);
    return CANOPY_SUCCESS;
}
