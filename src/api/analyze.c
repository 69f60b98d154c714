/*
 * The analysis behind canopy_analyze (src/api/api.c): the factorization kind, the scaling, the graph,
 * the ordering, the symbolic factorization with the split-width choice, and the figures. On one
 * rank (or rank 0 with a centralized matrix) it runs over the whole matrix; with a distributed
 * matrix every rank prepares its block columns and graph slice, PT-SCOTCH orders the slices
 * (ordering=auto) and the symbolic factorization runs over the ranks (src/symbolic/symbolic_dist.c).
 */
#include "api/api.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

#include "comm/agree.h"
#include "comm/share.h"
#include "matrix/dist_matrix.h"
#include "matrix/matrix.h"
#include "order/order.h"
#include "symbolic/symbolic_dist.h"

/* The factorization a kind of matrix gets, or an error for impossible requests. */
static canopy_status choose_factorization(canopy_solver *s)
{
    canopy_matrix_kind k = s->A.kind;
    bool sym = k != CANOPY_KIND_GENERAL;
    if (k == CANOPY_KIND_HERMITIAN && s->A.arith == CANOPY_REAL) k = CANOPY_KIND_SYMMETRIC;
    if (k == CANOPY_KIND_HERMITIAN) {
        /* LL^H when positive definite; LDL^T here is complex symmetric, so never for Hermitian */
        if (s->opts.factorization == CANOPY_FACT_LDLT)
            return canopy_err_set(&s->err, CANOPY_ERR_UNSUPPORTED,
                                  "LDL^H of a Hermitian matrix is not available: use llt (positive definite) or lu");
        s->fact = s->opts.factorization == CANOPY_FACT_LU ? CANOPY_FACT_LU : CANOPY_FACT_LLT;
        return CANOPY_SUCCESS;
    }
    if (s->A.arith == CANOPY_COMPLEX && k == CANOPY_KIND_SYMMETRIC && s->opts.factorization == CANOPY_FACT_LLT)
        return canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT,
                              "LL^T of a complex symmetric matrix is not defined here: use ldlt or lu");
    switch (s->opts.factorization) {
    case CANOPY_FACT_AUTO:
        s->fact = k == CANOPY_KIND_SPD ? CANOPY_FACT_LLT : sym ? CANOPY_FACT_LDLT : CANOPY_FACT_LU;
        break;
    case CANOPY_FACT_LLT:
    case CANOPY_FACT_LDLT:
        if (!sym)
            return canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT,
                                  "factorization %s needs a symmetric matrix; this one was given as general (use lu)",
                                  canopy_factorization_name(s->opts.factorization));
        s->fact = s->opts.factorization;
        break;
    case CANOPY_FACT_LU:
        s->fact = CANOPY_FACT_LU;
        break;
    }
    return CANOPY_SUCCESS;
}

/* The ranks the plans are for: the communicator's, or the virtual machine's. */
static int plan_ranks(const canopy_solver *s)
{
    return s->virt_ranks > 0 ? s->virt_ranks : s->nranks;
}

/*
 * split=auto with several threads: the split width is also the 2D tiles' size, so it is chosen
 * from the model, jointly with the 2D levels (2d-levels=auto). Planning every width with the whole
 * 2D-level sweep cost 3 x 14 plans at 1,024 x 64 (the larger part of canopy-simulate's time), so
 * the search is by coordinates, each batch of plans built at once (plans are pure functions):
 *  1. the default width with the whole sweep (its levels on the host's cores): levels L;
 *  2. the other widths at L; the shortest kept, the default winning within 2%;
 *  3. a width other than the default then moves its levels from L one at a time, down while the
 *     level above gains less than 1% (the sweep prefers fewer levels), else up while a level
 *     gains at least 1% (the sweep's rule for replacing its best).
 * With fixed 2d-levels, batch 2 holds every width at those levels and nothing moves.
 */
enum { NCAND = 3 };
static const cint split_widths[NCAND] = {CANOPY_AUTO_SPLIT, CANOPY_AUTO_SPLIT / 2, 2 * CANOPY_AUTO_SPLIT};

/* 2D levels the search moves through at most (the plan's own sweep stops at 64) */
#define SPLIT_MAX_LEVELS 64

/* One plan of the search: candidate width @c cand with 2D levels @c levels (-1: the sweep, on
 * @c sweep threads); the prediction and the levels its plan has. */
typedef struct split_eval {
    int cand, levels, sweep;
    double pred;
    int chosen;
} split_eval;

/* Builds the @p m plans of one batch (at once where it can): the single-rank form plans on threads
 * of this process, the collective form spreads them over the ranks. */
typedef canopy_status (*split_runner)(void *ctx, split_eval *ev, int m);

/* How many of the candidate widths give different cuts of the whole blocks Su. */
static int split_candidates(const symbolic *Su, const unsigned char *cut)
{
    cint widest = 0;
    for (cint k = 0; k < Su->ncblk; k++)
        if (cut[k]) widest = CANOPY_MAX(widest, Su->cblk_fcol[k + 1] - Su->cblk_fcol[k]);
    return widest > CANOPY_AUTO_SPLIT / 2 ? NCAND : 1;
}

/* The search above over @p ncand > 1 widths; *kept and *levels: the choice (levels -1 when the
 * options fix them), pred[]: each width's best prediction seen. */
static canopy_status split_search(canopy_solver *s, split_runner run, void *ctx, int ncand, int cores, int *kept,
                                  int *levels, double *pred)
{
    bool sweep = s->opts.twod_levels < 0;
    split_eval ev[NCAND + 1];
    int m = 0;
    *kept = 0;
    *levels = -1;
    if (sweep) {
        ev[0] = (split_eval){.cand = 0, .levels = -1, .sweep = cores};
        if (run(ctx, ev, 1) != CANOPY_SUCCESS) return s->err.status;
        pred[0] = ev[0].pred;
        *levels = ev[0].chosen;
    }
    for (int i = sweep ? 1 : 0; i < ncand; i++)
        ev[m++] = (split_eval){.cand = i, .levels = sweep ? *levels : s->opts.twod_levels, .sweep = 1};
    if (run(ctx, ev, m) != CANOPY_SUCCESS) return s->err.status;
    for (int x = 0; x < m; x++) pred[ev[x].cand] = ev[x].pred;
    for (int i = 1; i < ncand; i++)
        if (pred[i] < 0.98 * pred[*kept]) *kept = i;
    for (int i = 0; i < ncand; i++)
        solver_say(s, 2, "split %d: predicted factorization %.4f s%s", (int)split_widths[i], pred[i],
                   sweep && i > 0 ? " (at the default width's 2D levels)" : "");
    if (!sweep || *kept == 0) return CANOPY_SUCCESS;
    /* 3: the kept width's levels, from the default width's */
    int L = *levels, k = *kept;
    double best = pred[k];
    m = 0;
    if (L > 0) ev[m++] = (split_eval){.cand = k, .levels = L - 1, .sweep = 1};
    if (L < SPLIT_MAX_LEVELS) ev[m++] = (split_eval){.cand = k, .levels = L + 1, .sweep = 1};
    if (run(ctx, ev, m) != CANOPY_SUCCESS) return s->err.status;
    int dir = 0;
    for (int x = 0; x < m; x++) {
        if (ev[x].levels < L && best >= 0.99 * ev[x].pred) dir = -1;
        if (ev[x].levels > L && dir == 0 && ev[x].pred < 0.99 * best) dir = 1;
    }
    while (dir != 0) {
        double next = INFINITY;
        for (int x = 0; x < m; x++)
            if (ev[x].levels == L + dir) next = ev[x].pred;
        L += dir;
        best = next;
        solver_say(s, 2, "split %d: %d 2D levels, predicted factorization %.4f s", (int)split_widths[k], L, best);
        if (L + dir < 0 || L + dir > SPLIT_MAX_LEVELS) break;
        ev[0] = (split_eval){.cand = k, .levels = L + dir, .sweep = 1};
        m = 1;
        if (run(ctx, ev, 1) != CANOPY_SUCCESS) return s->err.status;
        if (!(dir < 0 ? best >= 0.99 * ev[0].pred : ev[0].pred < 0.99 * best)) break;
    }
    pred[k] = best;
    *levels = L;
    return CANOPY_SUCCESS;
}

/* One plan of a batch on this process: the options with its levels, the structure cut at its width. */
typedef struct split_local {
    canopy_solver *s;
    const symbolic *S; /* [NCAND] the cuts */
    split_eval *ev;
    canopy_err err;
} split_local;

static void *split_local_run(void *arg)
{
    split_local *c = arg;
    canopy_solver *s = c->s;
    canopy_options o = s->opts;
    o.twod_levels = c->ev->levels;
    runtime_predict(&s->rt, &o, &c->S[c->ev->cand], s->fact, s->A.arith == CANOPY_COMPLEX, plan_ranks(s),
                    c->ev->sweep, &c->ev->pred, &c->ev->chosen, &c->err);
    return NULL;
}

typedef struct split_local_ctx {
    canopy_solver *s;
    const symbolic *S;
} split_local_ctx;

static canopy_status split_run_local(void *ctx, split_eval *ev, int m)
{
    split_local_ctx *x = ctx;
    split_local c[NCAND + 1];
    pthread_t th[NCAND + 1];
    int started[NCAND + 1] = {0};
    /* every plan on a thread of its own, as when each width was planned on one: the calling thread's
     * heap stays as it was (with one plan on it, the factorization's threads later found fewer
     * glibc arenas resident at the analysis' end than the RSS prediction measures, and it fell 5%
     * low on 3 x 1 ranks of a 30^3 Laplacian) */
    for (int i = 0; i < m; i++) c[i] = (split_local){.s = x->s, .S = x->S, .ev = &ev[i]};
    for (int i = 0; i < m; i++) started[i] = pthread_create(&th[i], NULL, split_local_run, &c[i]) == 0;
    for (int i = 0; i < m; i++) {
        if (started[i]) pthread_join(th[i], NULL);
        else split_local_run(&c[i]);
    }
    for (int i = 0; i < m; i++)
        if (c[i].err.status != CANOPY_SUCCESS) return canopy_err_set(&x->s->err, c[i].err.status, "%s", c[i].err.msg);
    return CANOPY_SUCCESS;
}

/* The plans the 2D-level sweep builds at once: the host's cores, at most 4 (each plan holds its graph) */
static int split_sweep_cores(const canopy_solver *s)
{
    int c = runtime_host_cores(&s->rt);
    return c < 1 ? 1 : c > 4 ? 4 : c;
}

static canopy_status choose_split_from(canopy_solver *s, symbolic Su, unsigned char *cut)
{
    int ncand = split_candidates(&Su, cut), kept = 0, levels = -1;
    s->rt.twod_levels_kept = 0; /* the search sweeps */
    symbolic S[NCAND];
    memset(S, 0, sizeof S);
    double pred[NCAND] = {INFINITY, INFINITY, INFINITY};
    canopy_status st = ncand > 1 ? runtime_cost(&s->rt, &s->opts, &s->err) : CANOPY_SUCCESS;
    for (int i = 0; i < ncand && st == CANOPY_SUCCESS; i++) st = symbolic_resplit(&Su, cut, split_widths[i], &S[i], &s->err);
    if (st == CANOPY_SUCCESS && ncand > 1) {
        split_local_ctx ctx = {.s = s, .S = S};
        st = split_search(s, split_run_local, &ctx, ncand, split_sweep_cores(s), &kept, &levels, pred);
    }
    for (int i = 0; i < ncand; i++)
        if (i != kept || st != CANOPY_SUCCESS) symbolic_free(&S[i]);
    if (st == CANOPY_SUCCESS) s->S = S[kept];
    /* the plans of this structure (the run's, canopy-simulate's) are built with the 2D levels chosen
     * here instead of sweeping them again */
    if (st == CANOPY_SUCCESS && ncand > 1 && levels >= 0) s->rt.twod_levels_kept = levels + 1;
    s->stats.split_width = st == CANOPY_SUCCESS ? (int)split_widths[kept] : 0;
    symbolic_free(&Su);
    canopy_free(cut);
    return st;
}

/* The collective form of a batch: plan x on rank (x + 1) mod P, the figures shared (MIN: a rank
 * that did not plan leaves INFINITY and 1); errors agreed. */
typedef struct split_ranks_ctx {
    canopy_solver *s;
    const symbolic *Su;
    const unsigned char *cut;
} split_ranks_ctx;

static canopy_status split_run_ranks(void *ctx, split_eval *ev, int m)
{
    split_ranks_ctx *x = ctx;
    canopy_solver *s = x->s;
    double fig[2 * (NCAND + 1)];
    for (int i = 0; i < m; i++) {
        fig[2 * i] = INFINITY;
        fig[2 * i + 1] = 1.0; /* -(levels + 1) from the rank that planned it: the MIN carries it */
        if ((i + 1) % s->nranks != s->rank || s->err.status != CANOPY_SUCCESS) continue;
        symbolic Sc;
        if (symbolic_resplit(x->Su, x->cut, split_widths[ev[i].cand], &Sc, &s->err) != CANOPY_SUCCESS) continue;
        canopy_options o = s->opts;
        o.twod_levels = ev[i].levels;
        if (runtime_predict(&s->rt, &o, &Sc, s->fact, s->A.arith == CANOPY_COMPLEX, plan_ranks(s), ev[i].sweep,
                            &ev[i].pred, &ev[i].chosen, &s->err) == CANOPY_SUCCESS) {
            fig[2 * i] = ev[i].pred;
            fig[2 * i + 1] = -(double)ev[i].chosen - 1.0;
        }
        symbolic_free(&Sc);
    }
    if (comm_agree(s->comm, &s->err) < 0) return s->err.status;
    MPI_Allreduce(MPI_IN_PLACE, fig, 2 * m, MPI_DOUBLE, MPI_MIN, s->comm);
    for (int i = 0; i < m; i++) {
        ev[i].pred = fig[2 * i];
        ev[i].chosen = (int)(-fig[2 * i + 1] - 1.0);
    }
    return CANOPY_SUCCESS;
}

/*
 * choose_split over the ranks (a distributed matrix, collective): rank 0's whole blocks and flags
 * go to every rank, the search's plans are spread over the ranks (split_run_ranks) with rank 0's
 * cost model, the predictions are shared, and every rank cuts the blocks at the chosen width
 * itself. No rank holds more than the whole blocks and one candidate, and the structure needs no
 * broadcast afterwards.
 */
static canopy_status choose_split_ranks(canopy_solver *s, symbolic *Su, unsigned char **cut)
{
    if (comm_share_symbolic(s->comm, Su, s->err.status, &s->err) < 0) return s->err.status;
    if (s->rank != 0) *cut = canopy_alloc((size_t)Su->ncblk + 1, 1, "split flags", &s->err);
    if (s->rank == 0) runtime_cost(&s->rt, &s->opts, &s->err);
    sched_cost_model cm = s->rt.cost;
    if (comm_agree(s->comm, &s->err) < 0 ||
        comm_share_bcast_bytes(s->comm, *cut, (int64_t)Su->ncblk, &s->err) != CANOPY_SUCCESS ||
        comm_share_bcast_bytes(s->comm, &cm, (int64_t)sizeof cm, &s->err) != CANOPY_SUCCESS)
        return comm_agree(s->comm, &s->err);
    runtime_set_cost(&s->rt, &cm);
    int ncand = split_candidates(Su, *cut), kept = 0, levels = -1;
    double pred[NCAND] = {INFINITY, INFINITY, INFINITY};
    s->rt.twod_levels_kept = 0; /* the search sweeps */
    if (ncand > 1) {
        split_ranks_ctx ctx = {.s = s, .Su = Su, .cut = *cut};
        if (split_search(s, split_run_ranks, &ctx, ncand, split_sweep_cores(s), &kept, &levels, pred) != CANOPY_SUCCESS)
            kept = 0;
    }
    if (s->err.status == CANOPY_SUCCESS &&
        symbolic_resplit(Su, *cut, split_widths[kept], &s->S, &s->err) == CANOPY_SUCCESS) {
        s->stats.split_width = (int)split_widths[kept];
        if (ncand > 1 && levels >= 0) s->rt.twod_levels_kept = levels + 1;
        s->symbolic_everywhere = 1;
    }
    symbolic_free(Su);
    canopy_free(*cut);
    *cut = NULL;
    if (comm_agree(s->comm, &s->err) < 0) s->symbolic_everywhere = 0;
    return s->err.status;
}

/* choose_split_from with the whole blocks built here, from the graph */
static canopy_status choose_split(canopy_solver *s, const canopy_csc *G, const cint *perm, const symbolic_opts *so)
{
    symbolic Su;
    unsigned char *cut = NULL;
    if (symbolic_analyze_unsplit(G, perm, so, &Su, &cut, &s->err) != CANOPY_SUCCESS) return s->err.status;
    return choose_split_from(s, Su, cut);
}

/* The ordering the analysis runs: auto is PT-SCOTCH for a matrix given distributed on several
 * ranks (nobody gathers its graph) and SCOTCH otherwise (rank 0 holds the matrix anyway). */
static canopy_ordering ordering_of(const canopy_solver *s)
{
    if (s->opts.ordering != CANOPY_ORDER_AUTO) return s->opts.ordering;
    return distm_active(s) && order_have_ptscotch() ? CANOPY_ORDER_PTSCOTCH : CANOPY_ORDER_SCOTCH;
}

/* What the analysis carries from one step to the next on rank 0. */
typedef struct analysis_work {
    canopy_csc G;       /* adjacency graph of As + As^T */
    cint *perm, *iperm; /* the fill-reducing ordering */
    double t0, t1, t2;  /* start, graph built, ordering done */
    bool ordered;       /* ordered already (PT-SCOTCH on a distributed matrix's graph slices) */
    /* a distributed matrix: this rank's slice of the graph (distm_graph_slice) */
    cint *vert, *edge, nedge;
    /* built over the ranks already (symbolic_analyze_dist): the structure, or the whole blocks
     * and the split's flags when split=auto compares widths */
    bool built;
    symbolic Su;
    unsigned char *cut;
} analysis_work;

/* The analysis' tuning; true when split=auto compares widths (choose_split). */
static bool symbolic_setup(const canopy_solver *s, symbolic_opts *so)
{
    int all_threads = runtime_plan_threads(&s->rt) * plan_ranks(s);
    *so = (symbolic_opts){.amalgamation = s->opts.amalgamation,
                          .amalgamation_fill = s->opts.amalgamation_fill,
                          .split_size = s->opts.split_size >= 0 ? s->opts.split_size
                                        : all_threads > 1 ? CANOPY_AUTO_SPLIT : 0,
                          /* auto: only where proportional mapping gives a block several threads */
                          .split_share = s->opts.split_size >= 0 ? 0.0 : 1.0 / (2.0 * all_threads)};
    return s->opts.split_size < 0 && all_threads > 1;
}

/* The analysis judges the pattern, not the values: singular values on a sound pattern (a row of
 * stored zeros that the next values of the pattern may fill) only cost the scaling. */
static void say_unscaled(const canopy_solver *s)
{
    solver_say(s, 1, "the values leave a row or column without a nonzero (or without a perfect matching): "
                  "analyzed without scaling");
}

/* Rank 0: the factorization kind, scaling (and matching), the graph to order. */
static canopy_status analyze_prepare(canopy_solver *s, analysis_work *w)
{
    w->t0 = w->t1 = canopy_wtime();
    if (choose_factorization(s) != CANOPY_SUCCESS) return s->err.status;
    if (ordering_of(s) == CANOPY_ORDER_USER && s->user_perm == NULL)
        return canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT,
                              "ordering=user but no permutation was given (canopy_set_permutation)");
    /* LU keeps the freedom of an unsymmetric scaling and matching even for symmetric input */
    canopy_matrix_kind skind = s->fact == CANOPY_FACT_LU ? CANOPY_KIND_GENERAL : s->A.kind;
    if (scaling_compute(&s->A, s->opts.scaling, skind, &s->sc, &s->err) != CANOPY_SUCCESS) return s->err.status;
    if (s->sc.unscaled_values) say_unscaled(s);
    if (scaling_apply(&s->A, &s->sc, &s->As, &s->err) != CANOPY_SUCCESS) return s->err.status;
    if (!isfinite(matrix_abs_max(&s->As))) {
        /* scale factors beyond the double range (entries near 1e-308 or 1e308): factorize A as is */
        solver_say(s, 1, "scaling overflows the double range; continuing without scaling");
        scaling_free(&s->sc);
        if (scaling_compute(&s->A, CANOPY_SCALING_NONE, skind, &s->sc, &s->err) != CANOPY_SUCCESS ||
            scaling_apply(&s->A, &s->sc, &s->As, &s->err) != CANOPY_SUCCESS)
            return s->err.status;
    }
    w->t1 = canopy_wtime();
    if (matrix_graph(&s->As, &w->G, &s->err) == CANOPY_SUCCESS) {
        w->perm = canopy_alloc((size_t)w->G.n, sizeof(cint), "ordering", &s->err);
        w->iperm = canopy_alloc((size_t)w->G.n, sizeof(cint), "ordering", &s->err);
    }
    return s->err.status;
}

/*
 * The ordering: on rank 0, or with ordering=ptscotch on every rank (rank 0 says whether it got
 * that far, so that a failed preparation leaves nobody inside PT-SCOTCH). Collective on several
 * ranks.
 */
static void analyze_order(canopy_solver *s, analysis_work *w)
{
    if (w->ordered) return; /* ordered already, on every rank (analyze_prepare_dist) */
    bool ready = s->rank == 0 && s->err.status == CANOPY_SUCCESS;
    int pt = ready && ordering_of(s) == CANOPY_ORDER_PTSCOTCH;
    if (s->nranks > 1) MPI_Bcast(&pt, 1, MPI_INT, 0, s->comm);
    if (pt)
        order_ptscotch(s->comm, s->rank == 0 ? &w->G : NULL, w->perm, w->iperm, &s->err);
    else if (ready)
        order_compute(&w->G, ordering_of(s), s->user_perm,
                      s->opts.ordering_threads > 0 ? s->opts.ordering_threads : runtime_plan_threads(&s->rt), w->perm,
                      w->iperm, &s->err);
    w->t2 = canopy_wtime();
}

/* Rank 0: symbolic factorization (with the split-width choice), the one-rank plan, the figures. */
static canopy_status analyze_finish(canopy_solver *s, analysis_work *w)
{
    canopy_csc *G = &w->G;
    cint *perm = w->perm;
    double t2 = w->t2;
    if (s->err.status == CANOPY_SUCCESS) {
        symbolic_opts so;
        bool compare = symbolic_setup(s, &so);
        if (w->built) {
            if (!compare) s->stats.split_width = so.split_size; /* else chosen over the ranks */
        } else if (compare) {
            choose_split(s, G, perm, &so);
        } else {
            s->stats.split_width = so.split_size;
            symbolic_analyze(G, perm, &so, &s->S, &s->err);
        }
    }
    double t3 = canopy_wtime();
    matrix_free(G);
    canopy_free(w->perm);
    canopy_free(w->iperm);
    w->perm = w->iperm = NULL;
    if (s->err.status != CANOPY_SUCCESS) return s->err.status;
    /* the static plan: proportional mapping, simulation, task graph (and the worker pool); with
     * several ranks every rank plans after the structure is shared (api_analyze_dist) */
    s->arith = s->A.arith;
    if (s->nranks == 1 && s->virt_ranks == 0 &&
        runtime_plan(&s->rt, &s->opts, &s->S, s->fact, s->A.arith == CANOPY_COMPLEX, &s->err) != CANOPY_SUCCESS)
        return s->err.status;
    double t4 = canopy_wtime();

    canopy_stats *st = &s->stats;
    st->time_order = t2 - w->t1;
    st->time_symbolic = t3 - t2;
    st->time_analyze = t4 - w->t0;
    st->time_factorize_predicted = s->rt.plan.factor.predicted_time;
    st->twod_levels = s->rt.plan.twod_levels;
    st->twod_cblks = s->rt.plan.twod_cblks;
    st->ncblk = s->S.ncblk;
    st->nblok = s->S.nblok;
    st->factorization = s->fact;
    st->nnz_factor = s->fact == CANOPY_FACT_LU ? 2 * s->S.nnz_l - s->S.n : s->S.nnz_l;
    st->flops = s->fact == CANOPY_FACT_LU ? s->S.flops_lu : s->S.flops_llt;
    solver_say(s, 1, "analyze: n=%" PRId64 " nnz=%" PRId64 " nnz(L)=%" PRId64 " flops=%.3g cblks=%" PRId64
        " order %.3fs symbolic %.3fs", st->n, st->nnz, st->nnz_factor, st->flops, st->ncblk, st->time_order,
        st->time_symbolic);
    return CANOPY_SUCCESS;
}


canopy_csc *api_factor_source(canopy_solver *s)
{
    return distm_active(s) && scaling_identity(&s->sc) ? &s->A : &s->As;
}

/*
 * A distributed matrix on several ranks (collective): the factorization kind on every rank, the
 * scaling (src/matrix/dist_matrix.c) applied to each rank's block columns, and each rank's slice of the
 * graph of As + As^T. ordering=ptscotch dissects the slices where they are; the sequential
 * ordering gathers the pattern on rank 0 for SCOTCH (natural and user need no graph).
 */
static canopy_status analyze_prepare_dist(canopy_solver *s, analysis_work *w)
{
    w->t0 = w->t1 = canopy_wtime();
    choose_factorization(s);
    if (s->rank == 0 && s->err.status == CANOPY_SUCCESS && ordering_of(s) == CANOPY_ORDER_USER && s->user_perm == NULL)
        canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT, "ordering=user but no permutation was given (canopy_set_permutation)");
    if (comm_agree(s->comm, &s->err) < 0) return s->err.status;
    canopy_matrix_kind skind = s->fact == CANOPY_FACT_LU ? CANOPY_KIND_GENERAL : s->A.kind;
    if (distm_scaling(s, s->opts.scaling, skind) < 0) return s->err.status;
    if (s->sc.unscaled_values) say_unscaled(s);
    if (!scaling_identity(&s->sc)) scaling_apply(&s->A, &s->sc, &s->As, &s->err);
    if (comm_agree(s->comm, &s->err) < 0) return s->err.status;
    if (!isfinite(distm_abs_max(s, api_factor_source(s)))) {
        solver_say(s, 1, "scaling overflows the double range; continuing without scaling");
        matrix_free(&s->As);
        if (distm_scaling(s, CANOPY_SCALING_NONE, skind) < 0) return s->err.status;
    }
    w->t1 = canopy_wtime();
    const cint n = s->A.n;
    /* every rank gets the ordering: the symbolic factorization runs on all */
    w->perm = canopy_alloc((size_t)n, sizeof(cint), "ordering", &s->err);
    w->iperm = canopy_alloc((size_t)n, sizeof(cint), "ordering", &s->err);
    if (comm_agree(s->comm, &s->err) < 0) return s->err.status;
    if (distm_graph_slice(s, api_factor_source(s), &w->vert, &w->edge, &w->nedge) < 0) return s->err.status;
    if (ordering_of(s) == CANOPY_ORDER_PTSCOTCH) {
        w->ordered = true;
        if (order_ptscotch_slices(s->comm, n, w->vert, w->edge, w->nedge, w->perm, w->iperm, &s->err) < 0)
            return s->err.status;
        w->t2 = canopy_wtime();
    } else if (ordering_of(s) == CANOPY_ORDER_SCOTCH) {
        canopy_csc pattern = {0};
        if (distm_gather(s, api_factor_source(s), false, &pattern) < 0) return s->err.status;
        if (s->rank == 0) matrix_graph(&pattern, &w->G, &s->err);
        matrix_free(&pattern);
    } else if (s->rank == 0) {
        /* natural or user: the order alone, an edgeless graph */
        w->G = (canopy_csc){.n = n, .arith = CANOPY_PATTERN, .kind = CANOPY_KIND_SYMMETRIC};
        w->G.colptr = canopy_calloc((size_t)n + 1, sizeof(cint), "ordering", &s->err);
    }
    return s->err.status;
}

/* A distributed matrix after the ordering: the symbolic factorization over the ranks, from the
 * graph's slices (src/symbolic/symbolic_dist.c); its result is on rank 0 for analyze_finish. Collective. */
static canopy_status analyze_symbolic_dist(canopy_solver *s, analysis_work *w)
{
    matrix_free(&w->G); /* rank 0's whole graph, if the ordering needed one */
    const cint n = s->A.n;
    if (comm_agree(s->comm, &s->err) == CANOPY_SUCCESS &&
        comm_share_bcast_bytes(s->comm, w->perm, (int64_t)n * (int64_t)sizeof(cint), &s->err) == CANOPY_SUCCESS) {
        symbolic_opts so;
        bool compare = symbolic_setup(s, &so);
        symbolic_slice sl = {.n = n,
                             .first = distm_first_col(n, s->nranks, s->rank),
                             .nv = distm_first_col(n, s->nranks, s->rank + 1) - distm_first_col(n, s->nranks, s->rank),
                             .vert = w->vert,
                             .edge = w->edge};
        if (symbolic_analyze_dist(s->comm, &sl, w->perm, &so, compare ? &w->Su : &s->S, compare ? &w->cut : NULL,
                                  &s->err) == CANOPY_SUCCESS &&
            compare)
            choose_split_ranks(s, &w->Su, &w->cut);
        w->built = true;
    }
    canopy_free(w->vert);
    canopy_free(w->edge);
    w->vert = w->edge = NULL;
    return comm_agree(s->comm, &s->err);
}

/* The whole analysis: rank 0 prepares (all ranks for a distributed matrix), orders (with the
 * others for PT-SCOTCH) and finishes; a distributed matrix's symbolic factorization runs on all. */
canopy_status api_analyze_all(canopy_solver *s)
{
    analysis_work w = {0};
    if (distm_active(s)) {
        analyze_prepare_dist(s, &w);
        analyze_order(s, &w);
        if (comm_agree(s->comm, &s->err) == CANOPY_SUCCESS) analyze_symbolic_dist(s, &w);
    } else {
        if (s->rank == 0) analyze_prepare(s, &w);
        analyze_order(s, &w);
    }
    if (s->rank == 0) analyze_finish(s, &w);
    matrix_free(&w.G);
    canopy_free(w.perm);
    canopy_free(w.iperm);
    canopy_free(w.vert);
    canopy_free(w.edge);
    symbolic_free(&w.Su);
    canopy_free(w.cut);
    return s->err.status;
}
