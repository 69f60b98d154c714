/*
 * A plain PETSc program (nothing of Canopy in it) for the cases where a direct solver must say
 * more than "here is x": tests/test_petsc.sh runs it with -pc_factor_mat_solver_type mumps and
 * canopy side by side. The operator is the 2D convection-diffusion matrix of petsc/ex_ksp.c
 * (n x n grid, -convection C; C = 0 gives the symmetric Laplacian for -pc_type cholesky, flagged
 * MAT_SPD by -spd).
 *
 *   -case zero     the first matrix has a zero row (-line col: a zero column; with C = 0 both,
 *                  to stay symmetric) holding stored zeros (-pattern same), or no entries at all
 *                  (-pattern new: the next matrix brings them, a new nonzero pattern); then the
 *                  whole matrix, then the whole matrix shifted. Each is solved: a factorization
 *                  failure must reach the KSP (DIVERGED_PC_FAILED), and the next solves succeed.
 *   -case rankdef  the matrix with Neumann boundaries (rank n^2 - 1, A * ones = 0), a consistent
 *                  right-hand side b = A u (-rhs consistent) or b = A u + ones (-rhs inconsistent).
 *   -case trans    A^T x = b: KSPSolveTranspose, then on the factor MatSolveTransposeAdd,
 *                  MatSolveAdd and MatMatSolveTranspose (-nrhs k columns).
 *   -case normal   A x = b by the KSP of the options (-ksp_type cgne: the normal equations, the
 *                  preconditioner applied transposed too).
 *
 * One line per solve on stdout: {"solve": k, "reason": "...", "pc_failed": "...", "its": i,
 * "residual": r, "error": e} with r = ||b - op(A) x|| / ||b|| (inf-norms, op(A) = A or A^T) and
 * e = ||x - u|| / ||u|| against the exact solution u when there is one (-1 otherwise); for the
 * factor's own solves {"op": "...", "error": e}.
 */
static const char help[] = "Direct solvers through KSP: zero rows, rank deficiency, transposed solves (see the source)\n";

#include <petscksp.h>

typedef struct {
    PetscInt n;
    PetscReal conv;
    PetscInt zline;     /* the zero line (-1: none) */
    PetscBool zrow, zcol;
    PetscBool neumann;
} Problem;

/* The operator's row `row`: cols/v (at most 5), the zero line's entries as stored zeros */
static PetscInt Row(const Problem *p, PetscInt row, PetscReal shift, PetscInt *cols, PetscScalar *v)
{
    PetscInt n = p->n, ix = row % n, iy = row / n, k = 0;
    PetscReal h = 1.0 / (PetscReal)(n + 1), w = p->conv * h / 2;
    /* Neumann: the diagonal is minus the sum of the row's other entries (A * ones = 0) */
    PetscReal diag = p->neumann ? (iy > 0) + (iy < n - 1) + (ix > 0) * (1.0 + w) + (ix < n - 1) * (1.0 - w) : 4.0 + shift;
    if (iy > 0) cols[k] = row - n, v[k++] = -1.0;
    if (ix > 0) cols[k] = row - 1, v[k++] = -1.0 - w;
    cols[k] = row, v[k++] = diag;
    if (ix < n - 1) cols[k] = row + 1, v[k++] = -1.0 + w;
    if (iy < n - 1) cols[k] = row + n, v[k++] = -1.0;
    for (PetscInt q = 0; q < k; q++)
        if ((p->zrow && row == p->zline) || (p->zcol && cols[q] == p->zline)) v[q] = 0.0;
    return k;
}

/* Assemble the operator; with `drop`, the zero line's entries are not inserted at all */
static PetscErrorCode Assemble(Mat A, const Problem *p, PetscReal shift, PetscBool drop)
{
    PetscInt rstart, rend;
    PetscFunctionBeginUser;
    PetscCall(MatGetOwnershipRange(A, &rstart, &rend));
    for (PetscInt row = rstart; row < rend; row++) {
        PetscInt cols[5], m = 0;
        PetscScalar v[5];
        PetscInt k = Row(p, row, shift, cols, v);
        for (PetscInt q = 0; q < k; q++) {
            PetscBool zero = (p->zrow && row == p->zline) || (p->zcol && cols[q] == p->zline);
            if (drop && zero) continue;
            cols[m] = cols[q], v[m++] = v[q];
        }
        PetscCall(MatSetValues(A, 1, &row, m, cols, v, INSERT_VALUES));
    }
    PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
    PetscFunctionReturn(0);
}

/* x <- solve, then the line for it */
static PetscErrorCode Report(KSP ksp, Mat A, PetscInt k, Vec b, Vec x, Vec u, PetscBool trans)
{
    KSPConvergedReason reason;
    PetscInt its;
    PCFailedReason pcr = PC_NOERROR;
    PC pc;
    Vec r;
    PetscReal rn, bn, err = -1, un;
    PetscFunctionBeginUser;
    PetscCall(KSPGetConvergedReason(ksp, &reason));
    PetscCall(KSPGetIterationNumber(ksp, &its));
    PetscCall(KSPGetPC(ksp, &pc));
    PetscCall(PCGetFailedReason(pc, &pcr));
    PetscCall(VecDuplicate(b, &r));
    if (trans) PetscCall(MatMultTranspose(A, x, r));
    else PetscCall(MatMult(A, x, r));
    PetscCall(VecAYPX(r, -1.0, b));
    PetscCall(VecNorm(r, NORM_INFINITY, &rn));
    PetscCall(VecNorm(b, NORM_INFINITY, &bn));
    if (u) {
        PetscCall(VecCopy(x, r));
        PetscCall(VecAXPY(r, -1.0, u));
        PetscCall(VecNorm(r, NORM_INFINITY, &err));
        PetscCall(VecNorm(u, NORM_INFINITY, &un));
        err /= un;
    }
    PetscCall(VecDestroy(&r));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                          "{\"solve\": %" PetscInt_FMT ", \"reason\": \"%s\", \"pc_failed\": \"%s\", \"its\": %" PetscInt_FMT
                          ", \"residual\": %.3e, \"error\": %.3e}\n",
                          k, KSPConvergedReasons[reason], PCFailedReasons[pcr], its, (double)(rn / bn), (double)err));
    PetscFunctionReturn(0);
}

/* Column j of the exact solutions: u_i = 1 + (i mod 7) / 10 + j */
static PetscErrorCode Exact(Vec u, PetscInt j)
{
    PetscInt rstart, rend;
    PetscScalar *a;
    PetscFunctionBeginUser;
    PetscCall(VecGetOwnershipRange(u, &rstart, &rend));
    PetscCall(VecGetArray(u, &a));
    for (PetscInt i = rstart; i < rend; i++) a[i - rstart] = 1.0 + (PetscReal)(i % 7) / 10 + (PetscReal)j;
    PetscCall(VecRestoreArray(u, &a));
    PetscFunctionReturn(0);
}

/* The transposed solves on the factor itself (after KSPSolveTranspose set it up) */
static PetscErrorCode FactorTransposes(KSP ksp, Mat A, PetscInt nrhs, Vec u)
{
    PC pc;
    Mat F, B, X;
    Vec b, x, y, r;
    PetscReal worst = 0, rn, bn;
    PetscInt rstart, rend, N;
    PetscFunctionBeginUser;
    PetscCall(KSPGetPC(ksp, &pc));
    PetscCall(PCFactorGetMatrix(pc, &F));
    PetscCall(MatCreateVecs(A, &x, &b));
    PetscCall(VecDuplicate(b, &y));
    PetscCall(VecDuplicate(b, &r));
    /* MatSolveTransposeAdd: x = A^-T b + y; MatSolveAdd: x = A^-1 b + y */
    for (int t = 0; t < 2; t++) {
        PetscCall(Exact(u, 0));
        if (t == 0) PetscCall(MatMultTranspose(A, u, b));
        else PetscCall(MatMult(A, u, b));
        PetscCall(VecSet(y, 0.5));
        if (t == 0) PetscCall(MatSolveTransposeAdd(F, b, y, x));
        else PetscCall(MatSolveAdd(F, b, y, x));
        PetscCall(VecAXPY(x, -1.0, y));
        PetscCall(VecAXPY(x, -1.0, u));
        PetscCall(VecNorm(x, NORM_INFINITY, &rn));
        PetscCall(VecNorm(u, NORM_INFINITY, &bn));
        PetscCall(PetscPrintf(PETSC_COMM_WORLD, "{\"op\": \"%s\", \"error\": %.3e}\n", t == 0 ? "MatSolveTransposeAdd" : "MatSolveAdd",
                              (double)(rn / bn)));
    }
    /* MatMatSolveTranspose: nrhs columns, column j's exact solution Exact(j) */
    PetscCall(MatGetOwnershipRange(A, &rstart, &rend));
    PetscCall(MatGetSize(A, &N, NULL));
    PetscCall(MatCreateDense(PETSC_COMM_WORLD, rend - rstart, PETSC_DECIDE, N, nrhs, NULL, &B));
    PetscCall(MatCreateDense(PETSC_COMM_WORLD, rend - rstart, PETSC_DECIDE, N, nrhs, NULL, &X));
    for (PetscInt j = 0; j < nrhs; j++) {
        Vec col;
        PetscCall(Exact(u, j));
        PetscCall(MatDenseGetColumnVecWrite(B, j, &col));
        PetscCall(MatMultTranspose(A, u, col));
        PetscCall(MatDenseRestoreColumnVecWrite(B, j, &col));
    }
    PetscCall(MatMatSolveTranspose(F, B, X));
    for (PetscInt j = 0; j < nrhs; j++) {
        PetscCall(Exact(u, j));
        PetscCall(MatGetColumnVector(X, x, j));
        PetscCall(VecAXPY(x, -1.0, u));
        PetscCall(VecNorm(x, NORM_INFINITY, &rn));
        PetscCall(VecNorm(u, NORM_INFINITY, &bn));
        worst = PetscMax(worst, rn / bn);
    }
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "{\"op\": \"MatMatSolveTranspose\", \"nrhs\": %" PetscInt_FMT ", \"error\": %.3e}\n", nrhs,
                          (double)worst));
    PetscCall(MatDestroy(&B));
    PetscCall(MatDestroy(&X));
    PetscCall(VecDestroy(&x));
    PetscCall(VecDestroy(&b));
    PetscCall(VecDestroy(&y));
    PetscCall(VecDestroy(&r));
    PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
    Problem p = {.n = 16, .conv = 30, .zline = -1};
    PetscInt nrhs = 3;
    PetscBool spd = PETSC_FALSE;
    char kase[32] = "zero", pattern[32] = "same", line[32] = "row", rhs[32] = "consistent";
    Mat A;
    Vec x, b, u;
    KSP ksp;

    PetscCall(PetscInitialize(&argc, &argv, NULL, help));
    PetscCall(PetscOptionsGetInt(NULL, NULL, "-n", &p.n, NULL));
    PetscCall(PetscOptionsGetInt(NULL, NULL, "-nrhs", &nrhs, NULL));
    PetscCall(PetscOptionsGetBool(NULL, NULL, "-spd", &spd, NULL));
    PetscCall(PetscOptionsGetReal(NULL, NULL, "-convection", &p.conv, NULL));
    PetscCall(PetscOptionsGetString(NULL, NULL, "-case", kase, sizeof kase, NULL));
    PetscCall(PetscOptionsGetString(NULL, NULL, "-pattern", pattern, sizeof pattern, NULL));
    PetscCall(PetscOptionsGetString(NULL, NULL, "-line", line, sizeof line, NULL));
    PetscCall(PetscOptionsGetString(NULL, NULL, "-rhs", rhs, sizeof rhs, NULL));
    PetscInt N = p.n * p.n;
    p.zline = N / 2 + 3;
    PetscCall(PetscOptionsGetInt(NULL, NULL, "-zero_line", &p.zline, NULL));

    PetscCall(MatCreate(PETSC_COMM_WORLD, &A));
    PetscCall(MatSetSizes(A, PETSC_DECIDE, PETSC_DECIDE, N, N));
    PetscCall(MatSetFromOptions(A));
    PetscCall(MatSeqAIJSetPreallocation(A, 5, NULL));
    PetscCall(MatMPIAIJSetPreallocation(A, 5, NULL, 5, NULL));
    /* -pattern new: the zero line's entries come after the first assembly squeezed the storage */
    PetscCall(MatSetOption(A, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_FALSE));
    PetscCall(MatCreateVecs(A, &x, &b));
    PetscCall(VecDuplicate(x, &u));
    PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
    PetscCall(KSPSetFromOptions(ksp));

    if (!strcmp(kase, "zero")) {
        PetscBool sym = p.conv == 0, drop = !strcmp(pattern, "new");
        p.zrow = sym || !strcmp(line, "row");
        p.zcol = sym || !strcmp(line, "col");
        /* the zero line, then the whole matrix (a new pattern with -pattern new), then shifted */
        for (PetscInt k = 0; k < 3; k++) {
            Problem q = p;
            if (k > 0) q.zrow = q.zcol = PETSC_FALSE;
            PetscCall(Assemble(A, &q, k == 2 ? 0.5 : 0.0, drop));
            if (sym) PetscCall(MatSetOption(A, MAT_SYMMETRIC, PETSC_TRUE));
            if (sym && spd) PetscCall(MatSetOption(A, MAT_SPD, PETSC_TRUE));
            PetscCall(Exact(u, k));
            PetscCall(MatMult(A, u, b));
            PetscCall(KSPSetOperators(ksp, A, A));
            PetscCall(KSPSolve(ksp, b, x));
            PetscCall(Report(ksp, A, k, b, x, k > 0 ? u : NULL, PETSC_FALSE));
        }
    } else if (!strcmp(kase, "rankdef")) {
        PetscBool dup = PETSC_FALSE;
        PetscCall(PetscOptionsGetBool(NULL, NULL, "-duplicate", &dup, NULL));
        p.neumann = !dup;
        PetscCall(Assemble(A, &p, 0.0, PETSC_FALSE));
        if (dup) { /* row zline becomes a copy of row zline - 1 */
            PetscInt rstart, rend, r = p.zline, cols[5], k;
            PetscScalar v[5];
            PetscCall(MatGetOwnershipRange(A, &rstart, &rend));
            if (r >= rstart && r < rend) {
                k = Row(&p, r, 0.0, cols, v);
                for (PetscInt q = 0; q < k; q++) v[q] = 0;
                PetscCall(MatSetValues(A, 1, &r, k, cols, v, INSERT_VALUES));
                k = Row(&p, r - 1, 0.0, cols, v);
                PetscCall(MatSetValues(A, 1, &r, k, cols, v, INSERT_VALUES));
            }
            PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
            PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
        }
        PetscCall(KSPSetOperators(ksp, A, A));
        PetscCall(Exact(u, 0));
        PetscCall(MatMult(A, u, b));
        if (!strcmp(rhs, "inconsistent")) { /* not in A's range: ones (Neumann), e_zline (duplicate rows) */
            if (!dup) PetscCall(VecShift(b, 1.0));
            else PetscCall(VecSetValue(b, p.zline, 1.0, ADD_VALUES));
            PetscCall(VecAssemblyBegin(b));
            PetscCall(VecAssemblyEnd(b));
        }
        PetscCall(KSPSolve(ksp, b, x));
        PetscCall(Report(ksp, A, 0, b, x, NULL, PETSC_FALSE));
    } else if (!strcmp(kase, "trans")) {
        PetscCall(Assemble(A, &p, 0.0, PETSC_FALSE));
        PetscCall(KSPSetOperators(ksp, A, A));
        PetscCall(Exact(u, 0));
        PetscCall(MatMultTranspose(A, u, b));
        PetscCall(KSPSolveTranspose(ksp, b, x));
        PetscCall(Report(ksp, A, 0, b, x, u, PETSC_TRUE));
        PetscCall(FactorTransposes(ksp, A, nrhs, u));
    } else if (!strcmp(kase, "normal")) {
        /* A x = b by a KSP that works on the normal equations (-ksp_type cgne): it applies the
         * preconditioner transposed */
        PetscCall(Assemble(A, &p, 0.0, PETSC_FALSE));
        PetscCall(KSPSetOperators(ksp, A, A));
        PetscCall(Exact(u, 0));
        PetscCall(MatMult(A, u, b));
        PetscCall(KSPSolve(ksp, b, x));
        PetscCall(Report(ksp, A, 0, b, x, u, PETSC_FALSE));
    } else {
        SETERRQ(PETSC_COMM_WORLD, PETSC_ERR_ARG_WRONG, "-case zero|rankdef|trans|normal");
    }
    PetscCall(KSPDestroy(&ksp));
    PetscCall(VecDestroy(&x));
    PetscCall(VecDestroy(&b));
    PetscCall(VecDestroy(&u));
    PetscCall(MatDestroy(&A));
    PetscCall(PetscFinalize());
    return 0;
}
