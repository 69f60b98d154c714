/* Ping-pong between ranks 0 and 1 (see pingpong.h). */
#include "pingpong.h"

#include <string.h>

#define PP_BIG (1 << 20)   /* bytes of the bandwidth message */
#define PP_SMALL_REPS 50
#define PP_BIG_REPS 8

/* Median-free, robust enough: the best of the repetitions (the host may be shared). */
static double pp_time(MPI_Comm comm, int rank, char *buf, int bytes, int reps, int *ok)
{
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = MPI_Wtime();
        if (rank == 0) {
            if (MPI_Send(buf, bytes, MPI_BYTE, 1, 91, comm) != MPI_SUCCESS ||
                MPI_Recv(buf, bytes, MPI_BYTE, 1, 92, comm, MPI_STATUS_IGNORE) != MPI_SUCCESS)
                *ok = 0;
        } else if (rank == 1) {
            if (MPI_Recv(buf, bytes, MPI_BYTE, 0, 91, comm, MPI_STATUS_IGNORE) != MPI_SUCCESS ||
                MPI_Send(buf, bytes, MPI_BYTE, 0, 92, comm) != MPI_SUCCESS)
                *ok = 0;
        }
        double t = (MPI_Wtime() - t0) / 2;
        if (t < best) best = t;
    }
    return best;
}

canopy_status comm_pingpong(MPI_Comm comm, double *latency, double *byte_time, canopy_err *err)
{
    int rank, nranks;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &nranks);
    *latency = *byte_time = 0;
    if (nranks < 2) return CANOPY_SUCCESS;
    char *buf = NULL;
    int ok = 1;
    if (rank <= 1) {
        buf = canopy_calloc(PP_BIG, 1, "ping-pong buffer", err);
        ok = buf != NULL;
    }
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
    double fig[2] = {0, 0};
    if (all) {
        if (rank <= 1) {
            double small = pp_time(comm, rank, buf, 8, PP_SMALL_REPS, &ok);
            double big = pp_time(comm, rank, buf, PP_BIG, PP_BIG_REPS, &ok);
            fig[0] = small;
            fig[1] = big > small ? (big - small) / PP_BIG : 1e-10;
        }
        MPI_Bcast(fig, 2, MPI_DOUBLE, 0, comm);
    }
    canopy_free(buf);
    if (!all) return canopy_err_set(err, CANOPY_ERR_NOMEM, "ping-pong buffer");
    *latency = fig[0];
    *byte_time = fig[1];
    return CANOPY_SUCCESS;
}
