/*
 * The whole Canopy cycle on a small system: create, give the matrix, analyze, factorize, solve,
 * refine, refactorize with new values, read the statistics, destroy. Built against the INSTALLED
 * library by the test suite:  mpicc simple.c $(pkg-config --cflags --libs canopy)
 */
#include <canopy.h>
#include <math.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int provided, rank;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);

    /* 1-D Laplacian tridiag(-1, 2, -1) of order 10, lower triangle, 0-based CSC. */
    enum { N = 10 };
    canopy_int colptr[N + 1], rowind[2 * N];
    double values[2 * N];
    canopy_int nz = 0;
    for (canopy_int j = 0; j < N; j++) {
        colptr[j] = nz;
        rowind[nz] = j;
        values[nz++] = 2.0;
        if (j + 1 < N) {
            rowind[nz] = j + 1;
            values[nz++] = -1.0;
        }
    }
    colptr[N] = nz;
    canopy_csc A = {.n = N, .colptr = colptr, .rowind = rowind, .values = values, .base = 0,
                    .arith = CANOPY_REAL, .kind = CANOPY_KIND_SPD, .triangle = CANOPY_TRIANGLE_LOWER};

    canopy_options opts;
    canopy_options_default(&opts);
    canopy_options_from_env(&opts, NULL, 0); /* let CANOPY_* variables tune the run */

    canopy_solver *solver;
    canopy_status st = canopy_create(MPI_COMM_WORLD, &opts, &solver);
    if (st < 0) {
        fprintf(stderr, "create: %s\n", canopy_strerror(st));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* b = A * ones, so the solution is all ones */
    double b[N], x[N];
    for (int i = 0; i < N; i++) b[i] = (i == 0 || i == N - 1) ? 1.0 : 0.0;
    for (int i = 0; i < N; i++) x[i] = b[i];

    int failed = 0;
    if ((st = canopy_set_matrix(solver, rank == 0 ? &A : NULL)) < 0 || (st = canopy_analyze(solver)) < 0 ||
        (st = canopy_factorize(solver)) < 0 || (st = canopy_solve(solver, 1, x, N)) < 0 ||
        (st = canopy_refine(solver, 1, b, N, x, N)) < 0) {
        if (rank == 0) fprintf(stderr, "canopy: %s: %s\n", canopy_strerror(st), canopy_last_error(solver));
        failed = 1;
    }

    /* Same pattern, new values (4 on the diagonal): factorize again, reusing the analysis. */
    if (!failed) {
        for (canopy_int j = 0; j < N; j++) values[colptr[j]] = 4.0;
        for (int i = 0; i < N; i++) b[i] = (i == 0 || i == N - 1) ? 3.0 : 2.0;
        for (int i = 0; i < N; i++) x[i] = b[i];
        if ((st = canopy_update_values(solver, rank == 0 ? values : NULL)) < 0 ||
            (st = canopy_factorize(solver)) < 0 || (st = canopy_solve(solver, 1, x, N)) < 0 ||
            (st = canopy_refine(solver, 1, b, N, x, N)) < 0) {
            if (rank == 0) fprintf(stderr, "canopy: %s: %s\n", canopy_strerror(st), canopy_last_error(solver));
            failed = 1;
        }
    }

    canopy_stats stats;
    canopy_get_stats(solver, &stats);
    if (rank == 0 && !failed) {
        double err = 0;
        for (int i = 0; i < N; i++) err = fmax(err, fabs(x[i] - 1.0));
        printf("n=%lld nnz(L)=%lld backward error %.2e, forward error %.2e\n", (long long)stats.n,
               (long long)stats.nnz_factor, stats.backward_error, err);
        failed = err > 1e-12;
    }
    canopy_destroy(&solver);
    MPI_Finalize();
    return failed;
}
