/*
 * Block structure of the factor for a given column partition (see symbolic.h for the layout).
 *
 * This is a supernodal symbolic factorization: the row structure of cblk K is the union of the
 * rows of A below K's columns and of the structures of K's children (cblks whose first
 * off-diagonal row falls in K), restricted to rows past K. Children always come before their
 * parent in column order, so one pass in order suffices. Computing structures this way for ANY
 * partition into consecutive columns gives a closed block structure (an update of a cblk always
 * lands inside whole bloks of its targets), which the numerical phase relies on.
 */
#include "symbolic/symbolic.h"
#include "matrix/matrix.h"

#include <stdlib.h>
#include <string.h>

canopy_status symbolic_permute_graph(const canopy_csc *G, const cint *perm, const cint *iperm,
                                     canopy_csc *B, canopy_err *err)
{
    /* Visiting the new columns in increasing order and appending each one's number to the
     * columns of its rows yields B^T with sorted columns; B^T = B for a symmetric pattern. */
    cint n = G->n;
    int64_t nnz = matrix_nnz(G);
    memset(B, 0, sizeof *B);
    B->colptr = canopy_calloc((size_t)n + 1, sizeof(cint), "permuted graph", err);
    B->rowind = canopy_alloc((size_t)nnz + 1, sizeof(cint), "permuted graph", err);
    cint *next = canopy_alloc((size_t)n + 1, sizeof(cint), "permuted graph", err);
    if (!B->colptr || !B->rowind || !next) {
        canopy_free(next);
        matrix_free(B);
        return err ? err->status : CANOPY_ERR_NOMEM;
    }
    for (cint j = 0; j < n; j++) B->colptr[iperm[j] + 1] = G->colptr[j + 1] - G->colptr[j];
    for (cint j = 0; j < n; j++) B->colptr[j + 1] += B->colptr[j];
    memcpy(next, B->colptr, (size_t)n * sizeof(cint));
    for (cint jn = 0; jn < n; jn++) {
        cint jo = perm[jn];
        for (cint p = G->colptr[jo]; p < G->colptr[jo + 1]; p++) B->rowind[next[iperm[G->rowind[p]]]++] = jn;
    }
    canopy_free(next);
    B->n = n;
    B->base = 0;
    B->arith = CANOPY_PATTERN;
    B->kind = G->kind;
    B->triangle = CANOPY_TRIANGLE_BOTH;
    return CANOPY_SUCCESS;
}

/* Growable arrays of the blok fields. */
typedef struct blok_arrays {
    cint *frow, *lrow, *fcblk, *coefrow;
    cint count, cap;
} blok_arrays;

static bool blok_push(blok_arrays *b, cint frow, cint lrow, cint fcblk, cint coefrow, canopy_err *err)
{
    if (b->count == b->cap) {
        cint cap = b->cap ? 2 * b->cap : 1024;
        cint *f = canopy_realloc(b->frow, (size_t)cap, sizeof(cint), "bloks", err);
        if (f) b->frow = f;
        cint *l = f ? canopy_realloc(b->lrow, (size_t)cap, sizeof(cint), "bloks", err) : NULL;
        if (l) b->lrow = l;
        cint *c = l ? canopy_realloc(b->fcblk, (size_t)cap, sizeof(cint), "bloks", err) : NULL;
        if (c) b->fcblk = c;
        cint *r = c ? canopy_realloc(b->coefrow, (size_t)cap, sizeof(cint), "bloks", err) : NULL;
        if (r) b->coefrow = r;
        if (!r) return false;
        b->cap = cap;
    }
    b->frow[b->count] = frow;
    b->lrow[b->count] = lrow;
    b->fcblk[b->count] = fcblk;
    b->coefrow[b->count] = coefrow;
    b->count++;
    return true;
}

static int cmp_cint(const void *a, const void *b)
{
    cint x = *(const cint *)a, y = *(const cint *)b;
    return (x > y) - (x < y);
}

/* Running totals over the cblks closed so far. */
typedef struct blok_totals {
    int64_t coef, nnz_l;
    double flops_llt, flops_lu;
    size_t max_buf, max_rows;
    cint max_width;
} blok_totals;

/* Cblk k (w columns), whose bloks are B's from S->cblk_fblok[k] on and whose panel has @p stride
 * rows, is complete: its panel offset, counts and update-buffer sizes. */
static bool cblk_close(symbolic *S, const blok_arrays *B, cint k, cint w, cint stride, blok_totals *t, canopy_err *err)
{
    if (t->coef > INT64_MAX - (int64_t)stride * w) {
        canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "factor too large");
        return false;
    }
    S->cblk_stride[k] = stride;
    S->cblk_coef[k] = t->coef;
    t->coef += (int64_t)stride * w;
    /* counts: column i of the cblk has (w - i) + m entries, m = off-diagonal rows */
    int64_t m = stride - w;
    t->nnz_l += (int64_t)w * (w + 1) / 2 + (int64_t)w * m;
    for (cint i = 0; i < w; i++) {
        double c = (double)(w - i) + (double)m;
        t->flops_llt += c * c;
        t->flops_lu += (c - 1) + 2 * (c - 1) * (c - 1);
    }
    t->max_width = w > t->max_width ? w : t->max_width;
    /* update buffer: bloks facing the same cblk are updated together */
    for (cint b = S->cblk_fblok[k] + 1; b < B->count;) {
        cint e = b, height = 0;
        while (e < B->count && B->fcblk[e] == B->fcblk[b]) {
            height += B->lrow[e] - B->frow[e] + 1;
            e++;
        }
        size_t below = (size_t)(stride - B->coefrow[b]);
        t->max_rows = below > t->max_rows ? below : t->max_rows;
        size_t buf = below * (size_t)height;
        t->max_buf = buf > t->max_buf ? buf : t->max_buf;
        b = e;
    }
    return true;
}

/* A failed build: free what it made, leave the caller's perm/iperm in S. */
static canopy_status blocks_fail(symbolic *S, blok_arrays *B, cint *perm, cint *iperm, canopy_err *err)
{
    canopy_free(B->frow);
    canopy_free(B->lrow);
    canopy_free(B->fcblk);
    canopy_free(B->coefrow);
    S->perm = S->iperm = NULL; /* still owned by the caller */
    symbolic_free(S);
    S->perm = perm;
    S->iperm = iperm;
    return err && err->status ? err->status : CANOPY_ERR_NOMEM;
}

/* Give back the unused end of the doubled arrays: every rank keeps them for the solver's life
 * (G3_circuit: 2.1 million slots for 1.23 million bloks, 14 MB on each rank). */
static void blok_shrink(blok_arrays *B)
{
    if (B->count >= B->cap || B->count == 0) return;
    B->frow = canopy_shrink(B->frow, (size_t)B->count, sizeof(cint));
    B->lrow = canopy_shrink(B->lrow, (size_t)B->count, sizeof(cint));
    B->fcblk = canopy_shrink(B->fcblk, (size_t)B->count, sizeof(cint));
    B->coefrow = canopy_shrink(B->coefrow, (size_t)B->count, sizeof(cint));
    B->cap = B->count;
}

/* All @p ncblk cblks are closed: hand the bloks and the totals to S. */
static void totals_store(symbolic *S, blok_arrays *B, cint ncblk, const blok_totals *t)
{
    blok_shrink(B);
    S->cblk_fblok[ncblk] = B->count;
    S->cblk_coef[ncblk] = t->coef;
    S->nblok = B->count;
    S->blok_frow = B->frow;
    S->blok_lrow = B->lrow;
    S->blok_fcblk = B->fcblk;
    S->blok_coefrow = B->coefrow;
    S->nnz_l = t->nnz_l;
    S->flops_llt = t->flops_llt;
    S->flops_lu = t->flops_lu;
    S->max_update_buf = t->max_buf;
    S->max_update_rows = t->max_rows;
    S->max_width = t->max_width;
}

/* S emptied but for the caller's perm/iperm, the partition checked, and the cblk arrays and
 * col2cblk allocated and filled from it; false (err set) when the partition is bad or memory
 * runs out (blocks_fail cleans up). */
static bool blocks_start(symbolic *S, cint n, cint npart, const cint *part_fcol, canopy_err *err)
{
    cint *perm = S->perm, *iperm = S->iperm; /* kept: the caller may have set them */
    memset(S, 0, sizeof *S);
    S->perm = perm;
    S->iperm = iperm;
    if (npart < 1 || part_fcol[0] != 0 || part_fcol[npart] != n) {
        canopy_err_set(err, CANOPY_ERR_INTERNAL, "column partition does not cover 0..%" CINT_FMT, n);
        return false;
    }
    for (cint k = 0; k < npart; k++)
        if (part_fcol[k + 1] <= part_fcol[k]) {
            canopy_err_set(err, CANOPY_ERR_INTERNAL, "empty column block %" CINT_FMT " in partition", k);
            return false;
        }
    S->n = n;
    S->ncblk = npart;
    S->cblk_fcol = canopy_alloc((size_t)npart + 1, sizeof(cint), "cblk_fcol", err);
    S->cblk_fblok = canopy_alloc((size_t)npart + 1, sizeof(cint), "cblk_fblok", err);
    S->cblk_stride = canopy_alloc((size_t)npart + 1, sizeof(cint), "cblk_stride", err);
    S->cblk_parent = canopy_alloc((size_t)npart + 1, sizeof(cint), "cblk_parent", err);
    S->cblk_coef = canopy_alloc((size_t)npart + 1, sizeof(int64_t), "cblk_coef", err);
    S->col2cblk = canopy_alloc((size_t)n + 1, sizeof(cint), "col2cblk", err);
    if (!S->cblk_fcol || !S->cblk_fblok || !S->cblk_stride || !S->cblk_parent || !S->cblk_coef || !S->col2cblk)
        return false;
    memcpy(S->cblk_fcol, part_fcol, ((size_t)npart + 1) * sizeof(cint));
    for (cint k = 0; k < npart; k++)
        for (cint j = part_fcol[k]; j < part_fcol[k + 1]; j++) S->col2cblk[j] = k;
    return true;
}

canopy_status symbolic_build_blocks(const canopy_csc *G, cint npart, const cint *part_fcol,
                                    symbolic *S, canopy_err *err)
{
    cint n = G->n;
    cint *perm = S->perm, *iperm = S->iperm;
    blok_arrays B = {0};
    if (!blocks_start(S, n, npart, part_fcol, err)) return blocks_fail(S, &B, perm, iperm, err);
    /* per cblk row structure (rows past the cblk), kept until the parent has merged it */
    int64_t *sptr = canopy_alloc((size_t)npart + 1, sizeof(int64_t), "structure pointers", err);
    cint *child_head = canopy_alloc((size_t)npart + 1, sizeof(cint), "children", err);
    cint *child_next = canopy_alloc((size_t)npart + 1, sizeof(cint), "children", err);
    cint *mark = canopy_alloc((size_t)n + 1, sizeof(cint), "marker", err);
    cint *acc = canopy_alloc((size_t)n + 1, sizeof(cint), "merge buffer", err);
    cint *tmp = canopy_alloc((size_t)n + 1, sizeof(cint), "merge buffer", err);
    size_t rows_cap = (size_t)matrix_nnz(G) + (size_t)n + 16;
    cint *rows = canopy_alloc(rows_cap, sizeof(cint), "cblk structures", err);
    if (!sptr || !child_head || !child_next || !mark || !acc || !tmp || !rows) goto out;

    for (cint k = 0; k < npart; k++) child_head[k] = -1;
    for (cint i = 0; i < n; i++) mark[i] = -1;

    size_t used = 0;
    blok_totals tot = {0};
    for (cint k = 0; k < npart; k++) {
        cint fcol = part_fcol[k], lcol = part_fcol[k + 1] - 1, w = lcol - fcol + 1;
        /* rows of A below the cblk: small unsorted set, sorted once */
        cint len = 0;
        for (cint j = fcol; j <= lcol; j++)
            for (cint p = G->colptr[j]; p < G->colptr[j + 1]; p++) {
                cint r = G->rowind[p];
                if (r > lcol && mark[r] != k) {
                    mark[r] = k;
                    acc[len++] = r;
                }
            }
        qsort(acc, (size_t)len, sizeof(cint), cmp_cint);
        /* merge each child's sorted structure (rows past lcol) */
        for (cint c = child_head[k]; c >= 0; c = child_next[c]) {
            const cint *cr = rows + sptr[c];
            int64_t clen = sptr[c + 1] - sptr[c];
            int64_t a = 0, b = 0;
            cint t = 0;
            while (b < clen && cr[b] <= lcol) b++;
            while (a < len || b < clen) {
                cint r;
                if (b >= clen || (a < len && acc[a] < cr[b])) r = acc[a++];
                else if (a >= len || cr[b] < acc[a]) r = cr[b++];
                else { r = acc[a++]; b++; }
                tmp[t++] = r;
            }
            cint *sw = acc;
            acc = tmp;
            tmp = sw;
            len = t;
        }
        /* keep the structure for the parent */
        if (used + (size_t)len > rows_cap) {
            size_t cap = 2 * (used + (size_t)len);
            cint *nr = canopy_realloc(rows, cap, sizeof(cint), "cblk structures", err);
            if (!nr) goto out;
            rows = nr;
            rows_cap = cap;
        }
        sptr[k] = (int64_t)used;
        memcpy(rows + used, acc, (size_t)len * sizeof(cint));
        used += (size_t)len;
        sptr[k + 1] = (int64_t)used;
        cint parent = len > 0 ? S->col2cblk[acc[0]] : -1;
        S->cblk_parent[k] = parent;
        if (parent >= 0) {
            child_next[k] = child_head[parent];
            child_head[parent] = k;
        }
        /* cut the rows into bloks: new blok at a gap or at a cblk boundary */
        S->cblk_fblok[k] = B.count;
        if (!blok_push(&B, fcol, lcol, k, 0, err)) goto out;
        cint stride = w;
        for (cint a = 0; a < len;) {
            cint b = a;
            cint fc = S->col2cblk[acc[a]];
            while (b + 1 < len && acc[b + 1] == acc[b] + 1 && S->col2cblk[acc[b + 1]] == fc) b++;
            if (!blok_push(&B, acc[a], acc[b], fc, stride, err)) goto out;
            stride += b - a + 1;
            a = b + 1;
        }
        if (!cblk_close(S, &B, k, w, stride, &tot, err)) goto out;
    }
    totals_store(S, &B, npart, &tot);
    B = (blok_arrays){0}; /* now owned by S */
out: /* success falls through here too: S->blok_frow is set only on success */
    canopy_free(sptr);
    canopy_free(child_head);
    canopy_free(child_next);
    canopy_free(mark);
    canopy_free(acc);
    canopy_free(tmp);
    canopy_free(rows);
    if (S->blok_frow != NULL) return CANOPY_SUCCESS;
    return blocks_fail(S, &B, perm, iperm, err);
}

cint symbolic_cut_bloks(const cint *col2cblk, const cint *rows, cint len, cint *frow, cint *lrow)
{
    cint nb = 0;
    for (cint a = 0; a < len;) {
        cint b = a;
        cint fc = col2cblk[rows[a]];
        while (b + 1 < len && rows[b + 1] == rows[b] + 1 && col2cblk[rows[b + 1]] == fc) b++;
        frow[nb] = rows[a];
        lrow[nb++] = rows[b];
        a = b + 1;
    }
    return nb;
}

canopy_status symbolic_blocks_from_bloks(symbolic *S, cint n, cint npart, const cint *part_fcol, const cint *nblok,
                                         const cint *frow, const cint *lrow, canopy_err *err)
{
    cint *perm = S->perm, *iperm = S->iperm;
    blok_arrays B = {0};
    if (!blocks_start(S, n, npart, part_fcol, err)) goto out;
    blok_totals tot = {0};
    int64_t q = 0;
    for (cint k = 0; k < npart; k++) {
        cint fcol = part_fcol[k], lcol = part_fcol[k + 1] - 1, w = lcol - fcol + 1;
        S->cblk_parent[k] = nblok[k] > 0 ? S->col2cblk[frow[q]] : -1;
        S->cblk_fblok[k] = B.count;
        if (!blok_push(&B, fcol, lcol, k, 0, err)) goto out;
        cint stride = w;
        for (cint b = 0; b < nblok[k]; b++, q++) {
            if (!blok_push(&B, frow[q], lrow[q], S->col2cblk[frow[q]], stride, err)) goto out;
            stride += lrow[q] - frow[q] + 1;
        }
        if (!cblk_close(S, &B, k, w, stride, &tot, err)) goto out;
    }
    totals_store(S, &B, npart, &tot);
    return CANOPY_SUCCESS;
out:
    return blocks_fail(S, &B, perm, iperm, err);
}

cint symbolic_split_partition(cint npart, const cint *fcol, cint split, const unsigned char *keep, cint *out)
{
    cint q = 0;
    for (cint k = 0; k < npart; k++) {
        cint w = fcol[k + 1] - fcol[k];
        cint pieces = split > 0 && w > split && (keep == NULL || keep[k]) ? (w + split - 1) / split : 1;
        for (cint t = 0; t < pieces; t++) out[q++] = fcol[k] + (cint)((int64_t)w * t / pieces);
    }
    out[q] = npart > 0 ? fcol[npart] : 0;
    return q;
}

/*
 * A piece [a, b) of cblk g keeps g's rows: the rest of g's diagonal block (one blok per later
 * piece) and g's off-diagonal bloks, cut where a target was cut. Its structure is a superset of
 * what symbolic_build_blocks would compute for the piece (equal without amalgamation) and closed
 * for the same reason: rows of g at or past a piece of h lie in that piece's panel.
 */
canopy_status symbolic_resplit(const symbolic *Su, const unsigned char *cut, cint width, symbolic *S, canopy_err *err)
{
    if (Su == NULL || S == NULL || width < 0)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "symbolic_resplit: NULL structure or width < 0");
    memset(S, 0, sizeof *S);
    cint n = Su->n;
    size_t nn = (size_t)n + 1;
    cint *pf = canopy_alloc(nn + 1, sizeof(cint), "split partition", err);
    blok_arrays B = {0};
    if (pf == NULL) return err && err->status ? err->status : CANOPY_ERR_NOMEM;
    cint np = symbolic_split_partition(Su->ncblk, Su->cblk_fcol, width, cut, pf);
    S->n = n;
    S->ncblk = np;
    S->cblk_fcol = pf;
    S->cblk_fblok = canopy_alloc((size_t)np + 1, sizeof(cint), "cblk_fblok", err);
    S->cblk_stride = canopy_alloc((size_t)np + 1, sizeof(cint), "cblk_stride", err);
    S->cblk_parent = canopy_alloc((size_t)np + 1, sizeof(cint), "cblk_parent", err);
    S->cblk_coef = canopy_alloc((size_t)np + 1, sizeof(int64_t), "cblk_coef", err);
    S->col2cblk = canopy_alloc(nn, sizeof(cint), "col2cblk", err);
    S->perm = canopy_alloc(nn, sizeof(cint), "ordering", err);
    S->iperm = canopy_alloc(nn, sizeof(cint), "ordering", err);
    if (!S->cblk_fblok || !S->cblk_stride || !S->cblk_parent || !S->cblk_coef || !S->col2cblk || !S->perm || !S->iperm)
        goto fail;
    memcpy(S->perm, Su->perm, (size_t)n * sizeof(cint));
    memcpy(S->iperm, Su->iperm, (size_t)n * sizeof(cint));
    for (cint p = 0; p < np; p++)
        for (cint j = pf[p]; j < pf[p + 1]; j++) S->col2cblk[j] = p;
    blok_totals tot = {0};
    for (cint p = 0; p < np; p++) {
        cint a = pf[p], b = pf[p + 1], g = Su->col2cblk[a], glast = Su->cblk_fcol[g + 1];
        S->cblk_fblok[p] = B.count;
        if (!blok_push(&B, a, b - 1, p, 0, err)) goto fail;
        cint stride = b - a;
        for (cint q = p + 1; q < np && pf[q] < glast; q++) {
            if (!blok_push(&B, pf[q], pf[q + 1] - 1, q, stride, err)) goto fail;
            stride += pf[q + 1] - pf[q];
        }
        for (cint ob = Su->cblk_fblok[g] + 1; ob < Su->cblk_fblok[g + 1]; ob++)
            for (cint r = Su->blok_frow[ob], r1 = Su->blok_lrow[ob]; r <= r1;) {
                cint q = S->col2cblk[r], e = CANOPY_MIN(r1, pf[q + 1] - 1);
                if (!blok_push(&B, r, e, q, stride, err)) goto fail;
                stride += e - r + 1;
                r = e + 1;
            }
        S->cblk_parent[p] = B.count > S->cblk_fblok[p] + 1 ? B.fcblk[S->cblk_fblok[p] + 1] : -1;
        if (!cblk_close(S, &B, p, b - a, stride, &tot, err)) goto fail;
    }
    totals_store(S, &B, np, &tot);
    return CANOPY_SUCCESS;
fail:
    canopy_free(B.frow);
    canopy_free(B.lrow);
    canopy_free(B.fcblk);
    canopy_free(B.coefrow);
    symbolic_free(S);
    return err && err->status ? err->status : CANOPY_ERR_NOMEM;
}
