#!/bin/sh
# Per-peer communication statistics gathered over 1 to 4 ranks (comm/peerstats.c).
# Works with Open MPI's and MPICH's mpiexec: Open MPI needs flags to oversubscribe, to run as root
# and not to bind every rank to the same core on a small machine; MPICH (hydra) needs none of them.
bin="${top_builddir:-.}/tests/test_peerstats_mpi"
[ -n "$MPIEXEC" ] || { echo "MPIEXEC not set: skipped"; exit 77; }
[ -x "$bin" ] || { echo "$bin not built"; exit 1; }
flags=
if $MPIEXEC --version 2>&1 | grep -qi -e 'open mpi' -e 'openrte'; then
    flags="--oversubscribe --allow-run-as-root --bind-to none"
fi
# a collective left waiting by a rank that bailed out would hang: make that a failure
limit=
command -v timeout >/dev/null 2>&1 && limit="timeout 300"
for n in 1 2 3 4; do
    $limit $MPIEXEC $flags -n $n "$bin" || { echo "failed on $n ranks"; exit 1; }
done
