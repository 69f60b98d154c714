/*
 * Symbolic factorization pieces (src/symbolic/symbolic.c) and the analysis driver (src/symbolic/amalgamate.c)
 * against a dense boolean elimination: etree, postorder, column counts, fundamental supernodes,
 * and the block structure produced by symbolic_analyze with and without amalgamation/splitting.
 */
#include "testutil.h"
#include "symbolic/symbolic.h"
#include "order/order.h"

/* Dense reference: M[j*n+i] = 1 iff L(i,j) != 0 (i > j) after symbolic elimination. */
static unsigned char *dense_structure(const canopy_csc *G)
{
    cint n = G->n;
    unsigned char *M = calloc((size_t)n * n + 1, 1);
    for (cint j = 0; j < n; j++)
        for (cint p = G->colptr[j]; p < G->colptr[j + 1]; p++) M[(size_t)j * n + G->rowind[p]] = 1;
    for (cint k = 0; k < n; k++)
        for (cint i = k + 1; i < n; i++) {
            if (!M[(size_t)k * n + i]) continue;
            for (cint j = k + 1; j < n; j++)
                if (M[(size_t)k * n + j]) M[(size_t)i * n + j] = M[(size_t)j * n + i] = 1;
        }
    return M;
}

static void brute_etree(const unsigned char *M, cint n, cint *parent)
{
    for (cint j = 0; j < n; j++) {
        parent[j] = -1;
        for (cint i = j + 1; i < n; i++)
            if (M[(size_t)j * n + i]) { parent[j] = i; break; }
    }
}

static void brute_counts(const unsigned char *M, cint n, cint *cc)
{
    for (cint j = 0; j < n; j++) {
        cc[j] = 1;
        for (cint i = j + 1; i < n; i++) cc[j] += M[(size_t)j * n + i];
    }
}

static void random_graph(cint n, int per, uint64_t seed, canopy_csc *G)
{
    canopy_csc A;
    testutil_random_matrix(n, per, CANOPY_KIND_SYMMETRIC, 1, seed, &A);
    canopy_err err = {0};
    ck_assert_int_eq(matrix_graph(&A, G, &err), CANOPY_SUCCESS);
    matrix_free(&A);
}

/* The case list: sizes 1..80, densities from none (diagonal: all roots) to fairly dense. */
#define NCASES 120
static void case_params(int c, cint *n, int *per, uint64_t *seed)
{
    static const int pers[] = {0, 1, 1, 2, 3, 5, 8};
    *n = c < 3 ? 1 + c : 1 + (cint)((c * 37) % 80);
    *per = pers[c % 7];
    *seed = 1000 + (uint64_t)c * 7919;
}

static void random_perm(cint n, uint64_t seed, cint *perm)
{
    uint64_t st = seed | 1;
    for (cint k = 0; k < n; k++) perm[k] = k;
    for (cint k = n - 1; k > 0; k--) {
        cint r = (cint)(testutil_rand(&st) % (uint64_t)(k + 1));
        cint t = perm[k];
        perm[k] = perm[r];
        perm[r] = t;
    }
}

START_TEST(etree_matches_dense)
{
    for (int c = 0; c < NCASES; c++) {
        cint n; int per; uint64_t seed;
        case_params(c, &n, &per, &seed);
        canopy_csc G;
        random_graph(n, per, seed, &G);
        unsigned char *M = dense_structure(&G);
        cint *parent = malloc(sizeof(cint) * (size_t)n), *want = malloc(sizeof(cint) * (size_t)n);
        canopy_err err = {0};
        ck_assert_int_eq(symbolic_etree(&G, parent, &err), CANOPY_SUCCESS);
        brute_etree(M, n, want);
        for (cint j = 0; j < n; j++) ck_assert_int_eq(parent[j], want[j]);
        free(parent); free(want); free(M);
        matrix_free(&G);
    }
}
END_TEST

static void check_postorder(cint n, const cint *parent, const cint *post)
{
    ck_assert(testutil_is_permutation(n, post));
    cint *pos = malloc(sizeof(cint) * ((size_t)n + 1)), *size = calloc((size_t)n + 1, sizeof(cint));
    for (cint k = 0; k < n; k++) pos[post[k]] = k;
    for (cint k = 0; k < n; k++) {
        cint j = post[k];
        size[j] += 1;
        if (parent[j] >= 0) {
            ck_assert_int_lt(k, pos[parent[j]]);
            size[parent[j]] += size[j];
        }
    }
    /* subtrees contiguous: the subtree of post[k] is exactly post[k-size+1 .. k] */
    for (cint k = 0; k < n; k++) {
        cint j = post[k];
        for (cint t = k - size[j] + 1; t < k; t++) {
            cint a = post[t];
            while (a >= 0 && a != j) a = parent[a];
            ck_assert_int_eq(a, j);
        }
    }
    /* children (and roots) in increasing order */
    for (cint a = 0; a < n; a++)
        for (cint b = a + 1; b < n; b++)
            if (parent[a] == parent[b]) ck_assert_int_lt(pos[a], pos[b]);
    free(pos);
    free(size);
}

START_TEST(postorder_valid)
{
    for (int c = 0; c < NCASES; c++) {
        cint n; int per; uint64_t seed;
        case_params(c, &n, &per, &seed);
        canopy_csc G;
        random_graph(n, per, seed, &G);
        cint *parent = malloc(sizeof(cint) * (size_t)n), *post = malloc(sizeof(cint) * (size_t)n);
        canopy_err err = {0};
        ck_assert_int_eq(symbolic_etree(&G, parent, &err), CANOPY_SUCCESS);
        ck_assert_int_eq(symbolic_postorder(n, parent, post, &err), CANOPY_SUCCESS);
        check_postorder(n, parent, post);
        free(parent); free(post);
        matrix_free(&G);
    }
    /* a path of one million nodes: no recursion, no stack overflow */
    cint n = 1000000;
    cint *parent = malloc(sizeof(cint) * (size_t)n), *post = malloc(sizeof(cint) * (size_t)n);
    for (cint j = 0; j < n; j++) parent[j] = j + 1 < n ? j + 1 : -1;
    canopy_err err = {0};
    ck_assert_int_eq(symbolic_postorder(n, parent, post, &err), CANOPY_SUCCESS);
    for (cint k = 0; k < n; k++) ck_assert_int_eq(post[k], k);
    /* a broom with the handle reversed: parent[j] = j - 1 is not an etree but is a forest */
    for (cint j = 0; j < n; j++) parent[j] = j - 1;
    ck_assert_int_eq(symbolic_postorder(n, parent, post, &err), CANOPY_SUCCESS);
    for (cint k = 0; k < n; k++) ck_assert_int_eq(post[k], n - 1 - k);
    free(parent); free(post);
}
END_TEST

START_TEST(colcounts_match_dense)
{
    for (int c = 0; c < NCASES; c++) {
        cint n; int per; uint64_t seed;
        case_params(c, &n, &per, &seed);
        canopy_csc G;
        random_graph(n, per, seed, &G);
        unsigned char *M = dense_structure(&G);
        cint *parent = malloc(sizeof(cint) * (size_t)n), *post = malloc(sizeof(cint) * (size_t)n);
        cint *cc = malloc(sizeof(cint) * (size_t)n), *want = malloc(sizeof(cint) * (size_t)n);
        canopy_err err = {0};
        ck_assert_int_eq(symbolic_etree(&G, parent, &err), CANOPY_SUCCESS);
        ck_assert_int_eq(symbolic_postorder(n, parent, post, &err), CANOPY_SUCCESS);
        ck_assert_int_eq(symbolic_colcounts(&G, parent, post, cc, &err), CANOPY_SUCCESS);
        brute_counts(M, n, want);
        for (cint j = 0; j < n; j++) ck_assert_int_eq(cc[j], want[j]);
        free(parent); free(post); free(cc); free(want); free(M);
        matrix_free(&G);
    }
}
END_TEST

START_TEST(supernodes_match_definition)
{
    for (int c = 0; c < NCASES; c++) {
        cint n; int per; uint64_t seed;
        case_params(c, &n, &per, &seed);
        canopy_csc G0, G;
        random_graph(n, per, seed, &G0);
        /* postorder the graph first, as the contract requires */
        cint *parent = malloc(sizeof(cint) * (size_t)n), *post = malloc(sizeof(cint) * (size_t)n);
        cint *ipost = malloc(sizeof(cint) * (size_t)n), *cc = malloc(sizeof(cint) * (size_t)n);
        cint *sf = malloc(sizeof(cint) * ((size_t)n + 1));
        canopy_err err = {0};
        ck_assert_int_eq(symbolic_etree(&G0, parent, &err), CANOPY_SUCCESS);
        ck_assert_int_eq(symbolic_postorder(n, parent, post, &err), CANOPY_SUCCESS);
        for (cint k = 0; k < n; k++) ipost[post[k]] = k;
        ck_assert_int_eq(symbolic_permute_graph(&G0, post, ipost, &G, &err), CANOPY_SUCCESS);
        ck_assert_int_eq(symbolic_etree(&G, parent, &err), CANOPY_SUCCESS);
        for (cint k = 0; k < n; k++) post[k] = k; /* identity postorder now */
        ck_assert_int_eq(symbolic_colcounts(&G, parent, post, cc, &err), CANOPY_SUCCESS);
        cint ns = -1;
        ck_assert_int_eq(symbolic_supernodes(n, parent, cc, &ns, sf, &err), CANOPY_SUCCESS);
        /* brute force: j+1 continues j iff structure(L(:,j)) = {j+1} U structure(L(:,j+1))
         * and j is the only child of j+1 */
        unsigned char *M = dense_structure(&G);
        cint k = 0;
        for (cint j = 0; j < n; j++) {
            int joins = 0;
            if (j > 0 && M[(size_t)(j - 1) * n + j]) {
                joins = 1;
                for (cint i = j + 1; i < n; i++)
                    if (M[(size_t)(j - 1) * n + i] != M[(size_t)j * n + i]) joins = 0;
                for (cint a = 0; a < j - 1; a++)
                    if (parent[a] == j) joins = 0;
            }
            if (!joins) {
                ck_assert_int_lt(k, ns);
                ck_assert_int_eq(sf[k], j);
                k++;
            }
        }
        ck_assert_int_eq(k, ns);
        ck_assert_int_eq(sf[ns], n);
        free(parent); free(post); free(ipost); free(cc); free(sf); free(M);
        matrix_free(&G0);
        matrix_free(&G);
    }
}
END_TEST

/* row r is in the structure of cblk k (diagonal block included) */
static int in_cblk(const symbolic *S, cint k, cint r)
{
    for (cint b = S->cblk_fblok[k]; b < S->cblk_fblok[k + 1]; b++)
        if (r >= S->blok_frow[b] && r <= S->blok_lrow[b]) return 1;
    return 0;
}

/* Analyze G under a random ordering with the given options and check the result against the
 * dense structure of L in the final numbering. Returns nnz_l / true nnz. */
static double check_analyze(const canopy_csc *G, uint64_t seed, int amalg, cint split)
{
    cint n = G->n;
    cint *perm = malloc(sizeof(cint) * (size_t)n);
    random_perm(n, seed, perm);
    symbolic_opts o = {amalg, 0.12, split, 0};
    symbolic S = {0};
    canopy_err err = {0};
    ck_assert_msg(symbolic_analyze(G, perm, &o, &S, &err) == CANOPY_SUCCESS, "%s", err.msg);
    ck_assert(testutil_is_permutation(n, S.perm));
    for (cint k = 0; k < n; k++) ck_assert_int_eq(S.iperm[S.perm[k]], k);
    ck_assert_int_eq(S.n, n);
    ck_assert_int_eq(S.cblk_fcol[0], 0);
    ck_assert_int_eq(S.cblk_fcol[S.ncblk], n);
    /* true L in the final numbering: the count must not depend on the (topological) reorderings */
    canopy_csc B;
    ck_assert_int_eq(symbolic_permute_graph(G, S.perm, S.iperm, &B, &err), CANOPY_SUCCESS);
    unsigned char *M = dense_structure(&B);
    int64_t nnz = 0;
    for (cint j = 0; j < n; j++) {
        nnz++;
        ck_assert(in_cblk(&S, S.col2cblk[j], j));
        for (cint i = j + 1; i < n; i++)
            if (M[(size_t)j * n + i]) {
                nnz++;
                ck_assert(in_cblk(&S, S.col2cblk[j], i));
            }
    }
    /* and it must equal the count under the original ordering */
    canopy_csc B0;
    cint *iperm = malloc(sizeof(cint) * (size_t)n);
    for (cint k = 0; k < n; k++) iperm[perm[k]] = k;
    ck_assert_int_eq(symbolic_permute_graph(G, perm, iperm, &B0, &err), CANOPY_SUCCESS);
    unsigned char *M0 = dense_structure(&B0);
    int64_t nnz0 = 0;
    for (cint j = 0; j < n; j++)
        for (cint i = j; i < n; i++) nnz0 += i == j || M0[(size_t)j * n + i];
    ck_assert_int_eq(nnz0, nnz);
    if (!amalg) ck_assert_int_eq(S.nnz_l, nnz);
    else ck_assert_int_ge(S.nnz_l, nnz);
    if (split > 0)
        for (cint k = 0; k < S.ncblk; k++) ck_assert_int_le(S.cblk_fcol[k + 1] - S.cblk_fcol[k], split);
    double ratio = (double)S.nnz_l / (double)nnz;
    free(perm); free(iperm); free(M); free(M0);
    matrix_free(&B);
    matrix_free(&B0);
    symbolic_free(&S);
    return ratio;
}

START_TEST(analyze_exact_without_amalgamation)
{
    for (int c = 0; c < NCASES; c++) {
        cint n; int per; uint64_t seed;
        case_params(c, &n, &per, &seed);
        canopy_csc G;
        random_graph(n, per, seed, &G);
        check_analyze(&G, seed + 1, 0, 0);
        check_analyze(&G, seed + 2, 0, 3);
        matrix_free(&G);
    }
}
END_TEST

START_TEST(analyze_amalgamated_contains_l)
{
    double worst = 1, sum = 0;
    for (int c = 0; c < NCASES; c++) {
        cint n; int per; uint64_t seed;
        case_params(c, &n, &per, &seed);
        canopy_csc G;
        random_graph(n, per, seed, &G);
        double r = check_analyze(&G, seed + 3, 1, 0);
        sum += r;
        worst = r > worst ? r : worst;
        check_analyze(&G, seed + 4, 1, 4);
        matrix_free(&G);
    }
    printf("amalgamation on random graphs: nnz(L) growth mean %.3f, worst %.3f\n", sum / NCASES, worst);
}
END_TEST

START_TEST(analyze_rejects_bad_input)
{
    canopy_csc G;
    random_graph(10, 2, 5, &G);
    cint perm[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 8};
    symbolic_opts o = {1, 0.12, 0, 0};
    symbolic S = {0};
    canopy_err err = {0};
    ck_assert_int_eq(symbolic_analyze(&G, perm, &o, &S, &err), CANOPY_ERR_ARGUMENT);
    ck_assert(strstr(err.msg, "permutation") != NULL);
    canopy_csc E = G;
    E.n = 0;
    canopy_err_clear(&err);
    ck_assert_int_eq(symbolic_analyze(&E, perm, &o, &S, &err), CANOPY_ERR_ARGUMENT);
    matrix_free(&G);
}
END_TEST

/* split_share cuts only the wide blocks at the top of the tree: as many as a full split there, none below. */
START_TEST(selective_split)
{
    canopy_csc A, G;
    canopy_err err = {0};
    ck_assert_int_eq(canopy_generate_laplacian(14, 14, 14, 7, &A), CANOPY_SUCCESS);
    ck_assert_int_eq(matrix_graph(&A, &G, &err), CANOPY_SUCCESS);
    cint n = G.n, *perm = malloc((size_t)n * sizeof *perm), *iperm = malloc((size_t)n * sizeof *iperm);
    ck_assert_int_eq(order_compute(&G, CANOPY_ORDER_SCOTCH, NULL, 2, perm, iperm, &err), CANOPY_SUCCESS);
    symbolic S0, Sall, Stop;
    symbolic_opts none = {1, 0.12, 0, 0}, all = {1, 0.12, 16, 0}, top = {1, 0.12, 16, 0.25};
    ck_assert_int_eq(symbolic_analyze(&G, perm, &none, &S0, &err), CANOPY_SUCCESS);
    ck_assert_int_eq(symbolic_analyze(&G, perm, &all, &Sall, &err), CANOPY_SUCCESS);
    ck_assert_int_eq(symbolic_analyze(&G, perm, &top, &Stop, &err), CANOPY_SUCCESS);
    /* splitting can only drop zero rows that amalgamation had let in */
    ck_assert_int_le(Sall.nnz_l, S0.nnz_l);
    ck_assert_int_le(Stop.nnz_l, S0.nnz_l);
    ck_assert_int_gt(Stop.ncblk, S0.ncblk);
    ck_assert_int_lt(Stop.ncblk, Sall.ncblk);
    /* the last cblk (top separator) is cut in the selective split; some wide block below is not */
    ck_assert_int_le(Stop.cblk_fcol[Stop.ncblk] - Stop.cblk_fcol[Stop.ncblk - 1], 16);
    cint widest = 0;
    for (cint k = 0; k < Stop.ncblk; k++) widest = CANOPY_MAX(widest, Stop.cblk_fcol[k + 1] - Stop.cblk_fcol[k]);
    ck_assert_int_gt(widest, 16);
    symbolic_free(&S0);
    symbolic_free(&Sall);
    symbolic_free(&Stop);
    free(perm);
    free(iperm);
    matrix_free(&G);
    canopy_csc_free(&A);
}
END_TEST

START_TEST(analyze_survives_allocation_failures)
{
    canopy_csc G;
    random_graph(40, 3, 77, &G);
    cint perm[40];
    random_perm(40, 3, perm);
    symbolic_opts o = {1, 0.12, 4, 0.3}; /* the selective split's allocations too */
    size_t before = canopy_mem_current();
    int failures = 0;
    for (long k = 0; k < 200; k++) {
        symbolic S = {0};
        canopy_err err = {0};
        canopy_alloc_fail_after(k);
        canopy_status st = symbolic_analyze(&G, perm, &o, &S, &err);
        canopy_alloc_fail_after(-1);
        if (st == CANOPY_SUCCESS) {
            symbolic_free(&S);
            break;
        }
        ck_assert_int_eq(st, CANOPY_ERR_NOMEM);
        ck_assert_int_eq(canopy_mem_current(), before);
        failures++;
    }
    ck_assert_int_gt(failures, 0);
    ck_assert_int_eq(canopy_mem_current(), before);
    matrix_free(&G);
}
END_TEST

/* A and B are the same block structure (flops to rounding: summed in another order). */
static void same_structure(const symbolic *A, const symbolic *B)
{
    ck_assert_int_eq(A->n, B->n);
    ck_assert_int_eq(A->ncblk, B->ncblk);
    ck_assert_int_eq(A->nblok, B->nblok);
    for (cint k = 0; k <= A->ncblk; k++) {
        ck_assert_int_eq(A->cblk_fcol[k], B->cblk_fcol[k]);
        ck_assert_int_eq(A->cblk_fblok[k], B->cblk_fblok[k]);
        ck_assert_int_eq(A->cblk_coef[k], B->cblk_coef[k]);
    }
    for (cint k = 0; k < A->ncblk; k++) {
        ck_assert_int_eq(A->cblk_stride[k], B->cblk_stride[k]);
        ck_assert_int_eq(A->cblk_parent[k], B->cblk_parent[k]);
    }
    for (cint b = 0; b < A->nblok; b++) {
        ck_assert_int_eq(A->blok_frow[b], B->blok_frow[b]);
        ck_assert_int_eq(A->blok_lrow[b], B->blok_lrow[b]);
        ck_assert_int_eq(A->blok_fcblk[b], B->blok_fcblk[b]);
        ck_assert_int_eq(A->blok_coefrow[b], B->blok_coefrow[b]);
    }
    for (cint j = 0; j < A->n; j++) {
        ck_assert_int_eq(A->col2cblk[j], B->col2cblk[j]);
        ck_assert_int_eq(A->perm[j], B->perm[j]);
        ck_assert_int_eq(A->iperm[j], B->iperm[j]);
    }
    ck_assert_int_eq(A->nnz_l, B->nnz_l);
    ck_assert(fabs(A->flops_llt - B->flops_llt) <= 1e-12 * B->flops_llt);
    ck_assert(fabs(A->flops_lu - B->flops_lu) <= 1e-12 * B->flops_lu + 1e-9);
    ck_assert_int_eq(A->max_update_buf, B->max_update_buf);
    ck_assert_int_eq(A->max_update_rows, B->max_update_rows);
    ck_assert_int_eq(A->max_width, B->max_width);
}

/* S holds L (true nonzeros in the final numbering) and is closed: the rows of cblk k at or past
 * a target's first column all lie in that target's panel. */
static void holds_l_and_closed(const canopy_csc *G, const symbolic *S)
{
    canopy_csc B;
    canopy_err err = {0};
    cint n = G->n;
    ck_assert_int_eq(symbolic_permute_graph(G, S->perm, S->iperm, &B, &err), CANOPY_SUCCESS);
    unsigned char *M = dense_structure(&B);
    for (cint j = 0; j < n; j++)
        for (cint i = j; i < n; i++)
            if (i == j || M[(size_t)j * n + i]) ck_assert(in_cblk(S, S->col2cblk[j], i));
    for (cint k = 0; k < S->ncblk; k++)
        for (cint b = S->cblk_fblok[k] + 1; b < S->cblk_fblok[k + 1]; b++) {
            cint f = S->blok_fcblk[b];
            ck_assert_int_eq(f, S->col2cblk[S->blok_frow[b]]);
            ck_assert_int_eq(f, S->col2cblk[S->blok_lrow[b]]);
            for (cint b2 = b; b2 < S->cblk_fblok[k + 1]; b2++)
                for (cint r = S->blok_frow[b2]; r <= S->blok_lrow[b2]; r++) ck_assert(in_cblk(S, f, r));
        }
    free(M);
    matrix_free(&B);
}

/* Cutting the whole structure (symbolic_resplit) gives exactly the structure built from the graph
 * for the cut partition without amalgamation, and a closed superset of L with it. */
START_TEST(resplit_matches_build)
{
    for (int c = 0; c < NCASES; c++) {
        cint n; int per; uint64_t seed;
        case_params(c, &n, &per, &seed);
        canopy_csc G;
        random_graph(n, per, seed, &G);
        cint *perm = malloc(sizeof(cint) * (size_t)n);
        random_perm(n, seed + 5, perm);
        canopy_err err = {0};
        for (int amalg = 0; amalg < 2; amalg++) {
            symbolic_opts o = {amalg, 0.12, 0, 0};
            symbolic Su = {0};
            unsigned char *cut = NULL;
            ck_assert_msg(symbolic_analyze_unsplit(&G, perm, &o, &Su, &cut, &err) == CANOPY_SUCCESS, "%s", err.msg);
            for (cint w = 0; w <= 5; w++) {
                symbolic R = {0}, S = {0};
                ck_assert_int_eq(symbolic_resplit(&Su, cut, w, &R, &err), CANOPY_SUCCESS);
                if (w > 0)
                    for (cint k = 0; k < R.ncblk; k++) ck_assert_int_le(R.cblk_fcol[k + 1] - R.cblk_fcol[k], w);
                ck_assert_int_eq(R.nnz_l, Su.nnz_l); /* every piece keeps its block's rows */
                if (amalg == 0) {
                    symbolic_opts os = {0, 0.12, w, 0};
                    ck_assert_int_eq(symbolic_analyze(&G, perm, &os, &S, &err), CANOPY_SUCCESS);
                    same_structure(&R, &S);
                    symbolic_free(&S);
                }
                holds_l_and_closed(&G, &R);
                symbolic_free(&R);
            }
            symbolic_free(&Su);
            canopy_free(cut);
        }
        free(perm);
        matrix_free(&G);
    }
}
END_TEST

/* The selective split through the whole structure cuts the same blocks as symbolic_analyze's. */
START_TEST(resplit_selective_and_allocation_failures)
{
    canopy_csc A, G;
    canopy_err err = {0};
    ck_assert_int_eq(canopy_generate_laplacian(14, 14, 14, 7, &A), CANOPY_SUCCESS);
    ck_assert_int_eq(matrix_graph(&A, &G, &err), CANOPY_SUCCESS);
    cint n = G.n, *perm = malloc((size_t)n * sizeof *perm), *iperm = malloc((size_t)n * sizeof *iperm);
    ck_assert_int_eq(order_compute(&G, CANOPY_ORDER_SCOTCH, NULL, 2, perm, iperm, &err), CANOPY_SUCCESS);
    symbolic_opts top = {1, 0.12, 16, 0.25};
    symbolic Stop, Su, R;
    unsigned char *cut = NULL;
    ck_assert_int_eq(symbolic_analyze(&G, perm, &top, &Stop, &err), CANOPY_SUCCESS);
    ck_assert_int_eq(symbolic_analyze_unsplit(&G, perm, &top, &Su, &cut, &err), CANOPY_SUCCESS);
    ck_assert_int_lt(Su.ncblk, Stop.ncblk);
    ck_assert_int_eq(symbolic_resplit(&Su, cut, 16, &R, &err), CANOPY_SUCCESS);
    ck_assert_int_eq(R.ncblk, Stop.ncblk);
    for (cint k = 0; k <= R.ncblk; k++) ck_assert_int_eq(R.cblk_fcol[k], Stop.cblk_fcol[k]);
    ck_assert_int_ge(R.nnz_l, Stop.nnz_l);
    holds_l_and_closed(&G, &R);
    symbolic_free(&R);
    size_t before = canopy_mem_current();
    int failures = 0;
    for (long k = 0; k < 100; k++) {
        canopy_err_clear(&err);
        canopy_alloc_fail_after(k);
        canopy_status st = symbolic_resplit(&Su, cut, 16, &R, &err);
        canopy_alloc_fail_after(-1);
        if (st == CANOPY_SUCCESS) {
            symbolic_free(&R);
            break;
        }
        ck_assert_int_eq(st, CANOPY_ERR_NOMEM);
        ck_assert_int_eq(canopy_mem_current(), before);
        failures++;
    }
    ck_assert_int_gt(failures, 0);
    ck_assert_int_eq(symbolic_resplit(NULL, cut, 16, &R, &err), CANOPY_ERR_ARGUMENT);
    symbolic_free(&Stop);
    symbolic_free(&Su);
    canopy_free(cut);
    free(perm);
    free(iperm);
    matrix_free(&G);
    canopy_csc_free(&A);
}
END_TEST

START_TEST(analyze_star_and_path_fast)
{
    /* a hub joined to 200000 leaves (one node with 200000 children), and a 200000-node path
     * (a 200000-deep tree): both must go through in near-linear time */
    cint n = 200001;
    for (int shape = 0; shape < 2; shape++) {
        canopy_csc G = {0};
        G.n = n;
        G.colptr = canopy_alloc((size_t)n + 1, sizeof(cint), "test", NULL);
        G.rowind = canopy_alloc(2 * (size_t)n, sizeof(cint), "test", NULL);
        cint p = 0;
        for (cint j = 0; j < n; j++) {
            G.colptr[j] = p;
            if (shape == 0) {
                if (j == n - 1) for (cint i = 0; i < n - 1; i++) G.rowind[p++] = i;
                else G.rowind[p++] = n - 1;
            } else {
                if (j > 0) G.rowind[p++] = j - 1;
                if (j + 1 < n) G.rowind[p++] = j + 1;
            }
        }
        G.colptr[n] = p;
        cint *perm = malloc(sizeof(cint) * (size_t)n);
        for (cint k = 0; k < n; k++) perm[k] = k;
        symbolic_opts o = {1, 0.12, 0, 0};
        symbolic S = {0};
        canopy_err err = {0};
        double t = canopy_wtime();
        ck_assert_int_eq(symbolic_analyze(&G, perm, &o, &S, &err), CANOPY_SUCCESS);
        t = canopy_wtime() - t;
        ck_assert_int_ge(S.nnz_l, shape == 0 ? 2 * (int64_t)n - 1 : 2 * (int64_t)n - 1);
        ck_assert(t < 5.0);
        printf("%s of %" CINT_FMT " nodes: analysis %.3f s, %" CINT_FMT " cblks\n", shape == 0 ? "star" : "path", n, t, S.ncblk);
        symbolic_free(&S);
        free(perm);
        matrix_free(&G);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("symbolic");
    TCase *tc = tcase_create("symbolic");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, etree_matches_dense);
    tcase_add_test(tc, postorder_valid);
    tcase_add_test(tc, colcounts_match_dense);
    tcase_add_test(tc, supernodes_match_definition);
    tcase_add_test(tc, analyze_exact_without_amalgamation);
    tcase_add_test(tc, analyze_amalgamated_contains_l);
    tcase_add_test(tc, analyze_rejects_bad_input);
    tcase_add_test(tc, analyze_survives_allocation_failures);
    tcase_add_test(tc, selective_split);
    tcase_add_test(tc, resplit_matches_build);
    tcase_add_test(tc, resplit_selective_and_allocation_failures);
    tcase_add_test(tc, analyze_star_and_path_fast);
    suite_add_tcase(s, tc);
    return testutil_run(s);
}
