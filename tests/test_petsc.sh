#!/bin/sh
# The PETSc solver package: petsc/ex_ksp.c, a plain PETSc program built with PETSc's flags alone
# (nothing of Canopy), solves a 2D Laplacian (Cholesky, LU; AIJ, BAIJ, SBAIJ) and a nonsymmetric
# convection-diffusion problem (LU) with MUMPS, then with Canopy loaded at run time
# (-dll_append <libdir>/libcanopy_petsc.so, from a scratch install), on 1 to 4 ranks: the same
# solution (relative difference <= 1e-10), the exact one to 1e-10, -ksp_view naming the package,
# -mat_canopy_* options passed, refactorizations of the same pattern, several right-hand sides
# (KSPMatSolve), a bad Canopy option refused with its message, and -help describing every
# -mat_canopy_* option with its value (default, environment, command line). Then tests/petsc_cases.c, another
# plain PETSc program, for what a direct solver must report beyond x, MUMPS beside: a zero row or
# column (stored zeros, or no entries at all) is a failed factorization (DIVERGED_PC_FAILED) on
# every rank and the next matrices are solved; a rank-deficient matrix with consistent and
# inconsistent right-hand sides, with and without -mat_canopy_strict (perturbed pivots reach
# PetscInfo; with strict an inconsistent one gives an Inf solution, not a wrong one); transposed
# solves (KSPSolveTranspose, MatSolveTransposeAdd, MatMatSolveTranspose, CGNE). Skipped without PETSc.
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
# shellcheck disable=SC2086
${CC:-mpicc} -std=c11 -o "$tmp/petsc_cases" "${top_srcdir:-.}/tests/petsc_cases.c" $PETSC_CFLAGS $PETSC_LIBS
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

# ---- tests/petsc_cases.c: failures, singular matrices, transposed solves ----------------------
canopy="-pc_factor_mat_solver_type canopy -dll_append $lib -mat_canopy_threads 2"
cases() { # ranks, output file, options...
    n=$1 out=$2
    shift 2
    $tmo $MPIEXEC -n "$n" "$tmp/petsc_cases" "$@" >"$out" 2>&1 || return 1
}
# get FILE SOLVE KEY: a field of the line of solve SOLVE; op FILE NAME: the error of a factor's solve
get() { awk -v s="{\"solve\": $2," -v k="\"$3\": " 'index($0, s) == 1 && (i = index($0, k)) {
    v = substr($0, i + length(k)); sub(/[,}].*/, "", v); gsub(/"/, "", v); print v }' "$1"; }
op() { awk -v o="\"op\": \"$2\"" 'index($0, o) && (i = index($0, "\"error\": ")) {
    v = substr($0, i + 9); sub(/[,}].*/, "", v); print v }' "$1"; }
small() { # every argument a finite number <= 1e-10
    for v in "$@"; do
        echo "$v" | grep -Eq '^[0-9.eE+-]+$' && awk -v v="$v" 'BEGIN { exit !(v <= 1e-10) }' || return 1
    done
}
verdict() { # condition result (0: holds), label, details
    if [ "$1" -eq 0 ]; then echo "ok: $2: $3"; else echo "FAIL: $2: $3"; fails=$((fails + 1)); fi
}
# (set -e: every condition below is tested inside an if)
case_counts="1 2 3"
[ -n "$CANOPY_TEST_QUICK" ] && case_counts="1 3"

# A zero row/column: a failed factorization (the KSP says DIVERGED_PC_FAILED on every rank, never
# an abort), then the whole matrix and a shifted one solved. Stored zeros keep the pattern (the
# analysis judges the pattern, the numeric factorization the values: FACTOR_NUMERIC_ZEROPIVOT, and
# PETSc refactorizes the same pattern next time); no entries at all is a structurally singular
# pattern (FACTOR_STRUCT_ZEROPIVOT: the next matrix brings a new pattern). MUMPS beside: PETSc
# 3.18's MUMPS interface fails the same way but cannot refactorize the same pattern after a
# failed numeric factorization (its MatSolve then stops with INFOG(1)=-3), so for stored zeros
# PETSc's own LU (one rank) shows the recovery instead.
zero_check() { # ranks, label, expected failure of the first matrix, options...
    n=$1 label=$2 want=$3
    shift 3
    cases "$n" "$tmp/zc.out" -case zero -ksp_type preonly "$@" $canopy || true
    r0=$(get "$tmp/zc.out" 0 reason) f0=$(get "$tmp/zc.out" 0 pc_failed)
    r1=$(get "$tmp/zc.out" 1 reason) r2=$(get "$tmp/zc.out" 2 reason)
    res="$(get "$tmp/zc.out" 1 residual) $(get "$tmp/zc.out" 2 residual)"
    err="$(get "$tmp/zc.out" 1 error) $(get "$tmp/zc.out" 2 error)"
    case " $* " in
    *" -pattern same "*) ref="-pc_factor_mat_solver_type mumps"; [ "$n" -eq 1 ] && ref="-pc_factor_mat_solver_type petsc" ;;
    *) ref="-pc_factor_mat_solver_type mumps" ;;
    esac
    cases "$n" "$tmp/zm.out" -case zero -ksp_type preonly "$@" $ref || true
    m0=$(get "$tmp/zm.out" 0 reason) m1=$(get "$tmp/zm.out" 1 reason)
    [ -n "$m1" ] || m1="stopped ($(grep -m 1 -o 'INFOG(1)=-*[0-9]*' "$tmp/zm.out" || echo error))"
    v=1
    # shellcheck disable=SC2086
    if [ "$r0" = DIVERGED_PC_FAILED ] && [ "$f0" = "$want" ] && [ "$r1" = CONVERGED_ITS ] && [ "$r2" = CONVERGED_ITS ] &&
        small $res $err && [ "$m0" = DIVERGED_PC_FAILED ]; then v=0; fi
    verdict $v "$label, $n ranks" "Canopy $r0 ($f0), then $r1, $r2 (residuals $res, errors $err); ${ref##* } $m0, then $m1"
    [ "$r0" = DIVERGED_PC_FAILED ] || tail -5 "$tmp/zc.out"
}
for n in $case_counts; do
    zero_check "$n" "zero row (stored zeros), LU" FACTOR_NUMERIC_ZEROPIVOT -pattern same -pc_type lu
    zero_check "$n" "zero row (no entries), LU" FACTOR_STRUCT_ZEROPIVOT -pattern new -pc_type lu
done
zero_check 2 "zero column (stored zeros), LU" FACTOR_NUMERIC_ZEROPIVOT -pattern same -line col -pc_type lu
zero_check 3 "zero row and column (no entries), LDL^T" FACTOR_STRUCT_ZEROPIVOT -pattern new -convection 0 -pc_type cholesky
zero_check 2 "zero row and column (no entries), MAT_SPD, LL^T" FACTOR_NUMERIC_ZEROPIVOT -pattern new -convection 0 -spd -pc_type cholesky
# the program asked for errors (-ksp_error_if_not_converged): an error on every rank, nobody waits
for pat in same new; do
    if cases 3 "$tmp/ze.out" -case zero -pattern $pat -ksp_type preonly -pc_type lu -ksp_error_if_not_converged $canopy; then
        verdict 1 "zero row ($pat pattern), -ksp_error_if_not_converged" "the program went on"
    else
        v=1
        grep -q "Canopy .*\(row 131 of the matrix is zero\|row 131 has no entry\)" "$tmp/ze.out" && v=0
        verdict $v "zero row ($pat pattern), -ksp_error_if_not_converged" "$(grep -m 1 -o 'Canopy .*' "$tmp/ze.out")"
    fi
done

# A rank-deficient matrix (row 131 a copy of row 130): MUMPS fails its factorization whatever the
# right-hand side; Canopy perturbs a pivot (static pivoting), which PetscInfo reports. A
# consistent right-hand side is solved, strict or not. An inconsistent one has no solution: without
# strict the answer is what the perturbed factors give (PetscInfo said so); with
# -mat_canopy_strict the solve refines, finds no solution and returns Inf (a Krylov method then
# says DIVERGED_NANORINF).
for n in $case_counts; do
    cases "$n" "$tmp/rm.out" -case rankdef -duplicate -ksp_type preonly -pc_type lu -pc_factor_mat_solver_type mumps || true
    mr=$(get "$tmp/rm.out" 0 reason)
    for rhs in consistent inconsistent; do
        for strict in off on; do
            cases "$n" "$tmp/rc.out" -case rankdef -duplicate -rhs $rhs -ksp_type preonly -pc_type lu $canopy \
                -mat_canopy_strict $strict -info :mat || true
            r=$(get "$tmp/rc.out" 0 reason) res=$(get "$tmp/rc.out" 0 residual)
            info=1 v=1
            grep -q "Canopy canopy_factorize: .*perturbed" "$tmp/rc.out" && info=0
            case $rhs,$strict in
            consistent,*) if [ $info -eq 0 ] && [ "$r" = CONVERGED_ITS ] && small "$res"; then v=0; fi ;;
            inconsistent,off) if [ $info -eq 0 ] && [ "$r" = CONVERGED_ITS ] && ! small "$res"; then v=0; fi ;;
            inconsistent,on) if [ $info -eq 0 ] && grep -q "numerically singular.*solution is set to Inf" "$tmp/rc.out" &&
                ! echo "$res" | grep -Eq '^[0-9.eE+-]+$'; then v=0; fi ;;
            esac
            verdict $v "rank-deficient, $rhs right-hand side, strict $strict, $n ranks" \
                "Canopy $r, residual $res, perturbed pivots in PetscInfo: $([ $info -eq 0 ] && echo yes || echo no); MUMPS $mr"
        done
    done
    [ "$mr" = DIVERGED_PC_FAILED ] || { echo "FAIL: MUMPS factorized the rank-deficient matrix ($mr)"; fails=$((fails + 1)); }
done
cases 2 "$tmp/rg.out" -case rankdef -duplicate -rhs inconsistent -ksp_type gmres -pc_type lu $canopy -mat_canopy_strict on || true
r=$(get "$tmp/rg.out" 0 reason) v=1
[ "$r" = DIVERGED_NANORINF ] && v=0
verdict $v "rank-deficient, inconsistent, strict on, GMRES, 2 ranks" "$r"
# Neumann boundaries (A ones = 0): MUMPS and PETSc's LU find no zero pivot and answer an
# inconsistent right-hand side without a word; with strict, Canopy says it has no solution
cases 2 "$tmp/rn.out" -case rankdef -rhs inconsistent -ksp_type preonly -pc_type lu -pc_factor_mat_solver_type mumps || true
cases 2 "$tmp/rc.out" -case rankdef -rhs inconsistent -ksp_type preonly -pc_type lu $canopy -mat_canopy_strict on -info :mat || true
v=1
grep -q "numerically singular.*solution is set to Inf" "$tmp/rc.out" && v=0
verdict $v "Neumann matrix, inconsistent, strict on, 2 ranks" \
    "Canopy residual $(get "$tmp/rc.out" 0 residual); MUMPS $(get "$tmp/rn.out" 0 reason), residual $(get "$tmp/rn.out" 0 residual)"

# Transposed solves: KSPSolveTranspose (MatSolveTranspose), MatSolveTransposeAdd, MatSolveAdd and
# MatMatSolveTranspose on the factor, against the exact solution; CGNE (the preconditioner applied
# transposed) converging in one iteration as with MUMPS
trans_check() { # ranks, label, options...
    n=$1 label=$2
    shift 2
    cases "$n" "$tmp/tc.out" -case trans -ksp_type preonly "$@" $canopy || true
    cases "$n" "$tmp/tm.out" -case trans -ksp_type preonly "$@" -pc_factor_mat_solver_type mumps || true
    got="$(get "$tmp/tc.out" 0 residual) $(get "$tmp/tc.out" 0 error) $(op "$tmp/tc.out" MatSolveTransposeAdd) $(op "$tmp/tc.out" MatSolveAdd) $(op "$tmp/tc.out" MatMatSolveTranspose)"
    ref="$(get "$tmp/tm.out" 0 residual) $(get "$tmp/tm.out" 0 error) $(op "$tmp/tm.out" MatSolveTransposeAdd) $(op "$tmp/tm.out" MatSolveAdd) $(op "$tmp/tm.out" MatMatSolveTranspose)"
    v=1
    # shellcheck disable=SC2086
    if small $got && [ "$(echo $got | wc -w)" -eq 5 ] && small $ref; then v=0; fi
    verdict $v "$label, $n ranks" "A^T residual, error, SolveTransposeAdd, SolveAdd, MatMatSolveTranspose: Canopy $got; MUMPS $ref"
}
for n in $counts; do
    trans_check "$n" "transposed solves, LU" -pc_type lu
done
trans_check 2 "transposed solves, LDL^T" -convection 0 -pc_type cholesky
for n in 1 3; do
    cases "$n" "$tmp/nc.out" -case normal -ksp_type cgne -pc_type lu $canopy || true
    cases "$n" "$tmp/nm.out" -case normal -ksp_type cgne -pc_type lu -pc_factor_mat_solver_type mumps || true
    r=$(get "$tmp/nc.out" 0 reason) its=$(get "$tmp/nc.out" 0 its) res=$(get "$tmp/nc.out" 0 residual) v=1
    if [ "$r" = CONVERGED_RTOL ] && [ "$its" = "$(get "$tmp/nm.out" 0 its)" ] && small "$res"; then v=0; fi
    verdict $v "CGNE with LU, $n ranks" "Canopy $r in $its iterations, residual $res; MUMPS $(get "$tmp/nm.out" 0 reason) in $(get "$tmp/nm.out" 0 its)"
done
# loading the package leaves PETSc's own packages in place
if $tmo $MPIEXEC -n 1 "$tmp/ex_ksp" -n 10 -ksp_type preonly -pc_type lu -pc_factor_mat_solver_type petsc -dll_append "$lib" \
    >"$tmp/own.out" 2>&1; then
    echo "ok: with -dll_append, PETSc's own LU is still there"
else
    echo "FAIL: with -dll_append, PETSc's own LU is gone"; tail -3 "$tmp/own.out"; fails=$((fails + 1))
fi

# -ksp_view names the BLAS and its DGEMM rate; with OpenBLAS's SSE kernels forced on a CPU with
# AVX2 or AVX-512 (OPENBLAS_CORETYPE=Prescott) the line carries the warning and its fix (judged by
# the kernels' instruction set: nothing timed decides it; cost-cache=fixed times nothing)
if $tmo $MPIEXEC -n 1 "$tmp/ex_ksp" -n 10 -ksp_type preonly -pc_type lu -pc_factor_mat_solver_type canopy -dll_append "$lib" \
    -mat_canopy_cost_cache fixed -ksp_view >"$tmp/blas.out" 2>&1 && grep -q "^ *BLAS .*GFlop/s on one core" "$tmp/blas.out"; then
    echo "ok: -ksp_view names the BLAS: $(grep -m 1 -o 'BLAS [^:]*' "$tmp/blas.out")"
else
    echo "FAIL: no BLAS line in -ksp_view"; tail -12 "$tmp/blas.out"; fails=$((fails + 1))
fi
if grep -q "OpenBLAS" "$tmp/blas.out" && grep -Eq '^flags.* (avx2|avx512f)( |$)' /proc/cpuinfo 2>/dev/null; then
    if OPENBLAS_CORETYPE=Prescott $tmo $MPIEXEC -n 1 "$tmp/ex_ksp" -n 10 -ksp_type preonly -pc_type lu \
        -pc_factor_mat_solver_type canopy -dll_append "$lib" -mat_canopy_cost_cache fixed -ksp_view >"$tmp/blas.out" 2>&1 &&
        grep -q "BLAS OpenBLAS .*Prescott.*WARNING: .*OPENBLAS_CORETYPE=" "$tmp/blas.out"; then
        echo "ok: -ksp_view warns of OpenBLAS's Prescott kernels on this CPU"
    else
        echo "FAIL: no warning in -ksp_view for OpenBLAS's Prescott kernels"; tail -12 "$tmp/blas.out"; fails=$((fails + 1))
    fi
fi

# a bad option: the package's error, not a crash
if $tmo $MPIEXEC -n 2 "$tmp/ex_ksp" -n 10 -ksp_type preonly -pc_type lu -pc_factor_mat_solver_type canopy -dll_append "$lib" \
    -mat_canopy_threads many >"$tmp/bad.out" 2>&1; then
    echo "FAIL: -mat_canopy_threads many was accepted"; fails=$((fails + 1))
elif grep -q "mat_canopy_threads" "$tmp/bad.out"; then
    echo "ok: a bad -mat_canopy_ option is refused with its name"
else
    echo "FAIL: no message for a bad option"; tail -5 "$tmp/bad.out"; fails=$((fails + 1))
fi
# -help: every option its own line of help and its value now (default, environment, command line),
# an enumerated one its values
if CANOPY_TREE=flat $tmo $MPIEXEC -n 1 "$tmp/ex_ksp" -n 10 -ksp_type preonly -pc_type lu -pc_factor_mat_solver_type canopy \
    -dll_append "$lib" -mat_canopy_threads 1 -help >"$tmp/help.out" 2>&1 &&
    grep -q -- '-mat_canopy_threads <now 1 : formerly 0>: worker threads per rank' "$tmp/help.out" &&
    grep -q -- '-mat_canopy_tree <now flat : formerly flat>: .*; one of: flat, binary, shifted' "$tmp/help.out" &&
    grep -q -- '-mat_canopy_scheduler <now dynamic : formerly dynamic>: .*; one of: static, dynamic' "$tmp/help.out" &&
    grep -q -- '-mat_canopy_pivot_threshold <now 1.49012e-08 : formerly 1.49012e-08>: static pivoting' "$tmp/help.out" &&
    grep -q -- '-mat_canopy_strict <now off : formerly off>: .*; one of: on, off' "$tmp/help.out" &&
    grep -q -- '-mat_canopy_mapping <now auto : formerly auto>: .*; one of: auto, flops, memory' "$tmp/help.out" &&
    grep -q -- '-mat_canopy_update_buffer <now auto : formerly auto>: several ranks: a worker' "$tmp/help.out" &&
    [ "$(grep -c -- '^ *-mat_canopy_[a-z0-9_]* <now ' "$tmp/help.out")" -eq 31 ] &&
    [ "$(grep -- '^ *-mat_canopy_' "$tmp/help.out" | sed 's/.*>: //' | sort -u | wc -l)" -eq 31 ]; then
    echo "ok: -help describes each of the 31 -mat_canopy_ options with its value"
else
    echo "FAIL: -help does not describe the -mat_canopy_ options"; grep -- '-mat_canopy_' "$tmp/help.out" | head -30
    fails=$((fails + 1))
fi
# without -dll_append, the package is unknown to PETSc: what an unmodified program sees
if $tmo $MPIEXEC -n 1 "$tmp/ex_ksp" -n 10 -ksp_type preonly -pc_type lu -pc_factor_mat_solver_type canopy >"$tmp/none.out" 2>&1; then
    echo "FAIL: the package was found without -dll_append"; fails=$((fails + 1))
else
    echo "ok: without -dll_append PETSc does not know the package"
fi
[ "$fails" -eq 0 ]
