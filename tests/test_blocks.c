/*
 * Block structure builder (src/symbolic/blocks.c) against a dense boolean symbolic factorization:
 * with one column per cblk the bloks must reproduce the exact structure of L; with random
 * partitions the structure must contain L's and be closed under updates.
 */
#include "testutil.h"
#include "symbolic/symbolic.h"

/* Dense reference: L's pattern by eliminating a boolean matrix. */
static unsigned char *dense_structure(const canopy_csc *G)
{
    cint n = G->n;
    unsigned char *M = calloc((size_t)n * n, 1);
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

static void random_graph(cint n, int per, uint64_t seed, canopy_csc *G)
{
    canopy_csc A;
    testutil_random_matrix(n, per, CANOPY_KIND_SYMMETRIC, 1, seed, &A);
    canopy_err err = {0};
    ck_assert_int_eq(matrix_graph(&A, G, &err), CANOPY_SUCCESS);
    matrix_free(&A);
}

/* row r is in the structure of cblk k (diagonal block included) */
static int in_cblk(const symbolic *S, cint k, cint r)
{
    for (cint b = S->cblk_fblok[k]; b < S->cblk_fblok[k + 1]; b++)
        if (r >= S->blok_frow[b] && r <= S->blok_lrow[b]) return 1;
    return 0;
}

static void check_closed(const symbolic *S)
{
    for (cint k = 0; k < S->ncblk; k++) {
        cint f = S->cblk_fblok[k];
        ck_assert_int_eq(S->blok_coefrow[f], 0);
        for (cint b = f + 1; b < S->cblk_fblok[k + 1]; b++) {
            cint j = S->blok_fcblk[b];
            ck_assert_int_gt(j, k);
            ck_assert(S->blok_frow[b] >= S->cblk_fcol[j] && S->blok_lrow[b] < S->cblk_fcol[j + 1]);
            if (b > f + 1) ck_assert_int_gt(S->blok_frow[b], S->blok_lrow[b - 1]);
            /* every later row must be inside cblk j's structure */
            for (cint b2 = b; b2 < S->cblk_fblok[k + 1]; b2++)
                for (cint r = S->blok_frow[b2]; r <= S->blok_lrow[b2]; r++) ck_assert(in_cblk(S, j, r));
        }
    }
}

START_TEST(singleton_partition_is_exact)
{
    for (uint64_t seed = 1; seed <= 20; seed++) {
        cint n = 5 + (cint)(seed * 7 % 40);
        canopy_csc G;
        random_graph(n, 2, seed, &G);
        unsigned char *M = dense_structure(&G);
        cint *part = malloc(((size_t)n + 1) * sizeof(cint));
        for (cint k = 0; k <= n; k++) part[k] = k;
        symbolic S = {0};
        canopy_err err = {0};
        ck_assert_int_eq(symbolic_build_blocks(&G, n, part, &S, &err), CANOPY_SUCCESS);
        int64_t nnz = 0;
        for (cint j = 0; j < n; j++)
            for (cint i = j; i < n; i++) {
                int want = i == j || M[(size_t)j * n + i];
                nnz += want;
                ck_assert_int_eq(in_cblk(&S, j, i), want);
            }
        ck_assert_int_eq(S.nnz_l, nnz);
        check_closed(&S);
        symbolic_free(&S);
        free(part);
        free(M);
        matrix_free(&G);
    }
}
END_TEST

START_TEST(random_partitions_are_closed)
{
    uint64_t st = 99;
    for (uint64_t seed = 1; seed <= 30; seed++) {
        cint n = 10 + (cint)(seed * 13 % 60);
        canopy_csc G;
        random_graph(n, 3, seed + 100, &G);
        unsigned char *M = dense_structure(&G);
        cint *part = malloc(((size_t)n + 1) * sizeof(cint));
        cint np = 0;
        part[0] = 0;
        for (cint c = 0; c < n;) {
            c += 1 + (cint)(testutil_rand(&st) % 5);
            part[++np] = c < n ? c : n;
        }
        symbolic S = {0};
        canopy_err err = {0};
        ck_assert_int_eq(symbolic_build_blocks(&G, np, part, &S, &err), CANOPY_SUCCESS);
        for (cint j = 0; j < n; j++)
            for (cint i = j + 1; i < n; i++)
                if (M[(size_t)j * n + i]) ck_assert(in_cblk(&S, S.col2cblk[j], i));
        check_closed(&S);
        ck_assert_int_eq(S.cblk_coef[S.ncblk], S.cblk_coef[S.ncblk - 1] +
                         (int64_t)S.cblk_stride[S.ncblk - 1] * (part[np] - part[np - 1]));
        symbolic_free(&S);
        free(part);
        free(M);
        matrix_free(&G);
    }
}
END_TEST

START_TEST(permute_graph_sorted_symmetric)
{
    canopy_csc G, B;
    random_graph(50, 3, 7, &G);
    cint perm[50], iperm[50];
    for (cint i = 0; i < 50; i++) perm[i] = (i * 17) % 50;
    for (cint i = 0; i < 50; i++) iperm[perm[i]] = i;
    canopy_err err = {0};
    ck_assert_int_eq(symbolic_permute_graph(&G, perm, iperm, &B, &err), CANOPY_SUCCESS);
    ck_assert_int_eq(matrix_nnz(&B), matrix_nnz(&G));
    for (cint j = 0; j < 50; j++)
        for (cint p = B.colptr[j]; p < B.colptr[j + 1]; p++) {
            if (p > B.colptr[j]) ck_assert_int_lt(B.rowind[p - 1], B.rowind[p]);
            /* B(i,j) = G(perm i, perm j) */
            cint oi = perm[B.rowind[p]], oj = perm[j], found = 0;
            for (cint q = G.colptr[oj]; q < G.colptr[oj + 1]; q++) found |= G.rowind[q] == oi;
            ck_assert(found);
        }
    matrix_free(&G);
    matrix_free(&B);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("blocks");
    TCase *tc = tcase_create("blocks");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, singleton_partition_is_exact);
    tcase_add_test(tc, random_partitions_are_closed);
    tcase_add_test(tc, permute_graph_sorted_symmetric);
    suite_add_tcase(s, tc);
    return testutil_run(s);
}
