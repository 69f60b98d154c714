/*
 * The symbolic factorization over ranks (see symbolic_dist.h).
 *
 * Etree. The subtree of column j is the connected component of j in the graph induced by the
 * columns up to j, and the forest of a graph has the same components there as the graph itself.
 * So the etree of a union of edge sets is the etree of the union of their forests: each rank
 * builds the forest of its edges with Liu's algorithm, and two forests merge by Liu's algorithm
 * on their 2n tree edges.
 *
 * Column counts. Gilbert-Ng-Peyton's deltas (symbolic.c) are a sum over the rows of L: a row adds
 * one at each leaf of its row subtree and takes one off at the least common ancestor of
 * consecutive leaves. Every rank walks the whole tree (the disjoint sets for the ancestors are
 * the same everywhere) but handles only the rows it holds; the deltas are summed over the ranks.
 *
 * Block structure. The structure of a cblk is its rows of A below it merged with its children's
 * structures (blocks.c), children before parents. The cblks are cut into consecutive ranges, one
 * per rank, and built in order as a pipeline: a rank merges its range once the rank before has
 * handed over the structures still open (built, but whose parent lies further on), then hands
 * its own open ones on. Exact by construction; it spreads the memory, not the time.
 */
#include "symbolic/symbolic_dist.h"

#include <stdlib.h>
#include <string.h>

#include "comm/agree.h"
#include "comm/share.h"

enum { TAG_ETREE = 0x5e71, TAG_OPEN = 0x5e72 };

static canopy_status nomem(canopy_err *err)
{
    return err && err->status ? err->status : canopy_err_set(err, CANOPY_ERR_NOMEM, "symbolic factorization");
}

/* Liu's step: hang the root of i's current subtree under j (path compression through anc). */
static inline void climb(cint i, cint j, cint *parent, cint *anc)
{
    while (i != -1 && i < j) {
        cint next = anc[i];
        anc[i] = j;
        if (next == -1) parent[i] = j;
        i = next;
    }
}

/* The forest of this rank's edges: each edge is seen from both ends, and kept at the later one. */
static void local_forest(const symbolic_slice *G, const cint *ip, cint *parent, cint *anc, cint *where)
{
    cint n = G->n;
    for (cint j = 0; j < n; j++) {
        parent[j] = anc[j] = -1;
        where[j] = -1;
    }
    for (cint t = 0; t < G->nv; t++) where[ip[G->first + t]] = t;
    for (cint j = 0; j < n; j++) {
        cint t = where[j];
        if (t < 0) continue;
        for (cint p = G->vert[t]; p < G->vert[t + 1]; p++) climb(ip[G->edge[p]], j, parent, anc);
    }
}

/* out = etree of the union of the forests a and b (each a child's parent is later than it). */
static void forest_merge(cint n, const cint *a, const cint *b, cint *out, cint *head, cint *next, cint *anc)
{
    cint *head_b = head + n, *next_b = next + n;
    for (cint j = 0; j < n; j++) head[j] = head_b[j] = -1;
    for (cint j = n - 1; j >= 0; j--) {
        if (a[j] >= 0) {
            next[j] = head[a[j]];
            head[a[j]] = j;
        }
        if (b[j] >= 0) {
            next_b[j] = head_b[b[j]];
            head_b[b[j]] = j;
        }
    }
    for (cint j = 0; j < n; j++) {
        out[j] = anc[j] = -1;
        for (cint c = head[j]; c >= 0; c = next[c]) climb(c, j, out, anc);
        for (cint c = head_b[j]; c >= 0; c = next_b[c]) climb(c, j, out, anc);
    }
}

canopy_status symbolic_etree_dist(MPI_Comm comm, const symbolic_slice *G, const cint *ip, cint *parent,
                                  canopy_err *err)
{
    int P, R;
    MPI_Comm_size(comm, &P);
    MPI_Comm_rank(comm, &R);
    size_t nn = (size_t)G->n + 1;
    cint *anc = canopy_alloc(nn, sizeof(cint), "etree", err);
    cint *other = canopy_alloc(nn, sizeof(cint), "etree", err);
    cint *merged = canopy_alloc(nn, sizeof(cint), "etree", err);
    cint *head = canopy_alloc(2 * nn, sizeof(cint), "etree", err);
    cint *next = canopy_alloc(2 * nn, sizeof(cint), "etree", err);
    if (anc && other && merged && head && next) local_forest(G, ip, parent, anc, other);
    else nomem(err);
    if (comm_agree(comm, err) < 0) goto out;
    /* binomial reduction to rank 0, then everyone gets the tree */
    int64_t bytes = (int64_t)G->n * (int64_t)sizeof(cint);
    for (int step = 1; step < P; step <<= 1) {
        if (R & step) {
            comm_share_send_bytes(comm, R - step, TAG_ETREE, parent, bytes, err);
            break;
        }
        if (R + step < P) {
            if (comm_share_recv_bytes(comm, R + step, TAG_ETREE, other, bytes, err) != CANOPY_SUCCESS) break;
            forest_merge(G->n, parent, other, merged, head, next, anc);
            memcpy(parent, merged, (size_t)G->n * sizeof(cint));
        }
    }
    if (comm_agree(comm, err) < 0) goto out;
    comm_share_bcast_bytes(comm, parent, bytes, err);
out:
    canopy_free(anc);
    canopy_free(other);
    canopy_free(merged);
    canopy_free(head);
    canopy_free(next);
    return comm_agree(comm, err);
}

canopy_status symbolic_colcounts_dist(MPI_Comm comm, const symbolic_slice *G, const cint *ip, const cint *parent,
                                      const cint *post, cint *colcount, canopy_err *err)
{
    int R;
    MPI_Comm_rank(comm, &R);
    cint n = G->n;
    size_t nn = (size_t)n + 1;
    /* this rank's rows i of each column j < i: the lower triangle's entries, by column */
    cint *ptr = canopy_calloc(nn + 1, sizeof(cint), "column counts", err);
    cint *w = canopy_alloc(4 * nn, sizeof(cint), "column counts", err);
    cint *rows = NULL;
    if (ptr && w) {
        for (cint t = 0; t < G->nv; t++) {
            cint i = ip[G->first + t];
            for (cint p = G->vert[t]; p < G->vert[t + 1]; p++) {
                cint j = ip[G->edge[p]];
                if (j < i) ptr[j + 2]++;
            }
        }
        for (cint j = 0; j < n; j++) ptr[j + 2] += ptr[j + 1];
        rows = canopy_alloc((size_t)ptr[n + 1] + 1, sizeof(cint), "column counts", err);
    }
    if (!ptr || !w || !rows) {
        nomem(err);
    } else {
        for (cint t = 0; t < G->nv; t++) {
            cint i = ip[G->first + t];
            for (cint p = G->vert[t]; p < G->vert[t + 1]; p++) {
                cint j = ip[G->edge[p]];
                if (j < i) rows[ptr[j + 1]++] = i;
            }
        }
        cint *first = w, *maxfirst = w + nn, *prevleaf = w + 2 * nn, *anc = w + 3 * nn, *delta = colcount;
        for (cint j = 0; j < n; j++) {
            first[j] = maxfirst[j] = prevleaf[j] = -1;
            anc[j] = j;
            delta[j] = 0;
        }
        /* the terms of the tree itself are added once, on rank 0 */
        for (cint k = 0; k < n; k++) {
            cint j = post[k];
            if (R == 0 && first[j] == -1) delta[j] = 1;
            for (; j != -1 && first[j] == -1; j = parent[j]) first[j] = k;
        }
        for (cint k = 0; k < n; k++) {
            cint j = post[k];
            if (R == 0 && parent[j] != -1) delta[parent[j]]--;
            for (cint p = ptr[j]; p < ptr[j + 1]; p++)
                symbolic_colcount_entry(rows[p], j, first, maxfirst, prevleaf, anc, delta);
            if (parent[j] != -1) anc[j] = parent[j];
        }
    }
    canopy_free(ptr);
    canopy_free(w);
    canopy_free(rows);
    if (comm_agree(comm, err) < 0) return err->status;
    if (comm_share_sum_cint(comm, colcount, n, err) == CANOPY_SUCCESS)
        for (cint k = 0; k < n; k++) {
            cint j = post[k];
            if (parent[j] != -1) colcount[parent[j]] += colcount[j];
        }
    return comm_agree(comm, err);
}

/* ---- the block structure ------------------------------------------------------------------ */

/* Growable arrays of cint. */
typedef struct cvec {
    cint *v;
    int64_t len, cap;
} cvec;

static bool cvec_reserve(cvec *a, int64_t more, canopy_err *err)
{
    if (a->len + more <= a->cap) return true;
    int64_t cap = 2 * (a->len + more) + 16;
    cint *v = canopy_realloc(a->v, (size_t)cap, sizeof(cint), "cblk structures", err);
    if (v == NULL) return false;
    a->v = v;
    a->cap = cap;
    return true;
}

/* *acc (sorted, *len rows) |= the rows of cr past lcol; tmp is the scratch of the merge. */
static void merge_rows(cint **acc, cint *len, cint **tmp, const cint *cr, int64_t clen, cint lcol)
{
    const cint *a = *acc;
    int64_t i = 0, j = 0;
    cint t = 0;
    while (j < clen && cr[j] <= lcol) j++;
    while (i < *len || j < clen) {
        cint r;
        if (j >= clen || (i < *len && a[i] < cr[j])) r = a[i++];
        else if (i >= *len || cr[j] < a[i]) r = cr[j++];
        else {
            r = a[i++];
            j++;
        }
        (*tmp)[t++] = r;
    }
    cint *sw = *acc;
    *acc = *tmp;
    *tmp = sw;
    *len = t;
}

static int cmp_cint(const void *a, const void *b)
{
    cint x = *(const cint *)a, y = *(const cint *)b;
    return (x > y) - (x < y);
}

/* The rank whose range holds cblk k (range[0..P]). */
static int range_of(const cint *range, int P, cint k)
{
    int lo = 0, hi = P - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (range[mid] <= k) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

/* What one rank works with while it builds its range. */
typedef struct bbuild {
    const symbolic_columns *C;
    const cint *col2cblk;
    cint k0, k1;         /* the range */
    int64_t *aptr;       /* [k1 - k0 + 1] rows of A of each cblk in arow */
    cint *arow;
    cint *open;          /* the open structures handed over: (cblk, parent, length, rows...) */
    int64_t nopen;       /* words in open */
    cvec rows;           /* structures built here, sptr into it */
    int64_t *sptr;
    cint *parent;        /* [k1 - k0] */
    cvec bfrow, blrow;   /* bloks of the range */
    cint *nblok;         /* [k1 - k0] */
} bbuild;

/* Build the range's cblks in order; mark, acc, tmp have n + 1 entries. */
static bool build_range(bbuild *b, cint *mark, cint *acc, cint *tmp, canopy_err *err)
{
    const cint *fcol = b->C->part_fcol;
    cint nk = b->k1 - b->k0;
    /* children lists: the range's own cblks (index >= 0) and the open ones handed over (< 0) */
    cint *head = canopy_alloc((size_t)nk + 1, sizeof(cint), "children", err);
    cint *next = canopy_alloc((size_t)nk + 1, sizeof(cint), "children", err);
    int64_t nin = 0;
    for (int64_t q = 0; q < b->nopen; q += 3 + b->open[q + 2]) nin++;
    int64_t *inpos = canopy_alloc((size_t)nin + 1, sizeof(int64_t), "children", err);
    cint *innext = canopy_alloc((size_t)nin + 1, sizeof(cint), "children", err);
    /* never NULL below, even for a range without rows */
    bool room = cvec_reserve(&b->rows, 1, err) && cvec_reserve(&b->bfrow, 1, err) && cvec_reserve(&b->blrow, 1, err);
    if (!head || !next || !inpos || !innext || !room) {
        canopy_free(head);
        canopy_free(next);
        canopy_free(inpos);
        canopy_free(innext);
        nomem(err);
        return false;
    }
    for (cint x = 0; x < nk; x++) head[x] = -1;
    nin = 0;
    for (int64_t q = 0; q < b->nopen; q += 3 + b->open[q + 2], nin++) {
        inpos[nin] = q;
        cint p = (cint)b->open[q + 1];
        if (p >= b->k0 && p < b->k1) {
            innext[nin] = head[p - b->k0];
            head[p - b->k0] = (cint)(-2 - nin);
        }
    }
    bool ok = true;
    for (cint x = 0; x < nk; x++) {
        cint k = b->k0 + x, lcol = fcol[k + 1] - 1;
        cint len = 0;
        for (int64_t p = b->aptr[x]; p < b->aptr[x + 1]; p++) {
            cint r = b->arow[p];
            if (mark[r] != k) {
                mark[r] = k;
                acc[len++] = r;
            }
        }
        qsort(acc, (size_t)len, sizeof(cint), cmp_cint);
        for (cint c = head[x]; c != -1;) {
            if (c >= 0) {
                merge_rows(&acc, &len, &tmp, b->rows.v + b->sptr[c], b->sptr[c + 1] - b->sptr[c], lcol);
                c = next[c];
            } else {
                const cint *o = b->open + inpos[-2 - c];
                merge_rows(&acc, &len, &tmp, o + 3, o[2], lcol);
                c = innext[-2 - c];
            }
        }
        if (!cvec_reserve(&b->rows, len, err) || !cvec_reserve(&b->bfrow, len, err) ||
            !cvec_reserve(&b->blrow, len, err)) {
            ok = false;
            break;
        }
        b->sptr[x] = b->rows.len;
        if (len > 0) memcpy(b->rows.v + b->rows.len, acc, (size_t)len * sizeof(cint));
        b->rows.len += len;
        b->sptr[x + 1] = b->rows.len;
        cint p = len > 0 ? b->col2cblk[acc[0]] : -1;
        b->parent[x] = p;
        if (p >= 0 && p < b->k1) {
            next[x] = head[p - b->k0];
            head[p - b->k0] = x;
        }
        cint nb = symbolic_cut_bloks(b->col2cblk, acc, len, b->bfrow.v + b->bfrow.len, b->blrow.v + b->blrow.len);
        b->bfrow.len += nb;
        b->blrow.len += nb;
        b->nblok[x] = nb;
    }
    canopy_free(head);
    canopy_free(next);
    canopy_free(inpos);
    canopy_free(innext);
    return ok;
}

/* The open structures for the next rank: those handed over that go further, then the range's
 * own whose parent is past it, as (cblk, parent, length, rows...). */
static bool pack_open(const bbuild *b, cvec *out, canopy_err *err)
{
    out->len = 0;
    for (int64_t q = 0; q < b->nopen; q += 3 + b->open[q + 2])
        if (b->open[q + 1] >= b->k1) {
            if (!cvec_reserve(out, 3 + b->open[q + 2], err)) return false;
            memcpy(out->v + out->len, b->open + q, (size_t)(3 + b->open[q + 2]) * sizeof(cint));
            out->len += 3 + b->open[q + 2];
        }
    for (cint x = 0; x < b->k1 - b->k0; x++)
        if (b->parent[x] >= b->k1) {
            int64_t len = b->sptr[x + 1] - b->sptr[x];
            if (!cvec_reserve(out, 3 + len, err)) return false;
            cint *o = out->v + out->len;
            o[0] = b->k0 + x;
            o[1] = b->parent[x];
            o[2] = (cint)len;
            if (len > 0) memcpy(o + 3, b->rows.v + b->sptr[x], (size_t)len * sizeof(cint));
            out->len += 3 + len;
        }
    return true;
}

/* Rank 0 puts the gathered bloks together: per rank, per cblk of its range, the count then the
 * (frow, lrow) pairs. */
static canopy_status assemble(const symbolic_columns *C, const int64_t *words, symbolic *S, canopy_err *err)
{
    cint np = C->npart;
    int64_t nb = 0;
    for (int64_t q = 0, k = 0; k < np; k++) {
        nb += words[q];
        q += 1 + 2 * words[q];
    }
    cint *nblok = canopy_alloc((size_t)np + 1, sizeof(cint), "bloks", err);
    cint *frow = canopy_alloc((size_t)nb + 1, sizeof(cint), "bloks", err);
    cint *lrow = canopy_alloc((size_t)nb + 1, sizeof(cint), "bloks", err);
    canopy_status st;
    if (!nblok || !frow || !lrow) {
        st = nomem(err);
    } else {
        int64_t q = 0, b = 0;
        for (cint k = 0; k < np; k++) {
            nblok[k] = (cint)words[q++];
            for (cint t = 0; t < nblok[k]; t++, b++) {
                frow[b] = (cint)words[q++];
                lrow[b] = (cint)words[q++];
            }
        }
        st = symbolic_blocks_from_bloks(S, C->n, np, C->part_fcol, nblok, frow, lrow, err);
    }
    canopy_free(nblok);
    canopy_free(frow);
    canopy_free(lrow);
    return st;
}

canopy_status symbolic_blocks_dist(MPI_Comm comm, const symbolic_slice *G, const symbolic_columns *C, symbolic *S,
                                   canopy_err *err)
{
    int P, R;
    MPI_Comm_size(comm, &P);
    MPI_Comm_rank(comm, &R);
    const cint n = G->n, np = C->npart, *fcol = C->part_fcol, *fip = C->iperm;
    size_t nn = (size_t)n + 1;
    bbuild b = {.C = C};
    cint *col2cblk = canopy_alloc(nn, sizeof(cint), "block structure", err);
    cint *cnt = canopy_calloc((size_t)np + 1, sizeof(cint), "block structure", err);
    cint *range = canopy_alloc((size_t)P + 1, sizeof(cint), "block structure", err);
    int64_t *sc = canopy_calloc(3 * (size_t)P + 1, sizeof(int64_t), "block structure", err);
    int64_t *rc = sc ? sc + P : NULL, *fill = sc ? sc + 2 * P : NULL;
    cint *spair = NULL, *rpair = NULL, *mark = NULL, *acc = NULL, *tmp = NULL;
    int64_t *words = NULL, *wcount = NULL, *wdispl = NULL;
    cvec out = {0};
    int64_t nsend = 0, nrecv = 0;
    if (!col2cblk || !cnt || !range || !sc) {
        nomem(err);
    } else {
        for (cint k = 0; k < np; k++)
            for (cint j = fcol[k]; j < fcol[k + 1]; j++) col2cblk[j] = k;
        /* rows of A below each cblk, repeats included: what its builder will receive */
        for (cint t = 0; t < G->nv; t++) {
            cint k = col2cblk[fip[G->first + t]], lcol = fcol[k + 1] - 1;
            for (cint p = G->vert[t]; p < G->vert[t + 1]; p++)
                if (fip[G->edge[p]] > lcol) cnt[k]++;
        }
    }
    if (comm_agree(comm, err) < 0 || comm_share_sum_cint(comm, cnt, np, err) != CANOPY_SUCCESS) goto out;
    /* ranges of about equal work: rows received plus columns */
    int64_t total = 0;
    for (cint k = 0; k < np; k++) total += (int64_t)cnt[k] + (fcol[k + 1] - fcol[k]);
    range[0] = 0;
    int64_t pre = 0;
    for (cint k = 0, r = 1; r <= P; r++) {
        while (k < np && r < P && (pre + (int64_t)cnt[k] + (fcol[k + 1] - fcol[k])) * P <= total * r) {
            pre += (int64_t)cnt[k] + (fcol[k + 1] - fcol[k]);
            k++;
        }
        range[r] = r == P ? np : k;
    }
    b.col2cblk = col2cblk;
    b.k0 = range[R];
    b.k1 = range[R + 1];
    /* the rows go to their cblk's builder as (cblk, row) pairs */
    for (cint t = 0; t < G->nv; t++) {
        cint k = col2cblk[fip[G->first + t]], lcol = fcol[k + 1] - 1;
        for (cint p = G->vert[t]; p < G->vert[t + 1]; p++)
            if (fip[G->edge[p]] > lcol) sc[range_of(range, P, k)]++;
    }
    for (int r = 0; r < P; r++) {
        fill[r] = nsend;
        nsend += sc[r];
    }
    spair = canopy_alloc(2 * (size_t)nsend + 1, sizeof(cint), "block structure", err);
    if (spair)
        for (cint t = 0; t < G->nv; t++) {
            cint k = col2cblk[fip[G->first + t]], lcol = fcol[k + 1] - 1;
            for (cint p = G->vert[t]; p < G->vert[t + 1]; p++) {
                cint i = fip[G->edge[p]];
                if (i <= lcol) continue;
                int64_t q = fill[range_of(range, P, k)]++;
                spair[2 * q] = k;
                spair[2 * q + 1] = i;
            }
        }
    if (comm_agree(comm, err) < 0 || comm_share_counts(comm, sc, rc, err) != CANOPY_SUCCESS) goto out;
    for (int r = 0; r < P; r++) nrecv += rc[r];
    rpair = canopy_alloc(2 * (size_t)nrecv + 1, sizeof(cint), "block structure", err);
    if (comm_agree(comm, err) < 0 ||
        comm_share_alltoallv(comm, spair, sc, rpair, rc, 2 * sizeof(cint), err) != CANOPY_SUCCESS)
        goto out;
    canopy_free(spair);
    spair = NULL;
    /* this range's rows of A, by cblk */
    cint nk = b.k1 - b.k0;
    b.aptr = canopy_calloc((size_t)nk + 2, sizeof(int64_t), "block structure", err);
    b.arow = canopy_alloc((size_t)nrecv + 1, sizeof(cint), "block structure", err);
    b.sptr = canopy_alloc((size_t)nk + 1, sizeof(int64_t), "block structure", err);
    b.parent = canopy_alloc((size_t)nk + 1, sizeof(cint), "block structure", err);
    b.nblok = canopy_alloc((size_t)nk + 1, sizeof(cint), "block structure", err);
    mark = canopy_alloc(nn, sizeof(cint), "block structure", err);
    acc = canopy_alloc(nn, sizeof(cint), "block structure", err);
    tmp = canopy_alloc(nn, sizeof(cint), "block structure", err);
    if (!b.aptr || !b.arow || !b.sptr || !b.parent || !b.nblok || !mark || !acc || !tmp) {
        nomem(err);
    } else {
        for (int64_t q = 0; q < nrecv; q++) b.aptr[rpair[2 * q] - b.k0 + 2]++;
        for (cint x = 0; x < nk; x++) b.aptr[x + 2] += b.aptr[x + 1];
        for (int64_t q = 0; q < nrecv; q++) b.arow[b.aptr[rpair[2 * q] - b.k0 + 1]++] = rpair[2 * q + 1];
        for (cint i = 0; i < n; i++) mark[i] = -1;
    }
    canopy_free(rpair);
    rpair = NULL;
    if (comm_agree(comm, err) < 0) goto out;
    /* the pipeline: the rank before says how much it hands over (-1: it failed), this rank says
     * whether it could make room, and only then does the handover move */
    bool ok = true;
    if (R > 0) {
        int64_t words_in = -1;
        comm_share_recv_bytes(comm, R - 1, TAG_OPEN, &words_in, sizeof words_in, err);
        if (words_in >= 0) {
            b.open = canopy_alloc((size_t)words_in + 1, sizeof(cint), "open structures", err);
            int ready = b.open != NULL;
            comm_share_send_bytes(comm, R - 1, TAG_OPEN, &ready, sizeof ready, err);
            if (ready) comm_share_recv_bytes(comm, R - 1, TAG_OPEN, b.open, words_in * (int64_t)sizeof(cint), err);
            b.nopen = words_in;
        }
        ok = words_in >= 0 && b.open != NULL && err->status == CANOPY_SUCCESS;
    }
    if (ok) ok = build_range(&b, mark, acc, tmp, err);
    if (R + 1 < P) {
        if (ok) ok = pack_open(&b, &out, err);
        int64_t words_out = ok ? out.len : -1;
        int ready = 0;
        comm_share_send_bytes(comm, R + 1, TAG_OPEN, &words_out, sizeof words_out, err);
        if (words_out >= 0) comm_share_recv_bytes(comm, R + 1, TAG_OPEN, &ready, sizeof ready, err);
        if (ready) comm_share_send_bytes(comm, R + 1, TAG_OPEN, out.v, words_out * (int64_t)sizeof(cint), err);
    }
    if (!ok && err->status == CANOPY_SUCCESS)
        canopy_err_set(err, CANOPY_ERR_NOMEM, "symbolic factorization: a rank before this one failed");
    canopy_free(out.v);
    out = (cvec){0};
    if (comm_agree(comm, err) < 0) goto out;
    /* the bloks to rank 0 */
    int64_t nw = nk + 2 * b.bfrow.len;
    words = canopy_alloc((size_t)nw + 1, sizeof(int64_t), "bloks", err);
    if (words) {
        int64_t q = 0, t = 0;
        for (cint x = 0; x < nk; x++) {
            words[q++] = b.nblok[x];
            for (cint u = 0; u < b.nblok[x]; u++, t++) {
                words[q++] = b.bfrow.v[t];
                words[q++] = b.blrow.v[t];
            }
        }
    }
    wcount = canopy_calloc(2 * (size_t)P + 1, sizeof(int64_t), "bloks", err);
    if (comm_agree(comm, err) < 0) goto out;
    wdispl = wcount + P;
    MPI_Gather(&nw, 1, MPI_INT64_T, wcount, 1, MPI_INT64_T, 0, comm);
    int64_t *all = NULL;
    if (R == 0) {
        int64_t tw = 0;
        for (int r = 0; r < P; r++) {
            wdispl[r] = tw;
            tw += wcount[r];
        }
        all = canopy_alloc((size_t)tw + 1, sizeof(int64_t), "bloks", err);
    }
    if (comm_agree(comm, err) == CANOPY_SUCCESS &&
        comm_share_gather(comm, words, nw, all, wcount, wdispl, err) == CANOPY_SUCCESS && R == 0)
        assemble(C, all, S, err);
    canopy_free(all);
out:
    canopy_free(col2cblk);
    canopy_free(cnt);
    canopy_free(range);
    canopy_free(sc);
    canopy_free(spair);
    canopy_free(rpair);
    canopy_free(mark);
    canopy_free(acc);
    canopy_free(tmp);
    canopy_free(words);
    canopy_free(wcount);
    canopy_free(out.v);
    canopy_free(b.aptr);
    canopy_free(b.arow);
    canopy_free(b.open);
    canopy_free(b.rows.v);
    canopy_free(b.sptr);
    canopy_free(b.parent);
    canopy_free(b.bfrow.v);
    canopy_free(b.blrow.v);
    canopy_free(b.nblok);
    return comm_agree(comm, err);
}

canopy_status symbolic_analyze_dist(MPI_Comm comm, const symbolic_slice *G, const cint *perm,
                                    const symbolic_opts *opts, symbolic *S, unsigned char **cut, canopy_err *err)
{
    memset(S, 0, sizeof *S);
    if (cut) *cut = NULL;
    cint n = G->n;
    size_t nn = (size_t)n + 1;
    symbolic_columns C = {0};
    cint *ip = NULL, *parent = NULL, *post = NULL, *cc = NULL;
    if (n < 1) {
        canopy_err_set(err, CANOPY_ERR_ARGUMENT, "symbolic_analyze: matrix order %" CINT_FMT " < 1", n);
    } else {
        ip = canopy_alloc(nn, sizeof(cint), "analysis", err);
        parent = canopy_alloc(nn, sizeof(cint), "analysis", err);
        post = canopy_alloc(nn, sizeof(cint), "analysis", err);
        cc = canopy_alloc(nn, sizeof(cint), "analysis", err);
        if (!ip || !parent || !post || !cc) nomem(err);
        else symbolic_check_args(n, perm, opts, ip, err);
    }
    if (comm_agree(comm, err) < 0) goto out;
    if (symbolic_etree_dist(comm, G, ip, parent, err) < 0) goto out;
    symbolic_postorder(n, parent, post, err);
    if (comm_agree(comm, err) < 0) goto out;
    if (symbolic_colcounts_dist(comm, G, ip, parent, post, cc, err) < 0) goto out;
    canopy_free(ip);
    ip = NULL;
    /* every rank settles the same columns from the same tree and counts */
    symbolic_columns_plan(n, perm, parent, post, cc, opts, cut != NULL, &C, err);
    canopy_free(parent);
    canopy_free(post);
    canopy_free(cc);
    parent = post = cc = NULL;
    if (comm_agree(comm, err) < 0) goto out;
    if (symbolic_blocks_dist(comm, G, &C, S, err) == CANOPY_SUCCESS && S->cblk_fcol != NULL) {
        S->perm = C.perm;
        S->iperm = C.iperm;
        C.perm = C.iperm = NULL;
        if (cut) {
            *cut = C.cut;
            C.cut = NULL;
        }
    }
out:
    symbolic_columns_free(&C);
    canopy_free(ip);
    canopy_free(parent);
    canopy_free(post);
    canopy_free(cc);
    return comm_agree(comm, err);
}
