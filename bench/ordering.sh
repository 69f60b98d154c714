#!/bin/sh
# ordering.sh: PT-SCOTCH (ordering=ptscotch on 1, 2, 4 ranks) against sequential SCOTCH on rank 0:
# nnz(L), flops and ordering time; a Markdown table on stdout:
#   bench/ordering.sh [--repeat R] [--ranks 1,2,4] [MATRIX | laplacian:NXxNYxNZ ...]
# Default: the Laplacians 50^3 and 60^3 and ../shared/matrices/G3_circuit.mtx.gz.
set -e
here=$(cd "$(dirname "$0")" && pwd)
exec python3 "$here/ordering.py" "$@"
