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
 * it, prefixed by "rank R: " when there are several ranks. Returns the agreed status. One
 * reduction when every rank succeeded (a second one and a broadcast otherwise); ranks that arrive
 * early wait in it as in comm_quiet_barrier.
 */
canopy_status comm_agree(MPI_Comm comm, canopy_err *err);

/**
 * comm_agree that also reduces @p nv (at most 8) values to their minimum over the ranks, in the
 * same reduction: @p v holds this rank's on entry and the minima on return (whatever the
 * status; on one rank, unchanged). For checks that must be the same everywhere (nrhs, say: its
 * minimum and minus its maximum) without a collective of their own.
 */
canopy_status comm_agree_min(MPI_Comm comm, canopy_err *err, int64_t *v, int nv);

/**
 * A barrier that sleeps while it waits long (MPI_Ibarrier polled for 100 us, yielding the core,
 * then with naps of 1 us up to 1 ms), so that ranks waiting for another one leave it the cores
 * instead of spinning inside MPI, and a peer a few microseconds behind costs no nap. Collective;
 * returns an MPI error code.
 */
int comm_quiet_barrier(MPI_Comm comm);

#endif
