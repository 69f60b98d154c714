/*
 * What every phase driver shares about the solver (solver/solver.h): messages under the
 * verbosity option, memory figures and summaries over the ranks.
 */
#include "solver/solver.h"

#include <stdarg.h>
#include <stdio.h>
#include <sys/resource.h>

#include "comm/peerstats.h"

void solver_say(const canopy_solver *s, int level, const char *fmt, ...)
{
    if (s->rank != 0 || s->opts.verbose < level) return;
    va_list ap;
    va_start(ap, fmt);
    fputs("canopy: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* Rank 0's memory against the others', by Canopy's count (@p used: this rank's) and by the OS's
 * peak resident set. Collective on several ranks; reductions only, so that nothing can fail on one
 * rank alone. */
void solver_memory_figures(canopy_solver *s, double used)
{
    struct rusage ru;
    double rss = getrusage(RUSAGE_SELF, &ru) == 0 ? (double)ru.ru_maxrss * 1024.0 : 0; /* Linux: KiB */
    canopy_stats *st = &s->stats;
    double mine[2] = {used, rss}, first[2] = {used, rss}, sum[2] = {used, rss};
    double lo = rss, hi = rss;
    if (s->nranks > 1) {
        MPI_Bcast(first, 2, MPI_DOUBLE, 0, s->comm);
        MPI_Allreduce(mine, sum, 2, MPI_DOUBLE, MPI_SUM, s->comm);
        MPI_Allreduce(&rss, &lo, 1, MPI_DOUBLE, MPI_MIN, s->comm);
        MPI_Allreduce(&rss, &hi, 1, MPI_DOUBLE, MPI_MAX, s->comm);
    }
    double others = s->nranks > 1 ? (double)(s->nranks - 1) : 1.0;
    st->peak_memory_rank0 = first[0];
    st->rss_peak_rank0 = first[1];
    st->peak_memory_rank_mean = s->nranks > 1 ? (sum[0] - first[0]) / others : used;
    st->rss_peak_rank_mean = s->nranks > 1 ? (sum[1] - first[1]) / others : rss;
    st->rss_peak_rank_min = lo;
    st->rss_peak_rank_max = hi;
}

void solver_summary_stats(MPI_Comm comm, double mine, double *min, double *max, double *median, double *stddev)
{
    comm_summary cs = {0};
    canopy_err e = {0};
    comm_summary_allranks(comm, mine, &cs, &e);
    if (min) *min = cs.min;
    if (max) *max = cs.max;
    if (median) *median = cs.median;
    if (stddev) *stddev = cs.stddev;
}
