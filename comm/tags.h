/*
 * Message tags that fit any MPI_TAG_UB. The standard only promises tags up to 32767, far fewer
 * than the messages of a large factorization, so a message id (18 per cblk: two fan-in parts, up to 8
 * messages each, the forward and the backward solve) is split into a communicator (one duplicate of the solver's
 * communicator per block of TAG_UB + 1 ids) and a tag inside it. The environment variable
 * CANOPY_TAG_UB lowers the bound used (tests exercise several communicators with it).
 */
#ifndef CANOPY_COMM_TAGS_H
#define CANOPY_COMM_TAGS_H

#include <mpi.h>
#include "base/common.h"

/* A fan-in buffer may go in up to COMM_FANIN_MSGS messages (sched_fanin_cuts): message s >= 1 of
 * part p (0: L, 1: U) has kind COMM_ID_FANIN_MORE + 2 (s - 1) + p. */
enum { COMM_ID_FANIN_L = 0, COMM_ID_FANIN_U = 1, COMM_ID_FORWARD = 2, COMM_ID_BACKWARD = 3, COMM_ID_FANIN_MORE = 4,
       COMM_FANIN_MSGS = 8, COMM_IDS_PER_CBLK = COMM_ID_FANIN_MORE + 2 * (COMM_FANIN_MSGS - 1) };

typedef struct comm_tags {
    int64_t nids;
    int64_t per_comm;   /**< tags per communicator: min(MPI_TAG_UB, CANOPY_TAG_UB) + 1 */
    int ncomms;
    MPI_Comm *comms;
} comm_tags;

/** Collective on @p comm: enough duplicates for @p nids message ids. */
canopy_status comm_tags_create(MPI_Comm comm, int64_t nids, comm_tags *t, canopy_err *err);

/** Communicator and tag of message id @p id (0 <= id < nids). */
static inline void comm_tags_get(const comm_tags *t, int64_t id, MPI_Comm *comm, int *tag)
{
    *comm = t->comms[id / t->per_comm];
    *tag = (int)(id % t->per_comm);
}

static inline int64_t comm_tags_id(int64_t cblk, int kind)
{
    return cblk * COMM_IDS_PER_CBLK + kind;
}

/** Free the duplicates (collective). */
void comm_tags_free(comm_tags *t);

#endif
