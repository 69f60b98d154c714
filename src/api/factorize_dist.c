/*
 * canopy_factorize on several ranks: the memory check, the entries to their owners, the fan-in
 * factorization of the distributed plan, and its figures.
 */
#include "api/api.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "comm/agree.h"
#include "comm/peerstats.h"
#include "comm/share.h"
#include "matrix/dist_matrix.h"
#include "matrix/matrix.h"

/* The scaled copy of A (rank 0's, or every rank's block columns of a distributed matrix), rebuilt
 * when the last factorization released it; a distributed matrix that is not scaled needs none. */
static void scaled_matrix(canopy_solver *s)
{
    if ((s->rank == 0 || distm_active(s)) && api_factor_source(s) == &s->As && s->As.colptr == NULL &&
        s->err.status == CANOPY_SUCCESS)
        scaling_apply(&s->A, &s->sc, &s->As, &s->err);
}

/* The prediction against the limit, agreed: every rank refuses when one would not fit. */
static canopy_status memory_check(canopy_solver *s)
{
    s->mem_checked = 0;
    double limit = solver_memory_limit(s);
    s->stats.memory_limit_rank = limit;
    if (s->opts.memory_check && s->predicted_bytes > limit) api_refuse_memory(s, s->predicted_bytes, limit);
    canopy_status st = comm_agree(s->comm, &s->err);
    if (st >= 0) s->mem_checked = s->predicted_bytes;
    return st;
}

static canopy_status factorize_once(canopy_solver *s, double threshold, bool retry)
{
    numeric_exec x;
    /* with its plan and its scaled copy (the caller's, unless a first attempt released it) there
     * is nothing to agree on here. The plan is there on every rank or on none: a failure to make
     * it drops it everywhere */
    const runtime *rt = &s->rt;
    bool planned = rt->have_plan && rt->plan_kind == s->fact && rt->plan_complex == (s->arith == CANOPY_COMPLEX);
    scaled_matrix(s);
    runtime_plan(&s->rt, &s->opts, &s->S, s->fact, s->arith == CANOPY_COMPLEX, &s->err);
    if (!planned || retry) {
        canopy_status st = comm_agree(s->comm, &s->err);
        /* a new kind (the LL^T fallback): its own prediction, checked before the factors are
         * allocated (as the first attempt's: after the plan and the scaled copy) */
        if (st >= 0 && retry) {
            api_predict_dist(s);
            st = memory_check(s);
        }
        if (st < 0) {
            runtime_drop_plan(&s->rt);
            return st;
        }
    }
    runtime_exec(&s->rt, &s->opts, &x);
    numeric_set_exec(&s->F, &x);
    /* the scaled copy goes once its entries are out: it is not needed again until the next
     * factorization, and the peak is the factor's time */
    canopy_csc *src = s->rank == 0 || distm_active(s) ? api_factor_source(s) : NULL;
    numeric_factorize_dist(&s->F, &s->S, src, src == &s->As, s->arith, s->fact, threshold, &s->err);
    return comm_agree(s->comm, &s->err);
}

bool api_gather_comm_matrix(canopy_solver *s)
{
    int R = s->nranks;
    const int64_t *pc = s->F.peer_counts;
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
    return have;
}

canopy_status api_factorize_dist(canopy_solver *s)
{
    double t0 = canopy_wtime();
    canopy_status st = CANOPY_SUCCESS;
    /* memory: refuse before allocating, on every rank, when some rank would not fit. A
     * refactorization whose factors are held (the analysis frees them) and whose prediction
     * passed allocates nothing new: no /proc/meminfo, no round. The condition is the same on
     * every rank: the factors and the check's outcome follow agreed results. */
    if (!(s->F.L != NULL && s->mem_checked > 0 && s->mem_checked == s->predicted_bytes) &&
        (st = memory_check(s)) < 0)
        return st;
    double threshold = 0;
    /* whether the scaled copy is built here: the same on every rank holding columns */
    bool rebuilt = api_factor_source(s) == &s->As && s->As.colptr == NULL;
    scaled_matrix(s);
    if (distm_active(s)) {
        /* the norms of a distributed matrix: row sums over every rank's columns (after the
         * scaled copy's allocation, when there was one, is agreed) */
        if (rebuilt && (st = comm_agree(s->comm, &s->err)) < 0) return st;
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
    /* rank 0's threshold; a distributed matrix's norms are the same on every rank already */
    if (!distm_active(s)) MPI_Bcast(&threshold, 1, MPI_DOUBLE, 0, s->comm);
    st = factorize_once(s, threshold, false);
    if (st == CANOPY_ERR_NOT_SPD && s->opts.factorization == CANOPY_FACT_AUTO) {
        /* the documented fallback of the one-rank path (api.c), agreed: every rank switches */
        canopy_err_clear(&s->err);
        numeric_free(&s->F);
        int herm = 0;
        if (s->rank == 0) herm = s->A.kind == CANOPY_KIND_HERMITIAN && s->A.arith == CANOPY_COMPLEX;
        MPI_Bcast(&herm, 1, MPI_INT, 0, s->comm);
        s->fact = herm ? CANOPY_FACT_LU : CANOPY_FACT_LDLT;
        st = factorize_once(s, threshold, true);
    }
    if (st < 0) return st;
    canopy_stats *sts = &s->stats;
    sts->time_factorize = canopy_wtime() - t0;
    sts->factorization = s->fact;
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
    /* the rank x rank matrices only for the heat map (the option is the same on every rank);
     * canopy_get_comm_matrix gathers them when asked */
    int have = s->opts.comm_heatmap[0] && api_gather_comm_matrix(s);
    /* every per-rank figure in one gather (a refactorization of a small matrix is a few hundred
     * microseconds: a collective per figure cost more than it); counts are exact as doubles */
    size_t peak = canopy_mem_peak();
    double used = peak > s->mem_base ? (double)(peak - s->mem_base) : 0;
    enum { F_BYTES, F_MSGS, F_FACTOR, F_USED, F_RSS, F_PERTURBED, F_EARLY, F_COUNT };
    double mine[F_COUNT] = {(double)bsent, (double)msent, (double)sts->factor_bytes, used, solver_rss_peak(),
                            (double)s->F.perturbed, (double)s->F.fan_early}, first[F_COUNT];
    comm_summary cs[F_COUNT];
    canopy_err gerr = {0};
    int64_t all = 0;
    if (comm_summary_allranks_n(s->comm, mine, F_COUNT, cs, first, &gerr) == CANOPY_SUCCESS) {
        all = (int64_t)cs[F_PERTURBED].total;
    } else {
        /* no figures (agreed), but the perturbed pivots are never lost */
        int64_t perturbed = s->F.perturbed;
        MPI_Allreduce(&perturbed, &all, 1, MPI_INT64_T, MPI_SUM, s->comm);
    }
    s->F.perturbed = all;
    sts->perturbed_pivots = all;
    sts->comm_bytes_rank_min = cs[F_BYTES].min;
    sts->comm_bytes_rank_max = cs[F_BYTES].max;
    sts->comm_bytes_rank_median = cs[F_BYTES].median;
    sts->comm_bytes_rank_stddev = cs[F_BYTES].stddev;
    sts->comm_msgs_rank_min = cs[F_MSGS].min;
    sts->comm_msgs_rank_max = cs[F_MSGS].max;
    sts->comm_msgs_rank_median = cs[F_MSGS].median;
    sts->comm_msgs_rank_stddev = cs[F_MSGS].stddev;
    sts->comm_msgs = (int64_t)cs[F_MSGS].total;
    sts->comm_bytes = (int64_t)cs[F_BYTES].total;
    sts->fanin_early = (int64_t)cs[F_EARLY].total;
    double sb = s->arith == CANOPY_COMPLEX ? 16.0 : 8.0;
    sts->comm_msgs_without_fanin = s->rt.local.update_msgs;
    sts->comm_bytes_without_fanin = (int64_t)((double)s->rt.local.update_entries * sb);
    sts->factor_bytes_rank_min = cs[F_FACTOR].min;
    sts->factor_bytes_rank_max = cs[F_FACTOR].max;
    sts->peak_memory_rank_min = cs[F_USED].min;
    sts->peak_memory_rank_max = cs[F_USED].max;
    solver_memory_set(s, &cs[F_USED], &cs[F_RSS], first + F_USED);
    if (s->rank == 0 && have && s->opts.comm_heatmap[0]) {
        canopy_err herr = {0};
        if (comm_heatmap_write(s->opts.comm_heatmap, R, s->comm_bytes, "bytes sent, last factorization", &herr) !=
            CANOPY_SUCCESS)
            fprintf(stderr, "canopy: warning: %s\n", herr.msg);
    }
    return s->F.perturbed > 0 ? CANOPY_WARN_PIVOTS_PERTURBED : CANOPY_SUCCESS;
}
