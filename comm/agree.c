/* Status agreement across ranks (see agree.h): two small allreduces and one broadcast. */
#include "agree.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

int comm_quiet_barrier(MPI_Comm comm)
{
    MPI_Request req;
    if (MPI_Ibarrier(comm, &req) != MPI_SUCCESS) return MPI_ERR_OTHER;
    long ns = 1000;
    for (;;) {
        int done = 0;
        if (MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return MPI_ERR_OTHER;
        if (done) return MPI_SUCCESS;
        struct timespec ts = {0, ns};
        nanosleep(&ts, NULL);
        ns = ns * 2 > 1000000L ? 1000000L : ns * 2;
    }
}

canopy_status comm_agree(MPI_Comm comm, canopy_err *err)
{
    int size, rank;
    if (MPI_Comm_size(comm, &size) != MPI_SUCCESS || MPI_Comm_rank(comm, &rank) != MPI_SUCCESS)
        return canopy_err_set(err, CANOPY_ERR_MPI, "MPI communicator is not usable");
    if (size == 1) return err->status;
    /* ranks that are done wait here without spinning, so that they leave the cores to those still
     * at work (rank 0 ordering, for instance); then the agreement proper */
    if (comm_quiet_barrier(comm) != MPI_SUCCESS)
        return canopy_err_set(err, CANOPY_ERR_MPI, "MPI_Ibarrier failed while agreeing on a status");
    /* severity key: errors sort below warnings, warnings below success */
    int mine = (int)err->status, key[2] = {mine < 0 ? mine : 0, mine > 0 ? -mine : 0}, agreed[2];
    if (MPI_Allreduce(key, agreed, 2, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS)
        return canopy_err_set(err, CANOPY_ERR_MPI, "MPI_Allreduce failed while agreeing on a status");
    int status = agreed[0] < 0 ? agreed[0] : -agreed[1];
    int owner = status == mine ? rank : size, root;
    if (MPI_Allreduce(&owner, &root, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS)
        return canopy_err_set(err, CANOPY_ERR_MPI, "MPI_Allreduce failed while agreeing on a status");
    if (status == CANOPY_SUCCESS) {
        canopy_err_clear(err);
        return CANOPY_SUCCESS;
    }
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
