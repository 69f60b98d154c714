#!/bin/sh
# mpi.sh: Canopy across MPI ranks and against MUMPS and SuperLU_DIST on 2 ranks x 1 thread;
# medians of alternating runs, six Markdown tables on stdout:
#   bench/mpi.sh [--repeat R] [--quick] [--tables 1,2,...] [--spd] [MATRIX...]
# MATRIX is a file (.mtx, .mtx.gz, .rb, ...) or --laplacian NXxNY[xNZ]; with none, the default
# set (--laplacian 50x50x50, 60x60x60, ../shared/matrices/G3_circuit.mtx.gz as SPD); --quick:
# 20x20x20 and 30x30x30 only. bench/mpi.py --help lists all options; README.md, "Across ranks",
# explains the tables. Brings ../_build up to date (make) unless CANOPY_SOLVE or CANOPY_PREFIX
# is set, then builds mumps_driver and superlu_dist_driver. Every rank of every run
# has OPENBLAS_NUM_THREADS=OMP_NUM_THREADS=1. BENCH_MPIRUN overrides the launcher (default for
# Open MPI: mpiexec --allow-run-as-root --oversubscribe --bind-to none).
set -e
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
if [ -z "$CANOPY_SOLVE" ] && [ -z "$CANOPY_PREFIX" ]; then
    if [ -f "$root/_build/Makefile" ]; then
        make -s -C "$root/_build"          # canopy-solve and libcanopy up to date
    elif [ ! -x "$root/_build/canopy-solve" ] && ! command -v canopy-solve >/dev/null 2>&1; then
        echo "mpi.sh: no canopy-solve: build Canopy first (./autogen.sh && mkdir -p _build &&" \
             "cd _build && ../configure && make) or set CANOPY_SOLVE / CANOPY_PREFIX" >&2
        exit 1
    fi
fi
make -s -C "$here" mumps_driver superlu_dist_driver
exec python3 "$here/mpi.py" "$@"
