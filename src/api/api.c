/*
 * Public entry points and the phase driver: argument and phase checks, the order of the phases,
 * timing and statistics, and the agreement of every outcome across ranks (comm/agree.c).
 * Rank 0 reads, orders and analyzes; with several ranks, src/api/analyze_dist.c shares the analysis,
 * distributes the factorization and runs the solves on every rank.
 */
#include "api/api.h"

#include <sys/resource.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <float.h>
#include <pthread.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "comm/agree.h"
#include "matrix/dist_matrix.h"
#include "matrix/matrix.h"
#include "numa/topology.h"
#include "api/options.h"
#include "order/order.h"
#include "refine/refine.h"
#include "selinv/selinv.h"
#include "solve/solve.h"

static const char *const error_text[] = {
    [0] = "success",
    [-CANOPY_ERR_ARGUMENT] = "invalid argument",
    [-CANOPY_ERR_NOMEM] = "out of memory",
    [-CANOPY_ERR_IO] = "cannot read file",
    [-CANOPY_ERR_FORMAT] = "malformed file",
    [-CANOPY_ERR_MATRIX] = "invalid matrix",
    [-CANOPY_ERR_SINGULAR] = "matrix is singular",
    [-CANOPY_ERR_NOT_SPD] = "matrix is not positive definite",
    [-CANOPY_ERR_PHASE] = "call out of order",
    [-CANOPY_ERR_UNSUPPORTED] = "not supported by this build",
    [-CANOPY_ERR_TOO_LARGE] = "problem too large for the index type",
    [-CANOPY_ERR_MPI] = "MPI error",
    [-CANOPY_ERR_ORDERING] = "ordering failed",
    [-CANOPY_ERR_INTERNAL] = "internal error",
    [-CANOPY_ERR_INTERRUPTED] = "interrupted",
    [-CANOPY_ERR_BUSY] = "another call on this solver is still running",
};

static const char *const warning_text[] = {
    [CANOPY_WARN_PIVOTS_PERTURBED] = "warning: tiny pivots were perturbed (static pivoting)",
    [CANOPY_WARN_NOT_CONVERGED] = "warning: iterative refinement did not reach the tolerance",
};

CANOPY_EXPORT const char *canopy_strerror(canopy_status st)
{
    int c = (int)st;
    if (c <= 0 && -c < (int)(sizeof error_text / sizeof *error_text) && error_text[-c]) return error_text[-c];
    if (c > 0 && c < (int)(sizeof warning_text / sizeof *warning_text) && warning_text[c]) return warning_text[c];
    return "unknown status code";
}


/* The message of the last failed canopy_create on this thread: there is no handle to carry it. */
static _Thread_local char create_error[512];

CANOPY_EXPORT const char *canopy_last_error(const canopy_solver *s)
{
    if (s == NULL) return create_error[0] ? create_error : "no solver (NULL handle)";
    return s->err.msg;
}


/* End of every collective call: agree on the outcome, share rank 0's statistics. */
static canopy_status finish(canopy_solver *s)
{
    canopy_status st = comm_agree(s->comm, &s->err);
    if (s->nranks > 1) MPI_Bcast(&s->stats, (int)sizeof s->stats, MPI_BYTE, 0, s->comm);
    if (st < 0) solver_say(s, 1, "%s", s->err.msg);
    return st;
}


static void note_memory(canopy_solver *s)
{
    size_t peak = canopy_mem_peak();
    size_t used = peak > s->mem_base ? peak - s->mem_base : 0;
    if (used > s->stats.peak_memory_bytes) s->stats.peak_memory_bytes = used;
}

/* A phase may only run after its predecessor; the phase is the same on every rank. */
static bool phase_ok(canopy_solver *s, solver_phase need, const char *call, const char *before)
{
    if (s->phase >= need) return api_factors_ok(s, need, call);
    canopy_err_set(&s->err, CANOPY_ERR_PHASE, "%s called before %s", call, before);
    return false;
}

bool api_factors_ok(canopy_solver *s, int need, const char *call)
{
    if (need < PHASE_FACTORIZED || (s->F.inv_state != 1 && s->F.inv_state != 3) || !strcmp(call, "canopy_get_comm_matrix"))
        return true;
    if (!strcmp(call, "canopy_selinv")) {
        if (s->F.inv_state != 3) return true;
        canopy_err_set(&s->err, CANOPY_ERR_PHASE,
                       "canopy_selinv: an earlier in-place canopy_selinv failed or was interrupted over the factors: "
                       "call canopy_factorize again");
        return false;
    }
    canopy_err_set(&s->err, CANOPY_ERR_PHASE,
                   "%s: the factors were overwritten by canopy_selinv (selinv-memory=inplace); call canopy_factorize "
                   "again, or set selinv-memory=separate to keep them",
                   call);
    return false;
}

static void free_analysis(canopy_solver *s)
{
    s->symbolic_everywhere = 0;
    solve_direct_forget(s);
    numeric_free(&s->F);
    if (s->have_rt) runtime_drop_plan(&s->rt);
    s->rt.twod_levels_kept = 0;
    symbolic_free(&s->S);
    scaling_free(&s->sc);
    matrix_free(&s->As);
}

static void free_matrix(canopy_solver *s)
{
    free_analysis(s);
    api_dist_free(s);
    matrix_free(&s->A);
    matrix_free(&s->layout);
    canopy_free(s->user_perm);
    s->user_perm = NULL;
}

/* Whether @p msg is new to this process (each distinct placement warning is printed once, not
 * once per solver: an application creating many solvers would repeat it). */
static bool warning_is_new(const char *msg)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static uint64_t seen[32];
    static int nseen;
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const char *c = msg; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ull;
    bool fresh = true;
    pthread_mutex_lock(&lock);
    for (int k = 0; k < nseen && fresh; k++) fresh = seen[k] != h;
    if (fresh && nseen < 32) seen[nseen++] = h;
    pthread_mutex_unlock(&lock);
    return fresh;
}

CANOPY_EXPORT canopy_status canopy_create(MPI_Comm comm, const canopy_options *opts, canopy_solver **out)
{
    int inited = 0, finalized = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&finalized);
    if (!inited || finalized) return CANOPY_ERR_MPI; /* nothing to agree with: MPI is not running */
    if (comm == MPI_COMM_NULL) return CANOPY_ERR_ARGUMENT;
    /* From here on every rank reaches the allreduce, even with a bad argument, so that a rank
     * that passed out == NULL cannot leave the others waiting. */
    canopy_err err = {0};
    create_error[0] = '\0';
    canopy_solver *s = out ? canopy_calloc(1, sizeof *s, "solver", &err) : NULL;
    if (s) {
        atomic_init(&s->progress_phase, CANOPY_PHASE_IDLE);
        atomic_init(&s->progress_seq, 0u);
    }
    if (out) *out = NULL;
    int mine = out == NULL ? CANOPY_ERR_ARGUMENT : s == NULL ? CANOPY_ERR_NOMEM : CANOPY_SUCCESS, worst;
    if (MPI_Allreduce(&mine, &worst, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS) worst = CANOPY_ERR_MPI;
    if (worst != CANOPY_SUCCESS) {
        canopy_free(s);
        return (canopy_status)worst;
    }
    s->mem_base = canopy_mem_current();
    canopy_mem_reset_peak();
    if (MPI_Comm_dup(comm, &s->comm) != MPI_SUCCESS) {
        canopy_free(s);
        return CANOPY_ERR_MPI;
    }
    MPI_Comm_rank(s->comm, &s->rank);
    MPI_Comm_size(s->comm, &s->nranks);
    *out = s;
    if (opts) {
        s->opts = *opts;
    } else {
        canopy_options_default(&s->opts);
        char msg[256] = "";
        if (canopy_options_from_env(&s->opts, msg, sizeof msg) != CANOPY_SUCCESS)
            canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT, "%s", msg);
    }
    options_validate(&s->opts, &s->err);
    /* one set of options for the whole communicator: rank 0's (ranks may have read different
     * environments) */
    if (s->nranks > 1) MPI_Bcast(&s->opts, (int)sizeof s->opts, MPI_BYTE, 0, s->comm);
    s->stats.ranks = s->nranks;
    s->stats.threads_per_rank = 1;
    /* ranks sharing this node, for the oversubscription warning (collective on every rank) */
    int ranks_on_node = 1, node_rank = 0;
    MPI_Comm node;
    if (MPI_Comm_split_type(s->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        MPI_Comm_size(node, &ranks_on_node);
        MPI_Comm_rank(node, &node_rank);
        MPI_Comm_free(&node);
    }
    s->ranks_on_node = ranks_on_node;
    s->node_rank = node_rank;
    if (s->err.status == CANOPY_SUCCESS) {
        if (runtime_init(&s->rt, &s->opts, ranks_on_node, node_rank, &s->err) == CANOPY_SUCCESS) {
            s->stats.threads_per_rank = s->rt.nthreads;
            s->stats.numa_nodes = s->rt.nnodes;
            if (s->rt.warning[0] && s->rank == 0 && warning_is_new(s->rt.warning))
                fprintf(stderr, "canopy: warning: %s\n", s->rt.warning);
        }
        s->have_rt = 1;
    }
    if (s->nranks > 1) api_create_dist(s);
    canopy_status st = finish(s);
    if (st < 0) {
        /* the agreed message (rank 0's when another rank failed: see comm_agree) */
        snprintf(create_error, sizeof create_error, "%s", s->err.msg);
        if (s->have_rt) runtime_free(&s->rt);
        MPI_Comm_free(&s->comm);
        canopy_free(s);
        *out = NULL;
    }
    return st;
}

static canopy_status destroy_call(canopy_solver **ps)
{
    if (ps == NULL || *ps == NULL) return CANOPY_ERR_ARGUMENT;
    canopy_solver *s = *ps;
    free_matrix(s);
    if (s->have_rt) runtime_free(&s->rt);
    canopy_free(s->comm_bytes);
    canopy_free(s->comm_msgs);
    MPI_Comm_free(&s->comm);
    canopy_free(s);
    *ps = NULL;
    return CANOPY_SUCCESS;
}

/* Keep the user's pattern for canopy_update_values (values are re-read in the same layout). */
static canopy_status keep_layout(canopy_solver *s, const canopy_csc *A)
{
    canopy_csc L = *A;
    L.values = NULL;
    int64_t nnz = (int64_t)A->colptr[A->n] - A->base;
    s->layout = L;
    s->layout.colptr = canopy_alloc((size_t)A->n + 1, sizeof(cint), "pattern copy", &s->err);
    s->layout.rowind = canopy_alloc((size_t)(nnz > 0 ? nnz : 1), sizeof(cint), "pattern copy", &s->err);
    if (!s->layout.colptr || !s->layout.rowind) return s->err.status;
    memcpy(s->layout.colptr, A->colptr, ((size_t)A->n + 1) * sizeof(cint));
    memcpy(s->layout.rowind, A->rowind, (size_t)nnz * sizeof(cint));
    return CANOPY_SUCCESS;
}

void api_matrix_reset(canopy_solver *s)
{
    free_matrix(s);
    s->phase = PHASE_CREATED;
    /* figures of a previous matrix must not survive it */
    canopy_stats fresh = {.ranks = s->stats.ranks, .threads_per_rank = s->stats.threads_per_rank,
                          .numa_nodes = s->stats.numa_nodes};
    s->stats = fresh;
}

canopy_status api_matrix_done(canopy_solver *s)
{
    note_memory(s);
    canopy_status st = finish(s);
    if (st >= 0) s->phase = PHASE_MATRIX;
    else free_matrix(s);
    return st;
}

static canopy_status set_matrix_call(canopy_solver *s, const canopy_csc *A)
{
    if (s == NULL) return CANOPY_ERR_ARGUMENT;
    canopy_err_clear(&s->err);
    api_matrix_reset(s);
    if (s->rank == 0) {
        if (A == NULL) {
            canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT, "canopy_set_matrix: NULL matrix on rank 0");
        } else if (A->arith == CANOPY_PATTERN || A->values == NULL) {
            canopy_err_set(&s->err, CANOPY_ERR_MATRIX, "canopy_set_matrix: the matrix has no values (pattern only)");
        } else if (A->arith == CANOPY_COMPLEX && A->kind == CANOPY_KIND_SPD) {
            canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT,
                           "a complex matrix is HERMITIAN (LL^H when positive definite) or SYMMETRIC, not SPD");
        } else if (matrix_import(A, &s->A, &s->err) == CANOPY_SUCCESS) {
            keep_layout(s, A);
        }
        if (s->err.status == CANOPY_SUCCESS) {
            s->stats.n = s->A.n;
            s->stats.nnz = matrix_nnz(&s->A);
        }
    }
    return api_matrix_done(s);
}

static canopy_status set_permutation_call(canopy_solver *s, const canopy_int *perm)
{
    if (s == NULL) return CANOPY_ERR_ARGUMENT;
    canopy_err_clear(&s->err);
    if (phase_ok(s, PHASE_MATRIX, "canopy_set_permutation", "canopy_set_matrix") && s->rank == 0) {
        if (perm == NULL) {
            canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT, "canopy_set_permutation: NULL permutation");
        } else {
            cint *inv = canopy_alloc((size_t)s->A.n, sizeof(cint), "permutation check", &s->err);
            if (inv && !order_invert(s->A.n, perm, inv, NULL)) {
                canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT,
                               "canopy_set_permutation: not a permutation of 0..%" CINT_FMT, s->A.n - 1);
            } else if (inv) {
                canopy_free(s->user_perm);
                s->user_perm = canopy_alloc((size_t)s->A.n, sizeof(cint), "user permutation", &s->err);
                if (s->user_perm) memcpy(s->user_perm, perm, (size_t)s->A.n * sizeof(cint));
            }
            canopy_free(inv);
        }
    }
    return finish(s);
}


static canopy_status analyze_call(canopy_solver *s)
{
    if (s == NULL) return CANOPY_ERR_ARGUMENT;
    canopy_err_clear(&s->err);
    if (phase_ok(s, PHASE_MATRIX, "canopy_analyze", "canopy_set_matrix")) {
        solver_progress_phase(s, CANOPY_PHASE_ANALYZE);
        free_analysis(s);
        if (s->nranks > 1) api_pingpong(s);
        api_analyze_all(s);
#if defined(__GLIBC__)
        /* the analysis' graphs and SCOTCH's work went back to the heap: hand them to the system
         * before the factor is allocated (rank 0 of several would otherwise keep them resident) */
        malloc_trim(0);
#endif
        if (s->nranks > 1) api_analyze_dist(s);
        /* the per-rank figures of the analysis (collective; the factorization's include them) */
        size_t peak = canopy_mem_peak();
        solver_memory_figures(s, peak > s->mem_base ? (double)(peak - s->mem_base) : 0);
    }
    note_memory(s);
    canopy_status st = finish(s);
    solver_progress_phase(s, CANOPY_PHASE_IDLE);
    if (st >= 0) s->phase = PHASE_ANALYZED;
    else if (s->phase > PHASE_MATRIX) s->phase = PHASE_MATRIX;
    return st;
}

canopy_status api_analyze_virtual(canopy_solver *s, int ranks, int threads, int node_ranks, double latency,
                                  double byte_time)
{
    if (s == NULL) return CANOPY_ERR_ARGUMENT;
    canopy_err_clear(&s->err);
    if (s->nranks != 1 || !s->have_rt || ranks < 1 || threads < 1 || node_ranks < 1 || node_ranks > ranks ||
        !(latency >= 0) || !(byte_time >= 0))
        return canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT,
                              "api_analyze_virtual: needs a one-rank solver, ranks >= 1, threads >= 1, 1 <= ranks "
                              "per node <= ranks and a nonnegative latency and byte time");
    if (phase_ok(s, PHASE_MATRIX, "canopy_analyze", "canopy_set_matrix")) {
        free_analysis(s);
        s->virt_ranks = ranks;
        s->rt.virt_threads = threads;
        s->rt.virt_node_ranks = node_ranks;
        s->rt.comm_latency = latency;
        s->rt.comm_byte_time = byte_time;
        api_analyze_all(s);
    }
    canopy_status st = finish(s);
    if (st >= 0) s->phase = PHASE_ANALYZED;
    return st;
}

static canopy_status update_values_call(canopy_solver *s, const void *values)
{
    if (s == NULL) return CANOPY_ERR_ARGUMENT;
    canopy_err_clear(&s->err);
    /* what happened on rank 0: 0 nothing changed (refused values leave the old ones and their
     * factors in place), 1 new values in place, 2 the scaled copy was lost (re-analysis needed) */
    int outcome = 0;
    if (phase_ok(s, PHASE_MATRIX, "canopy_update_values", "canopy_set_matrix") && s->dist != NULL) {
        canopy_err_set(&s->err, CANOPY_ERR_PHASE, "canopy_update_values: the matrix was given distributed: use "
                       "canopy_update_values_distributed");
    } else if (s->err.status == CANOPY_SUCCESS && s->rank == 0) {
        if (values == NULL) {
            canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT, "canopy_update_values: NULL values on rank 0");
        } else if (matrix_update_values(&s->layout, values, &s->A, &s->err) == CANOPY_SUCCESS) {
            outcome = 1;
            /* the scaling of the analysis is kept */
            if (s->phase >= PHASE_ANALYZED && scaling_apply(&s->A, &s->sc, &s->As, &s->err) != CANOPY_SUCCESS)
                outcome = 2;
        }
    }
    canopy_status st = finish(s);
    /* rank 0's outcome; with a distributed matrix (the same on every rank) it is always 1 */
    if (s->nranks > 1 && !distm_active(s)) MPI_Bcast(&outcome, 1, MPI_INT, 0, s->comm);
    if (outcome == 1 && s->phase > PHASE_ANALYZED) s->phase = PHASE_ANALYZED; /* refactorize */
    if (outcome == 2 && s->phase > PHASE_MATRIX) s->phase = PHASE_MATRIX;
    return st;
}

canopy_status api_values_changed(canopy_solver *s)
{
    /* 1 new values in place (refactorize), 2 the scaled copy was lost (re-analysis needed) */
    int outcome = 1;
    if (distm_active(s)) {
        matrix_free(&s->As); /* the factorization rebuilds it from the new values */
    } else if (s->phase >= PHASE_ANALYZED && s->rank == 0 &&
               scaling_apply(&s->A, &s->sc, &s->As, &s->err) != CANOPY_SUCCESS) {
        outcome = 2;
    }
    canopy_status st = finish(s);
    /* rank 0's outcome; with a distributed matrix (the same on every rank) it is always 1 */
    if (s->nranks > 1 && !distm_active(s)) MPI_Bcast(&outcome, 1, MPI_INT, 0, s->comm);
    if (outcome == 1 && s->phase > PHASE_ANALYZED) s->phase = PHASE_ANALYZED;
    if (outcome == 2 && s->phase > PHASE_MATRIX) s->phase = PHASE_MATRIX;
    return st;
}

static canopy_status factorize_rank0(canopy_solver *s)
{
    if (!api_memory_fits_rank0(s)) return s->err.status;
    double t0 = canopy_wtime();
    /* the infinity norm (largest row sum) of the scaled matrix sets the scale of tiny pivots */
    s->anorm = matrix_norm_inf(&s->As);
    if (!isfinite(s->anorm)) s->anorm = matrix_abs_max(&s->As); /* row sums overflow: largest entry */
    if (!(s->anorm > 0))
        return canopy_err_set(&s->err, CANOPY_ERR_SINGULAR, "the matrix is zero");
    /* never a zero threshold, even for a matrix of denormals */
    double threshold = fmax(s->opts.pivot_threshold * s->anorm, DBL_MIN);
    numeric_exec x;
    if (runtime_plan(&s->rt, &s->opts, &s->S, s->fact, s->A.arith == CANOPY_COMPLEX, &s->err) != CANOPY_SUCCESS)
        return s->err.status;
    runtime_exec(&s->rt, &s->opts, &x);
    x.stop = &s->interrupt;
    numeric_set_exec(&s->F, &x);
    canopy_status st = numeric_factorize(&s->F, &s->S, &s->As, s->fact, threshold, &s->err);
    if (st == CANOPY_ERR_NOT_SPD && s->opts.factorization == CANOPY_FACT_AUTO) {
        /* documented fallback: a matrix declared SPD that is not gets LDL^T with static pivoting
         * (a Hermitian one gets LU: our LDL^T is complex symmetric) */
        bool herm = s->A.kind == CANOPY_KIND_HERMITIAN && s->A.arith == CANOPY_COMPLEX;
        solver_say(s, 1, "%s; falling back to %s", s->err.msg, herm ? "LU" : "LDL^T");
        canopy_err_clear(&s->err);
        numeric_free(&s->F);
        s->fact = herm ? CANOPY_FACT_LU : CANOPY_FACT_LDLT;
        /* the new kind's own need (D, the L*D workspace), checked before it allocates */
        if (!api_memory_fits_rank0(s)) return s->err.status;
        if (runtime_plan(&s->rt, &s->opts, &s->S, s->fact, s->A.arith == CANOPY_COMPLEX, &s->err) != CANOPY_SUCCESS)
            return s->err.status;
        runtime_exec(&s->rt, &s->opts, &x);
        x.stop = &s->interrupt;
        numeric_set_exec(&s->F, &x);
        st = numeric_factorize(&s->F, &s->S, &s->As, s->fact, threshold, &s->err);
    }
    if (st < 0) return st;
    if (st > 0) canopy_err_set(&s->err, st, "%" PRId64 " pivots smaller than %.3g were perturbed",
                               s->F.perturbed, threshold);
    canopy_stats *sts = &s->stats;
    sts->time_factorize = canopy_wtime() - t0;
    sts->factorization = s->fact;
    sts->perturbed_pivots = s->F.perturbed;
    sts->flops = s->F.flops;
    sts->gflops_factorize = sts->time_factorize > 0 ? s->F.flops / sts->time_factorize * 1e-9 : 0;
    sts->factor_bytes = numeric_bytes(&s->F);
    runtime_report_factorize(&s->rt, &s->opts, &s->F, sts);
    solver_say(s, 1, "factorize (%s): %.3fs, %.2f GFlop/s, %" PRId64 " perturbed pivots", canopy_factorization_name(s->fact),
        sts->time_factorize, sts->gflops_factorize, sts->perturbed_pivots);
    return st;
}

static canopy_status factorize_call(canopy_solver *s)
{
    if (s == NULL) return CANOPY_ERR_ARGUMENT;
    canopy_err_clear(&s->err);
    atomic_store(&s->interrupt, 0);
    if (phase_ok(s, PHASE_ANALYZED, "canopy_factorize", "canopy_analyze")) {
        if (s->have_rt) sched_pool_progress_reset(s->rt.pool); /* before the phase says so */
        solver_progress_phase(s, CANOPY_PHASE_FACTORIZE);
        if (s->nranks > 1) {
            /* the warning, as on one rank (every rank holds the sum over the ranks) */
            canopy_status fs = api_factorize_dist(s);
            if (fs > 0 && s->err.status == CANOPY_SUCCESS)
                canopy_err_set(&s->err, fs, "%" PRId64 " pivots were perturbed (static pivoting, all ranks)",
                               s->F.perturbed);
            note_memory(s);
        } else {
            factorize_rank0(s);
            note_memory(s);
            size_t peak = canopy_mem_peak();
            solver_memory_figures(s, peak > s->mem_base ? (double)(peak - s->mem_base) : 0);
        }
    } else {
        note_memory(s);
    }
    canopy_status st = finish(s);
    solver_progress_phase(s, CANOPY_PHASE_IDLE);
    if (st >= 0) s->phase = PHASE_FACTORIZED;
    else if (s->phase > PHASE_ANALYZED) s->phase = PHASE_ANALYZED;
    return st;
}

static bool rhs_ok(canopy_solver *s, const char *call, cint nrhs, const void *b, cint ldb, const char *name)
{
    cint row, col;
    if (nrhs < 0) {
        canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT, "%s: nrhs = %" CINT_FMT " is negative", call, nrhs);
        return false;
    }
    if (nrhs > 0 && b == NULL) {
        canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT, "%s: %s is NULL on rank 0", call, name);
        return false;
    }
    if (nrhs > 0 && ldb < s->A.n) {
        canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT, "%s: leading dimension of %s = %" CINT_FMT " < n = %" CINT_FMT,
                       call, name, ldb, s->A.n);
        return false;
    }
    if (nrhs > 0 && matrix_find_nonfinite(s->A.arith, s->A.n, nrhs, b, ldb, &row, &col)) {
        canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT, "%s: %s(%" CINT_FMT ", %" CINT_FMT ") is NaN or Inf (0-based)",
                       call, name, row, col);
        return false;
    }
    return true;
}

/* A solution that overflowed is an error, never a silent answer. */
static void check_solution(canopy_solver *s, const char *call, cint nrhs, const void *x, cint ldx)
{
    cint row, col;
    if (s->err.status < 0 || !matrix_find_nonfinite(s->A.arith, s->A.n, nrhs, x, ldx, &row, &col)) return;
    canopy_err_clear(&s->err); /* an error replaces a warning */
    canopy_err_set(&s->err, CANOPY_ERR_SINGULAR,
                   "%s: the solution is not finite (entry %" CINT_FMT " of column %" CINT_FMT
                   "): the matrix is numerically singular or too badly scaled", call, row, col);
}

/* the imaginary parts of n x nrhs complex scalars (leading dimension ld) negated */
void api_conj(cint n, cint nrhs, void *v, cint ld)
{
    double *d = v;
    for (cint k = 0; k < nrhs; k++)
        for (cint i = 0; i < n; i++) d[2 * ((size_t)k * ld + i) + 1] = -d[2 * ((size_t)k * ld + i) + 1];
}

static bool trans_ok(canopy_solver *s, const char *call, int trans)
{
    if (trans == CANOPY_TRANS_NONE || trans == CANOPY_TRANS_T || trans == CANOPY_TRANS_H) return true;
    canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT, "%s: trans = %d (expected CANOPY_TRANS_NONE, _T or _H)", call, trans);
    return false;
}

canopy_status api_solve(canopy_solver *s, int trans, canopy_int nrhs, void *b, canopy_int ldb)
{
    if (s == NULL) return CANOPY_ERR_ARGUMENT;
    canopy_err_clear(&s->err);
    const char *call = trans ? "canopy_solve_trans" : "canopy_solve";
    bool ready = phase_ok(s, PHASE_FACTORIZED, call, "canopy_factorize");
    solver_progress_phase(s, ready ? CANOPY_PHASE_SOLVE : CANOPY_PHASE_IDLE);
    if (ready && s->rank == 0 && trans_ok(s, call, trans) && rhs_ok(s, call, nrhs, b, ldb, "b") && nrhs > 0) {
        double t0 = canopy_wtime();
        /* rank 0 drives: the serving ranks learn the operator with each solve it orders */
        int op, cj;
        solver_trans_plan(s->A.kind, s->A.arith, trans, &op, &cj);
        if (cj) api_conj(s->A.n, nrhs, b, ldb);
        solver_set_trans(s, op);
        refine_apply_inverse(s, nrhs, b, ldb);
        solver_set_trans(s, 0);
        if (cj) api_conj(s->A.n, nrhs, b, ldb); /* the solution's, or b back as it was */
        runtime_report_solve(&s->rt, &s->opts, &s->F);
        check_solution(s, call, nrhs, b, ldb);
        s->stats.time_solve = canopy_wtime() - t0;
    }
    if (ready && s->nranks > 1) {
        /* rank 0 drove the solves above; the others took part until it said it was done */
        if (s->rank == 0) solve_serve_end(s);
        else solve_serve(s);
        solve_dist_stats(s);
    }
    note_memory(s);
    canopy_status st = finish(s);
    solver_progress_phase(s, CANOPY_PHASE_IDLE);
    return st;
}

static canopy_status selinv_call(canopy_solver *s, canopy_selinv_what what, canopy_selinv_request *req)
{
    if (s == NULL) return CANOPY_ERR_ARGUMENT;
    canopy_err_clear(&s->err);
    atomic_store(&s->interrupt, 0);
    bool ready = phase_ok(s, PHASE_FACTORIZED, "canopy_selinv", "canopy_factorize");
    solver_progress_phase(s, ready ? CANOPY_PHASE_SELINV : CANOPY_PHASE_IDLE);
    /* several ranks: every rank takes part (rank 0's request counts) */
    if (ready && s->nranks > 1) selinv_dist(s, what, req);
    else if (ready && s->rank == 0) selinv_run(s, what, req);
    note_memory(s);
    canopy_status st = finish(s);
    solver_progress_phase(s, CANOPY_PHASE_IDLE);
    return st;
}

/* With cj: a conjugated copy of b (n x nrhs, leading dimension n) and x conjugated in place, so that
 * op(A) x = b is refined as its conjugate (solver_trans_plan); NULL (and the error set) when out of
 * memory. Without cj: b itself. */
static const void *conj_operands(canopy_solver *s, int cj, cint n, cint nrhs, const void *b, cint *ldb, void *x,
                                 cint ldx, void **copy)
{
    *copy = NULL;
    if (!cj) return b;
    *copy = canopy_alloc((size_t)n * nrhs + 1, 2 * sizeof(double), "conjugated right-hand sides", &s->err);
    if (*copy == NULL) return NULL;
    for (cint k = 0; k < nrhs; k++)
        memcpy((double *)*copy + 2 * (size_t)k * n, (const double *)b + 2 * (size_t)k * *ldb, (size_t)n * 2 * sizeof(double));
    api_conj(n, nrhs, *copy, n);
    api_conj(n, nrhs, x, ldx);
    *ldb = n;
    return *copy;
}

canopy_status api_refine(canopy_solver *s, int trans, canopy_int nrhs, const void *b, canopy_int ldb, void *x,
                         canopy_int ldx)
{
    if (s == NULL) return CANOPY_ERR_ARGUMENT;
    canopy_err_clear(&s->err);
    const char *call = trans ? "canopy_refine_trans" : "canopy_refine";
    bool ready = phase_ok(s, PHASE_FACTORIZED, call, "canopy_factorize");
    solver_progress_phase(s, ready ? CANOPY_PHASE_SOLVE : CANOPY_PHASE_IDLE);
    if (ready && distm_active(s)) {
        /* a distributed matrix: every rank refines its own rows (rank 0 holds b and x), with rank 0's
         * operator; every rank holds the kind of its columns */
        int64_t k[2] = {nrhs, trans};
        if (s->rank == 0 && trans_ok(s, call, trans) && rhs_ok(s, call, nrhs, b, ldb, "b") &&
            rhs_ok(s, call, nrhs, x, ldx, "x") && nrhs > 0 && (const void *)x == b)
            canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT, "%s: x and b must be different arrays", call);
        MPI_Bcast(k, 2, MPI_INT64_T, 0, s->comm);
        cint *all = NULL;
        void *bc = NULL;
        int op, cj;
        solver_trans_plan(s->A.kind, s->A.arith, (int)k[1], &op, &cj);
        const void *bb = b;
        cint ldbb = ldb;
        if (s->rank == 0 && s->err.status == CANOPY_SUCCESS && k[0] > 0) {
            all = canopy_alloc((size_t)s->A.n + 1, sizeof(cint), "refinement rows", &s->err);
            for (cint i = 0; all && i < s->A.n; i++) all[i] = i;
            if (all) bb = conj_operands(s, cj, s->A.n, nrhs, b, &ldbb, x, ldx, &bc);
        }
        if (comm_agree(s->comm, &s->err) == CANOPY_SUCCESS && k[0] > 0) {
            double t0 = canopy_wtime();
            solver_set_trans(s, op);
            refine_dist(s, (cint)k[0], s->rank == 0 ? s->A.n : 0, all, bb, ldbb, x, ldx);
            solver_set_trans(s, 0);
            if (s->rank == 0 && cj) api_conj(s->A.n, nrhs, x, ldx);
            if (s->rank == 0) check_solution(s, call, (cint)k[0], x, ldx);
            s->stats.time_refine = canopy_wtime() - t0;
        } else if (s->rank == 0 && bc != NULL) {
            api_conj(s->A.n, nrhs, x, ldx); /* x as it was */
        }
        canopy_free(bc);
        canopy_free(all);
        note_memory(s);
        canopy_status st = finish(s);
        solver_progress_phase(s, CANOPY_PHASE_IDLE);
        return st;
    }
    if (ready && s->rank == 0 && trans_ok(s, call, trans) && rhs_ok(s, call, nrhs, b, ldb, "b") &&
        rhs_ok(s, call, nrhs, x, ldx, "x") && nrhs > 0) {
        if ((const void *)x == b) {
            canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT, "%s: x and b must be different arrays", call);
        } else {
            double t0 = canopy_wtime();
            int op, cj;
            solver_trans_plan(s->A.kind, s->A.arith, trans, &op, &cj);
            void *bc;
            cint ldbb = ldb;
            const void *bb = conj_operands(s, cj, s->A.n, nrhs, b, &ldbb, x, ldx, &bc);
            if (bb != NULL) {
                solver_set_trans(s, op);
                refine_run(s, nrhs, bb, ldbb, x, ldx);
                solver_set_trans(s, 0);
                if (cj) api_conj(s->A.n, nrhs, x, ldx);
            }
            canopy_free(bc);
            check_solution(s, call, nrhs, x, ldx);
            s->stats.time_refine = canopy_wtime() - t0;
        }
    }
    if (ready && s->nranks > 1) {
        if (s->rank == 0) solve_serve_end(s);
        else solve_serve(s);
    }
    note_memory(s);
    canopy_status st = finish(s);
    solver_progress_phase(s, CANOPY_PHASE_IDLE);
    return st;
}

CANOPY_EXPORT canopy_status canopy_get_progress(const canopy_solver *s, canopy_phase *phase, double *done)
{
    if (s == NULL) return CANOPY_ERR_ARGUMENT;
    /* the pool stays put while a factorization runs: only then is it read; a phase that changed
     * meanwhile (the next call reuses the pool) is read again */
    canopy_solver *m = (canopy_solver *)s; /* atomic loads only: some compilers want non-const */
    int p = CANOPY_PHASE_IDLE;
    double d = -1;
    for (int tries = 0; tries < 100; tries++) {
        unsigned before = atomic_load(&m->progress_seq);
        p = atomic_load(&m->progress_phase);
        d = p == CANOPY_PHASE_FACTORIZE && s->have_rt ? sched_pool_progress(s->rt.pool) : -1;
        if (atomic_load(&m->progress_seq) == before) break;
        d = -1;
    }
    if (phase) *phase = (canopy_phase)p;
    if (done) *done = d;
    return CANOPY_SUCCESS;
}

CANOPY_EXPORT canopy_status canopy_interrupt(canopy_solver *s)
{
    if (s == NULL) return CANOPY_ERR_ARGUMENT;
    /* no message: s->err belongs to the call that is running */
    if (s->nranks > 1) return CANOPY_ERR_UNSUPPORTED;
    atomic_store(&s->interrupt, 1);
    return CANOPY_SUCCESS;
}

static canopy_status get_stats_call(const canopy_solver *s, canopy_stats *stats)
{
    if (s == NULL || stats == NULL) return CANOPY_ERR_ARGUMENT;
    *stats = s->stats;
    if (s->have_rt && s->rt.have_cost) cost_model_report(&s->rt.cost, stats); /* the BLAS it measured */
    return CANOPY_SUCCESS;
}

static canopy_status get_thread_stats_call(const canopy_solver *s, int thread, canopy_thread_stats *ts)
{
    if (s == NULL || ts == NULL || !s->have_rt) return CANOPY_ERR_ARGUMENT;
    return runtime_thread_stats(&s->rt, &s->F, thread, ts);
}

static canopy_status get_node_stats_call(const canopy_solver *s, int node, canopy_node_stats *ns)
{
    if (s == NULL || ns == NULL || !s->have_rt) return CANOPY_ERR_ARGUMENT;
    return runtime_node_stats(&s->rt, node, ns);
}

static canopy_status get_comm_matrix_call(canopy_solver *s, int64_t *bytes, int64_t *msgs)
{
    if (s == NULL) return CANOPY_ERR_ARGUMENT;
    canopy_err_clear(&s->err);
    if (phase_ok(s, PHASE_FACTORIZED, "canopy_get_comm_matrix", "canopy_factorize") && s->nranks > 1)
        api_gather_comm_matrix(s); /* here, not at every factorization (the phase is the same everywhere) */
    if (s->err.status >= 0 && s->phase >= PHASE_FACTORIZED && s->rank == 0) {
        size_t nn = (size_t)s->nranks * (size_t)s->nranks;
        for (size_t i = 0; i < nn; i++) {
            if (bytes) bytes[i] = s->comm_bytes ? s->comm_bytes[i] : 0;
            if (msgs) msgs[i] = s->comm_msgs ? s->comm_msgs[i] : 0;
        }
    }
    return finish(s);
}

/* ---- one call at a time per solver ---------------------------------------------------------
 * A call made from a second thread while another call works on the same solver is refused at
 * once with CANOPY_ERR_BUSY and touches nothing (not even s->err, which belongs to the running
 * call): two factorizations over the same factors would corrupt them, a destroy would free them
 * under the running call. canopy_interrupt and canopy_get_progress are meant for another thread
 * and stay open (so does canopy_last_error, to be read once the call has returned). */
bool api_enter(canopy_solver *s)
{
    return atomic_exchange(&s->busy, 1) == 0;
}

void api_leave(canopy_solver *s)
{
    atomic_store(&s->busy, 0);
}

CANOPY_EXPORT canopy_status canopy_destroy(canopy_solver **ps)
{
    if (ps == NULL || *ps == NULL) return destroy_call(ps);
    /* the solver is gone afterwards: nothing to leave */
    if (!api_enter(*ps)) return CANOPY_ERR_BUSY;
    return destroy_call(ps);
}

CANOPY_EXPORT canopy_status canopy_set_matrix(canopy_solver *s, const canopy_csc *A)
{
    API_GUARDED(s, set_matrix_call(s, A));
}

CANOPY_EXPORT canopy_status canopy_set_permutation(canopy_solver *s, const canopy_int *perm)
{
    API_GUARDED(s, set_permutation_call(s, perm));
}

CANOPY_EXPORT canopy_status canopy_analyze(canopy_solver *s)
{
    API_GUARDED(s, analyze_call(s));
}

CANOPY_EXPORT canopy_status canopy_update_values(canopy_solver *s, const void *values)
{
    API_GUARDED(s, update_values_call(s, values));
}

CANOPY_EXPORT canopy_status canopy_factorize(canopy_solver *s)
{
    API_GUARDED(s, factorize_call(s));
}

CANOPY_EXPORT canopy_status canopy_solve(canopy_solver *s, canopy_int nrhs, void *b, canopy_int ldb)
{
    API_GUARDED(s, api_solve(s, CANOPY_TRANS_NONE, nrhs, b, ldb));
}

CANOPY_EXPORT canopy_status canopy_solve_trans(canopy_solver *s, canopy_trans trans, canopy_int nrhs, void *b,
                                               canopy_int ldb)
{
    API_GUARDED(s, api_solve(s, (int)trans, nrhs, b, ldb));
}

CANOPY_EXPORT canopy_status canopy_refine_trans(canopy_solver *s, canopy_trans trans, canopy_int nrhs, const void *b,
                                                canopy_int ldb, void *x, canopy_int ldx)
{
    API_GUARDED(s, api_refine(s, (int)trans, nrhs, b, ldb, x, ldx));
}

CANOPY_EXPORT canopy_status canopy_selinv(canopy_solver *s, canopy_selinv_what what, canopy_selinv_request *req)
{
    API_GUARDED(s, selinv_call(s, what, req));
}

CANOPY_EXPORT canopy_status canopy_refine(canopy_solver *s, canopy_int nrhs, const void *b, canopy_int ldb,
                                          void *x, canopy_int ldx)
{
    API_GUARDED(s, api_refine(s, CANOPY_TRANS_NONE, nrhs, b, ldb, x, ldx));
}

CANOPY_EXPORT canopy_status canopy_get_stats(const canopy_solver *s, canopy_stats *stats)
{
    API_GUARDED(s, get_stats_call(s, stats));
}

CANOPY_EXPORT canopy_status canopy_get_thread_stats(const canopy_solver *s, int thread, canopy_thread_stats *ts)
{
    API_GUARDED(s, get_thread_stats_call(s, thread, ts));
}

CANOPY_EXPORT canopy_status canopy_get_node_stats(const canopy_solver *s, int node, canopy_node_stats *ns)
{
    API_GUARDED(s, get_node_stats_call(s, node, ns));
}

CANOPY_EXPORT canopy_status canopy_get_comm_matrix(canopy_solver *s, int64_t *bytes, int64_t *msgs)
{
    API_GUARDED(s, get_comm_matrix_call(s, bytes, msgs));
}
