/*
 * Matching and scaling before the analysis (contract in scaling.h): the maximum-product
 * weighted bipartite matching with its dual scaling, Ruiz equilibration, and the symmetric
 * (Duff-Pralet) variant of the matching scaling for symmetric kinds; applying the result to the
 * matrix, the right-hand sides and the solution.
 *
 * This file owns the scaling vectors and permutation only; it does not decide whether the
 * solver uses them (that is the analysis), and it never modifies A.
 */
#include "matrix/scaling.h"
#include "matrix/matrix.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

/* ---- helpers ------------------------------------------------------------------------------ */

static double entry_mag(const canopy_csc *A, int64_t p)
{
    const double *v = A->values;
    if (A->arith == CANOPY_COMPLEX) return hypot(v[2 * p], v[2 * p + 1]);
    return fabs(v[p]);
}

/* A row or column without any stored entry makes the matrix structurally singular: name the
 * first one. One whose stored entries are all zero does not: the pattern is what the analysis
 * works on, and the next values of the same pattern may fill it. Such a line only makes the
 * scaling meaningless (*zero_values, the same on every rank); the factorization meets it. */
static canopy_status check_zero_lines(const canopy_csc *A, const scaling_reduce *red, scaling *sc, bool *zero_values,
                                      canopy_err *err)
{
    /* seen[j]: column j, seen[n + i]: row i; 0 no entry, 1 stored zeros only, 2 a nonzero
     * (doubles, for the reduction) */
    cint n = A->n;
    *zero_values = false;
    double *seen = canopy_calloc(2 * (size_t)n + 1, sizeof(double), "scaling row flags", err);
    if (red && !red->agree(red->ctx, err)) {
        canopy_free(seen);
        return err->status;
    }
    if (seen == NULL) return err ? err->status : CANOPY_ERR_NOMEM;
    for (cint j = 0; j < n; j++)
        for (cint p = A->colptr[j]; p < A->colptr[j + 1]; p++) {
            double f = entry_mag(A, p) != 0 ? 2 : 1;
            seen[j] = CANOPY_MAX(seen[j], f);
            seen[n + A->rowind[p]] = CANOPY_MAX(seen[n + A->rowind[p]], f);
        }
    canopy_status st = CANOPY_SUCCESS;
    if (red && !red->max(red->ctx, seen, 2 * n))
        st = canopy_err_set(err, CANOPY_ERR_MPI, "reduction of the scaling's row and column flags failed");
    for (cint j = 0; st == CANOPY_SUCCESS && j < n; j++)
        if (!seen[j]) {
            sc->structurally_singular = 1;
            st = canopy_err_set(err, CANOPY_ERR_SINGULAR, "structurally singular: column %" CINT_FMT " has no entry", j);
        }
    for (cint i = 0; st == CANOPY_SUCCESS && i < n; i++)
        if (!seen[n + i]) {
            sc->structurally_singular = 1;
            st = canopy_err_set(err, CANOPY_ERR_SINGULAR, "structurally singular: row %" CINT_FMT " has no entry", i);
        }
    for (cint k = 0; st == CANOPY_SUCCESS && k < 2 * n && !*zero_values; k++) *zero_values = seen[k] == 1;
    canopy_free(seen);
    return st;
}

/* ---- binary heap of rows keyed by their tentative distance ---------------------------------- */

typedef struct heap {
    cint *item;     /* heap of row indices */
    cint *pos;      /* pos[i] = slot of row i in item, -1 when absent */
    const double *key;
    cint size;
} heap;

static void heap_up(heap *h, cint s)
{
    cint it = h->item[s];
    double k = h->key[it];
    while (s > 0) {
        cint par = (s - 1) / 2;
        cint pi = h->item[par];
        if (h->key[pi] <= k) break;
        h->item[s] = pi;
        h->pos[pi] = s;
        s = par;
    }
    h->item[s] = it;
    h->pos[it] = s;
}

static void heap_down(heap *h, cint s)
{
    cint it = h->item[s];
    double k = h->key[it];
    for (;;) {
        cint c = 2 * s + 1;
        if (c >= h->size) break;
        if (c + 1 < h->size && h->key[h->item[c + 1]] < h->key[h->item[c]]) c++;
        if (h->key[h->item[c]] >= k) break;
        h->item[s] = h->item[c];
        h->pos[h->item[s]] = s;
        s = c;
    }
    h->item[s] = it;
    h->pos[it] = s;
}

/* Insert row i, or move it up after its key decreased. */
static void heap_push_or_decrease(heap *h, cint i)
{
    if (h->pos[i] < 0) {
        h->item[h->size] = i;
        h->pos[i] = h->size++;
    }
    heap_up(h, h->pos[i]);
}

static cint heap_pop(heap *h)
{
    cint top = h->item[0];
    h->pos[top] = -1;
    if (--h->size > 0) {
        h->item[0] = h->item[h->size];
        h->pos[h->item[0]] = 0;
        heap_down(h, 0);
    }
    return top;
}

/* ---- maximum-product matching ------------------------------------------------------------- */

/*
 * Maximum-product matching in the spirit of Duff & Koster's MC64 (option 5), written from the
 * idea: with c_ij = log(max_k |a_kj|) - log|a_ij| >= 0, a minimum-cost perfect matching maximises
 * the product of the matched magnitudes. It is found by successive shortest augmenting paths
 * (Dijkstra on reduced costs c_ij - u_i - v_j >= 0) from a greedy start, and the final duals give
 * the scaling: exp(u_i) |a_ij| exp(v_j) / colmax_j = exp(-(reduced cost)) <= 1, = 1 when matched.
 *
 * On success: match_row[i] = column matched to row i; logdr[i] = u_i; logdc[j] = v_j - log colmax_j
 * (so Dr_i = exp(logdr[i]) for row i of A, Dc_j = exp(logdc[j])). With @p pattern every stored
 * entry counts as 1, zeros included: a maximum matching of the pattern (*unmatched > 0: the
 * pattern itself is structurally singular).
 */
static canopy_status matching_compute(const canopy_csc *A, bool pattern, cint *match_row, double *logdr, double *logdc,
                                      cint *unmatched, canopy_err *err)
{
    cint n = A->n;
    int64_t nnz = matrix_nnz(A);
    canopy_status st = CANOPY_SUCCESS;
    *unmatched = 0;

    /* Compressed copy without explicit zeros: the matching must not use them, and dropping them
     * here keeps the test out of the hot loops. */
    cint *cp = canopy_alloc((size_t)n + 1, sizeof(cint), "matching colptr", err);
    cint *ri = canopy_alloc((size_t)nnz + 1, sizeof(cint), "matching rowind", err);
    double *cost = canopy_alloc((size_t)nnz + 1, sizeof(double), "matching costs", err);
    double *u = canopy_alloc((size_t)n + 1, sizeof(double), "matching row duals", err);
    double *v = canopy_alloc((size_t)n + 1, sizeof(double), "matching column duals", err);
    double *d = canopy_alloc((size_t)n + 1, sizeof(double), "matching distances", err);
    double *logmax = canopy_alloc((size_t)n + 1, sizeof(double), "matching column maxima", err);
    cint *match_col = canopy_alloc((size_t)n + 1, sizeof(cint), "matching columns", err);
    cint *pred = canopy_alloc((size_t)n + 1, sizeof(cint), "matching predecessors", err);
    cint *touched = canopy_alloc((size_t)n + 1, sizeof(cint), "matching touched rows", err);
    cint *cheap = canopy_alloc((size_t)n + 1, sizeof(cint), "matching greedy pointers", err);
    cint *settled = canopy_alloc((size_t)n + 1, sizeof(cint), "matching settled rows", err);
    cint *pedge = canopy_alloc((size_t)n + 1, sizeof(cint), "matching path edges", err);
    cint *medge = canopy_alloc((size_t)n + 1, sizeof(cint), "matching matched edges", err);
    heap h = {canopy_alloc((size_t)n + 1, sizeof(cint), "matching heap", err),
              canopy_alloc((size_t)n + 1, sizeof(cint), "matching heap positions", err), d, 0};
    if (!cp || !ri || !cost || !u || !v || !d || !logmax || !match_col || !pred || !touched ||
        !cheap || !settled || !pedge || !medge || !h.item || !h.pos) {
        st = err ? err->status : CANOPY_ERR_NOMEM;
        goto out;
    }

    /* costs, column by column; a column without a nonzero value returned earlier (check_zero_lines) */
    cint q = 0;
    for (cint j = 0; j < n; j++) {
        cp[j] = q;
        double amax = 0;
        for (cint p = A->colptr[j]; p < A->colptr[j + 1]; p++) {
            double a = pattern ? 1.0 : entry_mag(A, p);
            if (a == 0) continue;
            amax = a > amax ? a : amax;
            ri[q] = A->rowind[p];
            cost[q] = log(a);
            q++;
        }
        logmax[j] = log(amax);
        for (cint t = cp[j]; t < q; t++) cost[t] = logmax[j] - cost[t];
    }
    cp[n] = q;

    /* initial duals: row minima, then column minima of what is left; tight edges have rc == 0
     * exactly because rc is always evaluated as (c - u) - v, the same expression v came from */
    for (cint i = 0; i < n; i++) u[i] = INFINITY;
    for (cint t = 0; t < q; t++) u[ri[t]] = cost[t] < u[ri[t]] ? cost[t] : u[ri[t]];
    for (cint i = 0; i < n; i++) {
        if (u[i] == INFINITY) u[i] = 0; /* row with no nonzero: reported as unmatched below */
        match_row[i] = -1;
        match_col[i] = -1;
        pred[i] = -1;
        d[i] = INFINITY;
        h.pos[i] = -1;
    }
    for (cint j = 0; j < n; j++) {
        double m = INFINITY;
        for (cint t = cp[j]; t < cp[j + 1]; t++) {
            double r = cost[t] - u[ri[t]];
            m = r < m ? r : m;
        }
        v[j] = m == INFINITY ? 0 : m;
    }

    /* greedy pass 1: tight edges to free rows */
    for (cint j = 0; j < n; j++) {
        for (cint t = cp[j]; t < cp[j + 1]; t++) {
            cint i = ri[t];
            if (match_row[i] < 0 && (cost[t] - u[i]) - v[j] <= 0) {
                match_row[i] = j;
                match_col[j] = i;
                medge[i] = t;
                break;
            }
        }
        cheap[j] = cp[j];
    }
    /* greedy pass 2: augmenting paths of length two through tight edges. A row never becomes free
     * again, so each column's scan resumes where it stopped (cheap[]): linear overall. */
    for (cint j = 0; j < n; j++) {
        if (match_col[j] >= 0) continue;
        for (cint t = cp[j]; t < cp[j + 1] && match_col[j] < 0; t++) {
            cint i = ri[t];
            if ((cost[t] - u[i]) - v[j] > 0) continue;
            cint j2 = match_row[i];
            if (j2 < 0) { /* only if pass 1 skipped it; harmless */
                match_row[i] = j;
                match_col[j] = i;
                medge[i] = t;
                break;
            }
            for (; cheap[j2] < cp[j2 + 1]; cheap[j2]++) {
                cint k = ri[cheap[j2]];
                if (match_row[k] < 0 && (cost[cheap[j2]] - u[k]) - v[j2] <= 0) {
                    match_row[k] = j2;
                    match_col[j2] = k;
                    medge[k] = cheap[j2];
                    match_row[i] = j;
                    match_col[j] = i;
                    medge[i] = t;
                    cheap[j2]++;
                    break;
                }
            }
        }
    }

    /* shortest augmenting paths for the columns still free */
    for (cint jj = 0; jj < n; jj++) {
        if (match_col[jj] >= 0) continue;
        cint ntouched = 0, nfinal = 0;
        double lsp = INFINITY; /* length of the shortest augmenting path found so far */
        cint isp = -1;         /* its free end row */
        h.size = 0;
        for (cint t = cp[jj]; t < cp[jj + 1]; t++) {
            cint i = ri[t];
            double r = (cost[t] - u[i]) - v[jj];
            if (r < 0) r = 0; /* rounding only */
            if (r >= lsp || r >= d[i]) continue;
            if (d[i] == INFINITY) touched[ntouched++] = i;
            d[i] = r;
            pred[i] = jj;
            pedge[i] = t;
            if (match_row[i] < 0) {
                lsp = r;
                isp = i;
            } else {
                heap_push_or_decrease(&h, i);
            }
        }
        while (h.size > 0 && lsp > 0) {
            if (d[h.item[0]] >= lsp) break;
            cint i = heap_pop(&h);
            double di = d[i];
            settled[nfinal++] = i;
            cint j = match_row[i];
            for (cint t = cp[j]; t < cp[j + 1]; t++) {
                cint k = ri[t];
                /* settled rows need no test: d[k] <= di <= dn rejects them below */
                double r = (cost[t] - u[k]) - v[j];
                if (r < 0) r = 0;
                double dn = di + r;
                if (dn >= lsp || dn >= d[k]) continue;
                if (d[k] == INFINITY) touched[ntouched++] = k;
                d[k] = dn;
                pred[k] = j;
                pedge[k] = t;
                if (match_row[k] < 0) {
                    lsp = dn;
                    isp = k;
                } else {
                    heap_push_or_decrease(&h, k);
                }
            }
        }
        if (isp >= 0) {
            /* dual update: settled rows move by d - lsp so that the whole path becomes tight
             * and every reduced cost stays >= 0; the others keep theirs */
            for (cint t = 0; t < nfinal; t++) {
                cint i = settled[t];
                u[i] += d[i] - lsp;
            }
            /* augment along pred */
            cint i = isp;
            for (;;) {
                cint j = pred[i];
                cint inext = match_col[j];
                match_col[j] = i;
                match_row[i] = j;
                medge[i] = pedge[i];
                if (j == jj) break;
                i = inext;
            }
            /* the visited columns are exactly the columns now matched to the settled rows and
             * isp; each gets v from its tight matched edge */
            settled[nfinal] = isp;
            for (cint t = 0; t <= nfinal; t++) {
                cint r = settled[t];
                v[match_row[r]] = cost[medge[r]] - u[r];
            }
        } else {
            (*unmatched)++;
        }
        for (cint t = 0; t < ntouched; t++) d[touched[t]] = INFINITY;
        for (cint t = 0; t < h.size; t++) h.pos[h.item[t]] = -1;
        h.size = 0;
    }

    if (*unmatched == 0) {
        for (cint i = 0; i < n; i++) logdr[i] = u[i];
        for (cint j = 0; j < n; j++) logdc[j] = v[j] - logmax[j];
    }
out:
    canopy_free(cp);
    canopy_free(ri);
    canopy_free(cost);
    canopy_free(u);
    canopy_free(v);
    canopy_free(d);
    canopy_free(logmax);
    canopy_free(match_col);
    canopy_free(pred);
    canopy_free(touched);
    canopy_free(cheap);
    canopy_free(settled);
    canopy_free(pedge);
    canopy_free(medge);
    canopy_free(h.item);
    canopy_free(h.pos);
    return st;
}

/* ---- Ruiz equilibration --------------------------------------------------------------------- */

#define RUIZ_TOL 1e-2
#define RUIZ_MAX_ITER 20

/*
 * Iterative infinity-norm scaling (Ruiz): divide each row and column by the square root of its
 * current largest magnitude until all are within RUIZ_TOL of 1. With @p symmetric one vector
 * serves both sides (dc == dr on return), so a symmetric matrix stays symmetric.
 */
static canopy_status ruiz_compute(const canopy_csc *A, int symmetric, const scaling_reduce *red, double *dr, double *dc,
                                  canopy_err *err)
{
    cint n = A->n;
    int64_t nnz = matrix_nnz(A);
    double *mag = canopy_alloc((size_t)nnz + 1, sizeof(double), "equilibration magnitudes", err);
    /* row maxima, then column maxima: one reduction for both */
    double *rmax = canopy_alloc(2 * (size_t)n + 1, sizeof(double), "equilibration maxima", err);
    if (red && !red->agree(red->ctx, err)) {
        canopy_free(mag);
        canopy_free(rmax);
        return err->status;
    }
    if (!mag || !rmax) {
        canopy_free(mag);
        canopy_free(rmax);
        return err ? err->status : CANOPY_ERR_NOMEM;
    }
    double *cmax = rmax + n;
    canopy_status st = CANOPY_SUCCESS;
    for (int64_t p = 0; p < nnz; p++) mag[p] = entry_mag(A, p); /* hypot once, not per sweep */
    for (cint i = 0; i < n; i++) dr[i] = dc[i] = 1.0;
    for (int it = 0; it < RUIZ_MAX_ITER; it++) {
        for (cint i = 0; i < 2 * n; i++) rmax[i] = 0;
        for (cint j = 0; j < n; j++) {
            for (cint p = A->colptr[j]; p < A->colptr[j + 1]; p++) {
                cint i = A->rowind[p];
                double a = mag[p] * (dr[i] * dc[j]);
                rmax[i] = a > rmax[i] ? a : rmax[i];
                cmax[j] = a > cmax[j] ? a : cmax[j];
            }
        }
        /* maxima are exact whatever the order: every rank gets the one-rank vectors */
        if (red && !red->max(red->ctx, rmax, 2 * n)) {
            st = canopy_err_set(err, CANOPY_ERR_MPI, "reduction of the equilibration's maxima failed");
            break;
        }
        double dev = 0;
        for (cint i = 0; i < n; i++) {
            dev = CANOPY_MAX(dev, fabs(1.0 - rmax[i]));
            dev = CANOPY_MAX(dev, fabs(1.0 - cmax[i]));
        }
        if (dev <= RUIZ_TOL) break;
        if (symmetric) {
            /* row and column maxima agree for a symmetric matrix; using the rows only keeps
             * dr and dc bitwise equal */
            for (cint i = 0; i < n; i++) dr[i] = dc[i] = dr[i] / sqrt(rmax[i]);
        } else {
            for (cint i = 0; i < n; i++) {
                dr[i] /= sqrt(rmax[i]);
                dc[i] /= sqrt(cmax[i]);
            }
        }
    }
    canopy_free(mag);
    canopy_free(rmax);
    return st;
}

/* ---- scaling_compute -------------------------------------------------------------------------- */

typedef enum { SC_NONE, SC_MATCH, SC_MATCH_SYM, SC_EQUIL, SC_EQUIL_SYM } sc_method;

/* AUTO uses the symmetrised matching scaling for SYMMETRIC/HERMITIAN (scaling.h's comment says
 * "symmetric equilibration"): it bounds |As| by 1 like equilibration and, unlike it, makes the
 * entries a matching would pivot on large, which is what LDL^T with 2x2 pivots wants. */

static sc_method choose_method(canopy_scaling mode, canopy_matrix_kind kind)
{
    int sym = kind != CANOPY_KIND_GENERAL;
    switch (mode) {
    case CANOPY_SCALING_NONE: return SC_NONE;
    case CANOPY_SCALING_EQUILIBRATE: return sym ? SC_EQUIL_SYM : SC_EQUIL;
    case CANOPY_SCALING_MATCHING: return sym ? SC_MATCH_SYM : SC_MATCH;
    case CANOPY_SCALING_AUTO:
    default:
        if (kind == CANOPY_KIND_SPD) return SC_NONE; /* LL^T needs no pivoting help */
        return sym ? SC_MATCH_SYM : SC_MATCH;
    }
}

canopy_status scaling_compute(const canopy_csc *A, canopy_scaling mode, canopy_matrix_kind kind,
                              scaling *sc, canopy_err *err)
{
    if (sc == NULL || A == NULL) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "scaling_compute: NULL argument");
    memset(sc, 0, sizeof *sc);
    sc->n = A->n;
    if (mode != CANOPY_SCALING_AUTO && mode != CANOPY_SCALING_NONE && mode != CANOPY_SCALING_EQUILIBRATE &&
        mode != CANOPY_SCALING_MATCHING)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "scaling_compute: unknown scaling mode %d", (int)mode);
    sc_method method = choose_method(mode, kind);
    if (method == SC_NONE || A->n == 0) return CANOPY_SUCCESS;
    if (A->arith != CANOPY_REAL && A->arith != CANOPY_COMPLEX)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "scaling_compute: the matrix has no values");

    bool zero_values;
    canopy_status st = check_zero_lines(A, NULL, sc, &zero_values, err);
    if (st != CANOPY_SUCCESS) return st;
    if (zero_values) {
        sc->unscaled_values = 1;
        return CANOPY_SUCCESS;
    }

    cint n = A->n;
    sc->row = canopy_alloc((size_t)n, sizeof(double), "row scaling", err);
    sc->col = canopy_alloc((size_t)n, sizeof(double), "column scaling", err);
    if (!sc->row || !sc->col) goto fail;

    if (method == SC_EQUIL || method == SC_EQUIL_SYM) {
        st = ruiz_compute(A, method == SC_EQUIL_SYM, NULL, sc->row, sc->col, err);
        if (st != CANOPY_SUCCESS) goto fail;
        return CANOPY_SUCCESS;
    }

    /* matching, general or symmetrised */
    cint *match_row = canopy_alloc((size_t)n, sizeof(cint), "row permutation", err);
    double *logdr = canopy_alloc((size_t)n, sizeof(double), "matching row scaling", err);
    double *logdc = canopy_alloc((size_t)n, sizeof(double), "matching column scaling", err);
    cint unmatched = 0;
    if (!match_row || !logdr || !logdc) {
        st = err ? err->status : CANOPY_ERR_NOMEM;
    } else {
        st = matching_compute(A, false, match_row, logdr, logdc, &unmatched, err);
        if (st == CANOPY_SUCCESS && unmatched > 0) {
            /* the nonzero values admit no perfect matching: does the pattern? */
            st = matching_compute(A, true, match_row, logdr, logdc, &unmatched, err);
            if (st == CANOPY_SUCCESS && unmatched > 0) {
                sc->structurally_singular = 1;
                st = canopy_err_set(err, CANOPY_ERR_SINGULAR, "structurally singular: %" CINT_FMT " rows cannot be matched",
                                    unmatched);
            } else if (st == CANOPY_SUCCESS) {
                /* singular values on a sound pattern: no scaling from them (the factorization
                 * meets the singularity) */
                canopy_free(match_row);
                canopy_free(logdr);
                canopy_free(logdc);
                scaling_free(sc);
                sc->n = n;
                sc->unscaled_values = 1;
                return CANOPY_SUCCESS;
            }
        }
    }
    if (st == CANOPY_SUCCESS) {
        if (method == SC_MATCH) {
            for (cint i = 0; i < n; i++) sc->row[match_row[i]] = exp(logdr[i]);
            for (cint j = 0; j < n; j++) sc->col[j] = exp(logdc[j]);
            sc->row_perm = match_row;
            match_row = NULL;
        } else {
            /* Duff-Pralet: D = sqrt(Dr Dc) keeps |D A D| <= 1 for a symmetric A without permuting;
             * one exp feeds both sides so row == col bitwise */
            for (cint i = 0; i < n; i++) sc->row[i] = sc->col[i] = exp(0.5 * (logdr[i] + logdc[i]));
        }
    }
    canopy_free(match_row);
    canopy_free(logdr);
    canopy_free(logdc);
    if (st != CANOPY_SUCCESS) goto fail;
    return CANOPY_SUCCESS;
fail:
    /* allocation failures jump here with st still SUCCESS; the others carry their status */
    if (st == CANOPY_SUCCESS) st = err && err->status != CANOPY_SUCCESS ? err->status : CANOPY_ERR_NOMEM;
    {
        int singular = sc->structurally_singular;
        scaling_free(sc);
        sc->n = n;
        sc->structurally_singular = singular;
    }
    return st;
}

canopy_status scaling_equilibrate_reduced(const canopy_csc *A, canopy_scaling mode, canopy_matrix_kind kind,
                                          const scaling_reduce *red, scaling *sc, canopy_err *err)
{
    /* every rank takes the same branches: the arguments are the same everywhere */
    memset(sc, 0, sizeof *sc);
    sc->n = A->n;
    sc_method method = choose_method(mode, kind);
    if (method == SC_NONE || A->n == 0) return CANOPY_SUCCESS;
    if (method != SC_EQUIL && method != SC_EQUIL_SYM)
        return canopy_err_set(err, CANOPY_ERR_INTERNAL, "scaling_equilibrate_reduced: only equilibration is distributed");
    bool zero_values;
    canopy_status st = check_zero_lines(A, red, sc, &zero_values, err);
    if (st != CANOPY_SUCCESS) return st;
    if (zero_values) { /* the flags were reduced: every rank returns here */
        sc->unscaled_values = 1;
        return CANOPY_SUCCESS;
    }
    cint n = A->n;
    sc->row = canopy_alloc((size_t)n, sizeof(double), "row scaling", err);
    sc->col = canopy_alloc((size_t)n, sizeof(double), "column scaling", err);
    if (sc->row && sc->col) st = ruiz_compute(A, method == SC_EQUIL_SYM, red, sc->row, sc->col, err);
    else if (!red->agree(red->ctx, err)) st = err->status; /* ruiz_compute's first agreement, on this side */
    if (st == CANOPY_SUCCESS && err->status == CANOPY_SUCCESS) return CANOPY_SUCCESS;
    if (st == CANOPY_SUCCESS) st = err->status;
    scaling_free(sc);
    sc->n = n;
    return st;
}

/* ---- applying the scaling ---------------------------------------------------------------------- */

/*
 * As is always rebuilt from scratch: whatever it held (it must be zeroed or come from an earlier
 * scaling_apply) is freed first. Each entry is multiplied by the product Dr*Dc computed first, so
 * that with Dr == Dc the (i,j) and (j,i) entries get bitwise the same factor and a symmetric A
 * gives an exactly symmetric As. As must not alias A.
 */
canopy_status scaling_apply(const canopy_csc *A, const scaling *sc, canopy_csc *As, canopy_err *err)
{
    if (A == NULL || sc == NULL || As == NULL || As == A)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "scaling_apply: NULL or aliased argument");
    if (sc->n != A->n)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "scaling_apply: scaling of order %" CINT_FMT
                              " for a matrix of order %" CINT_FMT, sc->n, A->n);
    if (As->colptr != NULL || As->rowind != NULL || As->values != NULL) matrix_free(As);

    cint n = A->n;
    int64_t nnz = matrix_nnz(A);
    int cplx = A->arith == CANOPY_COMPLEX;
    int hasval = A->values != NULL && A->arith != CANOPY_PATTERN;
    size_t vsz = cplx ? 2 * sizeof(double) : sizeof(double);
    canopy_status st = CANOPY_SUCCESS;
    cint *rowptr = NULL, *rcol = NULL, *rsrc = NULL, *next = NULL;

    *As = *A;
    As->colptr = canopy_alloc((size_t)n + 1, sizeof(cint), "scaled colptr", err);
    As->rowind = canopy_alloc((size_t)nnz + 1, sizeof(cint), "scaled rowind", err);
    As->values = hasval ? canopy_alloc((size_t)nnz + 1, vsz, "scaled values", err) : NULL;
    if (!As->colptr || !As->rowind || (hasval && !As->values)) goto fail;
    memcpy(As->colptr, A->colptr, ((size_t)n + 1) * sizeof(cint));
    As->base = 0;
    As->triangle = CANOPY_TRIANGLE_BOTH;

    const double *av = A->values;
    double *sv = As->values;
    if (sc->row_perm == NULL) {
        /* columns keep their row order: a straight scaled copy */
        memcpy(As->rowind, A->rowind, (size_t)nnz * sizeof(cint));
        if (hasval) {
            for (cint j = 0; j < n; j++) {
                double cj = sc->col ? sc->col[j] : 1.0;
                for (cint p = A->colptr[j]; p < A->colptr[j + 1]; p++) {
                    double s = (sc->row ? sc->row[A->rowind[p]] : 1.0) * cj;
                    if (cplx) {
                        sv[2 * p] = av[2 * p] * s;
                        sv[2 * p + 1] = av[2 * p + 1] * s;
                    } else {
                        sv[p] = av[p] * s;
                    }
                }
            }
        }
        return CANOPY_SUCCESS;
    }

    /* Permuted rows are no longer sorted inside a column. Two counting passes sort them: bucket
     * the entries by new row (columns visited in order, so each bucket is column-sorted), then
     * deal the buckets back into columns in row order. */
    rowptr = canopy_calloc((size_t)n + 1, sizeof(cint), "scaling row pointers", err);
    rcol = canopy_alloc((size_t)nnz + 1, sizeof(cint), "scaling row buckets", err);
    rsrc = canopy_alloc((size_t)nnz + 1, sizeof(cint), "scaling row buckets", err);
    next = canopy_alloc((size_t)n + 1, sizeof(cint), "scaling fill pointers", err);
    if (!rowptr || !rcol || !rsrc || !next) goto fail;
    const cint *perm = sc->row_perm;
    for (int64_t p = 0; p < nnz; p++) rowptr[perm[A->rowind[p]] + 1]++;
    for (cint i = 0; i < n; i++) rowptr[i + 1] += rowptr[i];
    memcpy(next, rowptr, (size_t)n * sizeof(cint));
    for (cint j = 0; j < n; j++) {
        for (cint p = A->colptr[j]; p < A->colptr[j + 1]; p++) {
            cint q = next[perm[A->rowind[p]]]++;
            rcol[q] = j;
            rsrc[q] = p;
        }
    }
    memcpy(next, A->colptr, (size_t)n * sizeof(cint));
    for (cint r = 0; r < n; r++) {
        double rr = sc->row ? sc->row[r] : 1.0;
        for (cint q = rowptr[r]; q < rowptr[r + 1]; q++) {
            cint j = rcol[q], p = rsrc[q];
            cint o = next[j]++;
            As->rowind[o] = r;
            if (!hasval) continue;
            double s = rr * (sc->col ? sc->col[j] : 1.0);
            if (cplx) {
                sv[2 * o] = av[2 * p] * s;
                sv[2 * o + 1] = av[2 * p + 1] * s;
            } else {
                sv[o] = av[p] * s;
            }
        }
    }
    canopy_free(rowptr);
    canopy_free(rcol);
    canopy_free(rsrc);
    canopy_free(next);
    return st;
fail:
    canopy_free(rowptr);
    canopy_free(rcol);
    canopy_free(rsrc);
    canopy_free(next);
    matrix_free(As);
    st = err ? err->status : CANOPY_ERR_NOMEM;
    return st == CANOPY_SUCCESS ? CANOPY_ERR_NOMEM : st;
}

void scaling_rhs(const scaling *sc, canopy_arith arith, cint nrhs, void *b, cint ldb, void *tmp)
{
    if (sc == NULL || b == NULL) return;
    cint n = sc->n;
    int w = arith == CANOPY_COMPLEX ? 2 : 1; /* doubles per scalar */
    double *bv = b;
    double *t = tmp;
    for (cint k = 0; k < nrhs; k++) {
        double *bc = bv + (size_t)k * (size_t)ldb * (size_t)w;
        if (sc->row_perm == NULL) {
            if (sc->row == NULL) continue;
            for (cint i = 0; i < n; i++)
                for (int c = 0; c < w; c++) bc[(size_t)w * i + c] *= sc->row[i];
            continue;
        }
        /* b'[perm[i]] = Dr[perm[i]] b[i]: scatter into tmp, copy back */
        for (cint i = 0; i < n; i++) {
            cint r = sc->row_perm[i];
            double s = sc->row ? sc->row[r] : 1.0;
            for (int c = 0; c < w; c++) t[(size_t)w * r + c] = bc[(size_t)w * i + c] * s;
        }
        memcpy(bc, t, (size_t)n * (size_t)w * sizeof(double));
    }
}

void scaling_solution(const scaling *sc, canopy_arith arith, cint nrhs, void *x, cint ldx)
{
    if (sc == NULL || x == NULL || sc->col == NULL) return;
    cint n = sc->n;
    int w = arith == CANOPY_COMPLEX ? 2 : 1;
    double *xv = x;
    for (cint k = 0; k < nrhs; k++) {
        double *xc = xv + (size_t)k * (size_t)ldx * (size_t)w;
        for (cint i = 0; i < n; i++)
            for (int c = 0; c < w; c++) xc[(size_t)w * i + c] *= sc->col[i];
    }
}

void scaling_rhs_t(const scaling *sc, canopy_arith arith, cint nrhs, void *b, cint ldb)
{
    if (sc == NULL || b == NULL || sc->col == NULL) return;
    scaling_solution(sc, arith, nrhs, b, ldb); /* the same product: b <- Dc b */
}

void scaling_solution_t(const scaling *sc, canopy_arith arith, cint nrhs, void *x, cint ldx, void *tmp)
{
    if (sc == NULL || x == NULL) return;
    cint n = sc->n;
    int w = arith == CANOPY_COMPLEX ? 2 : 1;
    double *xv = x, *t = tmp;
    for (cint k = 0; k < nrhs; k++) {
        double *xc = xv + (size_t)k * (size_t)ldx * (size_t)w;
        if (sc->row_perm == NULL) {
            if (sc->row == NULL) continue;
            for (cint i = 0; i < n; i++)
                for (int c = 0; c < w; c++) xc[(size_t)w * i + c] *= sc->row[i];
            continue;
        }
        /* x[i] = Dr[perm[i]] x'[perm[i]] (P^T Dr x'): gather into tmp, copy back */
        for (cint i = 0; i < n; i++) {
            cint r = sc->row_perm[i];
            double f = sc->row ? sc->row[r] : 1.0;
            for (int c = 0; c < w; c++) t[(size_t)w * i + c] = xc[(size_t)w * r + c] * f;
        }
        memcpy(xc, t, (size_t)n * (size_t)w * sizeof(double));
    }
}

void scaling_free(scaling *sc)
{
    if (sc == NULL) return;
    canopy_free(sc->row);
    canopy_free(sc->col);
    canopy_free(sc->row_perm);
    memset(sc, 0, sizeof *sc);
}
