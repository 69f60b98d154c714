/*
 * The phases on several ranks (see solver.h): what api.c does on top of the one-rank path when
 * the communicator has more than one rank. Rank 0 reads, orders and analyzes; the block
 * structure, the cost model and the communication model are then shared, so that every rank
 * builds the same two-level plan and takes its share of it (sched/distribute.h). The factor is
 * distributed; the solves are driven by rank 0 and run on all ranks, except the refinement of a
 * distributed matrix, which every rank runs over its own rows (api_refine_dist).
 */
#include "solver.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "comm/agree.h"
#include "comm/peerstats.h"
#include "comm/pingpong.h"
#include "comm/share.h"
#include "dist_matrix.h"
#include "dist_vector.h"
#include "refine.h"
#include "matrix.h"

static const char *level_name(int level)
{
    switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    default: return "MPI_THREAD_MULTIPLE";
    }
}

canopy_status dist_create(canopy_solver *s)
{
    /* only the communication thread(s), or the workers under a lock (comm-threads=0), call MPI
     * while a factorization runs; never two at once except with comm-threads=2 */
    int provided = MPI_THREAD_SINGLE;
    MPI_Query_thread(&provided);
    int need = comm_exchange_thread_level(s->opts.comm_threads);
    if (provided <= MPI_THREAD_FUNNELED && s->opts.comm_threads == 1) {
        /* MPI started by someone else at MPI_THREAD_FUNNELED (PETSc's default) or with a plain
         * MPI_Init (MPI_THREAD_SINGLE with Open MPI and MPICH: most existing codes): the calling
         * thread drives the factorization's messages itself, as the communication thread would,
         * and the workers never call MPI. SINGLE is taken as FUNNELED, as MUMPS with OpenMP
         * threads does: the workers exist but only the thread that initialized MPI calls it. */
        static atomic_int said;
        s->opts.comm_threads = COMM_FUNNELED;
        need = provided;
        if (s->rank == 0 && s->opts.verbose >= 1 && !atomic_exchange(&said, 1))
            api_say(s, 1, "MPI provides %s: the calling thread drives MPI, the workers never call it (comm-threads=1 "
                          "with its own thread needs MPI_THREAD_SERIALIZED)",
                    level_name(provided));
    }
    if (s->err.status == CANOPY_SUCCESS && provided < need)
        /* comm-threads=0 (idle workers call MPI) needs SERIALIZED, 2 (two threads at once)
         * MULTIPLE; comm-threads=1 always runs, so that is the advice that needs no new code */
        canopy_err_set(&s->err, CANOPY_ERR_MPI,
                       "Canopy on %d ranks with comm-threads=%d needs MPI at %s or higher, and MPI was initialized at "
                       "%s: use comm-threads=1%s (PETSc: -mat_canopy_comm_threads 1), or initialize MPI with "
                       "MPI_Init_thread(..., %s, ...)",
                       s->nranks, s->opts.comm_threads, level_name(need), level_name(provided),
                       provided >= MPI_THREAD_SERIALIZED ? " or 0" : "", level_name(need));
    if (comm_agree(s->comm, &s->err) < 0) return s->err.status;
    /* every rank plans for the same thread count: the smallest */
    int mine = s->have_rt ? s->rt.nthreads : 1, least = mine;
    MPI_Allreduce(&mine, &least, 1, MPI_INT, MPI_MIN, s->comm);
    if (s->have_rt && least != mine) {
        canopy_options o = s->opts;
        o.threads = least;
        runtime_free(&s->rt);
        runtime_init(&s->rt, &o, s->ranks_on_node, s->node_rank, &s->err);
    }
    s->rt.nranks = s->nranks;
    s->rt.rank = s->rank;
    s->rt.comm = s->comm;
    s->stats.threads_per_rank = least;
    return comm_agree(s->comm, &s->err);
}

/* A fingerprint of the plan: every rank must have built the same one. */
static uint64_t plan_hash(const runtime *rt)
{
    uint64_t h = 1469598103934665603ull;
    const sched_plan *P = &rt->plan;
    for (cint k = 0; k < P->ncblk; k++) h = (h ^ (uint64_t)(P->cblk_rank[k] * 131 + P->cblk_owner[k])) * 1099511628211ull;
    return (h ^ (uint64_t)P->factor.ntasks) * 1099511628211ull;
}

void dist_pingpong(canopy_solver *s)
{
    if (s->have_pingpong) return;
    comm_pingpong(s->comm, &s->rt.comm_latency, &s->rt.comm_byte_time, &s->err);
    s->have_pingpong = 1;
}

canopy_status dist_analyze(canopy_solver *s)
{
    canopy_status st = s->symbolic_everywhere ? comm_agree(s->comm, &s->err)
                                              : comm_share_symbolic(s->comm, &s->S, s->err.status, &s->err);
    if (st < 0) return st;
    int head[2] = {(int)s->fact, (int)s->A.arith};
    MPI_Bcast(head, 2, MPI_INT, 0, s->comm);
    s->fact = (canopy_factorization)head[0];
    s->arith = (canopy_arith)head[1];
    /* one cost model for all: rank 0's */
    if (s->rank == 0 && !s->rt.have_cost) {
        if (cost_model_load(&s->rt.cost, s->opts.cost_cache, &s->err) == CANOPY_SUCCESS) s->rt.have_cost = 1;
    }
    if ((st = comm_agree(s->comm, &s->err)) < 0) return st;
    sched_cost_model cm = s->rt.cost;
    MPI_Bcast(&cm, (int)sizeof cm, MPI_BYTE, 0, s->comm);
    runtime_set_cost(&s->rt, &cm);
    dist_pingpong(s);
    if (s->rt.have_tags) comm_tags_free(&s->rt.tags);
    s->rt.have_tags = 0;
    if (comm_tags_create(s->comm, (int64_t)s->S.ncblk * COMM_IDS_PER_CBLK, &s->rt.tags, &s->err) == CANOPY_SUCCESS)
        s->rt.have_tags = 1;
    if ((st = comm_agree(s->comm, &s->err)) < 0) return st;
    runtime_plan(&s->rt, &s->opts, &s->S, s->fact, s->arith == CANOPY_COMPLEX, &s->err);
    if ((st = comm_agree(s->comm, &s->err)) < 0) return st;
    uint64_t h = plan_hash(&s->rt), lo = h, hi = h;
    MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, s->comm);
    MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, s->comm);
    if (lo != hi)
        return canopy_err_set(&s->err, CANOPY_ERR_INTERNAL,
                              "the ranks built different plans (different cost models or binaries?)");
    /* predicted memory: this rank's panels, fan-in buffers, workspaces and its share of A */
    double own = 0, tot = (double)s->S.cblk_coef[s->S.ncblk];
    for (cint k = 0; k < s->S.ncblk; k++)
        if (s->rt.local.cblk_rank[k] == s->rank) own += (double)(s->S.cblk_coef[k + 1] - s->S.cblk_coef[k]);
    double nnz = (double)s->stats.nnz;
    MPI_Bcast(&nnz, 1, MPI_DOUBLE, 0, s->comm);
    s->predicted_bytes =
        numeric_predict_bytes(&s->S, &s->rt.local, s->fact, s->arith, (int64_t)(tot > 0 ? nnz * own / tot : 0));
    double worst = s->predicted_bytes;
    MPI_Allreduce(&s->predicted_bytes, &worst, 1, MPI_DOUBLE, MPI_MAX, s->comm);
    s->stats.memory_predicted_rank_max = worst;
    return CANOPY_SUCCESS;
}

/* Memory this process may use: the option, else MemAvailable shared by the ranks of the node. */
static double memory_limit(const canopy_solver *s)
{
    if (s->opts.memory_limit > 0) return s->opts.memory_limit;
    double avail = 0;
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %lf kB", &avail) == 1) {
                avail *= 1024;
                break;
            }
        fclose(f);
    }
    if (!(avail > 0)) {
        long pages = sysconf(_SC_AVPHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
        avail = pages > 0 && psz > 0 ? (double)pages * (double)psz : 0;
    }
    /* the memory already held by our factors is reusable */
    avail += (double)numeric_bytes(&s->F);
    return avail > 0 ? avail / (s->ranks_on_node > 0 ? s->ranks_on_node : 1) : INFINITY;
}

static void summary_stats(MPI_Comm comm, double mine, double *min, double *max, double *median, double *stddev)
{
    comm_summary cs = {0};
    canopy_err e = {0};
    comm_summary_allranks(comm, mine, &cs, &e);
    if (min) *min = cs.min;
    if (max) *max = cs.max;
    if (median) *median = cs.median;
    if (stddev) *stddev = cs.stddev;
}

/* The scaled copy of A (rank 0's, or every rank's block columns of a distributed matrix), rebuilt
 * when the last factorization released it; a distributed matrix that is not scaled needs none. */
static void scaled_matrix(canopy_solver *s)
{
    if ((s->rank == 0 || distm_active(s)) && api_factor_source(s) == &s->As && s->As.colptr == NULL &&
        s->err.status == CANOPY_SUCCESS)
        scaling_apply(&s->A, &s->sc, &s->As, &s->err);
}

static canopy_status factorize_once(canopy_solver *s, double threshold)
{
    numeric_exec x;
    scaled_matrix(s);
    runtime_plan(&s->rt, &s->opts, &s->S, s->fact, s->arith == CANOPY_COMPLEX, &s->err);
    canopy_status st = comm_agree(s->comm, &s->err);
    if (st < 0) return st;
    runtime_exec(&s->rt, &s->opts, &x);
    numeric_set_exec(&s->F, &x);
    /* the scaled copy goes once its entries are out: it is not needed again until the next
     * factorization, and the peak is the factor's time */
    canopy_csc *src = s->rank == 0 || distm_active(s) ? api_factor_source(s) : NULL;
    numeric_factorize_dist(&s->F, &s->S, src, src == &s->As, s->arith, s->fact, threshold, &s->err);
    return comm_agree(s->comm, &s->err);
}

canopy_status dist_factorize(canopy_solver *s)
{
    double t0 = canopy_wtime();
    /* memory: refuse before allocating, on every rank, when some rank would not fit */
    double limit = memory_limit(s);
    s->stats.memory_limit_rank = limit;
    if (s->opts.memory_check && s->predicted_bytes > limit)
        canopy_err_set(&s->err, CANOPY_ERR_NOMEM,
                       "the factorization needs about %.3g GB on rank %d but only %.3g GB are available to it "
                       "(option memory-limit, or memory-check=off to proceed anyway)",
                       s->predicted_bytes * 1e-9, s->rank, limit * 1e-9);
    canopy_status st = comm_agree(s->comm, &s->err);
    if (st < 0) return st;
    double threshold = 0;
    scaled_matrix(s);
    if (distm_active(s)) {
        /* the norms of a distributed matrix: row sums over every rank's columns */
        if ((st = comm_agree(s->comm, &s->err)) < 0) return st;
        canopy_csc *src = api_factor_source(s);
        s->anorm = distm_norm_inf(s, src);
        if (!isfinite(s->anorm)) s->anorm = distm_abs_max(s, src);
        s->anorm_input = src == &s->A ? s->anorm : distm_norm_inf(s, &s->A);
        if (!(s->anorm > 0)) canopy_err_set(&s->err, CANOPY_ERR_SINGULAR, "the matrix is zero");
        threshold = fmax(s->opts.pivot_threshold * s->anorm, DBL_MIN);
    } else if (s->rank == 0 && s->err.status == CANOPY_SUCCESS) {
        s->anorm = matrix_norm_inf(&s->As);
        if (!isfinite(s->anorm)) s->anorm = matrix_abs_max(&s->As);
        if (!(s->anorm > 0)) canopy_err_set(&s->err, CANOPY_ERR_SINGULAR, "the matrix is zero");
        threshold = fmax(s->opts.pivot_threshold * s->anorm, DBL_MIN);
    }
    if ((st = comm_agree(s->comm, &s->err)) < 0) return st;
    MPI_Bcast(&threshold, 1, MPI_DOUBLE, 0, s->comm);
    st = factorize_once(s, threshold);
    if (st == CANOPY_ERR_NOT_SPD && s->opts.factorization == CANOPY_FACT_AUTO) {
        /* the documented fallback of the one-rank path (api.c), agreed: every rank switches */
        canopy_err_clear(&s->err);
        numeric_free(&s->F);
        int herm = 0;
        if (s->rank == 0) herm = s->A.kind == CANOPY_KIND_HERMITIAN && s->A.arith == CANOPY_COMPLEX;
        MPI_Bcast(&herm, 1, MPI_INT, 0, s->comm);
        s->fact = herm ? CANOPY_FACT_LU : CANOPY_FACT_LDLT;
        st = factorize_once(s, threshold);
    }
    if (st < 0) return st;
    canopy_stats *sts = &s->stats;
    int64_t perturbed = s->F.perturbed, all = 0;
    MPI_Allreduce(&perturbed, &all, 1, MPI_INT64_T, MPI_SUM, s->comm);
    s->F.perturbed = all;
    sts->time_factorize = canopy_wtime() - t0;
    sts->factorization = s->fact;
    sts->perturbed_pivots = all;
    sts->flops = s->F.flops;
    sts->gflops_factorize = sts->time_factorize > 0 ? s->F.flops / sts->time_factorize * 1e-9 : 0;
    sts->factor_bytes = numeric_bytes(&s->F);
    runtime_report_factorize(&s->rt, &s->opts, &s->F, sts);
    sts->comm_threads = s->opts.comm_threads;
    sts->tree = s->opts.tree;
    /* communication: per peer on rank 0 (heat map), per rank summaries, totals */
    int R = s->nranks;
    const int64_t *pc = s->F.peer_counts;
    int64_t msent = 0, bsent = 0;
    for (int r = 0; r < R; r++) {
        msent += pc[r];
        bsent += pc[R + r];
    }
    if (s->rank == 0 && s->comm_bytes == NULL) {
        s->comm_bytes = canopy_calloc((size_t)R * R, sizeof(int64_t), "communication matrix", &s->err);
        s->comm_msgs = canopy_calloc((size_t)R * R, sizeof(int64_t), "communication matrix", &s->err);
    }
    int64_t dummy[2];
    int have = s->comm_bytes && s->comm_msgs;
    MPI_Gather(pc + R, R, MPI_INT64_T, s->rank == 0 && have ? s->comm_bytes : dummy, s->rank == 0 && have ? R : 0,
               MPI_INT64_T, 0, s->comm);
    MPI_Gather(pc, R, MPI_INT64_T, s->rank == 0 && have ? s->comm_msgs : dummy, s->rank == 0 && have ? R : 0,
               MPI_INT64_T, 0, s->comm);
    summary_stats(s->comm, (double)bsent, &sts->comm_bytes_rank_min, &sts->comm_bytes_rank_max,
                  &sts->comm_bytes_rank_median, &sts->comm_bytes_rank_stddev);
    summary_stats(s->comm, (double)msent, &sts->comm_msgs_rank_min, &sts->comm_msgs_rank_max,
                  &sts->comm_msgs_rank_median, &sts->comm_msgs_rank_stddev);
    int64_t tot[2] = {msent, bsent}, sum[2] = {0, 0};
    MPI_Allreduce(tot, sum, 2, MPI_INT64_T, MPI_SUM, s->comm);
    sts->comm_msgs = sum[0];
    sts->comm_bytes = sum[1];
    double sb = s->arith == CANOPY_COMPLEX ? 16.0 : 8.0;
    sts->comm_msgs_without_fanin = s->rt.local.update_msgs;
    sts->comm_bytes_without_fanin = (int64_t)((double)s->rt.local.update_entries * sb);
    summary_stats(s->comm, (double)sts->factor_bytes, &sts->factor_bytes_rank_min, &sts->factor_bytes_rank_max, NULL,
                  NULL);
    size_t peak = canopy_mem_peak();
    double used = peak > s->mem_base ? (double)(peak - s->mem_base) : 0;
    summary_stats(s->comm, used, &sts->peak_memory_rank_min, &sts->peak_memory_rank_max, NULL, NULL);
    api_memory_figures(s, used);
    if (s->rank == 0 && have && s->opts.comm_heatmap[0]) {
        canopy_err herr = {0};
        if (comm_heatmap_write(s->opts.comm_heatmap, R, s->comm_bytes, "bytes sent, last factorization", &herr) !=
            CANOPY_SUCCESS)
            fprintf(stderr, "canopy: warning: %s\n", herr.msg);
    }
    return s->F.perturbed > 0 ? CANOPY_WARN_PIVOTS_PERTURBED : CANOPY_SUCCESS;
}

/* rank 0's orders to the serving ranks (dist_serve_solves): { what, operator }, what = nrhs >= 0 a
 * solve, -1 done, -2 - nrhs a product with a distributed matrix; operator = s->trans */
static int order_serving(canopy_solver *s, int what)
{
    int cmd[2] = {what, s->trans};
    comm_quiet_barrier(s->comm);
    MPI_Bcast(cmd, 2, MPI_INT, 0, s->comm);
    return cmd[0];
}

canopy_status api_apply_solve(canopy_solver *s, cint nrhs, void *y)
{
    if (s->nranks == 1) return numeric_solve(&s->F, nrhs, y, s->A.n, &s->err);
    order_serving(s, (int)nrhs);
    return numeric_solve_dist(&s->F, nrhs, y, &s->err);
}

canopy_status api_apply_matrix(canopy_solver *s, cint nrhs, double alpha, const void *x, cint ldx, double beta,
                               void *y, cint ldy)
{
    if (s->rhalo != NULL) return distv_spmv(s, s->rhalo, nrhs, alpha, x, beta, y); /* ld = s->rnl */
    if (!distm_active(s)) {
        if (s->trans) matrix_spmv_t(&s->A, nrhs, alpha, x, ldx, beta, y, ldy);
        else matrix_spmv(&s->A, nrhs, alpha, x, ldx, beta, y, ldy);
        return CANOPY_SUCCESS;
    }
    order_serving(s, -2 - (int)nrhs);
    return distm_spmv(s, nrhs, alpha, x, ldx, beta, y, ldy);
}

void api_reduce(canopy_solver *s, double *v, int count, bool max)
{
    if (s->rhalo == NULL) return;
    if (max)
        for (int i = 0; i < count; i++)
            if (isnan(v[i])) v[i] = INFINITY; /* MPI_MAX need not propagate a NaN */
    if (MPI_Allreduce(MPI_IN_PLACE, v, count, MPI_DOUBLE, max ? MPI_MAX : MPI_SUM, s->comm) != MPI_SUCCESS)
        canopy_err_set(&s->err, CANOPY_ERR_MPI, "reduction over the ranks failed");
}

canopy_status api_agree(canopy_solver *s)
{
    return s->rhalo != NULL ? comm_agree(s->comm, &s->err) : s->err.status;
}

canopy_status api_refine_dist(canopy_solver *s, cint nrhs, cint nloc, const cint *rows, const void *b, cint ldb,
                              void *x, cint ldx)
{
    const cint n = s->A.n, c0 = distm_first_col(n, s->nranks, s->rank);
    const cint nl = distm_first_col(n, s->nranks, s->rank + 1) - c0;
    const size_t vs = s->A.arith == CANOPY_COMPLEX ? 2 * sizeof(double) : sizeof(double);
    distv_plan plan;
    distv_halo halo;
    if (distv_plan_build(s, nloc, rows, &plan) < 0) return s->err.status;
    if (distv_halo_build(s, nrhs, &halo) < 0) {
        distv_plan_free(&plan);
        return s->err.status;
    }
    void *bl = canopy_alloc((size_t)nl * nrhs + 1, vs, "refinement right-hand side", &s->err);
    void *xl = canopy_alloc((size_t)nl * nrhs + 1, vs, "refinement iterate", &s->err);
    cint *own = canopy_alloc((size_t)nl + 1, sizeof(cint), "refinement rows", &s->err);
    if (own)
        for (cint i = 0; i < nl; i++) own[i] = c0 + i;
    if (comm_agree(s->comm, &s->err) == CANOPY_SUCCESS && distv_to_blocks(s, &plan, nrhs, b, ldb, bl) == CANOPY_SUCCESS &&
        distv_to_blocks(s, &plan, nrhs, x, ldx, xl) == CANOPY_SUCCESS) {
        s->rhalo = &halo;
        s->rnl = nl;
        s->rrows = own;
        canopy_status st = refine_run(s, nrhs, bl, nl, xl, nl);
        s->rhalo = NULL;
        s->rrows = NULL;
        /* a warning (not converged) still hands back the best iterate */
        canopy_err keep = s->err;
        if (st >= 0 || st == CANOPY_WARN_NOT_CONVERGED) {
            canopy_err_clear(&s->err);
            if (distv_from_blocks(s, &plan, nrhs, xl, x, ldx) == CANOPY_SUCCESS) s->err = keep;
        }
    }
    canopy_free(bl);
    canopy_free(xl);
    canopy_free(own);
    distv_halo_free(&halo);
    distv_plan_free(&plan);
    return s->err.status;
}

void dist_serve_solves(canopy_solver *s)
{
    for (;;) {
        int cmd[2] = {-1, 0};
        /* rank 0 may be computing a residual: wait without taking a core */
        comm_quiet_barrier(s->comm);
        MPI_Bcast(cmd, 2, MPI_INT, 0, s->comm);
        if (cmd[0] == -1) break;
        api_set_trans(s, cmd[1]);
        if (cmd[0] < -1) {
            /* a product with a distributed matrix (api_apply_matrix) */
            distm_spmv(s, -2 - cmd[0], 0, NULL, 0, 0, NULL, 0);
            continue;
        }
        numeric_solve_dist(&s->F, cmd[0], NULL, &s->err);
    }
    api_set_trans(s, 0);
}

void dist_end_solves(canopy_solver *s)
{
    order_serving(s, -1);
}

void dist_solve_stats(canopy_solver *s)
{
    int64_t mine[2] = {s->F.solve_counts ? s->F.solve_counts[0] : 0, s->F.solve_counts ? s->F.solve_counts[1] : 0};
    int64_t sum[2] = {0, 0};
    MPI_Allreduce(mine, sum, 2, MPI_INT64_T, MPI_SUM, s->comm);
    s->stats.solve_comm_msgs = sum[0];
    s->stats.solve_comm_bytes = sum[1];
    summary_stats(s->comm, (double)mine[1], &s->stats.solve_bytes_rank_min, &s->stats.solve_bytes_rank_max,
                  &s->stats.solve_bytes_rank_median, &s->stats.solve_bytes_rank_stddev);
}
