/*
 * The root on a 2D grid of ranks as a pure function (sched/root.c) and in the plan (sched/plan*.c):
 *  - sched_root_grid against a brute force over every allowed shape, 1..1024 ranks and a few up to
 *    4096, many tile counts;
 *  - sched_root_choose on generated Laplacians: the root is the dense trailing cblks (found here
 *    from the bloks, not cblk_stride), LDL^T/LU tiles never straddle a cblk boundary, off / one
 *    rank / AUTO on a narrow root give none, bad arguments are refused;
 *  - a plan built with opts.root, up to 1024 virtual ranks: one PANEL per root cblk and no other
 *    task of it, the root's contributions counted only from outside it, task_seq topological.
 * Fixed cost model: nothing depends on this machine.
 */
#include "testutil.h"
#include "sched/plan.h"
#include "sched/root.h"
#include "symbolic/symbolic.h"

static const canopy_factorization kinds[] = {CANOPY_FACT_LLT, CANOPY_FACT_LDLT, CANOPY_FACT_LU};

/* Laplacian nx x ny x nz, nested dissection, cblks split at @p split columns (as tests/test_plan.c) */
static void laplacian_structure(cint nx, cint ny, cint nz, cint split, symbolic *S)
{
    canopy_csc A, G;
    canopy_err err = {0};
    ck_assert_int_eq(canopy_generate_laplacian(nx, ny, nz, 7, &A), CANOPY_SUCCESS);
    ck_assert_int_eq(matrix_graph(&A, &G, &err), CANOPY_SUCCESS);
    cint n = G.n;
    cint *perm = malloc(sizeof(cint) * (size_t)n), *iperm = malloc(sizeof(cint) * (size_t)n);
    ck_assert_msg(order_compute(&G, CANOPY_ORDER_SCOTCH, NULL, 2, perm, iperm, &err) == CANOPY_SUCCESS, "%s", err.msg);
    symbolic_opts o = {1, 0.12, split, 0};
    memset(S, 0, sizeof *S);
    ck_assert_msg(symbolic_analyze(&G, perm, &o, S, &err) == CANOPY_SUCCESS, "%s", err.msg);
    free(perm);
    free(iperm);
    matrix_free(&A);
    matrix_free(&G);
}

/* the shape the brute force wants: most ranks, then squarest, among p <= q, p q <= P,
 * p + q - 1 <= 64, p, q <= tiles */
static void brute_grid(int P, cint tiles, int *bp, int *bq)
{
    *bp = *bq = 1;
    for (int p = 1; p <= P && p <= tiles; p++)
        for (int q = p; (int64_t)p * q <= P && q <= tiles && p + q - 1 <= SCHED_ROOT_MAX_MEMBERS; q++) {
            int64_t have = (int64_t)p * q, best = (int64_t)*bp * *bq;
            if (have > best || (have == best && q - p < *bq - *bp)) *bp = p, *bq = q;
        }
}

START_TEST(grid_shapes)
{
    static const cint tiles[] = {1, 2, 3, 5, 7, 8, 13, 31, 64, 100, 1000000};
    static const int big[] = {1500, 2047, 2048, 3000, 4095, 4096};
    for (int i = 0; i < 1024 + 6; i++) {
        int P = i < 1024 ? i + 1 : big[i - 1024];
        for (size_t t = 0; t < sizeof tiles / sizeof tiles[0]; t++) {
            int pr = 0, pc = 0, bp, bq;
            sched_root_grid(P, tiles[t], &pr, &pc);
            ck_assert_msg(pr >= 1 && pr <= pc && (int64_t)pr * pc <= P && pr + pc - 1 <= SCHED_ROOT_MAX_MEMBERS &&
                              pr <= tiles[t] && pc <= tiles[t],
                          "P %d tiles %d: %d x %d", P, (int)tiles[t], pr, pc);
            brute_grid(P, tiles[t], &bp, &bq);
            ck_assert_msg(pr == bp && pc == bq, "P %d tiles %d: %d x %d, brute force %d x %d", P, (int)tiles[t], pr, pc, bp, bq);
        }
    }
}
END_TEST

/* first cblk of the longest suffix whose panels hold every row from their first column on,
 * counted from the bloks */
static cint dense_suffix(const symbolic *S)
{
    cint k0 = S->ncblk;
    while (k0 > 0) {
        cint k = k0 - 1, rows = 0;
        for (cint b = S->cblk_fblok[k]; b < S->cblk_fblok[k + 1]; b++) rows += S->blok_lrow[b] - S->blok_frow[b] + 1;
        if (rows != S->n - S->cblk_fcol[k]) break;
        k0--;
    }
    return k0;
}

static void check_choice(const symbolic *S, int P, canopy_factorization kind)
{
    sched_root r;
    canopy_err err = {0};
    ck_assert_int_eq(sched_root_choose(S, P, kind, SCHED_ROOT_ON, &r, &err), CANOPY_SUCCESS);
    cint k0 = dense_suffix(S), nc = S->ncblk;
    ck_assert_msg(k0 < nc - 1, "the test wants a root of several cblks (%d of %d)", (int)k0, (int)nc);
    if (P == 1) {
        ck_assert(r.first == nc && r.n == 0);
        return;
    }
    ck_assert_msg(r.first < nc && r.n > 0, "P %d kind %d: no root", P, (int)kind);
    ck_assert_int_eq(r.n, S->n - S->cblk_fcol[r.first]);
    /* every kind: the whole dense suffix, tiles of SCHED_ROOT_NB */
    ck_assert_int_eq(r.first, k0);
    ck_assert_int_eq(r.nb, CANOPY_MIN(r.n, (cint)SCHED_ROOT_NB));
    /* the steps: ascending from 0 to n, each inside one tile and one cblk, and every tile and
     * cblk boundary among them (so LDL^T and LU pivot inside each cblk, as the sparse kernels) */
    cint *steps = malloc(sizeof(cint) * (size_t)(r.n / r.nb + nc - r.first + 3)), ns = sched_root_steps(S, &r, steps);
    ck_assert(steps[0] == 0 && steps[ns] == r.n);
    cint r0 = S->cblk_fcol[r.first], k = r.first;
    for (cint i = 0; i < ns; i++) {
        ck_assert(steps[i + 1] > steps[i]);
        ck_assert_msg((steps[i + 1] - 1) / r.nb == steps[i] / r.nb, "step %d crosses a tile", (int)i);
        while (S->cblk_fcol[k + 1] - r0 <= steps[i]) k++;
        ck_assert_msg(steps[i + 1] <= S->cblk_fcol[k + 1] - r0, "step %d crosses cblk %d", (int)i, (int)k);
    }
    for (cint t = 0; t < r.n; t += r.nb) {
        int found = 0;
        for (cint i = 0; i <= ns; i++) found |= steps[i] == t;
        ck_assert(found);
    }
    for (cint q = r.first; q < nc; q++) {
        int found = 0;
        for (cint i = 0; i <= ns; i++) found |= steps[i] == S->cblk_fcol[q] - r0;
        ck_assert(found);
    }
    free(steps);
    int pr, pc;
    sched_root_grid(P, (r.n + r.nb - 1) / r.nb, &pr, &pc);
    ck_assert(r.pr == pr && r.pc == pc && pr * pc >= 2);
    /* off, and AUTO on this root narrower than 800 columns, give none */
    sched_root none;
    ck_assert_int_eq(sched_root_choose(S, P, kind, SCHED_ROOT_OFF, &none, &err), CANOPY_SUCCESS);
    ck_assert(none.first == nc && none.n == 0);
    ck_assert_int_lt(S->n - S->cblk_fcol[k0], 800);
    ck_assert_int_eq(sched_root_choose(S, P, kind, SCHED_ROOT_AUTO, &none, &err), CANOPY_SUCCESS);
    ck_assert(none.first == nc && none.n == 0);
}

START_TEST(choose)
{
    symbolic S;
    laplacian_structure(16, 16, 16, 48, &S); /* a root of 256 columns in 48-column cblks */
    static const int ranks[] = {1, 2, 3, 4, 6, 9, 16, 64, 1024};
    for (int k = 0; k < 3; k++)
        for (size_t i = 0; i < sizeof ranks / sizeof ranks[0]; i++) check_choice(&S, ranks[i], kinds[k]);
    sched_root r;
    canopy_err err = {0};
    ck_assert_int_eq(sched_root_choose(&S, 0, CANOPY_FACT_LLT, SCHED_ROOT_ON, &r, &err), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(sched_root_choose(&S, 4, CANOPY_FACT_AUTO, SCHED_ROOT_ON, &r, &err), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(sched_root_choose(&S, 4, CANOPY_FACT_LLT, 3, &r, &err), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(sched_root_choose(NULL, 4, CANOPY_FACT_LLT, SCHED_ROOT_ON, &r, &err), CANOPY_ERR_ARGUMENT);
    symbolic_free(&S);
}
END_TEST

/* AUTO: a 900-column root is kept on 4 ranks (>= 800), refused on 1024 (< 70 sqrt(1024) = 2240) */
START_TEST(choose_auto)
{
    symbolic S;
    laplacian_structure(30, 30, 30, 0, &S);
    cint w = S.n - S.cblk_fcol[dense_suffix(&S)];
    ck_assert_msg(w >= 800 && w < 2240, "root of %d columns", (int)w);
    sched_root r;
    canopy_err err = {0};
    ck_assert_int_eq(sched_root_choose(&S, 4, CANOPY_FACT_LLT, SCHED_ROOT_AUTO, &r, &err), CANOPY_SUCCESS);
    ck_assert(r.n == w && r.pr == 2 && r.pc == 2);
    ck_assert_int_eq(sched_root_choose(&S, 1024, CANOPY_FACT_LLT, SCHED_ROOT_AUTO, &r, &err), CANOPY_SUCCESS);
    ck_assert(r.first == S.ncblk && r.n == 0);
    symbolic_free(&S);
}
END_TEST

static void check_plan(const symbolic *S, int R, canopy_factorization kind)
{
    sched_plan P;
    canopy_err err = {0};
    sched_plan_opts o = {.nthreads = 2, .kind = kind, .nranks = R, .comm_latency = 1e-5, .comm_byte_time = 1e-9};
    ck_assert_int_eq(sched_root_choose(S, R, kind, SCHED_ROOT_ON, &o.root, &err), CANOPY_SUCCESS);
    ck_assert(o.root.n > 0);
    ck_assert_msg(sched_plan_build(S, NULL, &o, &P, &err) == CANOPY_SUCCESS, "%s", err.msg);
    const sched_dag *D = &P.factor;
    const sched_root *r = &o.root;
    ck_assert(P.root.first == r->first && P.root.n == r->n);
    cint nc = S->ncblk;
    int *tasks = calloc((size_t)nc, sizeof(int));
    for (int i = 0; i < D->ntasks; i++) {
        cint k = D->cblk[i];
        if (!sched_root_has(r, k)) continue;
        ck_assert_msg(D->kind[i] == SCHED_TASK_PANEL, "R %d: task %d of kind %d on root cblk %d", R, i, D->kind[i], (int)k);
        tasks[k]++;
    }
    for (cint k = r->first; k < nc; k++) {
        ck_assert_msg(tasks[k] == 1, "R %d: root cblk %d has %d tasks", R, (int)k, tasks[k]);
        /* contributions into the root only from outside it (independent count, as test_plan.c) */
        int count = 0;
        for (cint s = 0; s < r->first; s++) {
            int faces = 0, same = 0;
            for (cint b = S->cblk_fblok[s] + 1; b < S->cblk_fblok[s + 1]; b++) faces |= S->blok_fcblk[b] == k;
            for (int i = 0; faces && i < D->ntasks && !same; i++)
                same = D->kind[i] == SCHED_TASK_SUBTREE && D->first[i] <= s && k <= D->cblk[i];
            count += faces && !same;
        }
        ck_assert_msg(count == P.cblk_ncontrib[k], "R %d root cblk %d: %d contributions, plan says %d", R, (int)k, count,
                      P.cblk_ncontrib[k]);
    }
    /* the root's panels spread by bytes (plan_root_owners): no rank holds much more than its share
     * of them (the simulation alone, with their zero-cost tasks, put most of them on one rank) */
    double *rb = calloc((size_t)R, sizeof(double)), total = 0, big = 0;
    for (cint k = r->first; k < nc; k++) {
        double b = (double)S->cblk_stride[k] * (double)(S->cblk_fcol[k + 1] - S->cblk_fcol[k]);
        ck_assert(P.cblk_rank[k] >= 0 && P.cblk_rank[k] < R);
        rb[P.cblk_rank[k]] += b;
        total += b;
        big = b > big ? b : big;
    }
    for (int q = 0; q < R && nc - r->first >= 2 * R; q++)
        ck_assert_msg(rb[q] <= 2 * total / R + big, "R %d: rank %d holds %g of the root's %g entries", R, q, rb[q], total);
    /* many more ranks than root cblks: each on its own rank */
    for (cint k = r->first; R >= 4 * (nc - r->first) && k < nc; k++)
        for (cint j = r->first; j < k; j++)
            ck_assert_msg(P.cblk_rank[j] != P.cblk_rank[k], "R %d: root cblks %d and %d both on rank %d", R, (int)j,
                          (int)k, P.cblk_rank[k]);
    free(rb);
    /* task_seq: a permutation, every edge forward */
    char *seen = calloc((size_t)D->ntasks + 1, 1);
    for (int i = 0; i < D->ntasks; i++) {
        ck_assert(P.task_seq[i] >= 0 && P.task_seq[i] < D->ntasks && !seen[P.task_seq[i]]);
        seen[P.task_seq[i]] = 1;
        for (int e = D->succ_ptr[i]; e < D->succ_ptr[i + 1]; e++)
            ck_assert_msg(P.task_seq[i] < P.task_seq[D->succ[e]], "R %d: edge %d -> %d backwards", R, i, D->succ[e]);
    }
    free(seen);
    free(tasks);
    sched_plan_free(&P);
}

START_TEST(plan_with_root)
{
    symbolic S;
    laplacian_structure(16, 16, 16, 48, &S);
    static const int ranks[] = {2, 4, 9, 64, 1024};
    for (int k = 0; k < 3; k++)
        for (size_t i = 0; i < sizeof ranks / sizeof ranks[0]; i++) check_plan(&S, ranks[i], kinds[k]);
    symbolic_free(&S);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("root");
    TCase *tc = tcase_create("root");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, grid_shapes);
    tcase_add_test(tc, choose);
    tcase_add_test(tc, choose_auto);
    tcase_add_test(tc, plan_with_root);
    suite_add_tcase(s, tc);
    return testutil_run(s);
}
