#!/bin/sh
# The selected inversion over 1 to 4 ranks (tests/test_selinv_mpi.c), and 8 oversubscribed ranks
# in the full pass: entries against dense inverses, every tree shape, in place and separate, fault
# injection. Under a timeout: a hang fails instead of blocking CI.
bin="${top_builddir:-.}/tests/test_selinv_mpi"
[ -n "$MPIEXEC" ] || { echo "MPIEXEC not set: skipped"; exit 77; }
OMPI_ALLOW_RUN_AS_ROOT=1; OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM OMPI_MCA_rmaps_base_oversubscribe
tmo=""
command -v timeout >/dev/null 2>&1 && tmo="timeout ${CANOPY_TEST_TIMEOUT:-600}"
counts="1 2 3 4 8"
[ -n "$CANOPY_TEST_QUICK" ] && counts="1 2 3"
for n in $counts; do
    $tmo $MPIEXEC -n $n "$bin"
    rc=$?
    [ $rc -eq 124 ] && { echo "timed out (hang?) on $n ranks"; exit 1; }
    [ $rc -eq 0 ] || { echo "failed on $n ranks"; exit 1; }
done
