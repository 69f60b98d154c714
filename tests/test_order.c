/*
 * Orderings (src/order/order.c): natural, user (validation), SCOTCH nested dissection (validity,
 * determinism, edge cases, and fill quality on model Laplacians, with the analysis figures the
 * performance targets are stated in).
 */
#include "testutil.h"
#include "order/order.h"
#include "symbolic/symbolic.h"

/* internal hook of order.c: SCOTCH with a given leaf size and leaf method letter */
canopy_status order_scotch_with(const canopy_csc *G, int leaf, char method, int threads, cint *perm, cint *iperm,
                                canopy_err *err);

/* Adjacency graph of the 5-point (nz = 1) or 7-point Laplacian, built here on purpose. */
static void grid_graph(cint nx, cint ny, cint nz, canopy_csc *G)
{
    cint n = nx * ny * nz;
    G->n = n;
    G->colptr = canopy_alloc((size_t)n + 1, sizeof(cint), "grid", NULL);
    G->rowind = canopy_alloc(6 * (size_t)n + 1, sizeof(cint), "grid", NULL);
    G->values = NULL;
    G->base = 0;
    G->arith = CANOPY_PATTERN;
    G->kind = CANOPY_KIND_SPD;
    G->triangle = CANOPY_TRIANGLE_BOTH;
    cint p = 0;
    for (cint z = 0; z < nz; z++)
        for (cint y = 0; y < ny; y++)
            for (cint x = 0; x < nx; x++) {
                cint v = x + nx * (y + ny * z);
                G->colptr[v] = p;
                /* increasing neighbour index: sorted columns */
                if (z > 0) G->rowind[p++] = v - nx * ny;
                if (y > 0) G->rowind[p++] = v - nx;
                if (x > 0) G->rowind[p++] = v - 1;
                if (x + 1 < nx) G->rowind[p++] = v + 1;
                if (y + 1 < ny) G->rowind[p++] = v + nx;
                if (z + 1 < nz) G->rowind[p++] = v + nx * ny;
            }
    G->colptr[n] = p;
}

static void random_graph(cint n, int per, uint64_t seed, canopy_csc *G)
{
    canopy_csc A;
    testutil_random_matrix(n, per, CANOPY_KIND_SYMMETRIC, 1, seed, &A);
    canopy_err err = {0};
    ck_assert_int_eq(matrix_graph(&A, G, &err), CANOPY_SUCCESS);
    matrix_free(&A);
}

static void check_inverse(cint n, const cint *perm, const cint *iperm)
{
    ck_assert(testutil_is_permutation(n, perm));
    for (cint k = 0; k < n; k++) ck_assert_int_eq(iperm[perm[k]], k);
}

START_TEST(is_permutation)
{
    cint a[5] = {3, 1, 0, 4, 2}, b[5] = {3, 1, 0, 3, 2}, c[5] = {3, 1, 0, 5, 2}, d[5] = {3, 1, -1, 4, 2};
    ck_assert(testutil_is_permutation(5, a));
    ck_assert(!testutil_is_permutation(5, b));
    ck_assert(!testutil_is_permutation(5, c));
    ck_assert(!testutil_is_permutation(5, d));
    ck_assert(testutil_is_permutation(0, NULL));
    cint one = 0;
    ck_assert(testutil_is_permutation(1, &one));
}
END_TEST

START_TEST(natural_and_user)
{
    canopy_csc G;
    random_graph(30, 3, 11, &G);
    cint perm[30], iperm[30], user[30];
    canopy_err err = {0};
    ck_assert_int_eq(order_compute(&G, CANOPY_ORDER_NATURAL, NULL, 2, perm, iperm, &err), CANOPY_SUCCESS);
    for (cint k = 0; k < 30; k++) ck_assert(perm[k] == k && iperm[k] == k);
    for (cint k = 0; k < 30; k++) user[k] = (7 * k + 3) % 30;
    ck_assert_int_eq(order_compute(&G, CANOPY_ORDER_USER, user, 2, perm, iperm, &err), CANOPY_SUCCESS);
    for (cint k = 0; k < 30; k++) ck_assert_int_eq(perm[k], user[k]);
    check_inverse(30, perm, iperm);
    user[5] = user[6];
    ck_assert_int_eq(order_compute(&G, CANOPY_ORDER_USER, user, 2, perm, iperm, &err), CANOPY_ERR_ARGUMENT);
    ck_assert_msg(strstr(err.msg, "entry 6") != NULL && strstr(err.msg, "repeated") != NULL, "%s", err.msg);
    canopy_err_clear(&err);
    user[5] = 30;
    ck_assert_int_eq(order_compute(&G, CANOPY_ORDER_USER, user, 2, perm, iperm, &err), CANOPY_ERR_ARGUMENT);
    ck_assert_msg(strstr(err.msg, "entry 5 = 30") != NULL, "%s", err.msg);
    canopy_err_clear(&err);
    ck_assert_int_eq(order_compute(&G, CANOPY_ORDER_USER, NULL, 2, perm, iperm, &err), CANOPY_ERR_ARGUMENT);
    matrix_free(&G);
}
END_TEST

START_TEST(scotch_valid_and_deterministic)
{
    for (uint64_t seed = 1; seed <= 25; seed++) {
        cint n = 1 + (cint)(seed * 53 % 400);
        int per = (int)(seed % 5);
        canopy_csc G;
        random_graph(n, per, seed, &G);
        cint *p1 = malloc(sizeof(cint) * (size_t)n), *i1 = malloc(sizeof(cint) * (size_t)n);
        cint *p2 = malloc(sizeof(cint) * (size_t)n), *i2 = malloc(sizeof(cint) * (size_t)n);
        canopy_err err = {0};
        /* reproducible for every thread count SCOTCH is given (and out-of-range counts clamp) */
        static const int counts[] = {1, 2, 3, 8, 0};
        for (int c = 0; c < 5; c++) {
            int th = counts[(c + (int)seed) % 5];
            ck_assert_msg(order_compute(&G, CANOPY_ORDER_SCOTCH, NULL, th, p1, i1, &err) == CANOPY_SUCCESS, "%s", err.msg);
            check_inverse(n, p1, i1);
            ck_assert_int_eq(order_compute(&G, CANOPY_ORDER_SCOTCH, NULL, th, p2, i2, &err), CANOPY_SUCCESS);
            for (cint k = 0; k < n; k++) ck_assert_int_eq(p1[k], p2[k]);
        }
        free(p1); free(i1); free(p2); free(i2);
        matrix_free(&G);
    }
}
END_TEST

START_TEST(scotch_edge_cases)
{
    canopy_err err = {0};
    /* n = 1, and a diagonal matrix (no edges) */
    for (cint n = 1; n <= 7; n += 6) {
        canopy_csc G = {0};
        G.n = n;
        G.colptr = calloc((size_t)n + 1, sizeof(cint));
        G.rowind = calloc(1, sizeof(cint));
        cint perm[7], iperm[7];
        ck_assert_int_eq(order_compute(&G, CANOPY_ORDER_SCOTCH, NULL, 2, perm, iperm, &err), CANOPY_SUCCESS);
        check_inverse(n, perm, iperm);
        free(G.colptr);
        free(G.rowind);
    }
    /* disconnected: two grids and isolated vertices side by side */
    canopy_csc A, B;
    grid_graph(9, 7, 1, &A);
    grid_graph(4, 4, 4, &B);
    cint na = A.n, nb = B.n, n = na + nb + 5;
    canopy_csc G = {0};
    G.n = n;
    G.colptr = calloc((size_t)n + 1, sizeof(cint));
    G.rowind = calloc((size_t)(A.colptr[na] + B.colptr[nb]) + 1, sizeof(cint));
    cint p = 0;
    for (cint j = 0; j < na; j++) {
        G.colptr[j] = p;
        for (cint q = A.colptr[j]; q < A.colptr[j + 1]; q++) G.rowind[p++] = A.rowind[q];
    }
    for (cint j = 0; j < 5; j++) G.colptr[na + j] = p;
    for (cint j = 0; j < nb; j++) {
        G.colptr[na + 5 + j] = p;
        for (cint q = B.colptr[j]; q < B.colptr[j + 1]; q++) G.rowind[p++] = B.rowind[q] + na + 5;
    }
    G.colptr[n] = p;
    cint *perm = malloc(sizeof(cint) * (size_t)n), *iperm = malloc(sizeof(cint) * (size_t)n);
    ck_assert_msg(order_compute(&G, CANOPY_ORDER_SCOTCH, NULL, 2, perm, iperm, &err) == CANOPY_SUCCESS, "%s", err.msg);
    check_inverse(n, perm, iperm);
    free(perm); free(iperm);
    free(G.colptr); free(G.rowind);
    matrix_free(&A);
    matrix_free(&B);
}
END_TEST

/* Analysis of G under an ordering; returns the symbolic structure (caller frees). */
static void analyze(const canopy_csc *G, const cint *perm, int amalg, symbolic *S)
{
    symbolic_opts o = {amalg, 0.12, 0, 0};
    canopy_err err = {0};
    ck_assert_msg(symbolic_analyze(G, perm, &o, S, &err) == CANOPY_SUCCESS, "%s", err.msg);
}

static void compare_on_grid(cint nx, cint ny, cint nz, double max_ratio)
{
    canopy_csc G;
    grid_graph(nx, ny, nz, &G);
    cint n = G.n;
    cint *perm = malloc(sizeof(cint) * (size_t)n), *iperm = malloc(sizeof(cint) * (size_t)n);
    canopy_err err = {0};
    symbolic Sn = {0}, Sd = {0}, Sa = {0};
    ck_assert_int_eq(order_compute(&G, CANOPY_ORDER_NATURAL, NULL, 2, perm, iperm, &err), CANOPY_SUCCESS);
    analyze(&G, perm, 0, &Sn);
    ck_assert_msg(order_compute(&G, CANOPY_ORDER_SCOTCH, NULL, 2, perm, iperm, &err) == CANOPY_SUCCESS, "%s", err.msg);
    check_inverse(n, perm, iperm);
    analyze(&G, perm, 0, &Sd);
    analyze(&G, perm, 1, &Sa);
    printf("grid %dx%dx%d: natural nnz(L) %" PRId64 " flops %.3e | ND nnz(L) %" PRId64 " flops %.3e"
           " | ND+amalgamation nnz(L) %" PRId64 " (x%.3f) flops %.3e, %" CINT_FMT " -> %" CINT_FMT " cblks\n",
           (int)nx, (int)ny, (int)nz, Sn.nnz_l, Sn.flops_llt, Sd.nnz_l, Sd.flops_llt, Sa.nnz_l,
           (double)Sa.nnz_l / (double)Sd.nnz_l, Sa.flops_llt, Sd.ncblk, Sa.ncblk);
    ck_assert(Sd.flops_llt < max_ratio * Sn.flops_llt);
    ck_assert(Sa.nnz_l >= Sd.nnz_l);
    symbolic_free(&Sn);
    symbolic_free(&Sd);
    symbolic_free(&Sa);
    free(perm); free(iperm);
    matrix_free(&G);
}

START_TEST(nested_dissection_beats_natural)
{
    compare_on_grid(30, 30, 1, 0.5);
    compare_on_grid(15, 15, 15, 0.3);
}
END_TEST

/* Graph of cliques of size b (a dense matrix when b == n). */
static void clique_graph(cint n, cint b, canopy_csc *G)
{
    G->n = n;
    G->colptr = canopy_alloc((size_t)n + 1, sizeof(cint), "cliques", NULL);
    G->rowind = canopy_alloc((size_t)n * (size_t)b + 1, sizeof(cint), "cliques", NULL);
    G->values = NULL;
    G->base = 0;
    G->arith = CANOPY_PATTERN;
    G->kind = CANOPY_KIND_SYMMETRIC;
    G->triangle = CANOPY_TRIANGLE_BOTH;
    cint p = 0;
    for (cint j = 0; j < n; j++) {
        G->colptr[j] = p;
        cint c0 = j / b * b, c1 = c0 + b < n ? c0 + b : n;
        for (cint i = c0; i < c1; i++)
            if (i != j) G->rowind[p++] = i;
    }
    G->colptr[n] = p;
}

START_TEST(cliques_and_dense)
{
    /* regression: SCOTCH 7.0.3's halo AMD leaves corrupted memory on clique components */
    const cint sizes[][2] = {{2, 2}, {3, 3}, {5, 5}, {8, 8}, {12, 12}, {20, 20}, {200, 200}, {60, 6}, {1000, 7}};
    for (size_t c = 0; c < sizeof sizes / sizeof *sizes; c++) {
        canopy_csc G;
        clique_graph(sizes[c][0], sizes[c][1], &G);
        cint *perm = malloc(sizeof(cint) * (size_t)G.n), *iperm = malloc(sizeof(cint) * (size_t)G.n);
        canopy_err err = {0};
        ck_assert_msg(order_compute(&G, CANOPY_ORDER_SCOTCH, NULL, 2, perm, iperm, &err) == CANOPY_SUCCESS, "n=%d b=%d: %s",
                      (int)sizes[c][0], (int)sizes[c][1], err.msg);
        check_inverse(G.n, perm, iperm);
        free(perm);
        free(iperm);
        matrix_free(&G);
    }
}
END_TEST

START_TEST(leaf_method_comparison)
{
    /* the measurement behind ORDER_LEAF_METHOD: halo AMF (f) vs halo AMD (d) on a 3D Laplacian */
    canopy_csc G;
    grid_graph(30, 30, 30, &G);
    cint n = G.n;
    cint *perm = malloc(sizeof(cint) * (size_t)n), *iperm = malloc(sizeof(cint) * (size_t)n);
    const char methods[2] = {'f', 'd'};
    for (int m = 0; m < 2; m++) {
        canopy_err err = {0};
        double t = canopy_wtime();
        ck_assert_msg(order_scotch_with(&G, 120, methods[m], 2, perm, iperm, &err) == CANOPY_SUCCESS, "%s", err.msg);
        t = canopy_wtime() - t;
        symbolic S = {0};
        analyze(&G, perm, 0, &S);
        printf("30^3 leaves by '%c': order %.3f s, nnz(L) %" PRId64 ", flops %.4e\n", methods[m], t, S.nnz_l, S.flops_llt);
        symbolic_free(&S);
    }
    free(perm); free(iperm);
    matrix_free(&G);
}
END_TEST

START_TEST(laplacian_50_cubed_figures)
{
    canopy_csc G;
    grid_graph(50, 50, 50, &G);
    cint n = G.n;
    cint *perm = malloc(sizeof(cint) * (size_t)n), *iperm = malloc(sizeof(cint) * (size_t)n);
    canopy_err err = {0};
    double t0 = canopy_wtime();
    ck_assert_msg(order_compute(&G, CANOPY_ORDER_SCOTCH, NULL, 2, perm, iperm, &err) == CANOPY_SUCCESS, "%s", err.msg);
    double t1 = canopy_wtime();
    for (int amalg = 0; amalg <= 1; amalg++) {
        symbolic S = {0};
        double t2 = canopy_wtime();
        analyze(&G, perm, amalg, &S);
        double t3 = canopy_wtime();
        int64_t small = 0;
        for (cint k = 0; k < S.ncblk; k++) small += S.cblk_fcol[k + 1] - S.cblk_fcol[k] < 8;
        printf("50^3 7-point, amalgamation %d: order %.3f s, symbolic %.3f s, nnz(L) %" PRId64 ", flops %.4e,"
               " ncblk %" CINT_FMT " (avg width %.1f, %" PRId64 " narrower than 8, widest %" CINT_FMT "), nblok %" CINT_FMT "\n",
               amalg, t1 - t0, t3 - t2, S.nnz_l, S.flops_llt, S.ncblk, (double)n / (double)S.ncblk, small,
               S.max_width, S.nblok);
        ck_assert(S.flops_llt < 8.0e10); /* PaStiX + SCOTCH: ~7e10 */
        symbolic_free(&S);
    }
    free(perm); free(iperm);
    matrix_free(&G);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("order");
    TCase *tc = tcase_create("order");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, is_permutation);
    tcase_add_test(tc, natural_and_user);
    tcase_add_test(tc, scotch_valid_and_deterministic);
    tcase_add_test(tc, scotch_edge_cases);
    tcase_add_test(tc, nested_dissection_beats_natural);
    tcase_add_test(tc, cliques_and_dense);
    tcase_add_test(tc, leaf_method_comparison);
    tcase_add_test(tc, laplacian_50_cubed_figures);
    suite_add_tcase(s, tc);
    return testutil_run(s);
}
