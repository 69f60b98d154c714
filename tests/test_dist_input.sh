#!/bin/sh
# Distributed matrix input and distributed right-hand sides (src/api_dist.c) on 1 to 4 ranks,
# against the centralized path; bad input on one rank must give every rank the same error, never
# a hang (hence the timeout).
bin="${top_builddir:-.}/tests/test_dist_input"
[ -n "$MPIEXEC" ] || { echo "MPIEXEC not set: skipped"; exit 77; }
# Open MPI: allow running as root and more ranks than cores (MPICH ignores these)
OMPI_ALLOW_RUN_AS_ROOT=1; OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM OMPI_MCA_rmaps_base_oversubscribe
tmo=""
# 600 s: MPICH polls while it waits, and on 2 oversubscribed cores 4 ranks take about 3 minutes
command -v timeout >/dev/null 2>&1 && tmo="timeout ${CANOPY_TEST_TIMEOUT:-600}"
for n in 1 2 3 4; do
    $tmo $MPIEXEC -n $n "$bin"
    rc=$?
    [ $rc -eq 124 ] && { echo "timed out (hang?) on $n ranks"; exit 1; }
    [ $rc -eq 0 ] || { echo "failed on $n ranks"; exit 1; }
done
