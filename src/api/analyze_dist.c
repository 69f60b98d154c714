/*
 * canopy_analyze on several ranks, after rank 0's ordering and symbolic factorization: the block
 * structure, the cost model and the communication model are shared so that every rank builds the
 * same two-level plan and takes its share of it (sched/distribute.h); the network is measured once
 * beforehand (api_pingpong).
 */
#include "api/api.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "comm/agree.h"
#include "comm/pingpong.h"
#include "comm/share.h"
#include "matrix/dist_matrix.h"

/* A fingerprint of the plan: every rank must have built the same one. */
static uint64_t plan_hash(const runtime *rt)
{
    uint64_t h = 1469598103934665603ull;
    const sched_plan *P = &rt->plan;
    for (cint k = 0; k < P->ncblk; k++) h = (h ^ (uint64_t)(P->cblk_rank[k] * 131 + P->cblk_owner[k])) * 1099511628211ull;
    /* the fan-in buffers' cuts come from the plan's simulated times: a sender and its receiver
     * must count the same messages */
    h = (h ^ (uint64_t)P->fanin_cuts ^ rt->local.cut_hash) * 1099511628211ull;
    return (h ^ (uint64_t)P->kept_tasks) * 1099511628211ull; /* runtime_plan kept the local plan only */
}

void api_pingpong(canopy_solver *s)
{
    if (s->have_pingpong) return;
    if (!strcmp(s->opts.cost_cache, "fixed")) { /* the fixed models: nothing timed (the same on every rank) */
        s->rt.comm_latency = s->nranks > 1 ? COMM_FIXED_LATENCY : 0;
        s->rt.comm_byte_time = s->nranks > 1 ? 1.0 / COMM_FIXED_BANDWIDTH : 0;
    } else {
        comm_pingpong(s->comm, &s->rt.comm_latency, &s->rt.comm_byte_time, &s->err);
    }
    s->have_pingpong = 1;
}

void api_predict_dist(canopy_solver *s)
{
    /* this rank's panels, fan-in buffers, workspaces and its share of A (rank 0's count of A's
     * entries, rt.mem_nnz, shared by the analysis) */
    double own = 0, tot = (double)s->S.cblk_coef[s->S.ncblk], nnz = s->rt.mem_nnz;
    for (cint k = 0; k < s->S.ncblk; k++)
        if (s->rt.local.cblk_rank[k] == s->rank) own += (double)(s->S.cblk_coef[k + 1] - s->S.cblk_coef[k]);
    s->predicted_bytes =
        numeric_predict_bytes(&s->S, &s->rt.local, s->fact, s->arith, s->opts.scheduler, (int64_t)(tot > 0 ? nnz * own / tot : 0));
    double mine[2] = {s->predicted_bytes, solver_predicted_rss(s, s->predicted_bytes)}, worst[2] = {mine[0], mine[1]};
    MPI_Allreduce(mine, worst, 2, MPI_DOUBLE, MPI_MAX, s->comm);
    s->stats.memory_predicted_rank_max = worst[0];
    s->stats.memory_predicted_rss_rank_max = worst[1];
}

canopy_status api_analyze_dist(canopy_solver *s)
{
    canopy_status st = s->symbolic_everywhere ? comm_agree(s->comm, &s->err)
                                              : comm_share_symbolic(s->comm, &s->S, s->err.status, &s->err);
    if (st < 0) return st;
    /* and the 2D levels rank 0's split search kept: every rank builds the same plan */
    int head[3] = {(int)s->fact, (int)s->A.arith, s->rt.twod_levels_kept};
    MPI_Bcast(head, 3, MPI_INT, 0, s->comm);
    s->fact = (canopy_factorization)head[0];
    s->arith = (canopy_arith)head[1];
    s->rt.twod_levels_kept = head[2];
    /* one cost model for all: rank 0's */
    if (s->rank == 0 && !s->rt.have_cost) {
        if (cost_model_load(&s->rt.cost, s->opts.cost_cache, &numeric_cost_kernels, &s->err) == CANOPY_SUCCESS) s->rt.have_cost = 1;
    }
    if ((st = comm_agree(s->comm, &s->err)) < 0) return st;
    sched_cost_model cm = s->rt.cost;
    MPI_Bcast(&cm, (int)sizeof cm, MPI_BYTE, 0, s->comm);
    runtime_set_cost(&s->rt, &cm);
    api_pingpong(s);
    if (s->rt.have_tags) comm_tags_free(&s->rt.tags);
    s->rt.have_tags = 0;
    if (comm_tags_create(s->comm, s->opts.top2d ? numeric_xmsg_id(&s->S, s->S.nblok) : (int64_t)s->S.ncblk * COMM_IDS_PER_CBLK, &s->rt.tags, &s->err) == CANOPY_SUCCESS)
        s->rt.have_tags = 1;
    if ((st = comm_agree(s->comm, &s->err)) < 0) return st;
    /* the mapping's memory rule (runtime_plan_for) needs the same inputs on every rank: the
     * smallest of the ranks' limits (a default one follows each node's free memory) and A's size */
    double nnz = (double)s->stats.nnz, limit = solver_memory_limit(s);
    MPI_Bcast(&nnz, 1, MPI_DOUBLE, 0, s->comm);
    MPI_Allreduce(MPI_IN_PLACE, &limit, 1, MPI_DOUBLE, MPI_MIN, s->comm);
    s->rt.mem_limit = limit;
    s->rt.mem_nnz = nnz;
    runtime_plan(&s->rt, &s->opts, &s->S, s->fact, s->arith == CANOPY_COMPLEX, &s->err);
    if ((st = comm_agree(s->comm, &s->err)) < 0) return st;
    uint64_t h = plan_hash(&s->rt), lo = h, hi = h;
    MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, s->comm);
    MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, s->comm);
    if (lo != hi)
        return canopy_err_set(&s->err, CANOPY_ERR_INTERNAL,
                              "the ranks built different plans (different cost models or binaries?)");
    s->stats.mapping = s->rt.plan_mapping == SCHED_MAPPING_MEMORY ? 2 : 1;
    api_predict_dist(s);
    return CANOPY_SUCCESS;
}
