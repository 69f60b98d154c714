/* Status agreement across ranks (see agree.h): one small reduction, waited for quietly; a
 * second one and a broadcast only when some rank failed or warned. */
#include "agree.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* How long a quiet wait polls before its first nap. A nap lasts at least the kernel's timer
 * slack (50 us) whatever it asks for, so napping from the first miss made every agreement of a
 * small problem (a peer a few microseconds behind) cost a nap or two: 36 agreements per
 * refactorization and solve on 2 ranks, over 1 ms (bench/README.md, "Per-call cost"). */
#define COMM_QUIET_POLL_NS 100000L

static long elapsed_ns(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long)(t.tv_sec - t0->tv_sec) * 1000000000L + (t.tv_nsec - t0->tv_nsec);
}

/* Complete @p req: poll (yielding the core between tests) for COMM_QUIET_POLL_NS, then nap
 * between tests, 1 us growing to 1 ms, so that a rank waiting long (rank 0 orders) leaves the
 * cores to the ranks still at work. Returns an MPI error code. */
static int quiet_wait(MPI_Request *req)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long ns = 0;
    for (;;) {
        int done = 0;
        if (MPI_Test(req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return MPI_ERR_OTHER;
        if (done) return MPI_SUCCESS;
        if (ns == 0 && elapsed_ns(&t0) < COMM_QUIET_POLL_NS) {
            sched_yield();
            continue;
        }
        if (ns == 0) ns = 1000;
        struct timespec ts = {0, ns};
        nanosleep(&ts, NULL);
        ns = ns * 2 > 1000000L ? 1000000L : ns * 2;
    }
}

int comm_quiet_barrier(MPI_Comm comm)
{
    MPI_Request req;
    if (MPI_Ibarrier(comm, &req) != MPI_SUCCESS) return MPI_ERR_OTHER;
    return quiet_wait(&req);
}

canopy_status comm_agree(MPI_Comm comm, canopy_err *err)
{
    return comm_agree_min(comm, err, NULL, 0);
}

/* values carried by one agreement (comm_agree_min) */
#define AGREE_MIN_MAX 8

canopy_status comm_agree_min(MPI_Comm comm, canopy_err *err, int64_t *v, int nv)
{
    int size, rank;
    if (nv < 0 || nv > AGREE_MIN_MAX) return canopy_err_set(err, CANOPY_ERR_INTERNAL, "comm_agree_min: %d values", nv);
    if (MPI_Comm_size(comm, &size) != MPI_SUCCESS || MPI_Comm_rank(comm, &rank) != MPI_SUCCESS)
        return canopy_err_set(err, CANOPY_ERR_MPI, "MPI communicator is not usable");
    if (size == 1) return err->status;
    /* severity key: errors sort below warnings, warnings below success. The reduction is the
     * barrier: ranks that are done wait in it without spinning for long, so that they leave the
     * cores to those still at work (rank 0 ordering, for instance). The caller's values ride
     * along in the same reduction */
    int mine = (int)err->status;
    int64_t key[2 + AGREE_MIN_MAX] = {mine < 0 ? mine : 0, mine > 0 ? -mine : 0}, agreed[2 + AGREE_MIN_MAX];
    for (int i = 0; i < nv; i++) key[2 + i] = v[i];
    MPI_Request req;
    if (MPI_Iallreduce(key, agreed, 2 + nv, MPI_INT64_T, MPI_MIN, comm, &req) != MPI_SUCCESS ||
        quiet_wait(&req) != MPI_SUCCESS)
        return canopy_err_set(err, CANOPY_ERR_MPI, "MPI_Iallreduce failed while agreeing on a status");
    for (int i = 0; i < nv; i++) v[i] = agreed[2 + i];
    int status = agreed[0] < 0 ? (int)agreed[0] : -(int)agreed[1];
    if (status == CANOPY_SUCCESS) {
        canopy_err_clear(err);
        return CANOPY_SUCCESS;
    }
    /* the message: the lowest rank with the agreed status */
    int owner = status == mine ? rank : size, root;
    if (MPI_Allreduce(&owner, &root, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS)
        return canopy_err_set(err, CANOPY_ERR_MPI, "MPI_Allreduce failed while agreeing on a status");
    char msg[sizeof err->msg + 32];
    if (rank == root) {
        /* a message agreed before already names its rank */
        char head[32];
        int hl = snprintf(head, sizeof head, "rank %d: ", rank);
        if (strncmp(err->msg, head, (size_t)hl) == 0) snprintf(msg, sizeof msg, "%s", err->msg);
        else snprintf(msg, sizeof msg, "%s%s", head, err->msg);
    }
    if (MPI_Bcast(msg, (int)sizeof msg, MPI_CHAR, root, comm) != MPI_SUCCESS)
        return canopy_err_set(err, CANOPY_ERR_MPI, "MPI_Bcast failed while agreeing on a status");
    err->status = (canopy_status)status;
    memcpy(err->msg, msg, sizeof err->msg);
    err->msg[sizeof err->msg - 1] = '\0';
    return err->status;
}
