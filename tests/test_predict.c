/*
 * canopy-simulate's predictions (src/predict/predict.c): schedules small enough to compute by hand from
 * the cost model's kernel formulas, agreement with what the real run plans on the same layout,
 * per-rank messages and memory against sched_plan_local and numeric_predict_bytes rank by rank,
 * and virtual machines up to 1,024 x 64 threads. All with the fixed cost model.
 */
#include "testutil.h"
#include "canopy.h"
#include "api/api.h"
#include "predict/predict.h"
#include "sched/trace.h"

#include <math.h>
#include <unistd.h>

static canopy_solver *make(const canopy_csc *A, int threads, int split, int levels, int amalgamation)
{
    canopy_options o;
    canopy_options_default(&o);
    o.threads = threads;
    o.split_size = split;
    o.twod_levels = levels;
    o.amalgamation = amalgamation;
    o.ordering_threads = 2;
    o.bind = CANOPY_BIND_NONE;
    snprintf(o.cost_cache, sizeof o.cost_cache, "fixed");
    canopy_solver *s = NULL;
    ck_assert_int_eq(canopy_create(MPI_COMM_SELF, &o, &s), CANOPY_SUCCESS);
    ck_assert_msg(canopy_set_matrix(s, A) == CANOPY_SUCCESS, "%s", canopy_last_error(s));
    return s;
}

static void predict(canopy_solver *s, int P, int T, double latency, double bandwidth, predict_report *r)
{
    predict_opts po = {.ranks = P, .threads = T, .latency = latency, .bandwidth = bandwidth, .nrhs = 1};
    ck_assert_msg(api_analyze_virtual(s, P, T, 1, latency, 1.0 / bandwidth) >= 0, "%s", canopy_last_error(s));
    ck_assert_msg(predict_layout(s, &po, r) == CANOPY_SUCCESS, "%s", canopy_last_error(s));
}

/*
 * Two dense 30 x 30 blocks A and B coupled to a dense 10 x 10 separator C (an arrow), SPD by
 * diagonal dominance; fundamental supernodes only, so the structure is exactly three cblks:
 * A and B (30 columns, 40 rows each) under C (10 columns).
 */
static void arrow(canopy_csc *M)
{
    const cint a = 30, c = 10, n = 2 * a + c;
    memset(M, 0, sizeof *M);
    M->n = n;
    M->kind = CANOPY_KIND_SPD;
    M->arith = CANOPY_REAL;
    M->triangle = CANOPY_TRIANGLE_BOTH;
    M->colptr = malloc(sizeof(canopy_int) * ((size_t)n + 1));
    M->rowind = malloc(sizeof(canopy_int) * (size_t)n * n);
    double *v = malloc(sizeof(double) * (size_t)n * n);
    M->values = v;
    cint p = 0;
    for (cint j = 0; j < n; j++) {
        M->colptr[j] = p;
        int bj = j < a ? 0 : j < 2 * a ? 1 : 2;
        for (cint i = 0; i < n; i++) {
            int bi = i < a ? 0 : i < 2 * a ? 1 : 2;
            if (bi != bj && bi != 2 && bj != 2) continue;
            M->rowind[p] = i;
            v[p++] = i == j ? 2.0 * n : -0.5;
        }
    }
    M->colptr[n] = p;
}

START_TEST(hand_computed_schedules)
{
    canopy_csc M;
    arrow(&M);
    sched_cost_model m;
    cost_model_fixed(&m);
    /* A's subtree: its panel (POTRF 30, TRSM of its 10 rows) and its update of C (10 x 10 x 30,
     * one contiguous facing blok: no scatter); C: POTRF 10 */
    double cA = cost_potrf(&m, 30) + cost_trsm(&m, 10, 30) + cost_gemm(&m, 10, 10, 30), cC = cost_potrf(&m, 10);
    double ps = m.peak[COST_SCATTER];
    predict_report r;

    /* 1 x 1: everything in sequence */
    canopy_solver *s = make(&M, 1, 0, 0, 0);
    predict(s, 1, 1, 1.5e-6, 12e9, &r);
    ck_assert_int_eq(s->S.ncblk, 3);
    ck_assert_double_eq_tol(r.time_factorize, 2 * cA + cC, 1e-15);
    ck_assert_double_eq_tol(r.time_1x1, 2 * cA + cC, 1e-15);
    ck_assert_double_eq_tol(r.efficiency, 1.0, 1e-12);
    ck_assert_double_eq_tol(r.critical_path, 2 * cA + cC, 1e-15);
    /* a solve on one thread: forward and backward over every panel entry */
    ck_assert_double_eq_tol(r.time_solve, 2 * (1200.0 + 1200.0 + 100.0) / ps, 1e-15);
    ck_assert_int_eq((int)r.msgs.total, 0);
    predict_report_free(&r);

    /* 1 x 2: A's and B's panels side by side (each too big for a subtree task of its own at
     * 2 threads), then their updates into C one after the other (the ordered protocol applies
     * updates into one target one at a time), then C */
    double pA = cost_potrf(&m, 30) + cost_trsm(&m, 10, 30), u = cost_gemm(&m, 10, 10, 30);
    predict(s, 1, 2, 1.5e-6, 12e9, &r);
    ck_assert_double_eq_tol(r.time_factorize, pA + 2 * u + cC, 1e-15);
    ck_assert_double_eq_tol(r.speedup, (2 * cA + cC) / (pA + 2 * u + cC), 1e-12);
    ck_assert_double_eq_tol(r.efficiency, (2 * cA + cC) / (2 * (pA + 2 * u + cC)), 1e-12);
    ck_assert_double_eq_tol(r.critical_path, pA + u + cC, 1e-15);
    ck_assert_double_eq_tol(r.work, 2 * cA + cC, 1e-15);
    ck_assert_int_eq(r.nlevels, 2);
    ck_assert_int_eq(r.levels[1].snodes, 2);
    ck_assert_double_eq_tol(r.levels[1].busy, 2 * cA, 1e-15);
    ck_assert_double_eq_tol(r.levels[0].busy, cC, 1e-15);
    ck_assert_double_eq_tol(r.levels[0].idle + r.levels[1].idle, 2 * u + cC, 1e-15);
    predict_report_free(&r);

    /* 2 x 1: A and B on a rank each, C on one of them after the other's fan-in buffer (C's panel:
     * 10 x 10 doubles) has crossed: latency + 800 bytes / bandwidth */
    double lat = 1e-3, bw = 1e6, delay = lat + 800.0 / bw;
    predict(s, 2, 1, lat, bw, &r);
    ck_assert_double_eq_tol(r.time_factorize, cA + delay + cC, 1e-12);
    ck_assert_double_eq_tol(r.efficiency, (2 * cA + cC) / (2 * (cA + delay + cC)), 1e-9);
    ck_assert_int_eq((int)r.msgs.total, 1);
    ck_assert_int_eq((int)r.msgs.max, 1);
    ck_assert_int_eq((int)r.msgs.min, 0);
    ck_assert_double_eq(r.bytes.total, 800);
    /* without fan-in: A's one update into C, 10 x 10 */
    ck_assert_int_eq((int)r.update_msgs, 1);
    ck_assert_int_eq((int)r.update_bytes, 800);
    /* factor: 1200 + 100 entries on C's rank, 1200 on the other; buffers: C's panel on both
     * (the sent one, the received one), and on C's rank the exchange's sink of that size */
    ck_assert_double_eq(r.factor_bytes.max, 1300 * 8.0);
    ck_assert_double_eq(r.factor_bytes.min, 1200 * 8.0);
    ck_assert_double_eq(r.fanin_bytes.total, 2400);
    ck_assert_double_eq(r.fanin_bytes.max, 1600);
    /* the solve: C's two members reduce then broadcast a 10-entry block: one message each way */
    ck_assert_double_eq(r.solve_msgs.total, 2);
    ck_assert_double_eq(r.solve_msgs.min, 1);
    ck_assert_double_eq(r.solve_bytes.total, 160);
    /* forward A | B, the partial sum to C's rank, C, backward C, x_C to the other rank, B | A */
    double hop = lat + 80.0 / bw;
    ck_assert_double_eq_tol(r.time_solve, 1200.0 / ps + hop + 2 * 100.0 / ps + hop + 1200.0 / ps, 1e-12);
    predict_report_free(&r);
    canopy_destroy(&s);
    free(M.colptr);
    free(M.rowind);
    free(M.values);
}
END_TEST

static void laplacian(cint n, canopy_csc *A)
{
    ck_assert_int_eq(canopy_generate_laplacian(n, n, n, 7, A), CANOPY_SUCCESS);
}

/* The virtual layout plans what the real solver on that layout plans: one rank, T threads. */
START_TEST(agrees_with_real_plan)
{
    canopy_csc A;
    laplacian(14, &A);
    static const int Ts[] = {2, 3, 5, 8};
    for (int q = 0; q < 4; q++) {
        int T = Ts[q];
        canopy_solver *real = make(&A, T, -1, -1, 1);
        ck_assert_msg(canopy_analyze(real) >= 0, "%s", canopy_last_error(real));
        canopy_solver *v = make(&A, 1, -1, -1, 1);
        predict_report r;
        predict(v, 1, T, 1.5e-6, 12e9, &r);
        sched_plan P;
        ck_assert_int_eq(runtime_plan_for(&v->rt, &v->opts, &v->S, v->fact, 0, 1, &P, &v->err), CANOPY_SUCCESS);
        const sched_plan *Q = &real->rt.plan;
        ck_assert_int_eq(v->S.ncblk, real->S.ncblk);
        ck_assert_int_eq(v->S.nblok, real->S.nblok);
        ck_assert_int_eq(v->stats.split_width, real->stats.split_width);
        ck_assert_int_eq(P.twod_levels, Q->twod_levels);
        ck_assert_int_eq(P.factor.ntasks, Q->factor.ntasks);
        ck_assert_int_eq(memcmp(P.cblk_owner, Q->cblk_owner, sizeof(int) * (size_t)P.ncblk), 0);
        ck_assert_int_eq(memcmp(P.factor.owner, Q->factor.owner, sizeof(int) * (size_t)P.factor.ntasks), 0);
        ck_assert_double_eq(P.factor.predicted_time, Q->factor.predicted_time);
        ck_assert_double_eq(r.time_factorize, Q->factor.predicted_time);
        ck_assert_double_eq(r.time_factorize, real->stats.time_factorize_predicted);
        sched_plan_free(&P);
        predict_report_free(&r);
        canopy_destroy(&v);
        canopy_destroy(&real);
    }
    canopy_csc_free(&A);
}
END_TEST

/* split=auto with 2d-levels=auto (src/api/analyze.c's search): the levels kept are the ones every
 * plan of the structure is built with, no level above gains 1% on them, and a width other than the
 * default moved its levels until the level below is 1% slower. At least one layout keeps a width
 * other than the default (the search's third step runs). */
START_TEST(split_search_choice)
{
    canopy_csc A;
    laplacian(36, &A);
    static const int lay[][2] = {{1, 8}, {4, 4}, {16, 4}, {64, 16}};
    int other = 0;
    for (int q = 0; q < 4; q++) {
        canopy_solver *v = make(&A, 1, -1, -1, 1);
        predict_report r;
        predict(v, lay[q][0], lay[q][1], 1.5e-6, 12e9, &r);
        int L = v->rt.twod_levels_kept - 1, R = lay[q][0];
        ck_assert_int_ge(L, 0);
        double p[3];
        for (int d = -1; d <= 1; d++) {
            canopy_options o = v->opts;
            o.twod_levels = L + d;
            int got = -1;
            p[d + 1] = INFINITY;
            if (L + d >= 0)
                ck_assert_int_eq(runtime_predict(&v->rt, &o, &v->S, v->fact, 0, R, 1, &p[d + 1], &got, &v->err), CANOPY_SUCCESS);
        }
        ck_assert_double_eq(p[1], r.time_factorize);
        ck_assert_msg(!(p[2] < 0.99 * p[1]), "%d x %d: level %d gains %g -> %g", lay[q][0], lay[q][1], L + 1, p[1], p[2]);
        if (v->stats.split_width != CANOPY_AUTO_SPLIT) {
            other++;
            ck_assert_msg(L == 0 || p[1] < 0.99 * p[0], "%d x %d: level %d within 1%% of %d", lay[q][0], lay[q][1], L, L - 1);
        }
        predict_report_free(&r);
        canopy_destroy(&v);
    }
    ck_assert_int_gt(other, 0);
    canopy_csc_free(&A);
}
END_TEST

/* Every rank's messages and memory equal sched_plan_local's and numeric_predict_bytes'. */
static void check_ranks(canopy_solver *s, int P, int T, const predict_report *r)
{
    sched_plan G;
    ck_assert_int_eq(runtime_plan_for(&s->rt, &s->opts, &s->S, s->fact, 0, P, &G, &s->err), CANOPY_SUCCESS);
    ck_assert_double_eq(G.factor.predicted_time, r->time_factorize);
    double sent_max = 0, sent_min = 1e300, sent = 0, mem_max = 0, mem_min = 1e300, own_min = 1e300;
    int64_t fanin_msgs = -1;
    double tot = (double)s->S.cblk_coef[s->S.ncblk];
    for (int q = 0; q < P; q++) {
        sched_local L;
        ck_assert_int_eq(sched_plan_local(&s->S, &G, q, 1, &L, &s->err), CANOPY_SUCCESS);
        if (fanin_msgs < 0) fanin_msgs = L.fanin_msgs;
        double own = 0;
        for (cint k = 0; k < s->S.ncblk; k++)
            if (G.cblk_rank[k] == q) own += (double)(s->S.cblk_coef[k + 1] - s->S.cblk_coef[k]);
        double mem = numeric_predict_bytes(&s->S, &L, s->fact, CANOPY_REAL, s->opts.scheduler, (int64_t)(tot > 0 ? s->stats.nnz * own / tot : 0));
        sent += L.nsend;
        sent_max = fmax(sent_max, L.nsend);
        sent_min = fmin(sent_min, L.nsend);
        mem_max = fmax(mem_max, mem);
        mem_min = fmin(mem_min, mem);
        own_min = fmin(own_min, own);
        sched_local_free(&L);
    }
    ck_assert_double_eq(r->msgs.total, (double)fanin_msgs);
    ck_assert_double_eq(r->msgs.total, sent);
    ck_assert_double_eq(r->msgs.max, sent_max);
    ck_assert_double_eq(r->msgs.min, sent_min);
    ck_assert_double_eq_tol(r->memory_bytes.max, mem_max, 1e-9 * mem_max);
    ck_assert_double_eq_tol(r->memory_bytes.min, mem_min, 1e-9 * mem_max);
    ck_assert_double_eq(r->factor_bytes.min, own_min * 8.0);
    sched_plan_free(&G);
    (void)T;
}

/* Plan invariants of a prediction, any layout. */
static void check_invariants(const predict_report *r, int P, int T)
{
    ck_assert_int_eq(r->ranks, P);
    ck_assert_int_eq(r->threads, T);
    ck_assert(r->time_factorize > 0);
    ck_assert(r->time_factorize >= r->critical_path * (1 - 1e-12));
    ck_assert(r->time_factorize * P * T >= r->work * (1 - 1e-12));
    ck_assert(r->efficiency > 0 && r->efficiency <= 1 + 1e-9);
    ck_assert(r->efficiency_loaded >= r->efficiency * (1 - 1e-12) && r->efficiency_loaded <= 1 + 1e-9);
    ck_assert(r->time_solve > 0);
    double busy = 0, all = 0;
    int threads0 = 0;
    for (int l = 0; l < r->nlevels; l++) {
        busy += r->levels[l].busy;
        all += r->levels[l].busy + r->levels[l].idle;
        ck_assert(r->levels[l].idle >= 0);
        if (l == 0) threads0 = r->levels[l].threads_max;
    }
    ck_assert_int_eq(threads0, P * T);
    ck_assert_double_eq_tol(busy, r->work, 1e-9 * r->work);
    /* every thread's time is either busy or idle at some level */
    ck_assert_double_eq_tol(all, (double)P * T * r->time_factorize, 1e-9 * P * T * r->time_factorize);
    ck_assert(r->memory_bytes.min > 0);
    ck_assert(r->solve_msgs.total >= 2 * 0);
}

START_TEST(ranks_against_local_plans)
{
    canopy_csc A;
    laplacian(12, &A);
    static const int layouts[][2] = {{2, 1}, {3, 2}, {4, 4}, {8, 2}, {7, 3}};
    for (int q = 0; q < 5; q++) {
        int P = layouts[q][0], T = layouts[q][1];
        canopy_solver *s = make(&A, 1, -1, -1, 1);
        predict_report r;
        predict(s, P, T, 2e-6, 5e9, &r);
        check_invariants(&r, P, T);
        check_ranks(s, P, T, &r);
        predict_report_free(&r);
        canopy_destroy(&s);
    }
    canopy_csc_free(&A);
}
END_TEST

/* Thousands of virtual threads plan without error; ranks that own nothing included; the trace
 * of the simulated schedule reads back. */
START_TEST(large_virtual_machines)
{
    canopy_csc A;
    laplacian(16, &A);
    static const int layouts[][2] = {{1024, 64}, {256, 16}, {64, 16}, {1, 64}, {1000, 3}};
    char path[] = "/tmp/canopy_predict_XXXXXX";
    int fd = mkstemp(path);
    ck_assert(fd >= 0);
    close(fd);
    for (int q = 0; q < 5; q++) {
        int P = layouts[q][0], T = layouts[q][1];
        canopy_solver *s = make(&A, 1, -1, -1, 1);
        predict_report r;
        predict_opts po = {.ranks = P, .threads = T, .latency = 1.5e-6, .bandwidth = 12e9, .nrhs = 2, .trace = path};
        ck_assert_msg(api_analyze_virtual(s, P, T, 1, po.latency, 1 / po.bandwidth) >= 0, "%s", canopy_last_error(s));
        ck_assert_msg(predict_layout(s, &po, &r) == CANOPY_SUCCESS, "%d x %d: %s", P, T, canopy_last_error(s));
        check_invariants(&r, P, T);
        if (P >= 256) ck_assert_double_eq(r.factor_bytes.min, 0); /* more ranks than subtrees */
        if (P <= 256) check_ranks(s, P, T, &r);
        sched_trace_file *f = NULL;
        canopy_err err = {0};
        ck_assert_msg(sched_trace_read(path, &f, &err) == CANOPY_SUCCESS, "%s", err.msg);
        ck_assert_int_eq(f->nphases, 1);
        ck_assert_int_eq(f->phases[0].nthreads, P * T);
        ck_assert_int_eq(f->phases[0].ntasks, r.tasks);
        ck_assert_double_eq_tol(f->phases[0].predicted, r.time_factorize, 1e-6 * r.time_factorize);
        sched_trace_file_free(f);
        predict_report_free(&r);
        canopy_destroy(&s);
    }
    unlink(path);
    canopy_csc_free(&A);
}
END_TEST

/* Ranks sharing a node price their kernels as loaded by all the node's busy cores: with a model that
 * runs GEMM and scatter twice as slowly on 8 busy cores, 4 ranks x 2 threads on one node do 2 / (1 +
 * 1/7) = 1.75 times the work of the same ranks on 4 nodes (2 busy cores each) less the kernels' fixed
 * latencies (1.56 here), and the 1 x 1 reference stays unloaded. No messages to blur it: latency 0, a
 * fast network. */
START_TEST(ranks_per_node_load)
{
    canopy_csc A;
    laplacian(14, &A);
    predict_report r[2];
    for (int q = 0; q < 2; q++) {
        canopy_solver *s = make(&A, 1, 128, 0, 1);
        ck_assert_int_eq(runtime_cost(&s->rt, &s->opts, &s->err), CANOPY_SUCCESS);
        s->rt.cost.load_threads = 8;
        s->rt.cost.load_gemm = s->rt.cost.load_scatter = 2;
        predict_opts po = {.ranks = 4, .threads = 2, .ranks_per_node = q ? 4 : 1, .latency = 0, .bandwidth = 1e15, .nrhs = 1};
        ck_assert_msg(api_analyze_virtual(s, 4, 2, q ? 4 : 1, 0, 1e-15) >= 0, "%s", canopy_last_error(s));
        ck_assert_msg(predict_layout(s, &po, &r[q]) == CANOPY_SUCCESS, "%s", canopy_last_error(s));
        canopy_destroy(&s);
    }
    ck_assert_msg(r[1].work > 1.4 * r[0].work && r[1].work < 1.75 * r[0].work, "work %g on one node, %g on four",
                  r[1].work, r[0].work);
    ck_assert_msg(r[1].time_factorize > 1.3 * r[0].time_factorize, "time %g on one node, %g on four", r[1].time_factorize,
                  r[0].time_factorize);
    ck_assert_msg(r[1].time_1x1 == r[0].time_1x1, "the 1 x 1 reference moved: %g vs %g", r[1].time_1x1, r[0].time_1x1);
    predict_report_free(&r[0]);
    predict_report_free(&r[1]);
    canopy_csc_free(&A);
}
END_TEST

START_TEST(errors)
{
    canopy_csc A;
    laplacian(6, &A);
    canopy_solver *s = make(&A, 1, -1, -1, 1);
    predict_report r;
    predict_opts po = {.ranks = 2, .threads = 2, .latency = 1e-6, .bandwidth = 1e9, .nrhs = 1};
    /* not analyzed for that layout */
    ck_assert_int_eq(predict_layout(s, &po, &r), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(api_analyze_virtual(s, 0, 2, 1, 1e-6, 1e-9), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(api_analyze_virtual(s, 2, 2, 1, -1, 1e-9), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(api_analyze_virtual(s, 2, 2, 0, 1e-6, 1e-9), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(api_analyze_virtual(s, 2, 2, 3, 1e-6, 1e-9), CANOPY_ERR_ARGUMENT); /* more than the ranks */
    ck_assert_int_eq(api_analyze_virtual(s, 2, 2, 2, 1e-6, 1e-9), CANOPY_SUCCESS);
    /* analyzed for two ranks on one node, asked for one rank per node */
    ck_assert_int_eq(predict_layout(s, &po, &r), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(api_analyze_virtual(s, 2, 2, 1, 1e-6, 1e-9), CANOPY_SUCCESS);
    po.nrhs = 0;
    ck_assert_int_eq(predict_layout(s, &po, &r), CANOPY_ERR_ARGUMENT);
    po.nrhs = 1;
    po.trace = "/nonexistent-dir/x.trace";
    ck_assert_int_ne(predict_layout(s, &po, &r), CANOPY_SUCCESS);
    /* a virtual solver never factorizes */
    ck_assert_int_lt(canopy_factorize(s), 0);
    canopy_destroy(&s);
    canopy_csc_free(&A);
}
END_TEST

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    Suite *su = suite_create("predict");
    TCase *tc = tcase_create("predict");
    tcase_set_timeout(tc, 900);
    tcase_add_test(tc, hand_computed_schedules);
    tcase_add_test(tc, agrees_with_real_plan);
    tcase_add_test(tc, split_search_choice);
    tcase_add_test(tc, ranks_against_local_plans);
    tcase_add_test(tc, large_virtual_machines);
    tcase_add_test(tc, ranks_per_node_load);
    tcase_add_test(tc, errors);
    suite_add_tcase(su, tc);
    int rc = testutil_run(su);
    MPI_Finalize();
    return rc;
}
