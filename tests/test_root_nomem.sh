#!/bin/sh
# Allocation failures and a non-positive pivot inside the root's grid factorization on 3 and 4 ranks
# (tests/test_root_nomem.c): the same error on every rank, no hang (under a timeout).
bin="${top_builddir:-.}/tests/test_root_nomem"
[ -n "$MPIEXEC" ] || { echo "MPIEXEC not set: skipped"; exit 77; }
# Open MPI: allow running as root and more ranks than cores (MPICH ignores these)
OMPI_ALLOW_RUN_AS_ROOT=1; OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM OMPI_MCA_rmaps_base_oversubscribe
tmo=""
command -v timeout >/dev/null 2>&1 && tmo="timeout ${CANOPY_TEST_TIMEOUT:-300}"
for n in 3 4; do
    $tmo $MPIEXEC -n $n "$bin"
    rc=$?
    [ $rc -eq 124 ] && { echo "timed out (hang?) on $n ranks"; exit 1; }
    [ $rc -eq 0 ] || { echo "failed on $n ranks"; exit 1; }
done
