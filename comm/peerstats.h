/*
 * Per-peer communication statistics: how many messages and bytes this rank sent to and received
 * from every other rank, summaries of per-rank figures over the ranks (min, max, median, mean,
 * standard deviation, total), the rank x rank volume matrix gathered on rank 0, and heat maps of
 * that matrix (SVG or PNG). This file only counts and reports what the communication code tells
 * it; it sends no message of the solver and knows nothing about message formats.
 */
#ifndef CANOPY_PEERSTATS_H
#define CANOPY_PEERSTATS_H

#include "base/common.h" /* first: config.h feature macros */
#include <stdatomic.h>
#include <mpi.h>

/**
 * Counters of one rank, indexed by peer rank (0 <= peer < nranks). The four arrays are one
 * allocation owned by the struct. Counters only grow between resets; they are atomics so that
 * workers calling MPI themselves (comm-threads = 0) may record concurrently with each other and
 * with the communication thread.
 */
typedef struct comm_peerstats {
    int nranks;               /**< number of peers (the size of the communicator) */
    atomic_llong *msgs_sent;  /**< [nranks] messages sent to each peer */
    atomic_llong *bytes_sent; /**< [nranks] bytes sent to each peer */
    atomic_llong *msgs_recv;  /**< [nranks] messages received from each peer */
    atomic_llong *bytes_recv; /**< [nranks] bytes received from each peer */
} comm_peerstats;

/**
 * Allocate zeroed counters for @p nranks peers.
 *
 * @param[out] ps      the counters; zeroed (safe to free) on failure
 * @param[in]  nranks  number of peers (>= 1)
 * @param[out] err     message on failure (may be NULL)
 * @return CANOPY_SUCCESS; CANOPY_ERR_ARGUMENT for a NULL @p ps or @p nranks < 1;
 *         CANOPY_ERR_NOMEM (or CANOPY_ERR_TOO_LARGE) when the counters cannot be allocated.
 */
canopy_status comm_peerstats_init(comm_peerstats *ps, int nranks, canopy_err *err);

/**
 * Set every counter back to zero. Not atomic as a whole: no thread may record meanwhile.
 * A NULL or freed @p ps is ignored.
 */
void comm_peerstats_reset(comm_peerstats *ps);

/** Release the counters and zero the struct. A NULL, zeroed or already freed @p ps is ignored. */
void comm_peerstats_free(comm_peerstats *ps);

/**
 * Record one message of @p bytes bytes sent to @p peer. Thread-safe and lock-free (relaxed atomic
 * adds: the counters order nothing else, and are read once the traffic is over).
 *
 * @return true when recorded; false (nothing recorded) for a NULL or freed @p ps, a @p peer
 *         outside 0..nranks-1 or negative @p bytes.
 */
bool comm_peerstats_sent(comm_peerstats *ps, int peer, int64_t bytes);

/** Record one message of @p bytes bytes received from @p peer; as comm_peerstats_sent. */
bool comm_peerstats_recv(comm_peerstats *ps, int peer, int64_t bytes);

/** Summary of a set of values (one per rank, usually). */
typedef struct comm_summary {
    double min, max;
    double median; /**< middle value; for an even count, the mean of the two middle values */
    double mean;
    double stddev; /**< population standard deviation (divides by n, not n - 1) */
    double total;  /**< sum of the values */
} comm_summary;

/**
 * Summary of @p v[0..n-1]. Pure: no allocation, no MPI, @p v is left untouched (the median is found
 * by a bisection on the values' order, O(64 n)). Constant values give exactly that value as
 * min, max, median and mean, and a standard deviation of exactly 0.
 *
 * @param[in]  v    the values (may be NULL when n <= 0)
 * @param[in]  n    their count; n <= 0 gives an all-zero summary
 * @param[out] out  the summary; every field is NaN when some value is NaN. NULL: nothing is done.
 */
void comm_summary_compute(const double *v, int n, comm_summary *out);

/**
 * Collective on @p comm: the summary over the ranks of @p mine, one value per rank; every rank
 * gets the same summary. Arguments are checked so that every rank still calls the same collectives
 * and all return the same status when one rank's arguments are bad.
 *
 * @param[in]  comm  communicator (not MPI_COMM_NULL)
 * @param[in]  mine  this rank's value
 * @param[out] out   the summary (zeroed on failure)
 * @param[out] err   message on failure (may be NULL)
 * @return CANOPY_SUCCESS; CANOPY_ERR_ARGUMENT for MPI_COMM_NULL or a NULL @p out on some rank;
 *         CANOPY_ERR_NOMEM; CANOPY_ERR_MPI when an MPI call fails.
 */
canopy_status comm_summary_allranks(MPI_Comm comm, double mine, comm_summary *out, canopy_err *err);

/**
 * Collective on @p comm: comm_summary_allranks of @p k values at once (one agreement and one
 * gather, whatever @p k: the figures of a factorization cost one round, not one per figure).
 *
 * @param[in]  mine   this rank's @p k values
 * @param[in]  k      how many (>= 1; the same on every rank)
 * @param[out] out    @p k summaries, out[i] over the ranks' mine[i] (zeroed on failure)
 * @param[out] first  rank 0's @p k values (may be NULL)
 * @return as comm_summary_allranks.
 */
canopy_status comm_summary_allranks_n(MPI_Comm comm, const double *mine, int k, comm_summary *out, double *first,
                                      canopy_err *err);

/**
 * Collective on @p comm: summaries over the ranks of the bytes and messages each rank sent (the
 * totals of its row), given to every rank, and on rank 0 the full volume matrices:
 * bytes_matrix[i * P + j] and msgs_matrix[i * P + j] are what rank i sent to rank j, P the size of
 * @p comm. Every output may be NULL (the matrices only matter on rank 0; other ranks' are left
 * untouched). Call it once the traffic being counted is over. Bad arguments on one rank make every
 * rank return the same error without hanging.
 *
 * @param[in]  comm          communicator the counters were indexed by
 * @param[in]  ps            this rank's counters; ps->nranks must be the size of @p comm
 * @param[out] bytes_sent    summary over the ranks of the bytes each sent (may be NULL)
 * @param[out] msgs_sent     summary over the ranks of the messages each sent (may be NULL)
 * @param[out] bytes_matrix  on rank 0, P * P bytes from row rank to column rank (may be NULL)
 * @param[out] msgs_matrix   on rank 0, P * P messages from row rank to column rank (may be NULL)
 * @param[out] err           message on failure (may be NULL)
 * @return CANOPY_SUCCESS; CANOPY_ERR_ARGUMENT for MPI_COMM_NULL, a NULL @p ps or a size mismatch on
 *         some rank; CANOPY_ERR_NOMEM / CANOPY_ERR_TOO_LARGE; CANOPY_ERR_MPI when an MPI call fails.
 */
canopy_status comm_peerstats_gather(MPI_Comm comm, const comm_peerstats *ps, comm_summary *bytes_sent,
                                    comm_summary *msgs_sent, int64_t *bytes_matrix, int64_t *msgs_matrix,
                                    canopy_err *err);

/**
 * Heat map of a P x P volume matrix (@p volume[i * P + j]: from rank i, row, to rank j, column),
 * chosen by the extension of @p path (case-insensitive):
 *  - ".svg": one rect (class "cell") per cell with the value in a <title> tooltip (and printed in
 *    the cell when it is large enough), axis labels "from rank" / "to rank", a colour legend;
 *  - ".png": 8-bit RGB written by numa_png_write, no text, each cell a square of c x c pixels with
 *    c = clamp(512 / P, 1, 32), so the image is exactly P * c pixels wide and high.
 * One linear colour scale: 0 is white, values above 0 go from pale yellow to dark red at the
 * matrix maximum (#99000d). Not collective: call it on the rank that holds the matrix.
 *
 * @param[in]  path    output file, ending in .svg or .png
 * @param[in]  nranks  P (>= 1)
 * @param[in]  volume  P * P non-negative values
 * @param[in]  title   heading of the SVG (XML-escaped; NULL: "communication volume"); unused in PNG
 * @param[out] err     message on failure (may be NULL)
 * @return CANOPY_SUCCESS; CANOPY_ERR_ARGUMENT for a NULL pointer, P < 1, a negative value or
 *         another extension; CANOPY_ERR_IO when the file cannot be written; CANOPY_ERR_TOO_LARGE
 *         or CANOPY_ERR_NOMEM for an image that does not fit.
 */
canopy_status comm_heatmap_write(const char *path, int nranks, const int64_t *volume, const char *title,
                                 canopy_err *err);

#endif
