#!/bin/sh
# threads.sh: Canopy with 1 and 2 worker threads (static/dynamic, NUMA local/global) vs CHOLMOD
# and MUMPS on 2 BLAS threads; medians of alternating runs, Markdown tables on stdout:
#   bench/threads.sh [--repeat R] [--threads T] [--trace] [--no-peers] [--spd] [MATRIX...]
# MATRIX is a file (.mtx, .mtx.gz, .rb, ...) or --laplacian NXxNY[xNZ]; with none, the default
# set (--laplacian 50x50x50, 60x60x60, ../shared/matrices/G3_circuit.mtx.gz as SPD).
# bench/threads.py --help lists all options; README.md, "Threads on one node", explains the tables.
# Each configuration sets its own thread variables: Canopy OPENBLAS_NUM_THREADS=1, CHOLMOD
# OPENBLAS_NUM_THREADS=T, MUMPS OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=T (mpirun -np 1 --bind-to none).
set -e
here=$(cd "$(dirname "$0")" && pwd)
make -s -C "$here" all
exec python3 "$here/threads.py" "$@"
