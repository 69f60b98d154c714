#!/usr/bin/env bash
# top2d.sh: top2d=flat against off on one many-core node, measured and simulated, alternating:
#   [TOP2D_LEVELS=3] bench/top2d.sh OUTDIR [BUDGET_SECONDS] [LAPLACIAN]
# Canopy's programs on PATH (the bundle of ../shared/bigmachine). Writes OUTDIR/runs.jsonl
# (canopy-solve --json, "label" = layout/top2d) and OUTDIR/simulate.jsonl (canopy-simulate --json
# of the same layouts with the ranks on one node and the model calibrated there), and
# OUTDIR/machine.txt. The 3D Laplacian LL^T (default 80^3), --distributed, --repeat 2, single-copy
# CMA (bench/README "Second lease"), two rounds; 2D levels as TOP2D_LEVELS says (default auto: the
# simulation's choice, which may differ between off and flat). bench/README "top2d=flat".
set -u
OUT=${1:?usage: top2d.sh OUTDIR [BUDGET_SECONDS] [LAPLACIAN]}
BUDGET=${2:-400}
lap=${3:-80x80x80}
mkdir -p "$OUT"
T0=$(date +%s)
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 XDG_CACHE_HOME=$OUT/cache
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=cma
NC=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)   # nproc obeys OMP_NUM_THREADS
{ date -u; echo "nproc $NC"; lscpu | grep -E 'Model name|NUMA node\(s\)'; OPENBLAS_VERBOSE=2 canopy-solve --laplacian 8x8x8 --threads 1 2>&1 | grep -i core | head -2; } > "$OUT/machine.txt" 2>&1
canopy-simulate --laplacian 10x10x10 --ranks 1 --threads 1 > /dev/null 2>&1   # calibrates the cost model
for round in 1 2; do
    for np in 2 4 8 16; do
        for t in off flat; do
            [ "$(left)" -gt 30 ] || break 3
            timeout 150 mpirun --bind-to none --oversubscribe -np $np canopy-solve --laplacian $lap --threads $((NC / np)) \
                --distributed --repeat 2 --top2d $t --2d-levels ${TOP2D_LEVELS:-auto} --json 2> "$OUT/last.err" | head -1 |
                sed "s/^{/{\"label\": \"${np}x$((NC / np))-$t\", \"round\": $round, /" >> "$OUT/runs.jsonl"
            [ "${PIPESTATUS[0]}" = 0 ] || echo "FAILED ${np}x$((NC / np)) $t: $(head -3 "$OUT/last.err")" >> "$OUT/runs.err"
        done
    done
done
for np in 2 4 8 16; do
    for t in off flat; do
        [ "$(left)" -gt 20 ] || break 2
        canopy-simulate --laplacian $lap --kind spd --ranks $np --threads $((NC / np)) --ranks-per-node $np --top2d $t --2d-levels ${TOP2D_LEVELS:-auto} --json 2>/dev/null |
            head -1 | sed "s/^{/{\"label\": \"${np}x$((NC / np))-$t\", /" >> "$OUT/simulate.jsonl"
    done
done
echo "done in $(( $(date +%s) - T0 )) s" >> "$OUT/machine.txt"
