/*
 * What every phase driver shares about the solver (solver/solver.h): messages under the
 * verbosity option, memory figures and summaries over the ranks.
 */
#include "solver/solver.h"

#include <stdarg.h>
#include <stdio.h>
#include <math.h>
#include <sys/resource.h>
#include <unistd.h>

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

double solver_predicted_rss(const canopy_solver *s, double predicted)
{
    /* the resident set now (/proc/self/statm: size, resident, ... in pages) */
    double now = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f != NULL) {
        unsigned long long size = 0, res = 0;
        if (fscanf(f, "%llu %llu", &size, &res) == 2) now = (double)res * (double)sysconf(_SC_PAGESIZE);
        fclose(f);
    }
    size_t cur = canopy_mem_current();
    double mine = cur > s->mem_base ? (double)(cur - s->mem_base) : 0, other = now - mine;
    return fmax(solver_rss_peak(), (other > 0 ? other : 0) + predicted);
}

double solver_rss_peak(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? (double)ru.ru_maxrss * 1024.0 : 0; /* Linux: KiB */
}

void solver_memory_set(canopy_solver *s, const comm_summary *used, const comm_summary *rss, const double first[2])
{
    canopy_stats *st = &s->stats;
    double others = s->nranks > 1 ? (double)(s->nranks - 1) : 1.0;
    st->peak_memory_rank0 = first[0];
    st->rss_peak_rank0 = first[1];
    st->peak_memory_rank_mean = s->nranks > 1 ? (used->total - first[0]) / others : first[0];
    st->rss_peak_rank_mean = s->nranks > 1 ? (rss->total - first[1]) / others : first[1];
    st->rss_peak_rank_min = rss->min;
    st->rss_peak_rank_max = rss->max;
}

/* Rank 0's memory against the others', by Canopy's count (@p used: this rank's) and by the OS's
 * peak resident set. Collective on several ranks: one agreement and one gather. */
void solver_memory_figures(canopy_solver *s, double used)
{
    double mine[2] = {used, solver_rss_peak()}, first[2] = {mine[0], mine[1]};
    comm_summary cs[2];
    comm_summary_compute(&mine[0], 1, &cs[0]);
    comm_summary_compute(&mine[1], 1, &cs[1]);
    if (s->nranks > 1) {
        canopy_err e = {0};
        comm_summary_allranks_n(s->comm, mine, 2, cs, first, &e);
    }
    solver_memory_set(s, &cs[0], &cs[1], first);
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

double solver_memory_limit(const canopy_solver *s)
{
    if (s->opts.memory_limit > 0) return s->opts.memory_limit;
    double avail = 0;
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %lf kB", &avail) == 1) {
                avail *= 1024;
                break;
            }
        fclose(f);
    }
    if (!(avail > 0)) {
        long pages = sysconf(_SC_AVPHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
        avail = pages > 0 && psz > 0 ? (double)pages * (double)psz : 0;
    }
    /* the memory already held by our factors is reusable */
    avail += (double)numeric_bytes(&s->F);
    return avail > 0 ? avail / (s->ranks_on_node > 0 ? s->ranks_on_node : 1) : INFINITY;
}
