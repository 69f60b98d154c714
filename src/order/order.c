/*
 * Fill-reducing orderings: SCOTCH nested dissection, natural order, and user permutations.
 *
 * This file owns the call into SCOTCH and the translation of its conventions into ours
 * (perm[new] = old, iperm[old] = new). It does not look at the elimination tree or supernodes:
 * symbolic_analyze() postorders and amalgamates whatever ordering comes out of here.
 */
#include "order/order.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <scotch.h>

bool order_invert(cint n, const cint *perm, cint *iperm, cint *bad)
{
    if (bad) *bad = -1;
    if (n < 0 || (n > 0 && (perm == NULL || iperm == NULL))) return false;
    for (cint k = 0; k < n; k++) iperm[k] = -1;
    for (cint k = 0; k < n; k++) {
        cint v = perm[k];
        if (v < 0 || v >= n || iperm[v] >= 0) {
            if (bad) *bad = k;
            return false;
        }
        iperm[v] = k;
    }
    return true;
}

/*
 * Our SCOTCH strategy (grammar: SCOTCH user guide, "ordering strategy strings").
 *  - c{...}: graph compression first (merges indistinguishable vertices, common for
 *    multi-dof PDE matrices) when it removes at least 30% of the vertices (rat=0.7);
 *    the same nested dissection runs on the compressed or uncompressed graph.
 *  - n{...}: nested dissection; the separator strategy is applied while the part has more
 *    than ORDER_LEAF_SIZE vertices, after which the part becomes a leaf (500 was tried: 15% less
 *    ordering time on G3_circuit but the 50^3 factorization went from 2.1 s to 2.4 s). Separators are
 *    numbered last by construction of n; inside a separator the order does not change the
 *    fill of what becomes a dense block, so the cheap simple ordering s is used (ose).
 *  - separators: multilevel m (heavy-edge matching down to 200 vertices, rat=0.7), greedy
 *    graph growing h (10 tries) then FM f on the coarsest graph, FM at every level on the way
 *    up (asc), 20% imbalance allowed: with 10%, Andrews (a graph Laplacian) got 5.2x the flops
 *    of METIS (2.7e11 vs 4.8e10; with 20%: 5.2e10), and the 50^3 Laplacian 11% more flops
 *    (7.06e10 vs 6.29e10); G3_circuit moved by 4%. Coarsening to 200 rather than 100 vertices gave 4-7%
 *    fewer flops on 50^3/60^3 Laplacians; a '|' selection of two separator runs cost 2x time
 *    and did not help (best-of per level is not best overall).
 *  - leaves: halo approximate minimum fill ('f' in SCOTCH's halo ordering methods). It sees the
 *    separator vertices around the leaf (the halo), so the leaf order accounts for the fill it
 *    causes in the separators. Halo approximate minimum degree ('d') gives the same flops on the
 *    3D Laplacian (50^3: 6.9595e10 vs 6.9600e10) but SCOTCH 7.0.3's 'd' corrupts its heap on any
 *    connected component that is a clique (a dense 3x3 block returned a non-permutation; dense
 *    20x20 wrote out of bounds under valgrind), so 'f' it is (tests/test_order: cliques).
 * The cmin/cmax/frat parameters only shape SCOTCH's own column-block tree, which we do not
 * use (supernodes are detected and amalgamated in amalgamate.c).
 */
#define ORDER_SCOTCH_THREADS_MAX 256 /* SCOTCH's pool: more would only cost memory */

#define ORDER_SEPA(bal) "m{vert=200,rat=0.7,low=h{pass=10}f{bal=" bal "},asc=f{bal=" bal "}}"
#define ORDER_ND                                                                            \
    "n{sep=/(vert>%d)?" ORDER_SEPA("0.2") ";,"                                              \
    "ole=%c{cmin=0,cmax=1000000,frat=0.0},ose=s}"

int order_strategy_string(char *buf, size_t len, int leaf, char method)
{
    return snprintf(buf, len, "c{rat=0.7,cpr=" ORDER_ND ",unc=" ORDER_ND "}", leaf, method, leaf, method);
}

/* Not in order.h: an internal entry point so the tests can compare leaf sizes and methods. */
canopy_status order_scotch_with(const canopy_csc *G, int leaf, char method, int threads, cint *perm,
                                cint *iperm, canopy_err *err);

canopy_status order_scotch_with(const canopy_csc *G, int leaf, char method, int threads, cint *perm,
                                cint *iperm, canopy_err *err)
{
    cint n = G->n;
    if (threads < 1) threads = 1;
    if (threads > ORDER_SCOTCH_THREADS_MAX) threads = ORDER_SCOTCH_THREADS_MAX;
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
    /* expert override, for experiments with SCOTCH's strategy grammar (documented in README) */
    const char *user_strat = getenv("CANOPY_SCOTCH_STRATEGY");
    int sl = user_strat && *user_strat ? snprintf(strat_text, sizeof strat_text, "%s", user_strat)
                                       : order_strategy_string(strat_text, sizeof strat_text, leaf, method);
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
        /* Determinism: SCOTCH 7 runs its multilevel phases on a thread pool whose results
         * depend on thread timing (runs of the 50^3 Laplacian differed by 25% in flops), and its
         * random generator is global state. So order inside a private context with the
         * deterministic option, a generator of its own reset to a fixed seed, and the thread
         * count we are given (the rank's workers, or options.ordering_threads): the result then
         * depends on neither timing nor machine, only on that count (1 thread gave 6.29e10 flops
         * on 50^3, 2 gave 6.13e10). Two threads halve the ordering time of G3_circuit
         * (6.4 s -> 3.4 s) on a 2-core machine. */
        SCOTCH_Context ctx;
        SCOTCH_Graph cgraph;
        bool ctx_ok = SCOTCH_contextInit(&ctx) == 0;
        bool cg_ok = false;
        if (ctx_ok) {
            SCOTCH_randomSeed(12345);
            SCOTCH_randomReset();
            ctx_ok = SCOTCH_contextOptionSetNum(&ctx, SCOTCH_OPTIONNUMDETERMINISTIC, 1) == 0 &&
                     SCOTCH_contextOptionSetNum(&ctx, SCOTCH_OPTIONNUMRANDOMFIXEDSEED, 1) == 0 &&
                     SCOTCH_contextRandomClone(&ctx) == 0;
            if (ctx_ok) {
                SCOTCH_contextRandomSeed(&ctx, 12345);
                SCOTCH_contextRandomReset(&ctx);
                ctx_ok = SCOTCH_contextThreadSpawn(&ctx, threads, NULL) == 0 && SCOTCH_graphInit(&cgraph) == 0;
            }
            if (ctx_ok) {
                cg_ok = true;
                ctx_ok = SCOTCH_contextBindGraph(&ctx, &graph, &cgraph) == 0;
            }
        }
        if (!ctx_ok)
            st = canopy_err_set(err, CANOPY_ERR_ORDERING, "cannot set up a SCOTCH context (out of memory or threads)");
        else if (SCOTCH_graphOrder(&cgraph, &strat, sperm, speri, NULL, NULL, NULL) != 0)
            st = canopy_err_set(err, CANOPY_ERR_ORDERING, "SCOTCH_graphOrder failed on a graph of %" CINT_FMT " vertices and %" PRId64 " edges (see SCOTCH's message on stderr)", n, nnz);
        if (cg_ok) SCOTCH_graphExit(&cgraph); /* before its context */
        SCOTCH_contextExit(&ctx);
    }
    SCOTCH_stratExit(&strat);
    SCOTCH_graphExit(&graph);
    if (st == CANOPY_SUCCESS && copied)
        for (cint k = 0; k < n; k++) {
            perm[k] = (cint)speri[k];
            iperm[k] = (cint)sperm[k];
        }
    /* Trust, but verify: a broken result here would silently corrupt every later phase. */
    if (st == CANOPY_SUCCESS && !order_invert(n, perm, iperm, NULL))
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

canopy_status order_compute(const canopy_csc *G, canopy_ordering method, const cint *user_perm, int threads,
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
        cint bad;
        if (!order_invert(n, user_perm, iperm, &bad)) {
            cint val = bad >= 0 ? user_perm[bad] : 0;
            return canopy_err_set(err, CANOPY_ERR_ARGUMENT,
                                  "user permutation is not a permutation of 0..%" CINT_FMT ": entry %" CINT_FMT " = %" CINT_FMT
                                  " is %s", n - 1, bad, val, (val < 0 || val >= n) ? "out of range" : "repeated");
        }
        memcpy(perm, user_perm, (size_t)n * sizeof *perm);
        return CANOPY_SUCCESS;
    case CANOPY_ORDER_SCOTCH:
        /* Nothing to dissect: skip SCOTCH (it also dislikes empty graphs). */
        if (n <= 1 || G->colptr[n] == 0) {
            for (cint k = 0; k < n; k++) perm[k] = iperm[k] = k;
            return CANOPY_SUCCESS;
        }
        return order_scotch_with(G, ORDER_LEAF_SIZE, ORDER_LEAF_METHOD, threads, perm, iperm, err);
    default:
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "unknown ordering method %d", (int)method);
    }
}
