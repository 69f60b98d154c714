/*
 * Fill-reducing orderings: SCOTCH nested dissection, natural order, and user permutations.
 *
 * This file owns the call into SCOTCH and the translation of its conventions into ours
 * (perm[new] = old, iperm[old] = new). It does not look at the elimination tree or supernodes:
 * symbolic_analyze() postorders and amalgamates whatever ordering comes out of here.
 */
#include "order.h"

#include <stdio.h>
#include <string.h>
#include <scotch.h>

bool order_is_permutation(cint n, const cint *perm)
{
    if (n < 0 || (n > 0 && perm == NULL)) return false;
    /* A bit vector keeps the check linear and small even for n = 1e8. */
    size_t words = ((size_t)n + 63) / 64;
    uint64_t *seen = canopy_calloc(words + 1, sizeof(uint64_t), "permutation check", NULL);
    if (seen == NULL) return false;
    bool ok = true;
    for (cint k = 0; k < n && ok; k++) {
        cint v = perm[k];
        if (v < 0 || v >= n) { ok = false; break; }
        uint64_t bit = (uint64_t)1 << ((size_t)v % 64);
        if (seen[(size_t)v / 64] & bit) ok = false;
        seen[(size_t)v / 64] |= bit;
    }
    canopy_free(seen);
    return ok;
}

/*
 * Our SCOTCH strategy (grammar: SCOTCH user guide, "ordering strategy strings").
 *  - c{...}: graph compression first (merges indistinguishable vertices, common for
 *    multi-dof PDE matrices) when it removes at least 30% of the vertices (rat=0.7);
 *    the same nested dissection runs on the compressed or uncompressed graph.
 *  - n{...}: nested dissection; the separator strategy is applied while the part has more
 *    than LEAF vertices, after which the part becomes a leaf. Separators are numbered last
 *    by construction of n; inside a separator the order does not change the fill of a dense
 *    block, so the cheap simple ordering s is used (ose).
 *  - separators: multilevel m (heavy-edge matching down to ~100 vertices, rat=0.7), greedy
 *    graph growing h on the coarsest graph then FM f, FM refinement at every level on the way
 *    up (asc). Two independent multilevel runs with different balance tolerances and the
 *    better separator kept (the '|' selection) buys a few percent of fill for ~1.5x time.
 *  - leaves: halo approximate minimum fill (f) or halo approximate minimum degree (d), which
 *    both see the already-numbered separator vertices around the leaf (the halo) so the leaf
 *    order accounts for the fill it causes in the separators.
 * %d are replaced by the leaf size and the leaf method letter.
 */
#define ORDER_LEAF_SIZE 120
#define ORDER_LEAF_METHOD 'f'

#define ORDER_SEPA(bal)                                                                     \
    "m{vert=100,rat=0.7,low=h{pass=10}f{bal=" bal ",move=200,pass=1000},"                   \
    "asc=f{bal=" bal ",move=200,pass=1000}}"
#define ORDER_ND                                                                            \
    "n{sep=/(vert>%d)?(" ORDER_SEPA("0.1") "|" ORDER_SEPA("0.05") ");,"                     \
    "ole=%c{cmin=0,cmax=1000000,frat=0.0},ose=s}"

static int order_strategy_string(char *buf, size_t len, int leaf, char method)
{
    return snprintf(buf, len, "c{rat=0.7,cpr=" ORDER_ND ",unc=" ORDER_ND "}", leaf, method, leaf, method);
}

/* Exposed to the tests through a weak-free internal hook: lets them compare leaf methods. */
canopy_status order_scotch_with(const canopy_csc *G, int leaf, char method, cint *perm, cint *iperm,
                                canopy_err *err);

canopy_status order_scotch_with(const canopy_csc *G, int leaf, char method, cint *perm, cint *iperm,
                                canopy_err *err)
{
    cint n = G->n;
    SCOTCH_Num *vert = NULL, *edge = NULL, *sperm = NULL, *speri = NULL;
    bool copied = sizeof(SCOTCH_Num) != sizeof(cint);
    int64_t nnz = (int64_t)G->colptr[n];
    canopy_status st = CANOPY_SUCCESS;

    if (copied) {
        /* Only with a SCOTCH whose integer size differs (configure normally refuses that). */
        vert = canopy_alloc((size_t)n + 1, sizeof(SCOTCH_Num), "SCOTCH graph", err);
        edge = canopy_alloc((size_t)nnz + 1, sizeof(SCOTCH_Num), "SCOTCH graph", err);
        sperm = canopy_alloc((size_t)n + 1, sizeof(SCOTCH_Num), "SCOTCH permutation", err);
        speri = canopy_alloc((size_t)n + 1, sizeof(SCOTCH_Num), "SCOTCH permutation", err);
        if (!vert || !edge || !sperm || !speri) {
            st = err && err->status ? err->status : CANOPY_ERR_NOMEM;
            goto out;
        }
        for (cint j = 0; j <= n; j++) vert[j] = (SCOTCH_Num)G->colptr[j];
        for (int64_t p = 0; p < nnz; p++) edge[p] = (SCOTCH_Num)G->rowind[p];
    } else {
        /* Same width: SCOTCH reads our arrays in place and writes our outputs directly. */
        vert = (SCOTCH_Num *)G->colptr;
        edge = (SCOTCH_Num *)G->rowind;
        sperm = (SCOTCH_Num *)iperm; /* SCOTCH permtab: old -> new = our iperm */
        speri = (SCOTCH_Num *)perm;  /* SCOTCH peritab: new -> old = our perm */
    }

    char strat_text[2048];
    int sl = order_strategy_string(strat_text, sizeof strat_text, leaf, method);
    if (sl < 0 || (size_t)sl >= sizeof strat_text) {
        st = canopy_err_set(err, CANOPY_ERR_INTERNAL, "SCOTCH strategy string too long");
        goto out;
    }

    SCOTCH_Graph graph;
    SCOTCH_Strat strat;
    if (SCOTCH_graphInit(&graph) != 0) {
        st = canopy_err_set(err, CANOPY_ERR_ORDERING, "SCOTCH_graphInit failed");
        goto out;
    }
    if (SCOTCH_graphBuild(&graph, 0, (SCOTCH_Num)n, vert, NULL, NULL, NULL, (SCOTCH_Num)nnz, edge, NULL) != 0) {
        SCOTCH_graphExit(&graph);
        st = canopy_err_set(err, CANOPY_ERR_ORDERING, "SCOTCH_graphBuild rejected the adjacency graph (n = %" CINT_FMT ", %" PRId64 " edges)", n, nnz);
        goto out;
    }
#ifdef CANOPY_DEBUG
    if (SCOTCH_graphCheck(&graph) != 0) {
        SCOTCH_graphExit(&graph);
        st = canopy_err_set(err, CANOPY_ERR_ORDERING, "SCOTCH_graphCheck: adjacency graph is inconsistent");
        goto out;
    }
#endif
    if (SCOTCH_stratInit(&strat) != 0) {
        SCOTCH_graphExit(&graph);
        st = canopy_err_set(err, CANOPY_ERR_ORDERING, "SCOTCH_stratInit failed");
        goto out;
    }
    if (SCOTCH_stratGraphOrder(&strat, strat_text) != 0) {
        st = canopy_err_set(err, CANOPY_ERR_ORDERING, "SCOTCH rejected the ordering strategy \"%.400s\"", strat_text);
    } else {
        /* SCOTCH's generator is global state: reset it so the same graph always gets the same
         * ordering, whatever was ordered before in this process. */
        SCOTCH_randomSeed(12345);
        SCOTCH_randomReset();
        if (SCOTCH_graphOrder(&graph, &strat, sperm, speri, NULL, NULL, NULL) != 0)
            st = canopy_err_set(err, CANOPY_ERR_ORDERING, "SCOTCH_graphOrder failed on a graph of %" CINT_FMT " vertices and %" PRId64 " edges (see SCOTCH's message on stderr)", n, nnz);
    }
    SCOTCH_stratExit(&strat);
    SCOTCH_graphExit(&graph);
    if (st == CANOPY_SUCCESS && copied)
        for (cint k = 0; k < n; k++) {
            perm[k] = (cint)speri[k];
            iperm[k] = (cint)sperm[k];
        }
    /* Trust, but verify: a broken result here would silently corrupt every later phase. */
    if (st == CANOPY_SUCCESS && !order_is_permutation(n, perm))
        st = canopy_err_set(err, CANOPY_ERR_ORDERING, "SCOTCH returned an ordering that is not a permutation");

out:
    if (copied) {
        canopy_free(vert);
        canopy_free(edge);
        canopy_free(sperm);
        canopy_free(speri);
    }
    return st;
}

canopy_status order_compute(const canopy_csc *G, canopy_ordering method, const cint *user_perm,
                            cint *perm, cint *iperm, canopy_err *err)
{
    if (G == NULL || perm == NULL || iperm == NULL || G->n < 0 || (G->n > 0 && (G->colptr == NULL)))
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "order_compute: NULL or invalid argument");
    cint n = G->n;
    switch (method) {
    case CANOPY_ORDER_NATURAL:
        for (cint k = 0; k < n; k++) perm[k] = iperm[k] = k;
        return CANOPY_SUCCESS;
    case CANOPY_ORDER_USER:
        if (user_perm == NULL)
            return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "user ordering requested but no permutation was given");
        if (!order_is_permutation(n, user_perm)) {
            /* name the first offending entry: out of range or repeated */
            cint bad = 0, val = 0;
            for (cint k = 0; k < n; k++)
                if (user_perm[k] < 0 || user_perm[k] >= n) { bad = k; val = user_perm[k]; goto report; }
            for (cint k = 0; k < n; k++) iperm[k] = -1;
            for (cint k = 0; k < n; k++) {
                if (iperm[user_perm[k]] >= 0) { bad = k; val = user_perm[k]; goto report; }
                iperm[user_perm[k]] = k;
            }
        report:
            return canopy_err_set(err, CANOPY_ERR_ARGUMENT,
                                  "user permutation is not a permutation of 0..%" CINT_FMT ": entry %" CINT_FMT " = %" CINT_FMT
                                  " is %s", n - 1, bad, val, (val < 0 || val >= n) ? "out of range" : "repeated");
        }
        for (cint k = 0; k < n; k++) {
            perm[k] = user_perm[k];
            iperm[user_perm[k]] = k;
        }
        return CANOPY_SUCCESS;
    case CANOPY_ORDER_SCOTCH:
        /* Nothing to dissect: skip SCOTCH (it also dislikes empty graphs). */
        if (n <= 1 || G->colptr[n] == 0) {
            for (cint k = 0; k < n; k++) perm[k] = iperm[k] = k;
            return CANOPY_SUCCESS;
        }
        return order_scotch_with(G, ORDER_LEAF_SIZE, ORDER_LEAF_METHOD, perm, iperm, err);
    default:
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "unknown ordering method %d", (int)method);
    }
}
