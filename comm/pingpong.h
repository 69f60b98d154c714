/*
 * The communication cost model of the simulation: latency + bytes x byte_time between two ranks,
 * measured by a ping-pong between ranks 0 and 1 at the first analysis of a solver on several
 * ranks (about 10 ms), and broadcast so that every rank plans with the same figures.
 */
#ifndef CANOPY_COMM_PINGPONG_H
#define CANOPY_COMM_PINGPONG_H

#include <mpi.h>
#include "base/common.h"

/** Collective. With one rank: latency = byte_time = 0. */
canopy_status comm_pingpong(MPI_Comm comm, double *latency, double *byte_time, canopy_err *err);

#endif
