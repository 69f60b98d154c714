/**
 * @file canopy.h
 * Public interface of Canopy, a hybrid MPI + threads, NUMA-aware sparse direct solver.
 *
 * Life cycle: canopy_create() on a communicator -> canopy_set_matrix() -> canopy_analyze()
 * -> canopy_factorize() -> canopy_solve() / canopy_refine() (any number of times)
 * -> canopy_destroy(). canopy_update_values() followed by canopy_factorize() refactorizes a
 * matrix with the same pattern, reusing the analysis.
 *
 * Every call returns a canopy_status: 0 on success, a negative error code, or a positive
 * warning. canopy_strerror() names a code; canopy_last_error() gives the detailed message of
 * the last failing call on a handle. With several MPI ranks every rank returns the same code.
 *
 * The application initializes MPI (MPI_Init, or MPI_Init_thread for comm-threads=0 or 2); Canopy
 * duplicates the communicator it is given and never uses MPI_COMM_WORLD itself.
 */
#ifndef CANOPY_H
#define CANOPY_H

#include <stddef.h>
#include <stdint.h>
#include <mpi.h>
#include <canopy_config.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && defined(CANOPY_BUILDING_LIBRARY)
#define CANOPY_EXPORT __attribute__((visibility("default")))
#else
#define CANOPY_EXPORT
#endif

/** Status codes: 0 success, > 0 warning (result usable), < 0 error (no result). */
typedef enum canopy_status {
    CANOPY_SUCCESS = 0,
    CANOPY_WARN_PIVOTS_PERTURBED = 1,     /**< tiny pivots were replaced (static pivoting) */
    CANOPY_WARN_NOT_CONVERGED = 2,        /**< refinement stopped above the requested accuracy */
    CANOPY_ERR_ARGUMENT = -1,             /**< invalid argument (NULL pointer, bad size, bad option) */
    CANOPY_ERR_NOMEM = -2,                /**< out of memory */
    CANOPY_ERR_IO = -3,                   /**< file cannot be opened or read */
    CANOPY_ERR_FORMAT = -4,               /**< malformed file */
    CANOPY_ERR_MATRIX = -5,               /**< invalid matrix: not square, bad or duplicate index, NaN/Inf */
    CANOPY_ERR_SINGULAR = -6,             /**< structurally or numerically singular */
    CANOPY_ERR_NOT_SPD = -7,              /**< LL^T asked for a matrix that is not positive definite */
    CANOPY_ERR_PHASE = -8,                /**< call out of order (e.g. solve before factorize) */
    CANOPY_ERR_UNSUPPORTED = -9,          /**< valid request this build cannot serve yet */
    CANOPY_ERR_TOO_LARGE = -10,           /**< sizes overflow the index type */
    CANOPY_ERR_MPI = -11,                 /**< MPI failure or insufficient thread level */
    CANOPY_ERR_ORDERING = -12,            /**< the ordering library failed */
    CANOPY_ERR_INTERNAL = -13,            /**< bug: please report */
    CANOPY_ERR_INTERRUPTED = -14,         /**< stopped by canopy_interrupt */
    CANOPY_ERR_BUSY = -15                 /**< another thread's call on this solver is still running */
} canopy_status;

/** What the caller knows about the matrix. */
typedef enum canopy_matrix_kind {
    CANOPY_KIND_GENERAL = 0,      /**< unsymmetric: LU on the symmetrized pattern */
    CANOPY_KIND_SYMMETRIC = 1,    /**< symmetric (indefinite allowed): LDL^T */
    CANOPY_KIND_SPD = 2,          /**< symmetric positive definite: LL^T */
    CANOPY_KIND_HERMITIAN = 3     /**< complex Hermitian: LL^H (LU if not positive definite) */
} canopy_matrix_kind;

/** Scalar type of the values. */
typedef enum canopy_arith {
    CANOPY_REAL = 0,              /**< double */
    CANOPY_COMPLEX = 1,           /**< double complex, stored as (re, im) pairs */
    CANOPY_PATTERN = 2            /**< no values (file readers only) */
} canopy_arith;

/** For symmetric kinds: which entries the arrays hold. */
typedef enum canopy_triangle {
    CANOPY_TRIANGLE_BOTH = 0,     /**< every entry of the full matrix */
    CANOPY_TRIANGLE_LOWER = 1,    /**< row >= column only */
    CANOPY_TRIANGLE_UPPER = 2     /**< row <= column only */
} canopy_triangle;

/** Which system a solve works on: A X = B, A^T X = B or A^H X = B (the same as A^T for real values). */
typedef enum canopy_trans {
    CANOPY_TRANS_NONE = 0,
    CANOPY_TRANS_T = 1,
    CANOPY_TRANS_H = 2
} canopy_trans;

/**
 * A sparse matrix in compressed sparse column form. A plain descriptor: the solver copies what it
 * needs, so the caller keeps ownership. Row indices inside a column need not be sorted; duplicate
 * entries are rejected (CANOPY_ERR_MATRIX).
 */
typedef struct canopy_csc {
    canopy_int n;                 /**< order (rows = columns) */
    canopy_int *colptr;           /**< n + 1 column starts */
    canopy_int *rowind;           /**< row index of each entry */
    void *values;                 /**< double[nnz] or double[2*nnz]; NULL for a pattern */
    int base;                     /**< 0 or 1: index base of colptr and rowind */
    canopy_arith arith;
    canopy_matrix_kind kind;
    canopy_triangle triangle;     /**< ignored for CANOPY_KIND_GENERAL */
} canopy_csc;

typedef enum canopy_factorization {
    CANOPY_FACT_AUTO = 0,         /**< LL^T for SPD (falls back to LDL^T if it fails), LDL^T for symmetric, LU otherwise */
    CANOPY_FACT_LLT = 1,
    CANOPY_FACT_LDLT = 2,
    CANOPY_FACT_LU = 3
} canopy_factorization;

typedef enum canopy_ordering {
    CANOPY_ORDER_SCOTCH = 0,      /**< nested dissection with halo minimum-degree leaves */
    CANOPY_ORDER_NATURAL = 1,
    CANOPY_ORDER_USER = 2,        /**< the permutation given by canopy_set_permutation() */
    CANOPY_ORDER_PTSCOTCH = 3,    /**< PT-SCOTCH nested dissection on all ranks (builds with PT-SCOTCH) */
    CANOPY_ORDER_AUTO = 4         /**< the default: PTSCOTCH for a matrix given distributed on several ranks
                                       (canopy_set_matrix_distributed, builds with PT-SCOTCH), else SCOTCH */
} canopy_ordering;

typedef enum canopy_bind { CANOPY_BIND_NONE = 0, CANOPY_BIND_CORE = 1, CANOPY_BIND_LIST = 2 } canopy_bind;
typedef enum canopy_numa { CANOPY_NUMA_LOCAL = 0, CANOPY_NUMA_GLOBAL = 1, CANOPY_NUMA_INTERLEAVE = 2 } canopy_numa;
typedef enum canopy_scheduler { CANOPY_SCHED_STATIC = 0, CANOPY_SCHED_DYNAMIC = 1 } canopy_scheduler;
typedef enum canopy_tree { CANOPY_TREE_FLAT = 0, CANOPY_TREE_BINARY = 1, CANOPY_TREE_SHIFTED = 2 } canopy_tree;

/** Matching / scaling applied before factorization (unsymmetric and indefinite matrices). */
typedef enum canopy_scaling {
    CANOPY_SCALING_AUTO = 0,      /**< matching + scaling for LU, scaling for LDL^T, none for LL^T */
    CANOPY_SCALING_NONE = 1,
    CANOPY_SCALING_EQUILIBRATE = 2, /**< row/column equilibration only */
    CANOPY_SCALING_MATCHING = 3   /**< maximum-product matching permutation + scaling */
} canopy_scaling;

/** Where canopy_selinv works (option "selinv-memory"). */
typedef enum canopy_selinv_memory {
    CANOPY_SELINV_INPLACE = 0,    /**< over the factors: no extra memory, but the factors are gone */
    CANOPY_SELINV_SEPARATE = 1    /**< in a copy of the factors: solves still work */
} canopy_selinv_memory;

#define CANOPY_PATH_MAX 1024

/** Column-block width of split_size = -1 with several threads (see bench/README.md for the tuning). */
#define CANOPY_AUTO_SPLIT 256
/** update_buffer = 0 (auto): a worker's update buffer at most, in entries (several ranks). */
#define CANOPY_UPDATE_BUFFER_AUTO 1048576

/**
 * Runtime options. canopy_options_default() fills the defaults; canopy_options_from_env()
 * overlays the CANOPY_* environment variables; canopy_options_set() sets one option by the name
 * used by the environment variables and by canopy-solve ("threads", "bind", ...).
 */
typedef struct canopy_options {
    int threads;                  /**< worker threads per rank; 0 = usable cores of the rank */
    canopy_bind bind;
    char bind_list[256];          /**< core list for CANOPY_BIND_LIST, e.g. "0,2,4-7" */
    canopy_numa numa;
    canopy_scheduler scheduler;
    int comm_threads;             /**< 0, 1 or 2 */
    canopy_tree tree;
    canopy_factorization factorization;
    canopy_ordering ordering;
    canopy_scaling scaling;
    double pivot_threshold;       /**< |pivot| below threshold * ||A||_inf (scaled matrix) is perturbed; default sqrt(eps) */
    int amalgamation;             /**< 0 = fundamental supernodes only, 1 = relaxed (default) */
    double amalgamation_fill;     /**< extra zeros allowed in a merged supernode, as a fraction (default 0.12) */
    int split_size;               /**< widest column block before splitting: -1 = auto (default: with several
                                       threads, CANOPY_AUTO_SPLIT columns for the blocks whose subtree holds at
                                       least 1/(2 threads) of the flops; none with one thread), 0 = never */
    int refine_max_iter;          /**< refinement steps at most: classical steps + GMRES iterations (default 100) */
    double refine_tolerance;      /**< target normwise backward error (default 1e-14) */
    int verbose;                  /**< 0..3, messages on stderr of rank 0 */
    char trace_file[CANOPY_PATH_MAX]; /**< empty = no trace */
    char cost_cache[CANOPY_PATH_MAX]; /**< kernel cost model: "" = calibrate once and cache in
                                           $XDG_CACHE_HOME (or ~/.cache)/canopy/, a path = that cache
                                           file, "none" = calibrate without caching, "fixed" = built-in */
    int memory_check;             /**< 1 (default): canopy_factorize refuses, before allocating, when the memory
                                       predicted for some rank exceeds its limit; 0: proceed anyway */
    double memory_limit;          /**< bytes per rank for memory_check; 0 (default) = the node's available
                                       memory divided by the ranks sharing the node */
    char comm_heatmap[CANOPY_PATH_MAX]; /**< after each factorization, rank 0 writes the rank x rank message
                                           volume there (.svg or .png); empty = none */
    int ordering_threads;         /**< SCOTCH's threads: 0 (default) = the rank's worker threads; N = exactly N.
                                       The ordering is reproducible for a given count; fix it (e.g. 1) to get
                                       the same ordering on every machine and thread count */
    int twod_levels;              /**< 2D tasks (tiled panels and updates) for the wide column blocks that
                                       several threads share, in the top twod_levels levels of the thread
                                       tree: -1 (default) = auto, the count whose simulated factorization is
                                       shortest; 0 = none (1D: one task per panel and per target) */
    canopy_selinv_memory selinv_memory; /**< where canopy_selinv computes the inverse: over the factors
                                           (default; canopy_solve then refuses) or beside them */
    int strict;                   /**< 1: when the factorization perturbed pivots and refinement finds no solution
                                       (backward error above the tolerance, or x so large that DBL_EPSILON ||A||
                                       ||x|| >= 0.1 ||b||: a singular matrix and a b outside its range),
                                       canopy_refine (and its distributed and
                                       transposed forms) returns CANOPY_ERR_SINGULAR instead of the warning
                                       CANOPY_WARN_NOT_CONVERGED (x still holds the best iterate); 0 (default): the
                                       warning */
    int mapping;                  /**< several ranks: how the tree is mapped onto the ranks. 0 (default) = auto:
                                       by flops, or by factor entries when then the heaviest rank's predicted
                                       memory exceeds memory-limit and is lower so; 1 = flops; 2 = memory: the
                                       plan whose heaviest rank is the lightest found, limit or not (the flops
                                       plan when nothing is lighter: canopy_stats.mapping says which) */
    int root_grid;                /**< several ranks: the root separator factored by all ranks on a 2D grid
                                       (MUMPS's 2D root) instead of column block by column block. 0 (default) =
                                       off; 1 = on whenever the root is dense; 2 = auto: on when the root is at
                                       least max(800, 70 sqrt(ranks)) columns wide and the plan's simulation
                                       predicts it faster than the 1D root. canopy_stats.root_columns says
                                       whether a grid was used */
    int fanin_cuts;               /**< several ranks: a fan-in buffer sent in several messages, cut where the plan
                                       leaves a gap between its contributions and where the rank's open buffers
                                       would exceed half its factor (each message its own buffer of its own rows,
                                       so the buffer is not held through the gap). 0 (default) = auto: only when the
                                       plan's heaviest rank would exceed memory-limit otherwise (then before the
                                       memory mapping), buffers of at least 32768 entries; 1 = off; 2 = on, every
                                       buffer. Trades bytes for memory: more messages, each holding only the rows
                                       of its own contributions (60^3 on 8 x 1: 2.3x the bytes sent) */
    double update_buffer;         /**< several ranks: a worker's update buffer at most, in entries (one side): an
                                       update product larger than this is computed and applied in row chunks of
                                       whole bloks (the facing square first; a chunk may be as large as a single
                                       blok needs), in its turn on the target. Each worker's buffer is sized by
                                       the tasks it may run, never beyond that. 0 (default) = auto: 1048576
                                       entries (8 MB real); -1 = off: whole products, each worker sized by the
                                       largest of the tasks it may run */
    int top2d;                    /**< several ranks: the shared top's 2D column blocks (those with 2D tasks whose
                                       candidate ranks are several) over grids of their ranks. 0 (default) =
                                       off: each whole on one rank, its updates computed there and sent as
                                       fan-in; 1 = flat: the column blocks of each rank range cyclic over its
                                       ranks, and a column block's updates into another of the same range run
                                       on the target's rank, from its facing groups sent there after their
                                       TRSM (fan-out), so a separator's updates spread over its ranks; 2 =
                                       auto: flat when the plan's simulation predicts it at least 10% faster
                                       (canopy_stats.top2d_cblks says whether) */
    int top2d_shadow;             /**< top2d flat: a column block's updates into an ancestor spread over more
                                       ranks (a wider range) run on the ancestor's rank when it is one of the
                                       column block's ranks, else on the ancestor's "shadow" among them (one
                                       rank per ancestor column block), so that the whole range sends one
                                       fan-in buffer per ancestor instead of one per rank (far fewer bytes).
                                       The updates that read another rank's column block hold its copy until
                                       they run. 0 (default) = auto: shadows, each update run by its own
                                       urgency, and when the plan's heaviest rank would exceed memory-limit
                                       (after fanin-cuts' try) the lean form, kept if lighter; 1 = lean: those
                                       updates run as urgently as their column block's most urgent one, so its
                                       copy goes early (less memory, often slower); 2 = off: on the column
                                       block's own rank */
} canopy_options;

/** Figures of the last analysis, factorization and solve. Sizes are global. */
typedef struct canopy_stats {
    int64_t n;
    int64_t nnz;                  /**< entries of the full matrix */
    int64_t nnz_factor;           /**< entries of L (LL^T, LDL^T) or of L+U-I (LU) */
    int64_t ncblk;                /**< column blocks (supernodes after amalgamation/splitting) */
    int64_t nblok;                /**< dense blocks in the block structure */
    double flops;                 /**< predicted factorization flops */
    double time_order;
    double time_symbolic;
    double time_analyze;          /**< seconds, ordering + symbolic included */
    double time_factorize;        /**< seconds of the last factorization */
    double time_solve;            /**< seconds of the last solve */
    double time_refine;           /**< seconds of the last refinement */
    double gflops_factorize;
    double backward_error;        /**< of the last refinement: max over columns of ||b-Ax||/(||A|| ||x|| + ||b||), inf-norms */
    int refinement_steps;
    int64_t perturbed_pivots;
    size_t factor_bytes;
    size_t peak_memory_bytes;     /**< largest memory held through Canopy's allocator on any rank while this solver
                                       lived, above what was held when it was created (other solvers alive at the
                                       same time count too) */
    int ranks;
    int threads_per_rank;
    canopy_factorization factorization; /**< what was actually used */
    canopy_scheduler scheduler;   /**< scheduler of the last factorization */
    canopy_numa numa;             /**< memory placement of the last factorization */
    int numa_nodes;               /**< NUMA nodes holding the rank's usable cores */
    int bound;                    /**< 1 if the workers are bound to cores (0: bind=none or dry run) */
    double time_factorize_predicted; /**< the static schedule's simulated makespan (cost model), seconds */
    double busy_fraction;         /**< time inside tasks / (threads x factorization wall time) */
    int64_t steals;               /**< tasks run by another thread than their owner (dynamic scheduler) */
    int64_t steals_remote;        /**< of which crossed NUMA nodes */
    int64_t factor_bytes_unlocated; /**< factor bytes whose NUMA node the kernel did not report */
    double time_lock_wait;        /**< seconds (summed over threads) spent waiting for another thread's
                                       update of the same block (the per-block ticket lock) */
    /* several ranks: the last factorization's communication and memory, per rank (min/max/median/
     * standard deviation over the ranks) and in total; rank-local figures above are rank 0's */
    int comm_threads;             /**< communication threads per rank used (0: workers call MPI; 3: none, the
                                       calling thread drives MPI, as comm-threads=1 runs when MPI gives only
                                       MPI_THREAD_FUNNELED or MPI_THREAD_SINGLE) */
    canopy_tree tree;             /**< shape of the restricted collectives */
    int64_t comm_msgs;            /**< messages sent by all ranks (factorization) */
    int64_t comm_bytes;           /**< bytes sent by all ranks (factorization) */
    int64_t comm_msgs_without_fanin; /**< messages one message per remote update would have taken */
    int64_t comm_bytes_without_fanin; /**< and their bytes */
    double comm_bytes_rank_min, comm_bytes_rank_max, comm_bytes_rank_median, comm_bytes_rank_stddev;
    double comm_msgs_rank_min, comm_msgs_rank_max, comm_msgs_rank_median, comm_msgs_rank_stddev;
    int64_t solve_comm_msgs;      /**< messages of the last solve (all ranks) */
    int64_t solve_comm_bytes;
    double solve_bytes_rank_min, solve_bytes_rank_max, solve_bytes_rank_median, solve_bytes_rank_stddev;
    double factor_bytes_rank_min, factor_bytes_rank_max; /**< factor bytes held per rank */
    double peak_memory_rank_min, peak_memory_rank_max;   /**< peak memory per rank */
    double memory_predicted_rank_max; /**< largest predicted factorization memory of a rank (the analysis; on
                                       one rank the first factorization; again after the LL^T fallback);
                                       0 on one rank with memory_check off */
    double memory_limit_rank;     /**< the limit memory_check compares with (bytes per rank) */
    int twod_levels;              /**< levels of the thread tree the plan gave 2D tasks (options.twod_levels,
                                       or the one the simulation chose for auto) */
    int64_t twod_cblks;           /**< column blocks factored with 2D tasks */
    int64_t handovers;            /**< contributions computed before their turn and left for the thread
                                       applying the one before them, instead of waiting (this rank) */
    int split_width;              /**< width the wide column blocks were split to (options.split_size, or the
                                       one the simulation chose for auto: also the 2D tiles' size); 0: none */
    double time_fill;             /**< seconds of the last factorization spent before its first task: the
                                       owners zero (the first time: fault in) their memory and assemble A */
    /* memory per rank at the end of the last factorization (analysis included): Canopy's allocator
     * (as peak_memory_bytes, per rank) and the OS's peak resident set of the process (getrusage),
     * rank 0 against the mean of the others (with one rank: its own) */
    double peak_memory_rank0, peak_memory_rank_mean;
    double rss_peak_rank0, rss_peak_rank_mean, rss_peak_rank_min, rss_peak_rank_max;
    /* the last canopy_selinv */
    double time_selinv;           /**< seconds (the inversion, when it ran, and the extraction) */
    double flops_selinv;          /**< flops of the selected inversion (0 when none ran in that call) */
    double gflops_selinv;
    int64_t selinv_entries;       /**< entries of the inverse returned */
    /* several ranks: the panels of the inverse the last inversion (DIAG or PATTERN since the last
     * factorization) broadcast along the restricted trees (option tree), all ranks, and the bytes
     * each rank sent (min/max/median/standard deviation over the ranks, as the factorization's) */
    int64_t selinv_comm_msgs;
    int64_t selinv_comm_bytes;
    double selinv_bytes_rank_min, selinv_bytes_rank_max, selinv_bytes_rank_median, selinv_bytes_rank_stddev;
    /* the BLAS as the cost model found it when it was loaded (the first analysis; rank 0's) */
    double blas_gflops;           /**< DGEMM GFlop/s on one core (a 576 x 256 x 256 update), measured by the
                                       calibration or the cache's check; 0: not measured (cost-cache=fixed) */
    double blas_gflops_expected;  /**< what the core's vector units give at the nominal clock (a low
                                       estimate from the instruction set); 0: unknown */
    int blas_warning;             /**< 1: the BLAS runs far below this CPU (kernels for an older instruction
                                       set, or a slow library); blas_message says why and the fix */
    char blas_name[128];          /**< "OpenBLAS 0.3.21 Cooperlake" (library, version, kernels), or the file */
    char blas_message[400];       /**< the warning, also printed once per process on stderr ("" if none) */
    /* several ranks, the last factorization, all ranks (scheduler=dynamic; 0 under static) */
    int64_t fanin_early;          /**< fan-in messages added into their panel on arrival, not held for its task */
    int mapping;                  /**< several ranks: the plan's mapping onto the ranks, 1 = by flops, 2 = by
                                       factor entries (options.mapping); 0: one rank */
    int64_t root_columns;         /**< several ranks: columns of the root factored on a 2D grid of ranks
                                       (options.root_grid); 0: none */
    int root_pr, root_pc;         /**< that grid: root_pr x root_pc ranks (0 x 0: none) */
    /* that root, the last factorization, seconds on rank 0: waiting for the other ranks' tasks (the
     * agreement before the root), the entries to the grid's tiles, the grid's factorization, and the
     * factor back to the panels (0 without a root grid) */
    double time_root_wait, time_root_scatter, time_root_factor, time_root_gather;
    double memory_predicted_rss_rank_max; /**< memory_predicted_rank_max as the OS will count it (compare
                                       with rss_peak_rank_max): the rank's resident memory at the
                                       prediction that its solver does not hold (MPI, libraries, the
                                       application) plus its predicted factorization memory, or the
                                       process's peak so far when higher; the largest over the ranks */
    int64_t top2d_cblks;          /**< several ranks: column blocks of the shared top run cyclically over their
                                       ranks with their updates where the target lives (options.top2d); 0: none */
} canopy_stats;

/** Per worker thread of this rank (rank 0 in this release), last factorization. */
typedef struct canopy_thread_stats {
    int core;                     /**< OS index of the core it is bound to (-1: not bound) */
    int node;                     /**< NUMA node (logical index among the rank's nodes) */
    double busy;                  /**< seconds inside tasks */
    int64_t tasks;
    int64_t steals;               /**< tasks it took from another thread's queue */
    int64_t factor_bytes;         /**< factor bytes it owns (allocates, first touches and fills) */
} canopy_thread_stats;

/** Per NUMA node of this rank: where the factor was meant to go and where the kernel says it is. */
typedef struct canopy_node_stats {
    int64_t factor_bytes_planned;
    int64_t factor_bytes_found;   /**< from move_pages; see canopy_stats.factor_bytes_unlocated */
} canopy_node_stats;

typedef struct canopy_solver canopy_solver;

/** Fill @p opts with the defaults. */
CANOPY_EXPORT void canopy_options_default(canopy_options *opts);

/**
 * Set one option by name ("threads", "bind", "numa", "scheduler", "comm-threads", "tree",
 * "factorization", "ordering", "scaling", "pivot-threshold", "amalgamation", "refine",
 * "refine-tolerance", "verbose", "trace", "split", "cost-cache", "memory-check",
 * "memory-limit", "comm-heatmap", "ordering-threads", "2d-levels", "selinv-memory", "strict", "mapping", "root-grid",
 * "fanin-cuts"); '_' and '-'
 * are interchangeable.
 * @return CANOPY_ERR_ARGUMENT with a message in @p msg (if not NULL) for an unknown name or bad value.
 */
CANOPY_EXPORT canopy_status canopy_options_set(canopy_options *opts, const char *name,
                                               const char *value, char *msg, size_t msglen);

/** Overlay the CANOPY_<NAME> environment variables (CANOPY_THREADS, CANOPY_NUMA, ...). */
CANOPY_EXPORT canopy_status canopy_options_from_env(canopy_options *opts, char *msg, size_t msglen);

/**
 * Create a solver on @p comm (duplicated). Collective; the options of rank 0 are used on every rank.
 * @param[in] opts options, or NULL for defaults + environment.
 */
CANOPY_EXPORT canopy_status canopy_create(MPI_Comm comm, const canopy_options *opts,
                                          canopy_solver **solver);

/**
 * Give the matrix, centralized on rank 0 (other ranks pass NULL). Collective. The data are
 * checked (square, indices in range, no duplicates, finite values) and copied.
 */
CANOPY_EXPORT canopy_status canopy_set_matrix(canopy_solver *solver, const canopy_csc *A);

/**
 * A matrix given in pieces: every rank passes the columns it holds, in global numbering. Any
 * distribution is accepted: a column may be split over several ranks and an entry given by
 * several ranks is the sum of what they give (finite element assembly). kind, triangle, arith,
 * base and n must be the same on every rank.
 */
typedef struct canopy_dist_csc {
    canopy_int n;                 /**< global order */
    canopy_int ncols;             /**< columns held by this rank (0 allowed) */
    canopy_int *cols;             /**< [ncols] global index of each local column (with base) */
    canopy_int *colptr;           /**< ncols + 1 starts */
    canopy_int *rowind;           /**< global row index of each entry (with base) */
    void *values;
    int base;
    canopy_arith arith;
    canopy_matrix_kind kind;
    canopy_triangle triangle;
} canopy_dist_csc;

/**
 * Give the matrix distributed over the ranks (see canopy_dist_csc). Collective; the pieces are
 * checked (indices in range, finite values) on every rank and the error is agreed.
 */
CANOPY_EXPORT canopy_status canopy_set_matrix_distributed(canopy_solver *solver, const canopy_dist_csc *A);

/** New values for the distributed pattern of canopy_set_matrix_distributed (same layout), every rank. */
CANOPY_EXPORT canopy_status canopy_update_values_distributed(canopy_solver *solver, const void *values);

/**
 * Distributed right-hand sides and solution: each rank holds @p nloc rows (global indices
 * @p rows, 0-based, each row on exactly one rank) of B in @p b (nloc x nrhs, leading dimension
 * @p ldb >= nloc), overwritten by the same rows of X. Collective. The rows travel straight
 * between the ranks that hold them and the ranks that own their column blocks (not through
 * rank 0); canopy_refine_distributed still gathers on rank 0.
 */
CANOPY_EXPORT canopy_status canopy_solve_distributed(canopy_solver *solver, canopy_int nrhs, canopy_int nloc,
                                                     const canopy_int *rows, void *b, canopy_int ldb);

/** Iterative refinement of a distributed X against a distributed B (same row layout on both). */
CANOPY_EXPORT canopy_status canopy_refine_distributed(canopy_solver *solver, canopy_int nrhs, canopy_int nloc,
                                                      const canopy_int *rows, const void *b, canopy_int ldb,
                                                      void *x, canopy_int ldx);

/** canopy_solve_distributed of op(A) X = B (canopy_trans; the same @p trans on every rank). */
CANOPY_EXPORT canopy_status canopy_solve_distributed_trans(canopy_solver *solver, canopy_trans trans, canopy_int nrhs,
                                                           canopy_int nloc, const canopy_int *rows, void *b,
                                                           canopy_int ldb);

/** canopy_refine_distributed of op(A) X = B (canopy_trans; the same @p trans on every rank). */
CANOPY_EXPORT canopy_status canopy_refine_distributed_trans(canopy_solver *solver, canopy_trans trans,
                                                            canopy_int nrhs, canopy_int nloc, const canopy_int *rows,
                                                            const void *b, canopy_int ldb, void *x, canopy_int ldx);

/**
 * The last factorization's point-to-point volume, on rank 0: bytes[i * ranks + j] and
 * msgs[i * ranks + j] sent from rank i to rank j (either may be NULL). Collective.
 */
CANOPY_EXPORT canopy_status canopy_get_comm_matrix(canopy_solver *solver, int64_t *bytes, int64_t *msgs);

/** With CANOPY_ORDER_USER: perm[k] = original index of the k-th unknown (0-based), on rank 0. */
CANOPY_EXPORT canopy_status canopy_set_permutation(canopy_solver *solver, const canopy_int *perm);

/** Ordering, symbolic factorization and planning. Collective. */
CANOPY_EXPORT canopy_status canopy_analyze(canopy_solver *solver);

/** New values for the same pattern (same layout as given to canopy_set_matrix), on rank 0. */
CANOPY_EXPORT canopy_status canopy_update_values(canopy_solver *solver, const void *values);

/** Numerical factorization. Collective. */
CANOPY_EXPORT canopy_status canopy_factorize(canopy_solver *solver);

/**
 * Solve A X = B in place for @p nrhs right-hand sides stored column-major with leading
 * dimension @p ldb (on rank 0). Collective.
 */
CANOPY_EXPORT canopy_status canopy_solve(canopy_solver *solver, canopy_int nrhs, void *b, canopy_int ldb);

/**
 * canopy_solve with op(A) = A, A^T or A^H (@p trans), from the same factors: no second
 * factorization (LU's factors are used transposed; a symmetric matrix is its own transpose, a
 * Hermitian one its own conjugate transpose). Rank 0's @p trans is used. Collective.
 */
CANOPY_EXPORT canopy_status canopy_solve_trans(canopy_solver *solver, canopy_trans trans, canopy_int nrhs, void *b,
                                               canopy_int ldb);

/**
 * Iterative refinement of X (from canopy_solve) against B (x and b distinct arrays), until the
 * backward error reaches the tolerance or stops improving. Returns CANOPY_WARN_NOT_CONVERGED when
 * it stops above it.
 */
CANOPY_EXPORT canopy_status canopy_refine(canopy_solver *solver, canopy_int nrhs, const void *b,
                                          canopy_int ldb, void *x, canopy_int ldx);

/** canopy_refine of op(A) X = B (see canopy_solve_trans): residuals and backward errors of op(A). */
CANOPY_EXPORT canopy_status canopy_refine_trans(canopy_solver *solver, canopy_trans trans, canopy_int nrhs,
                                                const void *b, canopy_int ldb, void *x, canopy_int ldx);

/**
 * Ask the call running on @p solver (from another thread: a signal handler's flag, a GUI, Python's
 * Ctrl-C) to stop: canopy_factorize and canopy_selinv stop before their next task and return
 * CANOPY_ERR_INTERRUPTED (the factors, or an in-place inverse, are then unusable until the next
 * canopy_factorize; the analysis stays). A call that starts afterwards is not affected; the other
 * calls (analysis, solves) run to their end. One rank only: with several ranks every rank would
 * have to agree, and CANOPY_ERR_UNSUPPORTED is returned.
 */
CANOPY_EXPORT canopy_status canopy_interrupt(canopy_solver *solver);

/** Copy the statistics out. */
CANOPY_EXPORT canopy_status canopy_get_stats(const canopy_solver *solver, canopy_stats *stats);

/** What canopy_selinv returns. */
typedef enum canopy_selinv_what {
    CANOPY_SELINV_DIAG = 0,       /**< the diagonal of A^-1 */
    CANOPY_SELINV_PATTERN = 1,    /**< every entry of A^-1 in the pattern of the factors: L+L^T, L+U */
    CANOPY_SELINV_ENTRIES = 2     /**< the entries (rows[q], cols[q]) of A^-1 the caller lists */
} canopy_selinv_what;

/** The request and the results of canopy_selinv; read and written on rank 0 only. */
typedef struct canopy_selinv_request {
    void *diag;                   /**< DIAG: n scalars (double, or double complex pairs), written */
    canopy_csc pattern;           /**< PATTERN: filled (general storage, base 0, the user's numbering,
                                       sorted rows); free with canopy_csc_free */
    canopy_int nentries;          /**< ENTRIES: how many */
    const canopy_int *rows;       /**< ENTRIES: 0-based row and column of each */
    const canopy_int *cols;
    void *values;                 /**< ENTRIES: nentries scalars, written */
    int64_t perturbed_pivots;     /**< out: pivots perturbed in the factorization the entries come from */
} canopy_selinv_request;

/**
 * Selected entries of the inverse of the matrix given (scaling and pivoting undone, the user's
 * numbering), after canopy_factorize. DIAG and PATTERN run the supernodal selected inversion
 * once (on the rank's threads, in a cost like the factorization's) and keep its result for later
 * calls until the next factorization: with the option selinv-memory=inplace (default) it
 * overwrites the factors, and canopy_solve then refuses until canopy_factorize runs again; with
 * selinv-memory=separate it works in a copy (the factors' memory again). ENTRIES solves with unit
 * vectors pruned to the tree paths that matter, fast for a short list (from the inverse instead
 * when the factors are gone). Returns CANOPY_WARN_PIVOTS_PERTURBED when the factorization
 * perturbed pivots: the entries are then of the inverse of the perturbed matrix. Collective:
 * with several ranks every rank calls it, each inverts its own column blocks (the other ranks'
 * finished blocks reach it along the restricted trees of option tree), and rank 0's request is
 * answered on rank 0.
 */
CANOPY_EXPORT canopy_status canopy_selinv(canopy_solver *solver, canopy_selinv_what what, canopy_selinv_request *req);

/** The phase canopy_get_progress reports. */
typedef enum canopy_phase {
    CANOPY_PHASE_IDLE = 0,
    CANOPY_PHASE_ANALYZE = 1,
    CANOPY_PHASE_FACTORIZE = 2,
    CANOPY_PHASE_SOLVE = 3,       /**< canopy_solve, canopy_refine and their distributed forms */
    CANOPY_PHASE_SELINV = 4       /**< canopy_selinv */
} canopy_phase;

/**
 * For a progress display on another thread: the call running now on this rank (*phase) and, in a
 * factorization, the share of this rank's predicted work done (*done in 0..1; -1 in the other
 * phases). With canopy_interrupt, the calls that may run while another thread is inside a call on
 * the same solver: any other call then returns CANOPY_ERR_BUSY at once and changes nothing (on
 * several ranks the other ranks would wait for it: one call at a time is the caller's rule).
 */
CANOPY_EXPORT canopy_status canopy_get_progress(const canopy_solver *solver, canopy_phase *phase, double *done);

/** Figures of worker @p thread (0 .. threads_per_rank - 1) after a factorization. */
CANOPY_EXPORT canopy_status canopy_get_thread_stats(const canopy_solver *solver, int thread,
                                                    canopy_thread_stats *stats);

/** Placement of the factor on NUMA node @p node (0 .. numa_nodes - 1) after a factorization. */
CANOPY_EXPORT canopy_status canopy_get_node_stats(const canopy_solver *solver, int node, canopy_node_stats *stats);

/**
 * The detailed message of the last failing call on @p solver ("" if none). With NULL: the message of
 * the last failed canopy_create on the calling thread (no handle exists to carry it).
 */
CANOPY_EXPORT const char *canopy_last_error(const canopy_solver *solver);

/** Text for a status code. */
CANOPY_EXPORT const char *canopy_strerror(canopy_status status);

/** Name of a factorization kind ("llt", ...). */
CANOPY_EXPORT const char *canopy_factorization_name(canopy_factorization f);

/** Free everything and set *solver to NULL. Collective. */
CANOPY_EXPORT canopy_status canopy_destroy(canopy_solver **solver);

/* ---- Matrix input and model problems (no solver needed) ---------------------------------- */

/**
 * Read a Matrix Market (.mtx, .mtx.gz) or Rutherford-Boeing / Harwell-Boeing (.rb, .rua, .rsa,
 * .psa, .pua, .cua, .csa, optionally .gz) file into a 0-based CSC matrix. Symmetric files keep
 * the stored triangle (kind CANOPY_KIND_SYMMETRIC, triangle LOWER or UPPER). Duplicate entries
 * are rejected. On error, @p msg receives "file:line: reason".
 */
CANOPY_EXPORT canopy_status canopy_read_matrix(const char *path, canopy_csc *A, char *msg, size_t msglen);

/**
 * Part @p part (0-based) of @p nparts of a matrix file, for distributed input without any rank
 * holding the whole matrix: an n x n CSC matrix (same n, kind, triangle and arithmetic as
 * canopy_read_matrix gives) holding only this part's entries, for canopy_set_matrix_distributed
 * (which sums the parts). Matrix Market: entries [nz part / nparts, nz (part + 1) / nparts) of the
 * file in file order; the whole file is parsed and checked by every part (a gzip stream cannot be
 * entered in the middle, and every part then reports the same error for a bad file), only the
 * part's entries are stored. A duplicate entry is reported when both copies fall in one part
 * (canopy_set_matrix_distributed sums copies from different parts). Harwell-Boeing /
 * Rutherford-Boeing: the file is read whole, then cut to the columns
 * [n part / nparts, n (part + 1) / nparts).
 */
CANOPY_EXPORT canopy_status canopy_read_matrix_part(const char *path, int part, int nparts, canopy_csc *A,
                                                    char *msg, size_t msglen);

/**
 * Laplacian on an nx x ny x nz grid (nz = 1 for 2D) with Dirichlet boundaries, as an SPD matrix
 * (full storage). @p stencil is 5 (2D), 7 or 27 (3D).
 */
CANOPY_EXPORT canopy_status canopy_generate_laplacian(canopy_int nx, canopy_int ny, canopy_int nz,
                                                      int stencil, canopy_csc *A);

/**
 * The Helmholtz-type model problem -u_xx - u_yy + (100 + cos(2 pi x) + sin(3 pi y)) u = f of
 * papers/mpi-ellpack-itpack.txt section 3.1, 5-point discretization on an nx x ny grid covering
 * the domain's bounding box; exterior grid points get identity equations (encapsulated 5-point
 * star). SPD, full storage.
 */
CANOPY_EXPORT canopy_status canopy_generate_helmholtz(canopy_int nx, canopy_int ny, canopy_csc *A);

/** Free the arrays of a matrix made by the readers or generators. */
CANOPY_EXPORT void canopy_csc_free(canopy_csc *A);

#ifdef __cplusplus
}
#endif
#endif /* CANOPY_H */
