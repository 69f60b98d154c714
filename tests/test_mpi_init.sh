#!/bin/sh
# A plain MPI_Init program (tests/test_mpi_init.c): Canopy solves on 1 to 3 ranks with the calling
# thread driving MPI, refuses comm-threads=0 and 2 on every rank with the way out, and says once
# under verbose, on rank 0, that the calling thread drives MPI. Under a timeout: a hang fails.
bin="${top_builddir:-.}/tests/test_mpi_init"
[ -n "$MPIEXEC" ] || { echo "MPIEXEC not set: skipped"; exit 77; }
# Open MPI: allow running as root and more ranks than cores (MPICH ignores these)
OMPI_ALLOW_RUN_AS_ROOT=1; OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM OMPI_MCA_rmaps_base_oversubscribe
tmo=""
command -v timeout >/dev/null 2>&1 && tmo="timeout ${CANOPY_TEST_TIMEOUT:-300}"
err=$(mktemp)
trap 'rm -f "$err"' EXIT
for n in 1 2 3; do
    $tmo $MPIEXEC -n $n "$bin"
    rc=$?
    [ $rc -eq 124 ] && { echo "timed out (hang?) on $n ranks"; exit 1; }
    [ $rc -eq 0 ] || { echo "failed on $n ranks"; exit 1; }
done
# the root separator on a 2D grid of the ranks (root-grid=on) under the same plain MPI_Init
for n in 2 3; do
    $tmo $MPIEXEC -n $n "$bin" root
    rc=$?
    [ $rc -eq 124 ] && { echo "timed out (hang?) on $n ranks with root-grid=on"; exit 1; }
    [ $rc -eq 0 ] || { echo "failed on $n ranks with root-grid=on"; exit 1; }
done
# two solvers with verbose=1 on 2 ranks: the note once (where MPI_Init gave less than SERIALIZED)
out=$($tmo $MPIEXEC -n 2 "$bin" verbose 2>"$err")
rc=$?
echo "$out"
cat "$err"
[ $rc -eq 0 ] || { echo "failed with verbose=1 on 2 ranks (status $rc)"; exit 1; }
notes=$(grep -c "the calling thread drives MPI" "$err")
want=0
case $out in *"(below MPI_THREAD_SERIALIZED)"*) want=1 ;; esac
[ "$notes" -eq $want ] || { echo "the note that the calling thread drives MPI came $notes times, not $want"; exit 1; }
