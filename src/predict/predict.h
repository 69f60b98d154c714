/*
 * What Canopy would do on a machine it is not running on (canopy-simulate): the plan and the
 * simulation the real run builds for P nodes x T threads, and the figures read off them, without
 * factorizing. Same code as the real run: the solver's analysis (api_analyze_virtual) chooses the
 * split width and the 2D levels for the virtual layout, runtime_plan_for builds the plan, and the
 * messages and memory are those sched_plan_local and the numeric phase would derive.
 */
#ifndef CANOPY_PREDICT_H
#define CANOPY_PREDICT_H

#include "solver/solver.h"

typedef struct predict_opts {
    int ranks, threads;        /**< the virtual machine: ranks x threads per rank */
    int ranks_per_node;        /**< ranks sharing one node (1: one rank per node; 0 counts as 1): the kernels'
                                    slowdown is that of ranks_per_node x threads busy cores */
    double latency;            /**< seconds per message between nodes */
    double bandwidth;          /**< bytes per second between two nodes */
    int nrhs;                  /**< right-hand sides of the predicted solve (>= 1) */
    const char *trace;         /**< write the simulated factorization there as a canopy trace; NULL: none */
} predict_opts;

/** A figure over the ranks. */
typedef struct predict_spread {
    double min, max, median, stddev, total;
} predict_spread;

/** One level of the thread tree (Snodes at one depth; 0 = the root, every thread). */
typedef struct predict_level {
    int snodes;                /**< Snodes at this depth */
    int threads_min, threads_max; /**< threads of each */
    int64_t tasks;             /**< factorization tasks whose Snode is at this depth */
    double busy;               /**< thread-seconds inside them */
    double idle;               /**< thread-seconds idle before them (a thread's gap before its next task;
                                    the gap after its last task counts at depth 0, where it waits for the top) */
} predict_level;

typedef struct predict_report {
    int ranks, threads;
    int64_t tasks, twod_cblks;
    int twod_levels, split_width;
    int mapping;               /**< the tree's mapping onto the ranks (canopy_stats.mapping): 1 = flops, 2 = memory
                                    (options.mapping, or auto's rule against an explicit memory-limit); 0: one rank */
    int64_t root_columns;      /**< the root factored on a grid of ranks (options.root_grid): its columns, 0 = none */
    int root_pr, root_pc;      /**< that grid */
    double root_time;          /**< its predicted seconds (sched_root_time), included in time_factorize */
    double time_factorize;     /**< simulated makespan of the plan, seconds */
    double time_1x1;           /**< the same structure planned on one thread (no load) */
    double speedup, efficiency; /**< time_1x1 / time_factorize, and over ranks x threads */
    double efficiency_loaded;  /**< work / (ranks x threads x time_factorize): the plan's own efficiency,
                                    without the kernels' slowdown when every core computes */
    double critical_path;      /**< longest chain of task costs (loaded), messages excluded */
    double work;               /**< sum of task costs (loaded) */
    double time_solve;         /**< one solve with nrhs right-hand sides: forward and backward */
    double time_plan;          /**< seconds this machine took to plan the layout */
    int nlevels;
    predict_level *levels;     /**< [nlevels] */
    predict_spread factor_bytes;  /**< the factor's panels each rank holds */
    predict_spread fanin_bytes;   /**< fan-in buffers each rank holds at once at most (by the simulated times,
                                       sched_fanin_memory), with the exchange's sink */
    predict_spread memory_bytes;  /**< what the memory check predicts for the rank (panels, buffers,
                                       workspaces, its share of A): its peak */
    int heavy_rank;               /**< the rank of the largest memory_bytes, and what makes it: */
    double heavy_factor, heavy_fanin, heavy_work; /**< its panels, fan-in buffers (with the sink) and update
                                                       workspaces, bytes (the rest: A's entries, the structure,
                                                       the root's grid step beyond its buffers) */
    double plan_bytes;            /**< the plan of every rank's tasks, which every rank builds during the analysis
                                       and frees once its local plan is built (sched_plan_keep_local): the
                                       analysis' share of every rank's memory that does not shrink with ranks */
    double plan_peak_bytes;       /**< what the planning held at most beside what it found: its scratch, the
                                       simulation's, and a lighter candidate beside the plan when memory-limit
                                       makes the runtime try one (runtime_plan_for) */
    double analysis_bytes;        /**< what every rank holds at least during the analysis, the planning's peak
                                       and the block structure (structure.h's arrays): a node's peak is the larger
                                       of this and its memory_bytes (which counts the factorization only) */
    predict_spread msgs, bytes;   /**< fan-in messages and bytes each rank sends (factorization) */
    int64_t update_msgs, update_bytes; /**< what one message per remote update would take (no fan-in) */
    predict_spread solve_msgs, solve_bytes; /**< messages and bytes each rank sends in the solve's trees */
    predict_spread selinv_msgs, selinv_bytes; /**< messages and bytes each rank sends in the selected
                                                   inversion's panel broadcasts (canopy_selinv) */
    double solve_rhs_bytes;    /**< right-hand side broadcast and solution gather (whole vectors) */
    numeric_selinv_profile selinv; /**< the selected inversion's structure on one rank: the top of the
                                        tree in pieces, and what no thread count shortens */
    /* top2d (runtime.top2d, sched/grid.h): flat is executed (top2d=flat), square and tall a model */
    int top2d_shape;           /**< enum sched_grid_shape of the plan (0: off or nothing tiled) */
    int top2d_shadow;          /**< flat: 0 no shadows, 1 shadows, 2 lean (options.top2d_shadow, or auto's choice
                                    under memory-limit) */
    int64_t top2d_cblks;       /**< shared cblks tiled over grids */
    int64_t top2d_shared;      /**< shared cblks (several candidate ranks): the tiled ones and those left whole */
    int top2d_grids, top2d_root_pr, top2d_root_pc; /**< grids, and the widest one's shape */
    predict_spread top2d_factor_bytes; /**< factor bytes each rank holds: tiles at their owners, whole
                                            panels of the other cblks at their rank */
    int64_t top2d_diag_msgs, top2d_trsm_msgs, top2d_fanin_msgs; /**< broadcasts' messages, tile fan-ins */
    double top2d_bcast_bytes, top2d_fanin_bytes;
    /* the network in the factorization: fan-in messages and the top's broadcasts, per node (its ranks'
     * together, messages between them included) */
    double net_sent_max, net_recv_max; /**< bytes the busiest node sends, receives */
    double net_bound;          /**< max over nodes of max(sent, received) / bandwidth: a lower bound on the
                                    factorization's time that the simulation (each message charged on
                                    its own edge, without contention) does not enforce */
} predict_report;

/**
 * Plan @p s's structure (after api_analyze_virtual with the same layout) for o->ranks x
 * o->threads and fill @p r. @return CANOPY_SUCCESS, or the error in s->err (bad options,
 * CANOPY_ERR_NOMEM, CANOPY_ERR_TOO_LARGE, CANOPY_ERR_IO for the trace).
 */
canopy_status predict_layout(canopy_solver *s, const predict_opts *o, predict_report *r);

void predict_report_free(predict_report *r);

#endif
