#!/bin/sh
# memory.sh: peak resident memory per rank, rank 0 against the others, Canopy (centralized and
# --distributed input) and MUMPS, under mpiexec; a Markdown table on stdout:
#   bench/memory.sh [--repeat R] [--ranks 2,4] [--no-mumps] [--no-ptscotch] [MATRIX...]
#   bench/memory.sh --together 1,8 [--laplacian 60x60x60] [--repeat R] [--no-mumps] [--fanin-cuts]   (issue 31)
# Default matrix: ../shared/matrices/G3_circuit.mtx.gz (SPD). Builds mumps_driver (see mpi.sh for
# the launcher and BENCH_MPIRUN); bench/README.md, "Memory per rank", explains the table.
set -e
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=$root/_build
[ -f "$build/Makefile" ] || build=$root   # an in-tree build
case " $* " in *" --no-mumps "*) ;; *) make -s -C "$here" CANOPY_BUILD="$build" mumps_driver ;; esac
exec python3 "$here/memory.py" "$@"
