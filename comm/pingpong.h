/*
 * The communication cost model of the simulation: latency + bytes x byte_time between two ranks,
 * measured by a ping-pong between ranks 0 and 1 at the first analysis of a solver on several
 * ranks (about 10 ms), and broadcast so that every rank plans with the same figures.
 */
#ifndef CANOPY_COMM_PINGPONG_H
#define CANOPY_COMM_PINGPONG_H

#include <mpi.h>
#include "base/common.h"

/* The fixed network of cost-cache=fixed and canopy-simulate's default: nothing timed, so that a
 * plan is the same from run to run (a measured ping-pong moves the shared cblks between ranks) */
#define COMM_FIXED_LATENCY 1.5e-6
#define COMM_FIXED_BANDWIDTH 12e9

/** Collective. With one rank: latency = byte_time = 0. */
canopy_status comm_pingpong(MPI_Comm comm, double *latency, double *byte_time, canopy_err *err);

#endif
