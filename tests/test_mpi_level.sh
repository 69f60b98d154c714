#!/bin/sh
# The MPI thread level needed on several ranks: refused with a clear message where too low, solves
# where enough (tests/test_mpi_level.c), for each level MPI_Init_thread can be asked for.
bin="${top_builddir:-.}/tests/test_mpi_level"
[ -n "$MPIEXEC" ] || { echo "MPIEXEC not set: skipped"; exit 77; }
OMPI_ALLOW_RUN_AS_ROOT=1; OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM OMPI_MCA_rmaps_base_oversubscribe
tmo=""
command -v timeout >/dev/null 2>&1 && tmo="timeout ${CANOPY_TEST_TIMEOUT:-120}"
for level in funneled serialized multiple; do
    for n in 1 2; do
        $tmo $MPIEXEC -n $n "$bin" $level
        rc=$?
        [ $rc -eq 124 ] && { echo "timed out (hang?) with $level on $n ranks"; exit 1; }
        [ $rc -eq 0 ] || { echo "failed with $level on $n ranks"; exit 1; }
    done
done
