#!/bin/sh
# run.sh: build the peer drivers if needed, pin BLAS to one thread, and run compare.py:
#   bench/run.sh [--repeat R] [--threads T] [--ranks P] [--spd] MATRIX...
# MATRIX is a file (.mtx, .mtx.gz, .rb, .rsa, .rua, ...) or --laplacian NXxNY[xNZ]; with none,
# a default set (3D Laplacians and the SPD shared matrices). bench/compare.py --help lists all.
# Environment: CANOPY_SOLVE (path of canopy-solve), CANOPY_SOLVE_FLAGS (extra flags for it),
# BENCH_MPIRUN (launcher, default "mpirun --allow-run-as-root --oversubscribe --bind-to none"),
# BENCH_MATRIX_DIR (default ../shared/matrices from the repository root), and the bench
# Makefile's CANOPY_PREFIX / CANOPY_BUILD.
set -e
here=$(cd "$(dirname "$0")" && pwd)
make -s -C "$here" all
OPENBLAS_NUM_THREADS=1
OMP_NUM_THREADS=1
export OPENBLAS_NUM_THREADS OMP_NUM_THREADS
exec python3 "$here/compare.py" "$@"
