/*
 * The solver handle behind the opaque canopy_solver: phase state, the copies of the matrix, the
 * analysis, the factors and the statistics. The phase driver sees it: src/api.c (the calls),
 * src/analysis.c, src/phases_dist.c, src/api_dist.c, src/dist_matrix.c, src/dist_vector.c,
 * src/solve_direct.c, src/api_fortran.c, and src/refine.c.
 */
#ifndef CANOPY_SOLVER_H
#define CANOPY_SOLVER_H

#include <mpi.h>
#include <stdatomic.h>

#include "common.h"
#include "numeric.h"
#include "runtime.h"
#include "scaling.h"
#include "symbolic.h"

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
    double anorm_input;         /* ||A||_inf of a distributed matrix (src/dist_matrix.c), for refinement */
    canopy_stats stats;
    canopy_err err;             /* last failure, agreed across ranks */
    size_t mem_base;            /* canopy_mem_current() when the solver was created */
    struct api_dist *dist;      /* distributed input layout (src/dist_matrix.c), NULL if centralized; with
                                   several ranks A and As are then this rank's block columns */
    /* several ranks (src/phases_dist.c) */
    canopy_arith arith;         /* of the matrix (rank 0's, shared at analysis) */
    int ranks_on_node, node_rank;
    int have_pingpong;
    _Atomic int progress_phase; /* canopy_phase of the call running now (canopy_get_progress) */
    _Atomic unsigned progress_seq; /* bumped before every change of progress_phase */
    _Atomic int interrupt;      /* canopy_interrupt: the running factorization or inversion stops */
    _Atomic int busy;           /* a call is running on this solver (api_enter/api_leave) */
    int symbolic_everywhere;    /* the analysis left S on every rank (choose_split_ranks): no broadcast */
    /* refinement on every rank over its own rows (a distributed matrix, src/dist_vector.h): the
     * product's plan, the rank's block rows (count and indices); NULL outside refine_dist */
    struct distv_halo *rhalo;
    int trans;                  /* while a transposed solve or refinement runs (LU factors only): every solve
                                   with the factors, product with A, norm and scaling works with A^T
                                   (api_set_trans); 0 otherwise */
    cint rnl;
    cint *rrows;
    double predicted_bytes;     /* this rank's predicted factorization memory (analysis) */
    int64_t *comm_bytes;        /* rank 0: [nranks^2] bytes sent from i to j (last factorization) */
    int64_t *comm_msgs;
    int virt_ranks;             /* > 0: analysis for a virtual machine of virt_ranks nodes x rt.virt_threads
                                   threads (canopy-simulate, src/predict.c): no plan is kept, nothing runs */
};

/** false (and the error set) when @p call needs the factors (@p need: PHASE_FACTORIZED) and an
 * in-place canopy_selinv overwrote them. */
bool api_factors_ok(canopy_solver *s, int need, const char *call);
/** canopy_selinv on one rank (src/selinv.c): the status, also in s->err. */
canopy_status api_selinv(canopy_solver *s, canopy_selinv_what what, canopy_selinv_request *req);

/* ---- several ranks (src/phases_dist.c); all collective ---- */

/** canopy_create: the MPI thread level the options need, and the same thread count on every rank. */
canopy_status dist_create(canopy_solver *s);
/** canopy_analyze before rank 0's analysis: measure the network once (its split choice plans with it). */
void dist_pingpong(canopy_solver *s);
/** canopy_analyze after rank 0's ordering and symbolic: share them, plan everywhere. */
canopy_status dist_analyze(canopy_solver *s);
/** canopy_factorize on every rank (memory check, entries, fan-in exchange, statistics). */
canopy_status dist_factorize(canopy_solver *s);
/** stats.peak_memory_rank0/_mean and rss_peak_*: collective with several ranks (src/api.c). */
void api_memory_figures(canopy_solver *s, double used);
/** Solves of canopy_solve / canopy_refine: rank 0 drives (refine.c calls api_apply_solve), the
 * others serve until rank 0 says it is done. */
void dist_serve_solves(canopy_solver *s);
void dist_end_solves(canopy_solver *s);
/** One solve of y (n x nrhs, ld n, original numbering, on rank 0) with the factors, any rank count. */
canopy_status api_apply_solve(canopy_solver *s, cint nrhs, void *y);
/** After a solve: its communication figures. */
void dist_solve_stats(canopy_solver *s);

/** canopy_solve_distributed on several ranks, its arguments checked and agreed (nrhs > 0, the
 * same everywhere, n rows in all): the rows go straight to their owners and back
 * (src/solve_direct.c). Collective. */
canopy_status api_solve_direct(canopy_solver *s, cint n, canopy_arith arith, cint nrhs, cint nloc, const cint *rows,
                               void *b, cint ldb);

/**
 * canopy_analyze on one rank as the real run on @p ranks nodes x @p threads threads would do it
 * (split width, 2D levels and plans for that layout, messages priced with @p latency seconds and
 * @p byte_time seconds per byte), without keeping a plan or starting a thread: src/predict.c then
 * plans the layout from s->S. The solver can only be used for that afterwards.
 */
canopy_status api_analyze_virtual(canopy_solver *s, int ranks, int threads, double latency, double byte_time);

/** Release what src/dist_matrix.c keeps for a distributed matrix (NULL-safe). */
void api_dist_free(canopy_solver *s);

/** canopy_set_matrix*: forget the previous matrix and its analysis (every rank). */
void api_matrix_reset(canopy_solver *s);
/* one call at a time per solver: api_enter false when another thread's call is running */
bool api_enter(canopy_solver *s);
void api_leave(canopy_solver *s);
/* the body of a public call: NULL refused, CANOPY_ERR_BUSY while another runs, else @p call */
#define API_GUARDED(s, call)                                                                       \
    do {                                                                                           \
        if ((s) == NULL) return CANOPY_ERR_ARGUMENT;                                               \
        canopy_solver *g_ = (canopy_solver *)(s); /* the flag only: some calls take a const */     \
        if (!api_enter(g_)) return CANOPY_ERR_BUSY;                                                \
        canopy_status st_ = (call);                                                                \
        api_leave(g_);                                                                             \
        return st_;                                                                                \
    } while (0)
/* canopy_solve and canopy_refine inside a call that holds the solver already */
canopy_status api_solve(canopy_solver *s, int trans, canopy_int nrhs, void *b, canopy_int ldb);
canopy_status api_refine(canopy_solver *s, int trans, canopy_int nrhs, const void *b, canopy_int ldb, void *x,
                         canopy_int ldx);
/** Negate the imaginary parts of n x nrhs complex scalars (leading dimension @p ld). */
void api_conj(cint n, cint nrhs, void *v, cint ld);
/** canopy_set_matrix*: the end of the call (agreed outcome, phase). Collective. */
canopy_status api_matrix_done(canopy_solver *s);
/** canopy_update_values*: s->A holds new values on every rank that holds it: rescale, ask for a
 * refactorization. Collective. */
canopy_status api_values_changed(canopy_solver *s);

/** y = alpha A x + beta y on rank 0 (refinement): A where it lives (several ranks with a
 * distributed matrix: the others take part from dist_serve_solves). While every rank refines
 * its own rows (s->rhalo), x and y are this rank's block rows (leading dimension s->rnl). */
canopy_status api_apply_matrix(canopy_solver *s, cint nrhs, double alpha, const void *x, cint ldx, double beta,
                               void *y, cint ldy);

/** v[0..count) = the maximum (@p max) or the sum over the ranks, on every rank: refinement over
 * the ranks' own rows (s->rhalo); nothing otherwise. A NaN counts as +infinity. */
void api_reduce(canopy_solver *s, double *v, int count, bool max);
/** The status agreed over the ranks while they refine their own rows; s->err.status otherwise. */
canopy_status api_agree(canopy_solver *s);

/**
 * canopy_refine / canopy_refine_distributed on a distributed matrix: the user's rows (rows[0..nloc)
 * of b and x on this rank) move to the ranks holding those block columns, every rank refines its
 * own rows (residuals by distv_spmv, corrections by api_solve_direct, norms and dot products
 * reduced), and x moves back. Collective; the arguments are checked already.
 */
canopy_status api_refine_dist(canopy_solver *s, cint nrhs, cint nloc, const cint *rows, const void *b, cint ldb,
                              void *x, cint ldx);

/** The operator of the solves from now on (0: A, 1: A^T with LU factors), on this rank. */
static inline void api_set_trans(canopy_solver *s, int trans)
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
static inline void api_trans_plan(canopy_matrix_kind kind, canopy_arith arith, int trans, int *op, int *conj)
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
static inline void api_progress_phase(canopy_solver *s, int phase)
{
    atomic_fetch_add(&s->progress_seq, 1u);
    atomic_store(&s->progress_phase, phase);
}

/** The whole analysis of canopy_analyze (src/analysis.c; collective with several ranks). */
canopy_status api_analyze_all(canopy_solver *s);
/** A message on stderr from rank 0 when the verbosity option is at least @p level. */
void api_say(const canopy_solver *s, int level, const char *fmt, ...) CANOPY_PRINTF(3, 4);

/** The matrix the factorization reads: As, or A itself when a distributed matrix is not scaled. */
canopy_csc *api_factor_source(canopy_solver *s);

#endif
