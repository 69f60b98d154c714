/*
 * The tree pieces of the symbolic factorization: elimination tree, postorder, column counts of L
 * and fundamental supernodes. Each works in (near-)linear time and O(n) workspace, with no dense
 * scratch and no recursion, so that million-column problems with deep trees are fine.
 *
 * Amalgamation, splitting and the driver are in amalgamate.c; the block structure in blocks.c.
 */
#include "symbolic/symbolic.h"

#include <string.h>

canopy_status symbolic_etree(const canopy_csc *G, cint *parent, canopy_err *err)
{
    /* Liu's algorithm: for each column j, climb from every i < j adjacent to j to the root of
     * i's current subtree and hang that root under j. The ancestor array short-cuts the climbs
     * (path compression: every node met is pointed straight at j). */
    cint n = G->n;
    cint *anc = canopy_alloc((size_t)n + 1, sizeof(cint), "etree ancestors", err);
    if (anc == NULL) return err && err->status ? err->status : CANOPY_ERR_NOMEM;
    for (cint j = 0; j < n; j++) {
        parent[j] = -1;
        anc[j] = -1;
        for (cint p = G->colptr[j]; p < G->colptr[j + 1]; p++) {
            cint i = G->rowind[p];
            while (i != -1 && i < j) {
                cint next = anc[i];
                anc[i] = j;
                if (next == -1) parent[i] = j;
                i = next;
            }
        }
    }
    canopy_free(anc);
    return CANOPY_SUCCESS;
}

canopy_status symbolic_postorder(cint n, const cint *parent, cint *post, canopy_err *err)
{
    cint *head = canopy_alloc((size_t)n + 1, sizeof(cint), "postorder", err);
    cint *next = canopy_alloc((size_t)n + 1, sizeof(cint), "postorder", err);
    cint *stack = canopy_alloc((size_t)n + 1, sizeof(cint), "postorder", err);
    if (!head || !next || !stack) {
        canopy_free(head);
        canopy_free(next);
        canopy_free(stack);
        return err && err->status ? err->status : CANOPY_ERR_NOMEM;
    }
    for (cint j = 0; j < n; j++) head[j] = -1;
    /* Children lists built from the highest index down, so each list is increasing. */
    for (cint j = n - 1; j >= 0; j--) {
        cint p = parent[j];
        if (p < 0) continue;
        next[j] = head[p];
        head[p] = j;
    }
    cint k = 0;
    for (cint r = 0; r < n; r++) {
        if (parent[r] >= 0) continue;
        /* Iterative depth-first search: head[] doubles as "next child to visit". */
        cint top = 0;
        stack[0] = r;
        while (top >= 0) {
            cint v = stack[top];
            cint c = head[v];
            if (c == -1) {
                top--;
                post[k++] = v;
            } else {
                head[v] = next[c];
                stack[++top] = c;
            }
        }
    }
    canopy_free(head);
    canopy_free(next);
    canopy_free(stack);
    if (k != n) return canopy_err_set(err, CANOPY_ERR_INTERNAL, "parent array is not a forest (%" CINT_FMT " of %" CINT_FMT " nodes reached)", k, n);
    return CANOPY_SUCCESS;
}

void symbolic_colcount_entry(cint i, cint j, const cint *first, cint *maxfirst, cint *prevleaf, cint *anc,
                             cint *delta)
{
    /* j is a leaf of row subtree i only if no descendant of j was already seen as a leaf of it */
    if (first[j] <= maxfirst[i]) return;
    maxfirst[i] = first[j];
    cint jprev = prevleaf[i];
    prevleaf[i] = j;
    delta[j]++;
    if (jprev != -1) {
        /* q = lca(jprev, j): the root of jprev's set */
        cint q = jprev;
        while (q != anc[q]) q = anc[q];
        for (cint s = jprev, sp; s != q; s = sp) {
            sp = anc[s];
            anc[s] = q;
        }
        delta[q]--;
    }
}

canopy_status symbolic_colcounts(const canopy_csc *G, const cint *parent, const cint *post,
                                 cint *colcount, canopy_err *err)
{
    /*
     * Gilbert-Ng-Peyton: the row structure of L(i,:) is the "row subtree" of the etree spanned by
     * the columns j < i with A(i,j) != 0. Walking the columns in postorder, j is a leaf of row
     * subtree i iff first[j] (first descendant of j in postorder) is past the previous leaf found
     * for row i. Each leaf adds 1 to the count of j, and the least common ancestor of two
     * consecutive leaves (found with disjoint sets and path compression) loses 1, as does each
     * column's parent for the overlap with the child's column. Summing these deltas up the tree
     * gives the column counts.
     */
    cint n = G->n;
    cint *w = canopy_alloc(4 * (size_t)n + 1, sizeof(cint), "column counts", err);
    if (w == NULL) return err && err->status ? err->status : CANOPY_ERR_NOMEM;
    cint *first = w, *maxfirst = w + n, *prevleaf = w + 2 * (size_t)n, *anc = w + 3 * (size_t)n;
    cint *delta = colcount;
    for (cint j = 0; j < n; j++) {
        first[j] = -1;
        maxfirst[j] = -1;
        prevleaf[j] = -1;
        anc[j] = j;
    }
    for (cint k = 0; k < n; k++) {
        cint j = post[k];
        delta[j] = first[j] == -1 ? 1 : 0; /* a leaf of the etree starts at 1 (its diagonal) */
        for (; j != -1 && first[j] == -1; j = parent[j]) first[j] = k;
    }
    for (cint k = 0; k < n; k++) {
        cint j = post[k];
        if (parent[j] != -1) delta[parent[j]]--;
        for (cint p = G->colptr[j]; p < G->colptr[j + 1]; p++)
            if (G->rowind[p] > j) symbolic_colcount_entry(G->rowind[p], j, first, maxfirst, prevleaf, anc, delta);
        if (parent[j] != -1) anc[j] = parent[j];
    }
    canopy_free(w);
    /* Accumulate children into parents; postorder visits every child before its parent. */
    for (cint k = 0; k < n; k++) {
        cint j = post[k];
        if (parent[j] != -1) colcount[parent[j]] += colcount[j];
    }
    return CANOPY_SUCCESS;
}

canopy_status symbolic_supernodes(cint n, const cint *parent, const cint *colcount, cint *nsuper,
                                  cint *super_fcol, canopy_err *err)
{
    cint *nchild = canopy_calloc((size_t)n + 1, sizeof(cint), "supernodes", err);
    if (nchild == NULL) return err && err->status ? err->status : CANOPY_ERR_NOMEM;
    for (cint j = 0; j < n; j++)
        if (parent[j] >= 0) nchild[parent[j]]++;
    /* Fundamental supernode: j+1 continues j's chain when it is j's parent, its only child, and
     * its column is j's minus the diagonal, so the two columns share one dense structure. */
    cint ns = 0;
    for (cint j = 0; j < n; j++) {
        bool joins = j > 0 && parent[j - 1] == j && nchild[j] == 1 && colcount[j - 1] == colcount[j] + 1;
        if (!joins) super_fcol[ns++] = j;
    }
    super_fcol[ns] = n;
    *nsuper = ns;
    canopy_free(nchild);
    return CANOPY_SUCCESS;
}
