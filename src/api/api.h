/*
 * The API's own internals (src/api/): the public calls' bodies, the phases' entries on several
 * ranks and the one-call-at-a-time guard. Nothing below src/api/ includes this.
 */
#ifndef CANOPY_API_H
#define CANOPY_API_H

#include "solver/solver.h"

/** false (and the error set) when @p call needs the factors (@p need: PHASE_FACTORIZED) and an
 * in-place canopy_selinv overwrote them. */
bool api_factors_ok(canopy_solver *s, int need, const char *call);

/* ---- several ranks (create_dist.c, analyze_dist.c, factorize_dist.c); all collective ---- */

/** canopy_create: the MPI thread level the options need, and the same thread count on every rank. */
canopy_status api_create_dist(canopy_solver *s);
/** canopy_analyze before rank 0's analysis: measure the network once (its split choice plans with it). */
void api_pingpong(canopy_solver *s);
/** canopy_analyze after rank 0's ordering and symbolic: share them, plan everywhere. */
canopy_status api_analyze_dist(canopy_solver *s);
/** This rank's predicted factorization memory for the plan held (predicted_bytes) and the
 * heaviest rank's (stats.memory_predicted_rank_max): the analysis, and the LL^T fallback's plan. */
void api_predict_dist(canopy_solver *s);
/** canopy_factorize on every rank (memory check, entries, fan-in exchange, statistics). */
canopy_status api_factorize_dist(canopy_solver *s);
/** The last factorization's messages and bytes per pair of ranks to rank 0 (s->comm_bytes,
 * s->comm_msgs; false on rank 0 when it has no room for them). Collective, several ranks. */
bool api_gather_comm_matrix(canopy_solver *s);

/**
 * canopy_analyze on one rank as the real run on @p ranks nodes x @p threads threads would do it
 * (split width, 2D levels and plans for that layout, messages priced with @p latency seconds and
 * @p byte_time seconds per byte), without keeping a plan or starting a thread: src/predict/predict.c then
 * plans the layout from s->S. The solver can only be used for that afterwards.
 */
canopy_status api_analyze_virtual(canopy_solver *s, int ranks, int threads, int node_ranks, double latency,
                                  double byte_time);

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

/** The whole analysis of canopy_analyze (src/api/analyze.c; collective with several ranks). */
canopy_status api_analyze_all(canopy_solver *s);

/** The matrix the factorization reads: As, or A itself when a distributed matrix is not scaled. */
canopy_csc *api_factor_source(canopy_solver *s);

/** The memory check's refusal: rank s->rank needs @p need bytes against @p limit; the message says
 * how many ranks would fit by the same prediction. */
void api_refuse_memory(canopy_solver *s, double need, double limit);
/** One rank: the memory check before a first factorization allocates; false (and the refusal in
 * s->err) when it would not fit. */
bool api_memory_fits_rank0(canopy_solver *s);

#endif
