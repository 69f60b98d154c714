/*
 * The node runtime of one solver: topology, worker placement and pool, the cost model, the static
 * plan and the solve graph, and the figures a threaded run reports (per thread, per NUMA node,
 * traces). The phase driver (api.c) owns one; the numerical code only sees numeric_exec.
 */
#ifndef CANOPY_RUNTIME_H
#define CANOPY_RUNTIME_H

#include "base/common.h"
#include "numeric/numeric.h"
#include "symbolic/symbolic.h"
#include "sched/cost.h"
#include "sched/engine.h"
#include "sched/plan.h"
#include "sched/distribute.h"
#include "numa/topology.h"
#include "comm/tags.h"

typedef struct runtime {
    int nthreads;
    int ranks_on_node;              /**< ranks sharing this node (the plan's cores under load) */
    numa_topo *topo;
    numa_workers workers;
    sched_pool *pool;               /**< started at the first plan */
    sched_cost_model cost;
    int have_cost;
    sched_plan plan;
    sched_local local;              /**< this rank's share of the plan */
    sched_dag solve;                /**< one rank: the threaded solve graph */
    int nranks, rank;               /**< set by the phase driver before runtime_plan */
    MPI_Comm comm;
    double comm_latency, comm_byte_time; /**< ping-pong model (several ranks) */
    int virt_threads;               /**< > 0: plans are for ranks of this many threads instead of this node's
                                         workers (canopy-simulate); no pool is started */
    int virt_node_ranks;            /**< with virt_threads: ranks sharing one node (0 or 1: one rank per node);
                                         the kernels are priced as loaded by virt_threads x this many cores */
    int twod_levels_kept;           /**< 2d-levels=auto: the 2D levels + 1 that the analysis chose with the split
                                         width (its split search, src/api/analyze.c): every plan of that structure
                                         is built with them instead of sweeping again; 0: none chosen */
    int top2d;                      /**< canopy-simulate only: sched_plan_opts.top2d (a plan nothing executes yet) */
    double mem_limit;               /**< several ranks: the per-rank memory limit, the same on every rank (the
                                         phase driver's minimum over the ranks); 0: none. options.mapping=auto
                                         maps by memory when the flops plan's heaviest rank exceeds it */
    double mem_nnz;                 /**< entries of A, for the memory prediction (the same on every rank) */
    int mapping_last;               /**< enum sched_mapping of the last plan runtime_plan_for built */
    int cuts_now;                   /**< the plans being built cut fan-in buffers (options.fanin_cuts: on, or auto
                                         with the flops plan's heaviest rank over mem_limit) */
    int lean_now;                   /**< the plans being built rank the updates that read another rank's copy as
                                         urgent as their group (options.top2d_shadow: lean, or auto with the
                                         heaviest rank over mem_limit; sched_plan_opts.flat_shadow 2) */
    int plan_mapping;               /**< enum sched_mapping of rt->plan */
    comm_tags tags;                 /**< several ranks: message ids */
    int have_tags;
    int have_plan;
    canopy_factorization plan_kind;
    int plan_complex;
    /* placement of the last factorization */
    int nnodes;
    int64_t *node_planned;          /**< [nnodes] */
    int64_t *node_found;            /**< [nnodes] */
    int64_t unlocated;
    int64_t *thread_bytes;          /**< [nthreads] */
    char warning[512];              /**< what the user should know about the placement ("" if nothing) */
} runtime;

/**
 * Topology and worker placement for @p o (threads, bind); no thread is started yet.
 * @p ranks_on_node: ranks of the communicator sharing this node (for the oversubscription warning);
 * @p node_rank: this rank's index among them. When the launcher left every rank the whole node
 * and bind=core, rank i of the node keeps the i-th consecutive share of the cores.
 */
canopy_status runtime_init(runtime *rt, const canopy_options *o, int ranks_on_node, int node_rank, canopy_err *err);

/** Load the cost model (once: the calibration or its cache, see options.cost_cache). */
canopy_status runtime_cost(runtime *rt, const canopy_options *o, canopy_err *err);

/**
 * The plan of @p S on @p nranks ranks of rt's threads (rt->virt_threads when set), priced with
 * rt's cost model under the load of a node whose workers all compute: the plan the real run builds.
 * Several ranks, options.mapping=auto: mapped by flops, unless its heaviest rank's predicted memory
 * (numeric_predict_ranks) exceeds rt->mem_limit and the plan mapped by factor entries predicts less;
 * rt->mapping_last says which. A pure function of agreed inputs, like the plan.
 */
canopy_status runtime_plan_for(runtime *rt, const canopy_options *o, const symbolic *S, canopy_factorization kind,
                               int complex_arith, int nranks, sched_plan *P, canopy_err *err);

/** The threads each rank plans for: rt->virt_threads when set, else the workers. */
int runtime_plan_threads(const runtime *rt);

/**
 * The factorization time the plan predicts for @p S on @p nranks ranks of rt's threads (nothing
 * kept; the contributions are not numbered). @p twod_levels (may be NULL): the plan's 2D levels,
 * the ones 2d-levels=auto chose (with them as options.twod_levels the same plan is built at once).
 */
canopy_status runtime_predict(runtime *rt, const canopy_options *o, const symbolic *S, canopy_factorization kind,
                              int complex_arith, int nranks, int sweep_threads, double *predicted, int *twod_levels,
                              canopy_err *err);

/** The cores this process may use (the analysis builds plans on them at once). */
int runtime_host_cores(const runtime *rt);

/** Cost model (once), plan and solve graph for @p S factorized with @p kind; starts the pool. */
canopy_status runtime_plan(runtime *rt, const canopy_options *o, const symbolic *S, canopy_factorization kind,
                           int complex_arith, canopy_err *err);

/** The execution settings for the numerical code (the plan must be current). */
void runtime_exec(const runtime *rt, const canopy_options *o, numeric_exec *x);

/** Fill the threading and placement figures of @p st after a factorization; write the trace. */
void runtime_report_factorize(runtime *rt, const canopy_options *o, const numeric *F, canopy_stats *st);

/** Append the solve's trace (if a trace file is set). */
void runtime_report_solve(runtime *rt, const canopy_options *o, const numeric *F);

/** Per-thread and per-node figures (after runtime_report_factorize). */
canopy_status runtime_thread_stats(const runtime *rt, const numeric *F, int t, canopy_thread_stats *ts);
canopy_status runtime_node_stats(const runtime *rt, int node, canopy_node_stats *ns);

/**
 * Several ranks: every rank must plan from the same inputs. The phase driver sets nranks, rank,
 * comm, the ping-pong figures and rank 0's cost model (runtime_set_cost) first.
 */
void runtime_set_cost(runtime *rt, const sched_cost_model *cm);

/** Drop the plan (a new analysis follows). */
void runtime_drop_plan(runtime *rt);
void runtime_free(runtime *rt);

/** The memory check's figure for the heaviest rank (bytes) were @p S planned for @p ranks ranks x
 * the runtime's threads (plans are pure functions of the structure): the panels each rank would
 * own, its fan-in buffers alive at once, its workspaces, its share of A's @p nnz entries. */
canopy_status runtime_predict_peak(runtime *rt, const canopy_options *o, const symbolic *S,
                                      canopy_factorization kind, canopy_arith arith, int ranks, double nnz,
                                      double *worst, canopy_err *err);

#endif
