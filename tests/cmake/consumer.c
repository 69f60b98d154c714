/*
 * tests/cmake's C program: the 2D Laplacian (5-point, m x m grid, lower triangle) given in pieces,
 * each rank its own columns (canopy_set_matrix_distributed), b = A * ones solved on each rank's
 * own rows; then new values on the same pattern (diagonal 5), factorized and solved again. Every
 * rank checks its rows against the known solution; exit status 0 when all are within 1e-10.
 */
#include <canopy.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { M = 20, N = M * M };

/* b(i) = sum of row i of A (x = ones), for the diagonal d */
static double row_sum(canopy_int i, double d)
{
    canopy_int x = i % M, y = i / M;
    return d - (x > 0) - (x < M - 1) - (y > 0) - (y < M - 1);
}

int main(int argc, char **argv)
{
    int provided, rank, size, bad = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* this rank's columns (and rows of b and x): c0 .. c1 - 1 */
    canopy_int c0 = (canopy_int)((long long)N * rank / size), c1 = (canopy_int)((long long)N * (rank + 1) / size);
    canopy_int nc = c1 - c0, nz = 0;
    canopy_int *cols = malloc((size_t)(nc + 1) * sizeof *cols), *colptr = malloc((size_t)(nc + 1) * sizeof *colptr);
    canopy_int *rowind = malloc((size_t)(3 * nc + 1) * sizeof *rowind);
    double *values = malloc((size_t)(3 * nc + 1) * sizeof *values), *x = malloc((size_t)(nc + 1) * sizeof *x);
    for (canopy_int j = c0; j < c1; j++) {
        cols[j - c0] = j;
        colptr[j - c0] = nz;
        rowind[nz] = j, values[nz++] = 4.0;
        if ((j + 1) % M != 0) rowind[nz] = j + 1, values[nz++] = -1.0;
        if (j + M < N) rowind[nz] = j + M, values[nz++] = -1.0;
    }
    colptr[nc] = nz;
    canopy_dist_csc A = {.n = N, .ncols = nc, .cols = cols, .colptr = colptr, .rowind = rowind, .values = values,
                         .base = 0, .arith = CANOPY_REAL, .kind = CANOPY_KIND_SPD, .triangle = CANOPY_TRIANGLE_LOWER};
    canopy_solver *s = NULL;
    canopy_status st = canopy_create(MPI_COMM_WORLD, NULL, &s); /* defaults and CANOPY_* */
    for (int pass = 0; pass < 2 && st >= 0; pass++) {
        double d = pass == 0 ? 4.0 : 5.0, err = 0;
        if (pass == 0) {
            st = canopy_set_matrix_distributed(s, &A);
            if (st >= 0) st = canopy_analyze(s);
        } else {
            for (canopy_int k = 0; k < nc; k++) values[colptr[k]] = d;
            st = canopy_update_values_distributed(s, values);
        }
        if (st >= 0) st = canopy_factorize(s);
        for (canopy_int i = c0; i < c1; i++) x[i - c0] = row_sum(i, d);
        if (st >= 0) st = canopy_solve_distributed(s, 1, nc, cols, x, nc > 0 ? nc : 1);
        for (canopy_int i = 0; i < nc && st >= 0; i++) err = fmax(err, fabs(x[i] - 1.0));
        MPI_Allreduce(MPI_IN_PLACE, &err, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (rank == 0 && st >= 0) printf("Canopy %s, %d rank(s), pass %d: n = %d, max |x - 1| = %.2e\n",
                                         CANOPY_VERSION_STRING, size, pass, N, err);
        if (st >= 0 && !(err < 1e-10)) bad = 1;
    }
    if (st < 0) {
        if (rank == 0) fprintf(stderr, "canopy: %s: %s\n", canopy_strerror(st), canopy_last_error(s));
        bad = 1;
    }
    canopy_destroy(&s);
    free(cols), free(colptr), free(rowind), free(values), free(x);
    MPI_Finalize();
    return bad;
}
