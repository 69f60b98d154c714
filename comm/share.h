/*
 * Moving the analysis and the matrix entries between ranks: the block structure from rank 0 to
 * every rank, and the entries of A from rank 0 to the owners of the cblks they land in.
 */
#ifndef CANOPY_COMM_SHARE_H
#define CANOPY_COMM_SHARE_H

#include <mpi.h>
#include "base/common.h"
#include "base/structure.h"

/**
 * Broadcast rank 0's block structure: other ranks' @p S is replaced (freed first). Collective.
 * @p ok: this rank's status going in (rank 0: whether S is valid); the call agrees on it first
 * and moves nothing if any rank failed. Returns the agreed status.
 */
canopy_status comm_share_symbolic(MPI_Comm comm, symbolic *S, canopy_status ok, canopy_err *err);

/**
 * Scatter from rank 0: rank r gets counts[r] elements of 8 bytes (doubles or int64) from
 * send + displs[r] (counts/displs only read on rank 0) into recv (recv_count elements).
 * 64-bit counts are split into int-sized pieces. Collective.
 */
canopy_status comm_share_scatter(MPI_Comm comm, const void *send, const int64_t *counts, const int64_t *displs,
                                 void *recv, int64_t recv_count, canopy_err *err);

/** Broadcast @p count doubles from rank 0 (64-bit count). Collective. */
canopy_status comm_share_bcast(MPI_Comm comm, void *buf, int64_t count, canopy_err *err);

/**
 * Scatter bytes from rank 0: rank r gets counts[r] bytes from send + displs[r] (counts/displs
 * only read on rank 0; the parts may overlap) into recv (recv_bytes). Collective.
 */
canopy_status comm_share_scatter_bytes(MPI_Comm comm, const void *send, const int64_t *counts, const int64_t *displs,
                                       void *recv, int64_t recv_bytes, canopy_err *err);

/**
 * Every rank to every rank: rank r sends scounts[q] elements of @p elem bytes to rank q, taken
 * one after the other from @p send in rank order, and receives rcounts[q] elements from rank q
 * into @p recv, in rank order (64-bit counts; messages of at most SHARE_CHUNK bytes). rcounts
 * must match what the others send (comm_share_counts gives them). Collective.
 */
canopy_status comm_share_alltoallv(MPI_Comm comm, const void *send, const int64_t *scounts, void *recv,
                                   const int64_t *rcounts, size_t elem, canopy_err *err);

/**
 * comm_share_alltoallv in two steps, so that a caller with allocations of its own agrees once
 * for all: comm_share_requests allocates the requests the exchange needs (NULL and @p err set
 * when it cannot); after the caller's agreement, comm_share_alltoallv_agreed runs the exchange
 * with them and frees them. Collective (the second step).
 */
MPI_Request *comm_share_requests(MPI_Comm comm, const int64_t *scounts, const int64_t *rcounts, size_t elem,
                                 canopy_err *err);
canopy_status comm_share_alltoallv_agreed(MPI_Comm comm, const void *send, const int64_t *scounts, void *recv,
                                          const int64_t *rcounts, size_t elem, MPI_Request *req, canopy_err *err);

/** rcounts[q] = what rank q sends this rank (the transpose of every rank's scounts). Collective. */
canopy_status comm_share_counts(MPI_Comm comm, const int64_t *scounts, int64_t *rcounts, canopy_err *err);

/** Broadcast @p bytes bytes from rank 0 (64-bit count). Collective. */
canopy_status comm_share_bcast_bytes(MPI_Comm comm, void *buf, int64_t bytes, canopy_err *err);

/** Gather to rank 0 (the reverse of comm_share_scatter). Collective. */
canopy_status comm_share_gather(MPI_Comm comm, const void *send, int64_t send_count, void *recv,
                                const int64_t *counts, const int64_t *displs, canopy_err *err);

/**
 * Blocking point-to-point of @p bytes bytes (64-bit count, in pieces that fit an int): the
 * receiver must know the size (send it first). Neither side depends on MPI buffering as long as
 * the receive is posted without waiting for the sender.
 */
canopy_status comm_share_send_bytes(MPI_Comm comm, int dest, int tag, const void *buf, int64_t bytes, canopy_err *err);
canopy_status comm_share_recv_bytes(MPI_Comm comm, int src, int tag, void *buf, int64_t bytes, canopy_err *err);
/** In place: v[i] = the sum of every rank's v[i] (64-bit count). Collective. */
canopy_status comm_share_sum_cint(MPI_Comm comm, cint *v, int64_t count, canopy_err *err);
#endif
