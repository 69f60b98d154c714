/*
 * canopy_create on several ranks: the thread level MPI gives against what the communication mode
 * needs, and the same thread count on every rank.
 */
#include "api/api.h"

#include <stdio.h>

#include "comm/agree.h"
#include "comm/exchange.h"

static const char *level_name(int level)
{
    switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    default: return "MPI_THREAD_MULTIPLE";
    }
}

canopy_status api_create_dist(canopy_solver *s)
{
    /* only the communication thread(s), or the workers under a lock (comm-threads=0), call MPI
     * while a factorization runs; never two at once except with comm-threads=2 */
    int provided = MPI_THREAD_SINGLE;
    MPI_Query_thread(&provided);
    int need = comm_exchange_thread_level(s->opts.comm_threads);
    if (provided <= MPI_THREAD_FUNNELED && s->opts.comm_threads == 1) {
        /* MPI started by someone else at MPI_THREAD_FUNNELED (PETSc's default) or with a plain
         * MPI_Init (MPI_THREAD_SINGLE with Open MPI and MPICH: most existing codes): the calling
         * thread drives the factorization's messages itself, as the communication thread would,
         * and the workers never call MPI. SINGLE is taken as FUNNELED, as MUMPS with OpenMP
         * threads does: the workers exist but only the thread that initialized MPI calls it. */
        static atomic_int said;
        s->opts.comm_threads = COMM_FUNNELED;
        need = provided;
        if (s->rank == 0 && s->opts.verbose >= 1 && !atomic_exchange(&said, 1))
            solver_say(s, 1, "MPI provides %s: the calling thread drives MPI, the workers never call it (comm-threads=1 "
                          "with its own thread needs MPI_THREAD_SERIALIZED)",
                    level_name(provided));
    }
    if (s->err.status == CANOPY_SUCCESS && provided < need)
        /* comm-threads=0 (idle workers call MPI) needs SERIALIZED, 2 (two threads at once)
         * MULTIPLE; comm-threads=1 always runs, so that is the advice that needs no new code */
        canopy_err_set(&s->err, CANOPY_ERR_MPI,
                       "Canopy on %d ranks with comm-threads=%d needs MPI at %s or higher, and MPI was initialized at "
                       "%s: use comm-threads=1%s (PETSc: -mat_canopy_comm_threads 1), or initialize MPI with "
                       "MPI_Init_thread(..., %s, ...)",
                       s->nranks, s->opts.comm_threads, level_name(need), level_name(provided),
                       provided >= MPI_THREAD_SERIALIZED ? " or 0" : "", level_name(need));
    if (comm_agree(s->comm, &s->err) < 0) return s->err.status;
    /* every rank plans for the same thread count: the smallest */
    int mine = s->have_rt ? s->rt.nthreads : 1, least = mine;
    MPI_Allreduce(&mine, &least, 1, MPI_INT, MPI_MIN, s->comm);
    if (s->have_rt && least != mine) {
        canopy_options o = s->opts;
        o.threads = least;
        runtime_free(&s->rt);
        runtime_init(&s->rt, &o, s->ranks_on_node, s->node_rank, &s->err);
    }
    s->rt.nranks = s->nranks;
    s->rt.rank = s->rank;
    s->rt.comm = s->comm;
    s->stats.threads_per_rank = least;
    return comm_agree(s->comm, &s->err);
}
