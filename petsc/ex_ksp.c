/*
 * A plain PETSc program, with nothing of Canopy in it: the direct solver is chosen at run time
 * (-pc_factor_mat_solver_type mumps | canopy, the latter loaded by -dll_append
 * <libdir>/libcanopy_petsc.so). It builds the 5-point Laplacian on an n x n grid, or with
 * -convection C a nonsymmetric convection-diffusion operator, as -mat_type aij, baij or sbaij
 * (-bs k: block size k, n * n a multiple of k),
 * sets b = A * ones, solves with KSP (-nrhs k: KSPMatSolve with k right-hand sides), and with
 * -refactor m factorizes m more times after changing the values on the same pattern. One JSON
 * line on stdout: sizes, times (setup = analysis + first factorization, solve, refactorization,
 * and time_per_refactor: the m refactorizations and their solves, values and b included, per call;
 * cpu_per_refactor: the CPU time of all ranks, threads included, over the same calls, per call),
 * the error against the exact solution, and with -sol_ref FILE the largest difference from a
 * solution saved by -sol_out FILE (another solver's).
 */
static const char help[] = "KSP on a 2D Laplacian or convection-diffusion operator (see the source)\n";

#include <petscksp.h>
#include <sys/resource.h>

/* CPU time of this process, all its threads, user and system (seconds) */
static double CpuTime(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec +
           1e-6 * (double)ru.ru_stime.tv_usec;
}

static PetscErrorCode Assemble(Mat A, PetscInt n, PetscReal conv, PetscReal shift, PetscBool upper_only)
{
    PetscInt rstart, rend;
    PetscReal h = 1.0 / (PetscReal)(n + 1);
    PetscFunctionBeginUser;
    PetscCall(MatGetOwnershipRange(A, &rstart, &rend));
    for (PetscInt row = rstart; row < rend; row++) {
        PetscInt ix = row % n, iy = row / n, cols[5], k = 0;
        PetscScalar v[5];
        /* -u'' with a first-order upwind-free central convection term along x */
        if (iy > 0) cols[k] = row - n, v[k++] = -1.0;
        if (ix > 0) cols[k] = row - 1, v[k++] = -1.0 - conv * h / 2;
        cols[k] = row, v[k++] = 4.0 + shift;
        if (ix < n - 1) cols[k] = row + 1, v[k++] = -1.0 + conv * h / 2;
        if (iy < n - 1) cols[k] = row + n, v[k++] = -1.0;
        if (upper_only) {
            PetscInt m = 0;
            for (PetscInt q = 0; q < k; q++)
                if (cols[q] >= row) cols[m] = cols[q], v[m++] = v[q];
            k = m;
        }
        PetscCall(MatSetValues(A, 1, &row, k, cols, v, INSERT_VALUES));
    }
    PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
    PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
    PetscInt n = 32, nrhs = 1, refactor = 0, bs = 1;
    PetscReal conv = 0;
    PetscBool spd = PETSC_FALSE, sbaij;
    char out[PETSC_MAX_PATH_LEN] = "", ref[PETSC_MAX_PATH_LEN] = "";
    PetscMPIInt size;
    Mat A;
    Vec x, b, u;
    KSP ksp;

    PetscCall(PetscInitialize(&argc, &argv, NULL, help));
    PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
    PetscCall(PetscOptionsGetInt(NULL, NULL, "-n", &n, NULL));
    PetscCall(PetscOptionsGetInt(NULL, NULL, "-nrhs", &nrhs, NULL));
    PetscCall(PetscOptionsGetInt(NULL, NULL, "-refactor", &refactor, NULL));
    PetscCall(PetscOptionsGetInt(NULL, NULL, "-bs", &bs, NULL));
    PetscCall(PetscOptionsGetReal(NULL, NULL, "-convection", &conv, NULL));
    PetscCall(PetscOptionsGetBool(NULL, NULL, "-spd", &spd, NULL));
    PetscCall(PetscOptionsGetString(NULL, NULL, "-sol_out", out, sizeof out, NULL));
    PetscCall(PetscOptionsGetString(NULL, NULL, "-sol_ref", ref, sizeof ref, NULL));

    PetscCall(MatCreate(PETSC_COMM_WORLD, &A));
    PetscCall(MatSetSizes(A, PETSC_DECIDE, PETSC_DECIDE, n * n, n * n));
    PetscCall(MatSetFromOptions(A));
    PetscCall(MatSetBlockSize(A, bs));
    PetscCall(MatSeqAIJSetPreallocation(A, 5, NULL));
    PetscCall(MatMPIAIJSetPreallocation(A, 5, NULL, 5, NULL));
    PetscCall(MatSeqBAIJSetPreallocation(A, bs, 5, NULL));
    PetscCall(MatMPIBAIJSetPreallocation(A, bs, 5, NULL, 5, NULL));
    PetscCall(MatSeqSBAIJSetPreallocation(A, bs, 3, NULL));
    PetscCall(MatMPISBAIJSetPreallocation(A, bs, 3, NULL, 3, NULL));
    PetscCall(PetscObjectTypeCompareAny((PetscObject)A, &sbaij, MATSEQSBAIJ, MATMPISBAIJ, ""));
    PetscCall(Assemble(A, n, conv, 0.0, sbaij));
    if (conv == 0) PetscCall(MatSetOption(A, MAT_SYMMETRIC, PETSC_TRUE));
    if (spd) PetscCall(MatSetOption(A, MAT_SPD, PETSC_TRUE));

    PetscCall(MatCreateVecs(A, &x, &b));
    PetscCall(VecDuplicate(x, &u));
    PetscCall(VecSet(u, 1.0));
    PetscCall(MatMult(A, u, b));

    PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
    PetscCall(KSPSetOperators(ksp, A, A));
    PetscCall(KSPSetFromOptions(ksp));
    PetscLogDouble t0, t1, t2, t3 = 0, t4 = 0, t5 = 0;
    PetscCall(PetscTime(&t0));
    PetscCall(KSPSetUp(ksp));
    PetscCall(PetscTime(&t1));
    if (nrhs > 1) {
        /* k right-hand sides at once: column j is (j + 1) b */
        Mat B, X;
        PetscInt rstart, rend;
        const PetscScalar *ba;
        PetscCall(MatGetOwnershipRange(A, &rstart, &rend));
        PetscCall(MatCreateDense(PETSC_COMM_WORLD, rend - rstart, PETSC_DECIDE, n * n, nrhs, NULL, &B));
        PetscCall(MatCreateDense(PETSC_COMM_WORLD, rend - rstart, PETSC_DECIDE, n * n, nrhs, NULL, &X));
        PetscCall(VecGetArrayRead(b, &ba));
        for (PetscInt j = 0; j < nrhs; j++)
            for (PetscInt i = rstart; i < rend; i++) PetscCall(MatSetValue(B, i, j, (j + 1) * ba[i - rstart], INSERT_VALUES));
        PetscCall(VecRestoreArrayRead(b, &ba));
        PetscCall(MatAssemblyBegin(B, MAT_FINAL_ASSEMBLY));
        PetscCall(MatAssemblyEnd(B, MAT_FINAL_ASSEMBLY));
        PetscCall(KSPMatSolve(ksp, B, X));
        /* x = last column / nrhs */
        PetscCall(MatGetColumnVector(X, x, nrhs - 1));
        PetscCall(VecScale(x, 1.0 / (PetscReal)nrhs));
        PetscCall(MatDestroy(&B));
        PetscCall(MatDestroy(&X));
    } else {
        PetscCall(KSPSolve(ksp, b, x));
    }
    PetscCall(PetscTime(&t2));
    double c2 = CpuTime();
    for (PetscInt r = 0; r < refactor; r++) {
        /* new values, same pattern: A + (r + 1) / 10 I, solved against its own b */
        PetscCall(Assemble(A, n, conv, 0.1 * (PetscReal)(r + 1), sbaij));
        PetscCall(MatMult(A, u, b));
        PetscCall(KSPSetOperators(ksp, A, A));
        PetscCall(PetscTime(&t3));
        PetscCall(KSPSetUp(ksp));
        PetscCall(PetscTime(&t4));
        PetscCall(KSPSolve(ksp, b, x));
    }
    PetscCall(PetscTime(&t5));
    double cpu = CpuTime() - c2, cpu_all = 0;
    PetscCallMPI(MPI_Allreduce(&cpu, &cpu_all, 1, MPI_DOUBLE, MPI_SUM, PETSC_COMM_WORLD));
    PetscReal err, unorm, diff = -1;
    PetscCall(VecAXPY(u, -1.0, x));
    PetscCall(VecNorm(u, NORM_INFINITY, &err));
    PetscCall(VecNorm(x, NORM_INFINITY, &unorm));
    if (out[0]) {
        PetscViewer v;
        PetscCall(PetscViewerBinaryOpen(PETSC_COMM_WORLD, out, FILE_MODE_WRITE, &v));
        PetscCall(VecView(x, v));
        PetscCall(PetscViewerDestroy(&v));
    }
    if (ref[0]) {
        PetscViewer v;
        Vec r;
        PetscCall(VecDuplicate(x, &r));
        PetscCall(PetscViewerBinaryOpen(PETSC_COMM_WORLD, ref, FILE_MODE_READ, &v));
        PetscCall(VecLoad(r, v));
        PetscCall(PetscViewerDestroy(&v));
        PetscCall(VecAXPY(r, -1.0, x));
        PetscCall(VecNorm(r, NORM_INFINITY, &diff));
        diff /= unorm;
        PetscCall(VecDestroy(&r));
    }
    PC pc;
    MatSolverType st = "none";
    PetscBool isfactor;
    PetscCall(KSPGetPC(ksp, &pc));
    PetscCall(PetscObjectTypeCompareAny((PetscObject)pc, &isfactor, PCLU, PCCHOLESKY, ""));
    if (isfactor) PetscCall(PCFactorGetMatSolverType(pc, &st));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                          "{\"n\": %" PetscInt_FMT ", \"ranks\": %d, \"solver\": \"%s\", \"nrhs\": %" PetscInt_FMT
                          ", \"time_setup\": %.6e, \"time_solve\": %.6e, \"time_refactor\": %.6e, \"time_per_refactor\": %.6e, \"cpu_per_refactor\": %.6e, \"error\": %.6e, \"ref_diff\": %.6e}\n",
                          n * n, size, st, nrhs, t1 - t0, t2 - t1, refactor ? t4 - t3 : -1.0,
                          refactor ? (t5 - t2) / (PetscLogDouble)refactor : -1.0, refactor ? cpu_all / (double)refactor : -1.0,
                          (double)(err / unorm),
                          (double)diff));
    PetscCall(KSPDestroy(&ksp));
    PetscCall(VecDestroy(&x));
    PetscCall(VecDestroy(&b));
    PetscCall(VecDestroy(&u));
    PetscCall(MatDestroy(&A));
    PetscCall(PetscFinalize());
    return 0;
}
