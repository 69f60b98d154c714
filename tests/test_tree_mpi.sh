#!/bin/sh
# Tree broadcasts and reductions (comm/tree.c) on 1 to 4 ranks.
bin="${top_builddir:-.}/tests/test_tree_mpi"
[ -n "$MPIEXEC" ] || { echo "MPIEXEC not set: skipped"; exit 77; }
for n in 1 2 3 4; do
    $MPIEXEC -n $n "$bin" || { echo "failed on $n ranks"; exit 1; }
done
