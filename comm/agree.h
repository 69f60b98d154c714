/*
 * Collective agreement on the outcome of a phase, so that every rank returns the same status and
 * message and nobody waits for a rank that bailed out.
 */
#ifndef CANOPY_AGREE_H
#define CANOPY_AGREE_H

#include <mpi.h>
#include "common.h"

/**
 * Agree on @p err across @p comm: the result is the most severe status of any rank (any error
 * beats any warning; the lowest error code wins), with the message of the lowest rank that had
 * it, prefixed by "rank R: " when there are several ranks. Returns the agreed status.
 */
canopy_status comm_agree(MPI_Comm comm, canopy_err *err);

#endif
