#!/bin/sh
# petsc.sh: Canopy against MUMPS through PETSc, in the same plain PETSc program (petsc/ex_ksp.c,
# -ksp_type preonly -pc_type lu|cholesky), Canopy loaded with -dll_append; a Markdown table:
#   bench/petsc.sh [--repeat R] [--ranks 1,2] [--grid 300,500] [--threads T]
#   bench/petsc.sh --percall 200 --grid 14 [--baseline OLD/.libs] [--repeat R] [--ranks 1,2]
# (per-call cost of a refactorization and its solve, wall and CPU; --baseline: another build's
# libcanopy.so, and its libcanopy_petsc.so when the folder has one, alternated with this one.
# OPENBLAS_CORETYPE, when set, applies to both solvers.)
# Needs PETSc (libpetsc-real-dev) and a build of Canopy with the PETSc package (configure found it).
set -e
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=$root/_build
[ -f "$build/Makefile" ] || build=$root   # an in-tree build
lib=$build/.libs/libcanopy_petsc.so
[ -f "$lib" ] || { echo "no $lib: configure Canopy with PETSc (libpetsc-real-dev) and build it" >&2; exit 1; }
out=$build/bench/ex_ksp
mkdir -p "$(dirname "$out")"
# shellcheck disable=SC2046
${MPICC:-mpicc} -std=c11 -O2 -o "$out" "$root/petsc/ex_ksp.c" $(pkg-config --cflags --libs PETSc)
exec python3 "$here/petsc.py" --program "$out" --library "$lib" "$@"
