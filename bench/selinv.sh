#!/bin/sh
# selinv.sh: the selected inversion's diagonal (canopy-solve --selinv diag) against the
# factorization it comes from, on 1 and 2 threads, and against MUMPS's ICNTL(30) diagonal
# (mumps_driver --inverse-diag); a Markdown table on stdout:
#   bench/selinv.sh [--repeat R] [--threads 1,2] [--ranks 2,4] [--no-mumps] [MATRIX | laplacian:NXxNYxNZ ...]
#   bench/selinv.sh --volume [--volume-ranks 2,3,4] [--simulate-ranks 16,64,256] [MATRIX ...]
# Default: the Laplacians 50^3 and 60^3 and ../shared/matrices/G3_circuit.mtx.gz.
set -e
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=$root/_build
[ -f "$build/Makefile" ] || build=$root   # an in-tree build
case " $* " in *" --no-mumps "*) ;; *) make -s -C "$here" CANOPY_BUILD="$build" mumps_driver ;; esac
exec python3 "$here/selinv.py" "$@"
