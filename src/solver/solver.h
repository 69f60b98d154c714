/*
 * The solver handle behind the opaque canopy_solver: phase state, the copies of the matrix, the
 * analysis, the factors and the statistics, and the few services every phase driver shares
 * (src/solver/solver.c: messages, memory figures). The drivers see it: src/api/ (the calls and
 * the phases' entries), src/solve/, src/refine/, src/selinv/, src/matrix/dist_matrix.c and
 * src/predict/.
 */
#ifndef CANOPY_SOLVER_H
#define CANOPY_SOLVER_H

#include <mpi.h>
#include <stdatomic.h>

#include "base/common.h"
#include "comm/peerstats.h"
#include "numeric/numeric.h"
#include "numeric/runtime.h"
#include "matrix/scaling.h"
#include "symbolic/symbolic.h"

typedef enum solver_phase {
    PHASE_CREATED = 0,
    PHASE_MATRIX = 1,     /* matrix given */
    PHASE_ANALYZED = 2,   /* ordering + symbolic done, values may have changed */
    PHASE_FACTORIZED = 3
} solver_phase;

struct canopy_solver {
    MPI_Comm comm;
    int rank, nranks;
    canopy_options opts;
    solver_phase phase;
    /* Everything below lives on rank 0 only: this release factorizes on one rank. */
    canopy_csc layout;          /* the user's pattern as given (values NULL), for update_values */
    canopy_csc A;               /* internal form: base 0, sorted, full storage */
    canopy_csc As;              /* scaled (and row-permuted) matrix that is factorized */
    cint *user_perm;            /* with CANOPY_ORDER_USER */
    scaling sc;
    symbolic S;
    numeric F;
    runtime rt;                 /* threads, placement and plan of this rank */
    int have_rt;
    canopy_factorization fact;  /* the factorization in use (never AUTO after analysis) */
    double anorm;               /* ||As||_inf, the pivot threshold's scale */
    double anorm_input;         /* ||A||_inf of a distributed matrix (src/matrix/dist_matrix.c), for refinement */
    canopy_stats stats;
    canopy_err err;             /* last failure, agreed across ranks */
    size_t mem_base;            /* canopy_mem_current() when the solver was created */
    struct api_dist *dist;      /* distributed input layout (src/matrix/dist_matrix.c), NULL if centralized; with
                                   several ranks A and As are then this rank's block columns */
    /* several ranks (src/api/create_dist.c, analyze_dist.c, factorize_dist.c) */
    canopy_arith arith;         /* of the matrix (rank 0's, shared at analysis) */
    int ranks_on_node, node_rank;
    int have_pingpong;
    _Atomic int progress_phase; /* canopy_phase of the call running now (canopy_get_progress) */
    _Atomic unsigned progress_seq; /* bumped before every change of progress_phase */
    _Atomic int interrupt;      /* canopy_interrupt: the running factorization or inversion stops */
    _Atomic int busy;           /* a call is running on this solver (api_enter/api_leave) */
    int symbolic_everywhere;    /* the analysis left S on every rank (choose_split_ranks): no broadcast */
    /* refinement on every rank over its own rows (a distributed matrix, src/refine/dist_vector.h): the
     * product's plan, the rank's block rows (count and indices); NULL outside refine_dist */
    struct distv_halo *rhalo;
    int trans;                  /* while a transposed solve or refinement runs (LU factors only): every solve
                                   with the factors, product with A, norm and scaling works with A^T
                                   (solver_set_trans); 0 otherwise */
    cint rnl;
    cint *rrows;
    double predicted_bytes;     /* this rank's predicted factorization memory (analysis) */
    double mem_checked;         /* predicted_bytes of the last memory check passed (0: none) */
    /* rank 0's scaling on the other ranks for distributed solves, shared once per analysis
     * (solve/solve_direct.c; sc_shared is 1 on every rank once it is) */
    double *sc_row, *sc_col;
    cint *sc_perm;
    int sc_shared;
    int64_t *comm_bytes;        /* rank 0: [nranks^2] bytes sent from i to j (last factorization) */
    int64_t *comm_msgs;
    int virt_ranks;             /* > 0: analysis for a virtual machine of virt_ranks nodes x rt.virt_threads
                                   threads (canopy-simulate, src/predict/predict.c): no plan is kept, nothing runs */
};









/** The operator of the solves from now on (0: A, 1: A^T with LU factors), on this rank. */
static inline void solver_set_trans(canopy_solver *s, int trans)
{
    s->trans = trans;
    s->F.trans = trans;
}

/**
 * What a request for op(A) (canopy_trans) asks of the factors, on the rank that knows the matrix's
 * @p kind and @p arith: *op = 1 to solve with A^T (general matrices: LU), 0 with A itself (A^T = A
 * for symmetric kinds, A^H = A for Hermitian ones), and *conj = 1 when the right-hand side and the
 * solution are conjugated around that solve (A^H x = b is A^T conj(x) = conj(b), and so on).
 */
static inline void solver_trans_plan(canopy_matrix_kind kind, canopy_arith arith, int trans, int *op, int *conj)
{
    bool cx = arith == CANOPY_COMPLEX;
    *op = 0;
    *conj = 0;
    if (trans == CANOPY_TRANS_NONE) return;
    if (kind == CANOPY_KIND_GENERAL) {
        *op = 1;
        *conj = cx && trans == CANOPY_TRANS_H;
    } else if (kind == CANOPY_KIND_HERMITIAN) {
        *conj = cx && trans == CANOPY_TRANS_T;
    } else {
        *conj = cx && trans == CANOPY_TRANS_H;
    }
}

/** The phase canopy_get_progress reports from now on (the sequence number lets a reader on
 * another thread see whether the phase changed while it read the figures). */
static inline void solver_progress_phase(canopy_solver *s, int phase)
{
    atomic_fetch_add(&s->progress_seq, 1u);
    atomic_store(&s->progress_phase, phase);
}

/** A message on stderr from rank 0 when the verbosity option is at least @p level. */
void solver_say(const canopy_solver *s, int level, const char *fmt, ...) CANOPY_PRINTF(3, 4);


/* figures over the ranks: min, max, median and standard deviation of each rank's @p mine */
void solver_summary_stats(MPI_Comm comm, double mine, double *min, double *max, double *median, double *stddev);
/** stats.peak_memory_rank0/_mean and rss_peak_*: collective with several ranks (src/solver/solver.c). */
void solver_memory_figures(canopy_solver *s, double used);
/** Memory this process may use (bytes): the option memory-limit, else MemAvailable (plus what its
 * factors hold already) shared by the ranks of the node. Reads /proc/meminfo. */
double solver_memory_limit(const canopy_solver *s);
/** This process's peak resident set (bytes). */
double solver_rss_peak(void);
/** @p predicted (this solver's factorization memory, as the memory check predicts it) as the OS
 * will count it: the resident memory now that the solver does not hold, plus @p predicted, or the
 * process's peak so far when higher. */
double solver_predicted_rss(const canopy_solver *s, double predicted);
/** The figures of solver_memory_figures from summaries over the ranks of Canopy's count (@p used)
 * and the resident set (@p rss), @p first rank 0's two values: for a caller that gathers them with
 * others (comm_summary_allranks_n). Not collective. */
void solver_memory_set(canopy_solver *s, const comm_summary *used, const comm_summary *rss, const double first[2]);

#endif
