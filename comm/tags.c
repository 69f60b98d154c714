/* Message ids to (communicator, tag) pairs within MPI_TAG_UB (see tags.h). */
#include "tags.h"

#include <stdlib.h>
#include <string.h>

canopy_status comm_tags_create(MPI_Comm comm, int64_t nids, comm_tags *t, canopy_err *err)
{
    if (t == NULL || nids < 0) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "comm_tags_create: bad argument");
    memset(t, 0, sizeof *t);
    int *ub = NULL, flag = 0;
    int64_t bound = 32767;
    if (MPI_Comm_get_attr(comm, MPI_TAG_UB, &ub, &flag) == MPI_SUCCESS && flag && ub && *ub > 0) bound = *ub;
    const char *e = getenv("CANOPY_TAG_UB");
    if (e && *e) {
        long v = strtol(e, NULL, 10);
        if (v >= 1 && v < bound) bound = v;
    }
    t->nids = nids;
    t->per_comm = bound + 1;
    int64_t nc = nids > 0 ? (nids + t->per_comm - 1) / t->per_comm : 1;
    if (nc > 4096)
        return canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "%lld message ids need %lld communicators (MPI_TAG_UB = %lld)",
                              (long long)nids, (long long)nc, (long long)bound);
    t->comms = canopy_alloc((size_t)nc, sizeof(MPI_Comm), "tag communicators", err);
    /* every rank reaches the same number of duplicates (nids is the same everywhere) */
    int ok = t->comms != NULL;
    for (int64_t c = 0; c < nc; c++) {
        MPI_Comm d = MPI_COMM_NULL;
        if (MPI_Comm_dup(comm, &d) != MPI_SUCCESS) ok = 0;
        if (t->comms) t->comms[c] = d;
        else if (d != MPI_COMM_NULL) MPI_Comm_free(&d);
        t->ncomms = (int)c + 1;
    }
    if (!ok) {
        comm_tags_free(t);
        return err && err->status ? err->status : canopy_err_set(err, CANOPY_ERR_MPI, "MPI_Comm_dup failed");
    }
    return CANOPY_SUCCESS;
}

void comm_tags_free(comm_tags *t)
{
    if (t == NULL) return;
    for (int c = 0; t->comms && c < t->ncomms; c++)
        if (t->comms[c] != MPI_COMM_NULL) MPI_Comm_free(&t->comms[c]);
    canopy_free(t->comms);
    memset(t, 0, sizeof *t);
}
