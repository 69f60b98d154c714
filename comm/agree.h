/*
 * Collective agreement on the outcome of a phase, so that every rank returns the same status and
 * message and nobody waits for a rank that bailed out.
 */
#ifndef CANOPY_AGREE_H
#define CANOPY_AGREE_H

#include <mpi.h>
#include "base/common.h"

/**
 * Agree on @p err across @p comm: the result is the most severe status of any rank (any error
 * beats any warning; the lowest error code wins), with the message of the lowest rank that had
 * it, prefixed by "rank R: " when there are several ranks. Returns the agreed status. Ranks that
 * arrive early wait without spinning (comm_quiet_barrier).
 */
canopy_status comm_agree(MPI_Comm comm, canopy_err *err);

/**
 * A barrier that sleeps while it waits (MPI_Ibarrier polled with naps of 1 us up to 1 ms), so that
 * ranks waiting for another one leave it the cores instead of spinning inside MPI. Collective;
 * returns an MPI error code.
 */
int comm_quiet_barrier(MPI_Comm comm);

#endif
