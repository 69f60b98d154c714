/*
 * The symbolic analysis driver (symbolic_analyze) and the shaping of the column blocks:
 * relaxed amalgamation of fundamental supernodes and splitting of wide ones.
 *
 * Pipeline: G(perm,perm) -> etree -> postorder -> column counts -> fundamental supernodes
 * -> relaxed amalgamation on the supernodal tree -> re-postorder so that every merged group is a
 * contiguous column range -> splitting -> symbolic_build_blocks (blocks.c) on the final numbering.
 *
 * All reorderings here are topological orders of the elimination tree, so the filled pattern of
 * L is the one of the fill-reducing ordering; amalgamation only adds explicit zeros.
 */
#include "symbolic/symbolic.h"
#include "order/order.h"
#include "matrix/matrix.h"

#include <stdlib.h>
#include <string.h>

/* Merged width below which nodes are merged whatever the fill: tiny supernodes cost far more in
 * per-block overhead and poor BLAS efficiency than the few zeros they add. */
#define AMALG_SMALL_WIDTH 16
/* A looser zero allowance for nodes that stay narrow. Tuned on the 50^3 7-point Laplacian:
 * 11k cblks of average width 11 instead of 79k of width 1.6, for +11% nnz(L) and +1.4% flops. */
#define AMALG_MEDIUM_WIDTH 32
#define AMALG_MEDIUM_ZEROS 0.2

/* A node of the supernodal tree during amalgamation (sizes of its current merged group). */
typedef struct amalg_node {
    int64_t w;     /* columns of the group */
    int64_t m;     /* rows below the group (the top supernode's off-diagonal rows) */
    double zeros;  /* explicit zeros held by the group's dense trapezoid */
    double ftrue;  /* LL^T flops of the group's columns without the explicit zeros */
} amalg_node;

static double trapezoid(int64_t w, int64_t m) { return (double)w * (double)(w + 1) / 2.0 + (double)w * (double)m; }

/* LL^T flops of a dense trapezoid as symbolic_build_blocks counts them: sum of count^2 over its
 * columns, counts m+w down to m+1. */
static double sum_squares(double x) { return x * (x + 1) * (2 * x + 1) / 6.0; }
static double trapezoid_flops(int64_t w, int64_t m) { return sum_squares((double)(m + w)) - sum_squares((double)m); }

/* Ordering of candidate children by cost, ties by index (deterministic). qsort has no context
 * argument in C11; the analysis is never run concurrently in one process, but keep it
 * thread-local anyway. */
static _Thread_local const double *sort_cost;
static int cmp_by_cost(const void *a, const void *b)
{
    cint x = *(const cint *)a, y = *(const cint *)b;
    if (sort_cost[x] != sort_cost[y]) return sort_cost[x] < sort_cost[y] ? -1 : 1;
    return (x > y) - (x < y);
}

/*
 * Decide the merges. Supernodes are visited in postorder (children first), so when node p is
 * visited each child is the top of a final group; p then absorbs the children whose merge keeps
 * the share of explicit zeros of the merged trapezoid under the allowance, cheapest first.
 * Merging child c (w_c, m_c) into p (w_p, m_p) gives a group of w_c + w_p columns whose rows
 * below are p's: c's rows below are p's columns plus rows below p (etree containment).
 * merged_into[c] = p for a merged child, -1 otherwise.
 */
static canopy_status amalg_decide(cint ns, const cint *sfcol, const cint *sparent, const cint *colcount,
                                  double fill, cint *merged_into, canopy_err *err)
{
    amalg_node *nd = canopy_alloc((size_t)ns + 1, sizeof(amalg_node), "amalgamation", err);
    cint *head = canopy_alloc((size_t)ns + 1, sizeof(cint), "amalgamation", err);
    cint *next = canopy_alloc((size_t)ns + 1, sizeof(cint), "amalgamation", err);
    cint *cand = canopy_alloc((size_t)ns + 1, sizeof(cint), "amalgamation", err);
    double *cost = canopy_alloc((size_t)ns + 1, sizeof(double), "amalgamation", err);
    if (!nd || !head || !next || !cand || !cost) {
        canopy_free(nd);
        canopy_free(head);
        canopy_free(next);
        canopy_free(cand);
        canopy_free(cost);
        return err && err->status ? err->status : CANOPY_ERR_NOMEM;
    }
    for (cint s = 0; s < ns; s++) {
        int64_t w = sfcol[s + 1] - sfcol[s];
        nd[s].w = w;
        nd[s].m = (int64_t)colcount[sfcol[s]] - w;
        nd[s].zeros = 0;
        nd[s].ftrue = trapezoid_flops(w, nd[s].m);
        head[s] = -1;
        merged_into[s] = -1;
    }
    for (cint s = ns - 1; s >= 0; s--)
        if (sparent[s] >= 0) {
            next[s] = head[sparent[s]];
            head[sparent[s]] = s;
        }
    for (cint p = 0; p < ns; p++) {
        if (head[p] < 0) continue;
        /* cheapest children first: fewest zeros added per column brought in */
        cint nc = 0;
        for (cint c = head[p]; c >= 0; c = next[c]) {
            double e_c = trapezoid(nd[c].w, nd[c].m);
            double e_cp = trapezoid(nd[c].w, nd[p].w + nd[p].m);
            cost[c] = (e_cp - e_c) / (double)nd[c].w; /* zeros c gains under p's rows */
            cand[nc++] = c;
        }
        /* qsort, not an insertion sort: a star graph gives one node n-1 children */
        if (nc > 1) {
            sort_cost = cost;
            qsort(cand, (size_t)nc, sizeof(cint), cmp_by_cost);
        }
        for (cint a = 0; a < nc; a++) {
            cint c = cand[a];
            int64_t w = nd[c].w + nd[p].w, m = nd[p].m;
            double e = trapezoid(w, m);
            double zeros = nd[c].zeros + nd[p].zeros + e - trapezoid(nd[c].w, nd[c].m) - trapezoid(nd[p].w, nd[p].m);
            double f = trapezoid_flops(w, m);
            double ftrue = nd[c].ftrue + nd[p].ftrue;
            /* The zero allowance alone let 50^3 flops grow 15% (zeros pile up under the wide
             * top separators, where they cost most), so extra flops are bounded too. */
            bool ok = w <= AMALG_SMALL_WIDTH || (w <= AMALG_MEDIUM_WIDTH && zeros <= AMALG_MEDIUM_ZEROS * e) ||
                      (zeros <= fill * e && f - ftrue <= 0.5 * fill * f);
            if (!ok) continue;
            merged_into[c] = p;
            nd[p].w = w;
            nd[p].zeros = zeros;
            nd[p].ftrue = ftrue;
        }
    }
    canopy_free(nd);
    canopy_free(head);
    canopy_free(next);
    canopy_free(cand);
    canopy_free(cost);
    return CANOPY_SUCCESS;
}

/*
 * New column order making each merged group contiguous: groups in postorder of the group tree
 * (children by increasing top supernode), inside a group its supernodes by increasing index.
 * This is a topological order of the etree: a column's parent is in its own group (later
 * index) or in the parent group (visited after). Outputs neworder[k] = postordered column at
 * final position k, and the group column partition gfcol[0..ngroups].
 */
static canopy_status amalg_reorder(cint n, cint ns, const cint *sfcol, const cint *sparent, const cint *merged_into,
                                   cint *neworder, cint *ngroups, cint *gfcol, canopy_err *err)
{
    cint *group = canopy_alloc((size_t)ns + 1, sizeof(cint), "regrouping", err);
    cint *gid = canopy_alloc((size_t)ns + 1, sizeof(cint), "regrouping", err);
    cint *top = canopy_alloc((size_t)ns + 1, sizeof(cint), "regrouping", err);
    cint *gpar = canopy_alloc((size_t)ns + 1, sizeof(cint), "regrouping", err);
    cint *gpost = canopy_alloc((size_t)ns + 1, sizeof(cint), "regrouping", err);
    cint *mstart = canopy_calloc((size_t)ns + 2, sizeof(cint), "regrouping", err);
    cint *members = canopy_alloc((size_t)ns + 1, sizeof(cint), "regrouping", err);
    canopy_status st = CANOPY_SUCCESS;
    if (!group || !gid || !top || !gpar || !gpost || !mstart || !members) {
        st = err && err->status ? err->status : CANOPY_ERR_NOMEM;
        goto out;
    }
    /* group top of each supernode: parents (higher index) are resolved first */
    for (cint s = ns - 1; s >= 0; s--) group[s] = merged_into[s] >= 0 ? group[merged_into[s]] : s;
    cint ng = 0;
    for (cint s = 0; s < ns; s++)
        if (group[s] == s) {
            gid[s] = ng;
            top[ng++] = s;
        }
    for (cint g = 0; g < ng; g++) {
        cint sp = sparent[top[g]];
        gpar[g] = sp >= 0 ? gid[group[sp]] : -1;
    }
    st = symbolic_postorder(ng, gpar, gpost, err);
    if (st != CANOPY_SUCCESS) goto out;
    /* members of each group, increasing (counting sort, stable) */
    for (cint s = 0; s < ns; s++) mstart[gid[group[s]] + 1]++;
    for (cint g = 0; g < ng; g++) mstart[g + 1] += mstart[g];
    for (cint s = 0; s < ns; s++) members[mstart[gid[group[s]]]++] = s;
    for (cint g = ng; g > 0; g--) mstart[g] = mstart[g - 1];
    mstart[0] = 0;
    cint k = 0;
    for (cint q = 0; q < ng; q++) {
        cint g = gpost[q];
        gfcol[q] = k;
        for (cint t = mstart[g]; t < mstart[g + 1]; t++) {
            cint s = members[t];
            for (cint j = sfcol[s]; j < sfcol[s + 1]; j++) neworder[k++] = j;
        }
    }
    gfcol[ng] = k;
    *ngroups = ng;
    if (k != n) st = canopy_err_set(err, CANOPY_ERR_INTERNAL, "amalgamation lost columns (%" CINT_FMT " of %" CINT_FMT ")", k, n);
out:
    canopy_free(group);
    canopy_free(gid);
    canopy_free(top);
    canopy_free(gpar);
    canopy_free(gpost);
    canopy_free(mstart);
    canopy_free(members);
    return st;
}

/* Checks shared by the one-rank and the distributed analysis. */
canopy_status symbolic_check_args(cint n, const cint *perm, const symbolic_opts *opts, cint *iperm, canopy_err *err)
{
    if (perm == NULL || opts == NULL || iperm == NULL)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "symbolic_analyze: NULL argument");
    if (n < 1) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "symbolic_analyze: matrix order %" CINT_FMT " < 1", n);
    if (opts->split_size < 0)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "symbolic_analyze: split size %" CINT_FMT " < 0", opts->split_size);
    /* check the ordering while inverting it */
    cint bad;
    if (!order_invert(n, perm, iperm, &bad)) {
        cint val = bad >= 0 ? perm[bad] : 0;
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "symbolic_analyze: the ordering is not a permutation of 0..%" CINT_FMT
                              ": entry %" CINT_FMT " = %" CINT_FMT " is %s", n - 1, bad, val,
                              val < 0 || val >= n ? "out of range" : "repeated");
    }
    return CANOPY_SUCCESS;
}

void symbolic_columns_free(symbolic_columns *C)
{
    canopy_free(C->part_fcol);
    canopy_free(C->perm);
    canopy_free(C->iperm);
    canopy_free(C->cut);
    memset(C, 0, sizeof *C);
}

canopy_status symbolic_columns_plan(cint n, const cint *perm, const cint *parent, const cint *post, const cint *cc1,
                                    const symbolic_opts *opts, bool want_cut, symbolic_columns *C, canopy_err *err)
{
    memset(C, 0, sizeof *C);
    C->n = n;
    canopy_status st = CANOPY_SUCCESS;
    size_t nn = (size_t)n + 1;
    cint *ipost = canopy_alloc(nn, sizeof(cint), "analysis", err);
    cint *pparent = canopy_alloc(nn, sizeof(cint), "analysis", err);
    cint *pcc = canopy_alloc(nn, sizeof(cint), "analysis", err);
    cint *sfcol = canopy_alloc(nn + 1, sizeof(cint), "analysis", err);
    cint *sparent = canopy_alloc(nn, sizeof(cint), "analysis", err);
    cint *col2s = canopy_alloc(nn, sizeof(cint), "analysis", err);
    cint *merged = canopy_alloc(nn, sizeof(cint), "analysis", err);
    cint *order = canopy_alloc(nn, sizeof(cint), "analysis", err);
    cint *gfcol = canopy_alloc(nn + 1, sizeof(cint), "analysis", err);
    C->part_fcol = canopy_alloc(nn + 1, sizeof(cint), "analysis", err);
    C->perm = canopy_alloc(nn, sizeof(cint), "ordering", err);
    C->iperm = canopy_alloc(nn, sizeof(cint), "ordering", err);
    if (!ipost || !pparent || !pcc || !sfcol || !sparent || !col2s || !merged || !order || !gfcol || !C->part_fcol ||
        !C->perm || !C->iperm) {
        st = err && err->status ? err->status : CANOPY_ERR_NOMEM;
        goto out;
    }

    /* the tree and counts in postorder numbering */
    for (cint k = 0; k < n; k++) ipost[post[k]] = k;
    for (cint k = 0; k < n; k++) {
        cint p = parent[post[k]];
        pparent[k] = p >= 0 ? ipost[p] : -1;
        pcc[k] = cc1[post[k]];
    }

    cint ns = 0;
    if ((st = symbolic_supernodes(n, pparent, pcc, &ns, sfcol, err)) != CANOPY_SUCCESS) goto out;
    for (cint s = 0; s < ns; s++)
        for (cint j = sfcol[s]; j < sfcol[s + 1]; j++) col2s[j] = s;
    for (cint s = 0; s < ns; s++) {
        cint p = pparent[sfcol[s + 1] - 1];
        sparent[s] = p >= 0 ? col2s[p] : -1;
    }

    cint ng = ns;
    if (opts->amalgamation) {
        double fill = opts->amalgamation_fill >= 0 ? opts->amalgamation_fill : 0.12;
        if ((st = amalg_decide(ns, sfcol, sparent, pcc, fill, merged, err)) != CANOPY_SUCCESS) goto out;
        if ((st = amalg_reorder(n, ns, sfcol, sparent, merged, order, &ng, gfcol, err)) != CANOPY_SUCCESS) goto out;
    } else {
        for (cint k = 0; k < n; k++) order[k] = k;
        memcpy(gfcol, sfcol, ((size_t)ns + 1) * sizeof(cint));
    }
    C->ngroup = ng;
    /* Splitting buys concurrency where several threads share a block, and costs BLAS efficiency
     * everywhere: with split_share > 0 only the groups whose subtree holds at least that share of
     * the factorization's flops (the top of the tree, mapped to several threads) are cut. */
    unsigned char *cut = NULL;
    if (want_cut && opts->split_share <= 0) {
        cut = canopy_alloc((size_t)ng + 1, 1, "analysis", err);
        if (cut == NULL) {
            st = err && err->status ? err->status : CANOPY_ERR_NOMEM;
            goto out;
        }
        memset(cut, 1, (size_t)ng + 1);
    } else if ((opts->split_size > 0 || want_cut) && opts->split_share > 0) {
        double *acc = canopy_calloc(nn, sizeof(double), "analysis", err);
        cint *iorder = canopy_alloc(nn, sizeof(cint), "analysis", err);
        cut = canopy_calloc((size_t)ng + 1, 1, "analysis", err);
        if (!acc || !iorder || !cut) {
            canopy_free(acc);
            canopy_free(iorder);
            canopy_free(cut);
            st = err && err->status ? err->status : CANOPY_ERR_NOMEM;
            goto out;
        }
        for (cint k = 0; k < n; k++) iorder[order[k]] = k;
        double total = 0;
        /* final numbering is a topological order: children before parents */
        for (cint k = 0; k < n; k++) {
            double c = (double)pcc[order[k]];
            acc[k] += c * c;
            cint p = pparent[order[k]];
            if (p >= 0) acc[iorder[p]] += acc[k];
            else total += acc[k];
        }
        for (cint g = 0; g < ng; g++) cut[g] = acc[gfcol[g + 1] - 1] >= opts->split_share * total;
        canopy_free(acc);
        canopy_free(iorder);
    }
    C->npart = symbolic_split_partition(ng, gfcol, want_cut ? 0 : opts->split_size, cut, C->part_fcol);
    if (want_cut) C->cut = cut;
    else canopy_free(cut);

    /* final ordering: fill-reducing, then postorder, then the grouping */
    for (cint k = 0; k < n; k++) {
        C->perm[k] = perm[post[order[k]]];
        C->iperm[C->perm[k]] = k;
    }

out:
    canopy_free(ipost);
    canopy_free(pparent);
    canopy_free(pcc);
    canopy_free(sfcol);
    canopy_free(sparent);
    canopy_free(col2s);
    canopy_free(merged);
    canopy_free(order);
    canopy_free(gfcol);
    if (st != CANOPY_SUCCESS) symbolic_columns_free(C);
    return st;
}

/* The analysis; with @p cut_out, the blocks stay whole and *cut_out[k] says which ones the split
 * would cut (the caller splits with symbolic_resplit and frees the flags). */
static canopy_status analyze(const canopy_csc *G, const cint *perm, const symbolic_opts *opts, symbolic *S,
                             unsigned char **cut_out, canopy_err *err)
{
    if (G == NULL || S == NULL) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "symbolic_analyze: NULL argument");
    memset(S, 0, sizeof *S);
    cint n = G->n;
    if (n < 1) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "symbolic_analyze: matrix order %" CINT_FMT " < 1", n);
    canopy_status st = CANOPY_SUCCESS;
    canopy_csc G1 = {0}, G3 = {0};
    symbolic_columns C = {0};
    size_t nn = (size_t)n + 1;
    cint *iperm1 = canopy_alloc(nn, sizeof(cint), "analysis", err);
    cint *parent = canopy_alloc(nn, sizeof(cint), "analysis", err);
    cint *post = canopy_alloc(nn, sizeof(cint), "analysis", err);
    cint *cc1 = canopy_alloc(nn, sizeof(cint), "analysis", err);
    if (!iperm1 || !parent || !post || !cc1) {
        st = err && err->status ? err->status : CANOPY_ERR_NOMEM;
        goto out;
    }
    if ((st = symbolic_check_args(n, perm, opts, iperm1, err)) != CANOPY_SUCCESS) goto out;

    /* etree, postorder and column counts in the fill-reducing numbering */
    if ((st = symbolic_permute_graph(G, perm, iperm1, &G1, err)) != CANOPY_SUCCESS) goto out;
    if ((st = symbolic_etree(&G1, parent, err)) != CANOPY_SUCCESS) goto out;
    if ((st = symbolic_postorder(n, parent, post, err)) != CANOPY_SUCCESS) goto out;
    if ((st = symbolic_colcounts(&G1, parent, post, cc1, err)) != CANOPY_SUCCESS) goto out;
    matrix_free(&G1);
    canopy_free(iperm1);
    iperm1 = NULL;

    if ((st = symbolic_columns_plan(n, perm, parent, post, cc1, opts, cut_out != NULL, &C, err)) != CANOPY_SUCCESS)
        goto out;
    if ((st = symbolic_permute_graph(G, C.perm, C.iperm, &G3, err)) != CANOPY_SUCCESS) goto out;
    S->perm = C.perm;
    S->iperm = C.iperm;
    C.perm = C.iperm = NULL;
    st = symbolic_build_blocks(&G3, C.npart, C.part_fcol, S, err);
    if (st != CANOPY_SUCCESS) {
        canopy_free(S->perm);
        canopy_free(S->iperm);
        S->perm = S->iperm = NULL;
    } else if (cut_out != NULL) {
        *cut_out = C.cut;
        C.cut = NULL;
    }

out:
    matrix_free(&G1);
    matrix_free(&G3);
    symbolic_columns_free(&C);
    canopy_free(iperm1);
    canopy_free(parent);
    canopy_free(post);
    canopy_free(cc1);
    return st;
}

canopy_status symbolic_analyze(const canopy_csc *G, const cint *perm, const symbolic_opts *opts,
                               symbolic *S, canopy_err *err)
{
    return analyze(G, perm, opts, S, NULL, err);
}

canopy_status symbolic_analyze_unsplit(const canopy_csc *G, const cint *perm, const symbolic_opts *opts,
                                       symbolic *S, unsigned char **cut, canopy_err *err)
{
    if (cut == NULL) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "symbolic_analyze_unsplit: NULL cut");
    *cut = NULL;
    canopy_status st = analyze(G, perm, opts, S, cut, err);
    if (st != CANOPY_SUCCESS) {
        canopy_free(*cut);
        *cut = NULL;
    }
    return st;
}
