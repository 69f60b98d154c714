/*
 * canopy-simulate agrees with the real run on several ranks, run by tests/test_predict_mpi.sh
 * under mpiexec -n 2..4: the real analysis on the world communicator (2 threads per rank) and, on
 * rank 0, the virtual layout of the same size planned by src/predict/predict.c with the network figures
 * the real run measured and its cost model. Same structure, same split width and 2D levels, same
 * owner rank and thread of every column block, same predicted time, same fan-in messages, and the
 * messages of one solve as many as predicted (also with the flat top, where the ranks that compute
 * a column block's updates are not those whose blocks face it, and with the root on a grid, whose
 * column blocks send no fan-in but are solved as the others).
 */
#include "base/config.h"

#include <stdio.h>
#include <string.h>
#include <mpi.h>
#include "canopy.h"
#include "api/api.h"
#include "predict/predict.h"

static int failures;
#define CHECK(cond, ...)                                                                                    \
    do {                                                                                                    \
        if (!(cond)) {                                                                                      \
            fprintf(stderr, "FAIL: " __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                            \
            failures++;                                                                                     \
        }                                                                                                   \
    } while (0)

static void options(canopy_options *o, int threads)
{
    canopy_options_default(o);
    o->threads = threads;
    o->bind = CANOPY_BIND_NONE;
    o->ordering_threads = 2;
    snprintf(o->cost_cache, sizeof o->cost_cache, "fixed");
}

int main(int argc, char **argv)
{
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int T = 2;
    static const int dims[][3] = {{14, 14, 14}, {20, 18, 1}, {9, 9, 9}, {14, 14, 14}, {14, 14, 14}};
    for (int q = 0; q < 5; q++) {
        canopy_csc A;
        memset(&A, 0, sizeof A);
        if (rank == 0 && canopy_generate_laplacian(dims[q][0], dims[q][1], dims[q][2], dims[q][2] > 1 ? 7 : 5, &A) != CANOPY_SUCCESS)
            MPI_Abort(MPI_COMM_WORLD, 2);
        canopy_options o;
        options(&o, T);
        int flat = q == 3, grid = q == 4; /* the flat top (2D column blocks in the top 4 levels); the root on a grid */
        if (flat) o.top2d = 1, o.twod_levels = 4;
        if (grid) o.root_grid = 1;
        canopy_solver *real = NULL;
        if (canopy_create(MPI_COMM_WORLD, &o, &real) != CANOPY_SUCCESS || canopy_set_matrix(real, rank == 0 ? &A : NULL) < 0 ||
            canopy_analyze(real) < 0) {
            fprintf(stderr, "rank %d: real analysis: %s\n", rank, canopy_last_error(real));
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        const sched_plan *Q = &real->rt.plan;
        int64_t fanin = real->rt.local.fanin_msgs;
        double solve_msgs = -1;
        if (rank == 0) {
            canopy_options ov;
            options(&ov, 1);
            if (flat) ov.top2d = 1, ov.twod_levels = 4;
            if (grid) ov.root_grid = 1;
            canopy_solver *v = NULL;
            predict_report r;
            memset(&r, 0, sizeof r);
            predict_opts po = {.ranks = size, .threads = T, .ranks_per_node = real->rt.ranks_on_node, .latency = real->rt.comm_latency,
                               .bandwidth = real->rt.comm_byte_time > 0 ? 1.0 / real->rt.comm_byte_time : 1e12, .nrhs = 1};
            if (canopy_create(MPI_COMM_SELF, &ov, &v) != CANOPY_SUCCESS || canopy_set_matrix(v, &A) < 0 ||
                api_analyze_virtual(v, size, T, real->rt.ranks_on_node, po.latency, real->rt.comm_byte_time) < 0) {
                fprintf(stderr, "virtual analysis: %s\n", canopy_last_error(v));
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
            sched_plan P;
            CHECK(runtime_plan_for(&v->rt, &v->opts, &v->S, v->fact, 0, size, &P, &v->err) == CANOPY_SUCCESS, "%s",
                  v->err.msg);
            CHECK(predict_layout(v, &po, &r) == CANOPY_SUCCESS, "%s", canopy_last_error(v));
            CHECK(v->S.ncblk == real->S.ncblk && v->S.nblok == real->S.nblok, "problem %d: structures differ", q);
            CHECK(v->stats.split_width == real->stats.split_width, "problem %d: split %d vs %d", q, v->stats.split_width,
                  real->stats.split_width);
            CHECK(P.twod_levels == Q->twod_levels, "problem %d: 2D levels %d vs %d", q, P.twod_levels, Q->twod_levels);
            if (P.ncblk == Q->ncblk) {
                CHECK(!memcmp(P.cblk_rank, Q->cblk_rank, sizeof(int) * (size_t)P.ncblk), "problem %d: cblk ranks differ", q);
                CHECK(!memcmp(P.cblk_owner, Q->cblk_owner, sizeof(int) * (size_t)P.ncblk), "problem %d: owners differ", q);
            }
            /* the real rank kept its local plan only (sched_plan_keep_local): the graph's size */
            CHECK(Q->factor.ntasks == 0 && P.factor.ntasks == Q->kept_tasks, "problem %d: %d vs %d tasks", q,
                  P.factor.ntasks, Q->kept_tasks);
            CHECK(P.factor.predicted_time == Q->factor.predicted_time, "problem %d: predicted %.17g vs %.17g", q,
                  P.factor.predicted_time, Q->factor.predicted_time);
            CHECK(r.time_factorize == Q->factor.predicted_time, "problem %d: report %.17g vs %.17g", q, r.time_factorize,
                  Q->factor.predicted_time);
            CHECK((int64_t)r.msgs.total == fanin, "problem %d: %.0f fan-in messages predicted, the real plan has %lld", q,
                  r.msgs.total, (long long)fanin);
            solve_msgs = r.solve_msgs.total;
            sched_plan_free(&P);
            predict_report_free(&r);
            canopy_destroy(&v);
        }
        /* one solve: its messages, all ranks together */
        double b[20 * 18 * 14];
        canopy_stats st;
        for (int i = 0; i < A.n; i++) b[i] = 1.0 + i % 7;
        if (canopy_factorize(real) < 0 || canopy_solve(real, 1, rank == 0 ? b : NULL, A.n) < 0 ||
            canopy_get_stats(real, &st) != CANOPY_SUCCESS) {
            fprintf(stderr, "rank %d: real run: %s\n", rank, canopy_last_error(real));
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        if (rank == 0)
            CHECK((double)st.solve_comm_msgs == solve_msgs, "problem %d%s: %lld solve messages, %.0f predicted", q,
                  flat ? " (flat)" : grid ? " (root grid)" : "", (long long)st.solve_comm_msgs, solve_msgs);
        if (rank == 0) canopy_csc_free(&A);
        canopy_destroy(&real);
    }
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("%s on %d ranks x %d threads\n", all ? "FAILED" : "ok", size, T);
    MPI_Finalize();
    return all ? 1 : 0;
}
