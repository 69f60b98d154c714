#!/bin/sh
# simulate.sh: canopy-simulate's predictions checked against measured runs on this machine, and
# what it predicts for large machines; Markdown tables on stdout:
#   bench/simulate.sh [--reps R] [--layouts 1x1,1x2,2x1,2x2] [--scale N] [--scale-layouts 16x1,64x16,...]
#                     [--core-gflops G] [--load-gemm X] [--top2d off|flat] [--fanin-cuts off|on] [MATRIX...]
# MATRIX is a file or laplacian:NXxNYxNZ. bench/README.md, "Predictions", explains the tables.
set -e
here=$(cd "$(dirname "$0")" && pwd)
exec python3 "$here/simulate.py" "$@"
