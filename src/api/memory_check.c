/*
 * The memory check's refusal (src/api/: one rank and several): the need against the limit, and how
 * many ranks would fit by the same prediction. Its own file so that api.c and factorize_dist.c
 * both call it without calling each other.
 */
#include "api/api.h"

#include <math.h>
#include <stdio.h>

/*
 * How many ranks (of this run's threads, the same memory each) the factorization would fit on by
 * the memory check's own prediction, with 10% to spare: from the perfectly scaled estimate up by
 * 25% a try, a few seconds at most (only a refusal pays for it). The count, or -N when none up to N ranks fits,
 * or 0 when the prediction failed; @p at: the heaviest rank's need at that count.
 */
#define API_FIT_MAX_RANKS 65536
static int ranks_to_fit(canopy_solver *s, double need, double limit, double nnz, double *at)
{
    int P0 = s->nranks > 0 ? s->nranks : 1;
    double c = fmax(ceil((double)P0 * need / limit), P0 + 1.0), t0 = canopy_wtime();
    canopy_options po = s->opts;
    if (po.twod_levels < 0 && s->stats.twod_levels >= 0) po.twod_levels = s->stats.twod_levels; /* no search */
    *at = 0;
    for (int tries = 0; tries < 12 && c <= API_FIT_MAX_RANKS && canopy_wtime() - t0 < 20.0; tries++) {
        canopy_err e = {0};
        if (runtime_predict_peak(&s->rt, &po, &s->S, s->fact, s->arith, (int)c, nnz, at, &e) != CANOPY_SUCCESS)
            return 0;
        /* 10% to spare: that layout's own analysis splits the top its own way (measured: 2 ranks'
         * structure planned for 4 gave 0.0270 GB, 4 ranks' own analysis 0.0284 GB) */
        if (*at <= 0.9 * limit) return (int)c;
        c = ceil(c * 1.25);
    }
    return -(int)fmin(c, API_FIT_MAX_RANKS);
}

void api_refuse_memory(canopy_solver *s, double need, double limit)
{
    /* nnz: rank 0 knows it; the others estimate it by the factor's size (the message only) */
    double nnz = s->stats.nnz > 0 ? (double)s->stats.nnz : (double)s->S.cblk_coef[s->S.ncblk], at = 0;
    int T = s->rt.nthreads > 0 ? s->rt.nthreads : 1;
    /* one rank's structure was split for one rank: planned for several it would mislead, and
     * canopy-simulate analyzes each layout afresh */
    int fit = limit > 0 && s->nranks > 1 ? ranks_to_fit(s, need, limit, nnz, &at) : 0;
    char more[200] = "";
    if (s->nranks <= 1)
        snprintf(more, sizeof more, "; canopy-simulate --ranks P --threads T predicts the memory per rank of a layout "
                 "of several ranks");
    if (fit > 0)
        snprintf(more, sizeof more, "; by the same prediction it fits on %d ranks x %d threads (%.3g GB on the heaviest)",
                 fit, T, at * 1e-9);
    else if (fit < 0)
        snprintf(more, sizeof more, "; by the same prediction no layout up to %d ranks x %d threads fits (%.3g GB on the "
                 "heaviest)", -fit, T, at * 1e-9);
    canopy_err_set(&s->err, CANOPY_ERR_NOMEM,
                   "the factorization needs about %.3g GB on rank %d but only %.3g GB are available to it%s (option "
                   "memory-limit, or memory-check=off to proceed anyway)",
                   need * 1e-9, s->rank, limit * 1e-9, more);
}

/* One rank: the memory check of several ranks, before the first factorization allocates (a
 * refactorization reuses what it holds). The need is the formula of the ranks' check with every
 * panel held and no fan-in. */
bool api_memory_fits_rank0(canopy_solver *s)
{
    if (!s->opts.memory_check || s->F.L != NULL) return true;
    const symbolic *S = &s->S;
    double pmax = symbolic_max_panel(S);
    int T = s->rt.nthreads > 0 ? s->rt.nthreads : 1;
    double work = numeric_predict_workspace(s->fact, s->A.arith, (double)S->max_update_buf, pmax, T, NULL, NULL);
    double need = numeric_predict_bytes_counts(S, s->fact, s->A.arith, (double)S->cblk_coef[S->ncblk], work, s->stats.nnz, 1, 0);
    double limit = solver_memory_limit(s);
    s->predicted_bytes = need;
    s->stats.memory_predicted_rank_max = need;
    s->stats.memory_predicted_rss_rank_max = solver_predicted_rss(s, need);
    s->stats.memory_limit_rank = limit;
    if (need <= limit) return true;
    api_refuse_memory(s, need, limit);
    return false;
}
