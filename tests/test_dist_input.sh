#!/bin/sh
# Distributed matrix input and distributed right-hand sides (src/api/api_dist.c) on 1 to 4 ranks,
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
# LU of a symmetric matrix given in pieces: the matching permutes its rows, so the graph slices
# must add the transpose (PT-SCOTCH crashed on the one-sided graph, SCOTCH got a wrong one)
mats="${CANOPY_TEST_MATRICES:-${top_srcdir:-.}/../shared/matrices}"
if [ -f "$mats/hangGlider_2.mtx" ]; then
    for n in 2 3; do
        for o in ptscotch scotch; do
            out=$($tmo $MPIEXEC -n $n "${top_builddir:-.}/canopy-solve" "$mats/hangGlider_2.mtx" --distributed \
                --factorization lu --ordering $o --threads 1 --json 2>&1)
            # a build without PT-SCOTCH (MPICH's: Debian builds PT-SCOTCH for Open MPI) refuses it
            if [ $o = ptscotch ] && echo "$out" | grep -q "built without PT-SCOTCH"; then
                echo "skip: ordering ptscotch, $n ranks: this build has no PT-SCOTCH"; continue
            fi
            be=$(echo "$out" | sed -n 's/.*"backward_error": \([^,]*\).*/\1/p' | tail -n 1)
            awk -v b="$be" 'BEGIN { exit !(b != "" && b <= 1e-12) }' ||
                { echo "LU of a symmetric distributed matrix, $n ranks, ordering $o: $out" | tail -5; exit 1; }
            echo "ok: LU of symmetric hangGlider_2 given in pieces, $n ranks, ordering $o: backward error $be"
        done
    done
fi
