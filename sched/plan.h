/*
 * The static plan of one rank's factorization: proportional mapping of the cblk tree onto the
 * threads, subtree tasks, the task graph, a simulation with the cost model that gives every task an
 * owner thread, a priority and a place in its thread's ordered list, and the order in which
 * contributions reach each target cblk under scheduler=static.
 *
 * Tasks of the factorization graph (plan->factor):
 *  - SUBTREE s: a maximal subtree of cblks mapped to one thread whose predicted cost is at most
 *    total / (nthreads * granularity): cblks first..cblk (contiguous in postorder), factored in
 *    order with their updates; updates to cblks outside the range are "external".
 *    With nthreads == 1 every root's whole tree is one SUBTREE task.
 *  - PANEL k for every cblk k outside subtree tasks.
 *  - UPDATE (k, group) for every k outside subtree tasks and every maximal run of k's
 *    off-diagonal bloks facing the same cblk j (first = the run's first blok).
 *  - 2D cblks (wide, shared by several threads, in the top twod_levels levels of the Snode tree)
 *    have instead DIAG k (the diagonal block), TRSM (k, g) for each facing group g (its rows), and
 *    UPDATE2D (k, g, g2) for g <= g2: rows of g2 times the columns of g, into the cblk g faces.
 *    Tiles are facing groups, so a tile is as high as the target's column block (the split
 *    width) and every UPDATE2D lands in one blok row of its target.
 * Edges: PANEL k -> its UPDATEs; UPDATE (k -> j) -> PANEL j; SUBTREE s -> PANEL j for every j
 * outside s receiving an external update from s (one edge per distinct j); DIAG k -> its TRSMs;
 * TRSM (k, g) -> the UPDATE2Ds reading g's rows; UPDATE2D into j -> j's PANEL or DIAG.
 *
 * Ordered contributions: the contributions into a cblk j coming from other tasks (UPDATE tasks,
 * and each external update inside SUBTREE tasks) are numbered 0..cblk_ncontrib[j]-1 in the order
 * of the simulation (task sequence, then source cblk). Under scheduler=static the kernels apply
 * them in that order, which makes the factors bitwise reproducible; since every thread's list
 * follows the same sequence, a contribution only ever waits for earlier ones (no deadlock).
 *
 * Implemented by sched/plan.c (the driver) with its parts plan_costs.c (task costs, the tree),
 * plan_mapping.c (proportional mapping, Snodes) and plan_tasks.c (tasks, edges, contribution
 * numbers), which share sched/plan_parts.h; the solve graph by sched/solvegraph.c.
 */
#ifndef CANOPY_SCHED_PLAN_H
#define CANOPY_SCHED_PLAN_H

#include "base/common.h"
#include "base/structure.h"
#include "cost.h"
#include "dag.h"
#include "root.h"

typedef struct sched_plan_opts {
    int nthreads;                 /**< >= 1 */
    canopy_factorization kind;    /**< LLT, LDLT or LU: panel and update costs */
    int complex_arith;            /**< costs x4 */
    double granularity;           /**< subtree tasks cost <= total / (nthreads * granularity); <= 0: 8 */
    int nranks;                   /**< MPI ranks (0 or 1: one); the plan is then over nranks x nthreads
                                       threads, thread t on rank t / nthreads (two-level mapping) */
    double comm_latency;          /**< seconds per message between ranks (simulation) */
    double comm_byte_time;        /**< seconds per byte between ranks (simulation) */
    int twod_levels;              /**< 2D tasks for the wide cblks shared by several threads in the top
                                       twod_levels levels of the Snode tree; 0 = none, -1 = auto (the
                                       count whose simulated makespan is shortest) */
    int prediction_only;          /**< the caller reads only factor.predicted_time (and the schedule): the
                                       contribution numbers (blok_contrib, task_contrib, cblk_ncontrib) are
                                       left unset */
    int top2d;                    /**< several ranks, the shared 2D cblks' tiles over 2D grids of their ranks
                                       (sched/grid.h); enum sched_grid_shape (0 = off: today's plan), -1 = the
                                       shape whose simulation is shortest. FLAT (1 x p: whole cblks cyclic
                                       over their ranks, updates where their target lives) is executed
                                       (cblk_xgrid); SQUARE and TALL are a model only */
    int mapping;                  /**< enum sched_mapping: what the ranks' proportional mapping weighs */
    const int *pin;               /**< [ncblk] or NULL: for a cblk the mapping shares between several ranks, the
                                       rank it must go to (-1, or a rank outside its candidates: not pinned).
                                       The memory fallback's search moves the top's panels with it */
    sched_root root;              /**< the root factored on a grid of ranks after the tasks (sched/root.h; n == 0:
                                       none): its cblks get a PANEL task that only gathers their contributions
                                       (cost 0), never 2D, and no update tasks (the grid does those updates) */
    int fanin_cuts;               /**< several ranks: fan-in buffers cut into several messages where the plan
                                       leaves a gap (sched_fanin_cuts), a SUBTREE task's contributions into other
                                       ranks' cblks applied after its own work (sched_subtree_deferred); 0: whole,
                                       1: buffers of at least 32768 scalars, 2: every buffer */
    int flat_shadow;              /**< top2d flat: updates into a tiled cblk of a wider grid on its rank or its
                                       shadow on the source's grid (sched_src_rank); 0: on the source's rank;
                                       2: lean, the updates reading another rank's groups ranked as urgent as
                                       their group's most urgent reader (sched/grid.c) */
    int sweep_threads;            /**< twod_levels = -1: build up to this many levels' plans at once, each on a
                                       thread (0 or 1: one at a time); the plan chosen is the same */
    int64_t update_cap;           /**< several ranks: an update product larger than this many scalars (one side)
                                       is computed in row chunks of at most this size (sched_update_need);
                                       0: whole */
} sched_plan_opts;

/* The weight of a subtree in the mapping onto ranks (several ranks only; threads always by flops).
 * FLOPS: its predicted cost, the fastest plan; the simulation places the shared cblks (the top,
 * several candidate ranks) by time. MEMORY: its factor entries, and each shared cblk goes to one
 * of its candidate ranks, the largest first onto the rank holding the fewest entries so far (LPT),
 * so that each rank's own panels are about equal: a plan to fall back on when the flops plan's
 * heaviest rank exceeds the memory limit (MUMPS's memory-aware mapping, STRUMPACK's weights). */
enum sched_mapping { SCHED_MAPPING_FLOPS = 0, SCHED_MAPPING_MEMORY = 1 };

typedef struct sched_plan {
    int nthreads;             /**< all threads: nranks x threads_per_rank */
    int nranks;
    int threads_per_rank;
    int *cblk_rank;           /**< [ncblk] the rank that holds, factors and updates from the cblk */
    int *cblk_ranks;          /**< [2 ncblk] candidate ranks [r0, r1) the mapping gave cblk k at [2k], [2k + 1]
                                   (r1 - r0 > 1: shared, settled by the simulation, LPT or a pin) */
    cint ncblk;
    int *cblk_t0, *cblk_t1;   /**< [ncblk] candidate threads [t0, t1) from proportional mapping */
    int *cblk_snode;          /**< [ncblk] Snode of the cblk (factor.snode of its tasks) */
    int *cblk_owner;          /**< [ncblk] data owner: the thread that allocates, zeroes and fills it
                                   (the only candidate, or round-robin over the candidates) */
    int *cblk_task;           /**< [ncblk] task that factors the panel (PANEL or SUBTREE task id) */
    int *blok_contrib;        /**< [nblok] at the first blok of each facing group of a cblk k: the
                                   contribution number into the facing cblk, or -1 when k and the
                                   facing cblk are in the same SUBTREE task (private: no protocol) */
    int *task_contrib;        /**< [factor.ntasks] UPDATE2D: its contribution number into its target
                                   (same sequence as blok_contrib); -1 for the other kinds */
    int *cblk_ncontrib;       /**< [ncblk] contributions into the cblk from other tasks */
    double *blok_time;        /**< [nblok] with the contribution numbers: at the first blok of each facing
                                   group a SUBTREE task applies outside itself, the simulated time it is
                                   applied (the task's start plus the costs before it); unset elsewhere */
    int twod_levels;          /**< Snode levels from the root whose wide cblks are 2D (0: none) */
    int64_t twod_cblks;       /**< cblks factored with 2D tasks */
    double *cblk_cost;        /**< [ncblk] predicted seconds of the panel and of its updates */
    double total_cost;        /**< sum of all predicted task costs (one-thread time) */
    sched_dag factor;         /**< the graph; factor.predicted_time = simulated makespan */
    /* the simulation (sched/simulate.c), per factor task */
    int *task_seq;            /**< [factor.ntasks] assignment order 0..ntasks-1: a topological order;
                                   every static list is sorted by it, contributions are numbered by it */
    double *task_start;       /**< [factor.ntasks] simulated start, seconds */
    double *task_end;         /**< [factor.ntasks] simulated end (start + cost) */
    struct sched_grid *grid;  /**< top2d: the grids, tile owners and messages (sched/grid.h); NULL when off.
                                   The tiled tasks then run on several ranks */
    int *cblk_xgrid;          /**< top2d flat (executed): [4 * ncblk] per cblk the grid of a tiled cblk (else -1),
                                   its grid's first rank (-1: no shadows) and rank count, its position among
                                   the shared cblks; NULL otherwise. Where k's updates into j run:
                                   sched_src_rank */
    sched_root root;          /**< sched_plan_opts.root (first == ncblk: none) */
    double root_time;         /**< predicted seconds of the root's grid factorization (in factor.predicted_time) */
    int fanin_cuts;           /**< sched_plan_opts.fanin_cuts */
    int64_t update_cap;       /**< sched_plan_opts.update_cap */
    int kept_tasks;           /**< after sched_plan_keep_local: factor.ntasks before the graph went (0 before) */
    double *memo;             /**< [5 * nranks + 2 * nthreads + 1] sched_fanin_memory's figures of every rank and
                                   sched_thread_work's of every thread, computed on the
                                   first request (sched_plan_memory; memo[0] = 1 once filled): every rank's
                                   local plan and the memory check need them all, and they cost a sweep of every
                                   fan-in pair. The pointer is fixed at the build, so a const plan fills it */
} sched_plan;

/*
 * top2d flat: how many chunks a tiled cblk cuts the UPDATE2Ds of its nearest column group in, on
 * ranks of @p tr threads (four per thread, at most 64); column group x gets ceil(that / (x + 1))
 * (sched/plan_parts.h, plan_chunked). One UPDATE2D per pair of groups grows as ng^2 / 2, and a
 * shared cblk of 215^3 has up to 1,000 groups; the same chunks for every column group grow as ng x
 * 64 (split 128: over 14 GB of tasks). The target's DIAG waits for all its chunks, so their size
 * is on the critical path where the target comes next (x = 0, usually the next piece of a
 * separator); farther targets have slack, their chunks are larger.
 */
static inline int sched_flat_chunks(int tr)
{
    return tr < 1 ? 4 : tr < 16 ? 4 * tr : 64;
}

/*
 * top2d flat, executed: the rank that computes cblk k's contributions into cblk j. Both tiled on
 * the same grid: j's rank (k's facing groups are broadcast there after their TRSM). k tiled, j
 * tiled on another grid (an ancestor's, wider): j's rank if it is one of k's grid's ranks, else
 * j's "shadow" on k's grid, the rank r0 + pos(j) mod p of k's grid [r0, r0 + p): every cblk of
 * k's grid then sums its contributions into j in one fan-in buffer on that rank, from the groups
 * broadcast to it, instead of one buffer per rank of the grid, each as tall as the rows that
 * rank's cblks reach (sched/README.md, "Shadows"). Otherwise k's rank.
 * sched_plan.cblk_xgrid holds [grid | r0 | p | pos] per cblk (NULL: not executed; r0 -1: no
 * shadows, sched_plan_opts.flat_shadow 0).
 */
static inline int sched_src_rank(const sched_plan *P, cint k, cint j)
{
    const int *x = P->cblk_xgrid;
    size_t n = (size_t)P->ncblk;
    if (x == NULL || x[k] < 0 || x[j] < 0) return P->cblk_rank[k];
    if (x[k] == x[j]) return P->cblk_rank[j];
    int r0 = x[n + (size_t)k], p = x[2 * n + (size_t)k], rj = P->cblk_rank[j];
    if (r0 < 0 || p < 1) return P->cblk_rank[k];
    return rj >= r0 && rj < r0 + p ? rj : r0 + x[3 * n + (size_t)j] % p;
}

/* The rank that runs task @p i of P->factor (before sched_plan_keep_local): its cblk's, except an
 * UPDATE2D runs where its contributions are computed (sched_src_rank). */
static inline int sched_task_rank(const symbolic *S, const sched_plan *P, int i)
{
    cint k = P->factor.cblk[i];
    if (P->factor.kind[i] != SCHED_TASK_UPDATE2D) return P->cblk_rank[k];
    return sched_src_rank(P, k, S->blok_fcblk[P->factor.first[i]]);
}

/**
 * Build the plan. Deterministic: same inputs (and cost model) give the same plan.
 * @param cm cost model; NULL = cost_model_fixed.
 * @return CANOPY_ERR_ARGUMENT for a bad option or a malformed structure (the parent must be the
 *         cblk facing the first off-diagonal blok, facing cblks after their source, bloks tiling
 *         the panel in row order), CANOPY_ERR_TOO_LARGE when the tasks
 *         overflow int, CANOPY_ERR_NOMEM. On failure @p P is left empty (sched_plan_free is safe).
 *
 * Mapping details: a node with p > 1 candidate threads gives each child its share p * cost(child
 * subtree) / cost(all children's subtrees); children with a share >= 1 get disjoint consecutive
 * ranges (their total share rounded, at least one thread each, split by largest remainder, in
 * child order), the others are packed whole onto single threads of the node's range, largest
 * first onto the least loaded thread. Candidates of a task: PANEL = range of its cblk, UPDATE =
 * range of its SOURCE cblk, SUBTREE = its one thread.
 *
 * Simulation details (sched/simulate.h): event-driven list scheduling with bottom-level
 * priorities (task cost + the longest path after it); whenever threads are idle, the ready task of
 * highest priority whose candidates include an idle thread starts on its data owner if idle, else
 * on the lowest idle candidate. Tasks are assigned in start-time order, so task_seq (the
 * assignment order) is also time order and a contribution rarely waits for a lower-numbered one.
 * UPDATE tasks into one target cblk never overlap in the simulation (the ordered protocol applies
 * them one at a time); a SUBTREE's external contributions are not serialized in the model.
 * predicted_time is therefore the makespan of the static schedule under the cost model.
 */
canopy_status sched_plan_build(const symbolic *S, const sched_cost_model *cm, const sched_plan_opts *o,
                               sched_plan *P, canopy_err *err);

/*
 * Two-level mapping (nranks > 1, papers/numa-scheduler-pastix.txt section 4): proportional mapping
 * of the tree onto the ranks first; a cblk with one candidate rank belongs to it; for a cblk shared
 * by several ranks (high in the tree) the simulation decides: its panel may start on any thread
 * of the candidate ranks, and its updates follow it. Every task of a cblk (its panel and the
 * updates it sends) runs on that rank: the
 * factorization is fan-in, and a cblk's updates into a cblk of another rank are summed into one
 * buffer per (target, rank), sent once complete. Then each rank's part is mapped onto its own
 * threads as in the one-rank case: the subtrees at the top of a rank's part (under shared cblks
 * or at roots, possibly several) are mapped together onto its threads as the children of one
 * node would be, so that every candidate range nests in the rank's block. The
 * simulation covers all ranks' threads, and an edge between ranks costs latency + bytes x
 * byte_time (the target's fan-in buffer).
 */

/**
 * The solve graph over the same units: for each SUBTREE task and each cblk outside them, a
 * FORWARD task (tasks 0..u-1) and a BACKWARD task (u..2u-1), owner = the data owner, Snode = the
 * cblk's; edges FORWARD(src) -> FORWARD(dst) for each facing cblk, FORWARD(u) -> BACKWARD(u),
 * BACKWARD(dst) -> BACKWARD(src). Static lists: a thread's forward tasks in cblk order, then its
 * backward tasks in reverse order.
 */
canopy_status sched_plan_solve_dag(const symbolic *S, const sched_plan *P, sched_dag *D, canopy_err *err);

/**
 * With P->fanin_cuts (none otherwise), the facing groups that the SUBTREE task of cblks [@p first,
 * @p root] applies only after all its own panels and updates: those into a cblk of another rank
 * (P->cblk_rank), i.e. into this rank's
 * fan-in buffers. Applied target by target, each buffer lives from its first contribution to its
 * send, a short while at the task's end, instead of from the subtree's first leaf to its end (with
 * one thread per rank the whole rank is one subtree task, and every buffer it fills was alive
 * at once). Writes to @p keys (NULL: count only) one key per group, in the order they are applied
 * (target, then source cblk): key = target * nblok + the group's first blok. Returns the count.
 * The plan's contribution times (blok_time), its ticket numbers and the factorization use it alike.
 */
size_t sched_subtree_deferred(const symbolic *S, const sched_plan *P, cint first, cint root, int64_t *keys);

void sched_plan_free(sched_plan *P);

/**
 * After sched_plan_local, on a rank of several that executes the plan: frees what only the
 * plan's own passes, its memory figures and the simulation read (every rank's task graph, the
 * tasks' times, the contribution numbers, the grids, the memo), O(all ranks' tasks) on every
 * rank; keeps cblk_rank (the local plan points into it), cblk_owner, root and the scalars
 * (factor's predicted_time among them; its task count in kept_tasks). sched_plan_free still
 * frees the rest.
 */
void sched_plan_keep_local(sched_plan *P);

#endif
