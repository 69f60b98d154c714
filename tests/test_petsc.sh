#!/bin/sh
# The PETSc solver package: petsc/ex_ksp.c, a plain PETSc program built with PETSc's flags alone
# (nothing of Canopy), solves a 2D Laplacian (Cholesky, LU; AIJ, BAIJ, SBAIJ) and a nonsymmetric
# convection-diffusion problem (LU) with MUMPS, then with Canopy loaded at run time
# (-dll_append <libdir>/libcanopy_petsc.so, from a scratch install), on 1 to 4 ranks: the same
# solution (relative difference <= 1e-10), the exact one to 1e-10, -ksp_view naming the package,
# -mat_canopy_* options passed, refactorizations of the same pattern, several right-hand sides
# (KSPMatSolve), and a bad Canopy option refused with its message. Skipped without PETSc.
[ "$HAVE_PETSC" = yes ] || { echo "PETSc not configured: skipped"; exit 77; }
[ -n "$MPIEXEC" ] || { echo "MPIEXEC not set: skipped"; exit 77; }
set -e
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "${top_srcdir:-.}/tests/scratch_install.sh"
scratch_install "$tmp/root" "$tmp/install.log" || { cat "$tmp/install.log"; exit 1; }
lib=$(find "$tmp/root" -name libcanopy_petsc.so | head -n 1)
[ -n "$lib" ] || { echo "libcanopy_petsc.so was not installed"; exit 1; }
# the installed libcanopy beside it (a scratch prefix: not where the plug-in's run path points)
LD_LIBRARY_PATH="$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH
# shellcheck disable=SC2086
${CC:-mpicc} -std=c11 -o "$tmp/ex_ksp" "${top_srcdir:-.}/petsc/ex_ksp.c" $PETSC_CFLAGS $PETSC_LIBS
OMPI_ALLOW_RUN_AS_ROOT=1; OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; OMPI_MCA_rmaps_base_oversubscribe=1; OPENBLAS_NUM_THREADS=1
export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM OMPI_MCA_rmaps_base_oversubscribe OPENBLAS_NUM_THREADS
tmo=""
command -v timeout >/dev/null 2>&1 && tmo="timeout ${CANOPY_TEST_TIMEOUT:-300}"
field() { sed -n "s/.*\"$1\": \([^,}]*\).*/\1/p" "$2" | tail -n 1; }
fails=0
check() { # ranks, label, options...
    n=$1 label=$2
    shift 2
    $tmo $MPIEXEC -n "$n" "$tmp/ex_ksp" -n 36 -ksp_type preonly "$@" -pc_factor_mat_solver_type mumps \
        -sol_out "$tmp/ref.bin" >"$tmp/mumps.out" 2>&1 || { echo "FAIL: $label, $n ranks: MUMPS"; tail -5 "$tmp/mumps.out"; fails=$((fails + 1)); return; }
    $tmo $MPIEXEC -n "$n" "$tmp/ex_ksp" -n 36 -ksp_type preonly "$@" -pc_factor_mat_solver_type canopy -dll_append "$lib" \
        -mat_canopy_threads 2 -sol_ref "$tmp/ref.bin" -ksp_view >"$tmp/canopy.out" 2>&1 ||
        { echo "FAIL: $label, $n ranks: Canopy"; grep -m 8 "ERROR" "$tmp/canopy.out"; fails=$((fails + 1)); return; }
    err=$(field error "$tmp/canopy.out")
    diff=$(field ref_diff "$tmp/canopy.out")
    if awk -v e="$err" -v d="$diff" 'BEGIN { exit !(e <= 1e-10 && d >= 0 && d <= 1e-10) }' &&
        grep -q "package used to perform factorization: canopy" "$tmp/canopy.out" &&
        grep -q "$n rank(s) x 2 thread(s)" "$tmp/canopy.out"; then
        echo "ok: $label, $n ranks: error $err, difference from MUMPS $diff"
    else
        echo "FAIL: $label, $n ranks: error $err, difference from MUMPS $diff"; tail -20 "$tmp/canopy.out"
        fails=$((fails + 1))
    fi
}
counts="1 2 3 4"
[ -n "$CANOPY_TEST_QUICK" ] && counts="1 3"
for n in $counts; do
    check "$n" "Laplacian, Cholesky (SPD), AIJ" -spd -pc_type cholesky
    check "$n" "Laplacian, Cholesky (SPD), SBAIJ" -spd -pc_type cholesky -mat_type sbaij
    check "$n" "Laplacian, Cholesky (SPD), SBAIJ block size 2" -spd -pc_type cholesky -mat_type sbaij -bs 2
    check "$n" "Laplacian, Cholesky (LDL^T)" -pc_type cholesky
    check "$n" "Laplacian, LU" -pc_type lu
    check "$n" "convection-diffusion, LU, BAIJ block size 2" -convection 40 -pc_type lu -mat_type baij -bs 2
    check "$n" "convection-diffusion, LU, 3 right-hand sides, 2 refactorizations" -convection 40 -pc_type lu -nrhs 3 -refactor 2
done
# a bad option: the package's error, not a crash
if $tmo $MPIEXEC -n 2 "$tmp/ex_ksp" -n 10 -ksp_type preonly -pc_type lu -pc_factor_mat_solver_type canopy -dll_append "$lib" \
    -mat_canopy_threads many >"$tmp/bad.out" 2>&1; then
    echo "FAIL: -mat_canopy_threads many was accepted"; fails=$((fails + 1))
elif grep -q "mat_canopy_threads" "$tmp/bad.out"; then
    echo "ok: a bad -mat_canopy_ option is refused with its name"
else
    echo "FAIL: no message for a bad option"; tail -5 "$tmp/bad.out"; fails=$((fails + 1))
fi
# without -dll_append, the package is unknown to PETSc: what an unmodified program sees
if $tmo $MPIEXEC -n 1 "$tmp/ex_ksp" -n 10 -ksp_type preonly -pc_type lu -pc_factor_mat_solver_type canopy >"$tmp/none.out" 2>&1; then
    echo "FAIL: the package was found without -dll_append"; fails=$((fails + 1))
else
    echo "ok: without -dll_append PETSc does not know the package"
fi
[ "$fails" -eq 0 ]
