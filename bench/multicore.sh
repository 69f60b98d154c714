#!/bin/sh
# multicore.sh: every phase of Canopy per thread count (first factorization and refactorization,
# solve with 1 and 32 right-hand sides, static vs dynamic, predicted vs measured) next to CHOLMOD
# and MUMPS on the same BLAS threads; medians of alternating runs, Markdown tables on stdout:
# and the 1D tasks against 2D (2d-levels auto), then what the plan predicts for 16 threads:
#   bench/multicore.sh [--reps R] [--threads 1,2] [--predict 16] [--quick] [--no-peers] [MATRIX...]
# MATRIX is a file or laplacian:NXxNYxNZ. README.md, "Multicore", explains the tables.
set -e
here=$(cd "$(dirname "$0")" && pwd)
make -s -C "$here" all || echo "multicore.sh: peer drivers not built; Canopy only" >&2
exec python3 "$here/multicore.py" "$@"
