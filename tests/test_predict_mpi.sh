#!/bin/sh
# canopy-simulate's plan equals the real run's on 2 to 4 ranks x 2 threads (tests/test_predict_mpi.c).
bin="${top_builddir:-.}/tests/test_predict_mpi"
[ -n "$MPIEXEC" ] || { echo "MPIEXEC not set: skipped"; exit 77; }
for n in 2 3 4; do
    OPENBLAS_NUM_THREADS=1 $MPIEXEC -n $n "$bin" || { echo "failed on $n ranks"; exit 1; }
done
