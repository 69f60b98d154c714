#!/bin/sh
# The solves with a factor on 2D grids of ranks (tests/test_grid_dense_solve.c) on 1 to 9 ranks, every
# grid pr x pc of each count (oversubscribed), under a timeout: a hang fails the test.
bin="${top_builddir:-.}/tests/test_grid_dense_solve"
[ -n "$MPIEXEC" ] || { echo "MPIEXEC not set: skipped"; exit 77; }
# Open MPI: allow running as root and more ranks than cores (MPICH ignores these)
OMPI_ALLOW_RUN_AS_ROOT=1; OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM OMPI_MCA_rmaps_base_oversubscribe
tmo=""
command -v timeout >/dev/null 2>&1 && tmo="timeout ${CANOPY_TEST_TIMEOUT:-300}"
for n in 1 2 3 4 6 8 9; do
    $tmo $MPIEXEC -n $n "$bin"
    rc=$?
    [ $rc -eq 124 ] && { echo "timed out (hang?) on $n ranks"; exit 1; }
    [ $rc -eq 0 ] || { echo "failed on $n ranks"; exit 1; }
done
