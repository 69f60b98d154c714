#!/bin/sh
# Test wrapper (LOG_COMPILER): BLAS on one thread, no forking in Check (threads and MPI do not
# survive fork), the shared matrices located next to the source tree. Set CANOPY_TEST_SYNTHETIC=1
# to run under a fake 2-socket, 4-NUMA-node machine (hwloc synthetic topology).
OPENBLAS_NUM_THREADS=1; OMP_NUM_THREADS=1; CK_FORK=no
export OPENBLAS_NUM_THREADS OMP_NUM_THREADS CK_FORK
if [ -z "$CANOPY_TEST_MATRICES" ] && [ -n "$top_srcdir" ] && [ -f "$top_srcdir/../shared/matrices/MANIFEST.md" ]; then
    CANOPY_TEST_MATRICES=$(cd "$top_srcdir/../shared/matrices" && pwd); export CANOPY_TEST_MATRICES
fi
if [ -n "$CANOPY_TEST_SYNTHETIC" ]; then
    HWLOC_SYNTHETIC="pack:2 numa:2 core:4 pu:1"; export HWLOC_SYNTHETIC
fi
# Open MPI refuses to run as root without these; harmless otherwise.
OMPI_ALLOW_RUN_AS_ROOT=1; OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM OMPI_MCA_rmaps_base_oversubscribe
case "$1" in
    *.sh) exec ${SHELL:-/bin/sh} "$@" ;;
    *) exec "$@" ;;
esac
