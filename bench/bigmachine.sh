#!/usr/bin/env bash
# bigmachine.sh: the runs a lent many-core machine is for, in one script with a time budget, each
# result a JSON line as soon as it is known (so a run cut short still says what it measured):
#   [BIG_TRANSPORT=cma] [BIG_TRANSPORTS="none cma" [BIG_RANKS="8 16"] [BIG_COMM="1 0"]]
#   [BIG_SKIP="mumps g3 sweep simulate"] \
#       bench/bigmachine.sh OUTDIR [BUDGET_SECONDS] [MATRIXDIR]
# Expects Canopy's programs on PATH (../shared/bigmachine: source the bundle's setup.sh first) and
# bench/mumps_driver, bench/dgemm_peak beside them or in /opt/cb/bench. Writes into OUTDIR:
#   machine.txt   the CPU, the OpenBLAS core it picked (OPENBLAS_CORETYPE set where it fell back to
#                 its generic kernels), one core's DGEMM rate
#   runs.jsonl    canopy-solve --json lines with "label" (problem/layout/fan-in cuts) added:
#                 the 3D Laplacian 80^3 on 1 x 16, 2 x 8, 4 x 4, 8 x 2, 16 x 1 (fanin-cuts off and on
#                 alternating), G3_circuit when MATRIXDIR has it, MUMPS on 16 ranks beside
#   simulate.jsonl  canopy-simulate --json for the same layouts, calibrated on that machine
#   cost-model.txt  the cost model calibrated there (canopy-simulate --cost-cache FILE elsewhere)
#   sweep.txt     every matrix of MATRIXDIR on 2 x 8 --distributed and 4 x 4 --comm-threads 2
#                 (status, backward error), until the budget is spent
# bench/README.md, "On 16 cores", gives what it printed.
set -u
OUT=${1:?usage: bigmachine.sh OUTDIR [BUDGET_SECONDS] [MATRIXDIR]}
BUDGET=${2:-450}
MATS=${3:-}
mkdir -p "$OUT"
T0=$(date +%s)
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export XDG_CACHE_HOME=$OUT/cache
# BIG_TRANSPORT=cma: Open MPI's receivers copy large messages themselves (the bundle's setup.sh
# turns the single-copy mechanism off; bench/README "On 16 cores" measured cma 2.5x faster for
# the dense grid); recorded in machine.txt
[ -n "${BIG_TRANSPORT:-}" ] && export OMPI_MCA_btl_vader_single_copy_mechanism=$BIG_TRANSPORT
NC=${BIG_CORES:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)}   # BIG_CORES: pretend (a dry run on a small machine)
bench=$(dirname "$(command -v mumps_driver 2>/dev/null || echo /opt/cb/bench/x)")
[ -x "$bench/mumps_driver" ] || bench=$(cd "$(dirname "$0")" && pwd)
MPIRUN="mpirun --bind-to none --oversubscribe"

{
    echo "date: $(date -u)"; echo "nproc: $NC"
    echo "vader single copy: ${OMPI_MCA_btl_vader_single_copy_mechanism:-default}"
    lscpu | grep -E 'Model name|^CPU\(s\)|Thread|Socket|NUMA node|L3|Flags' | cut -c1-400
    free -g | head -2
    core=$(OPENBLAS_VERBOSE=2 "$bench/dgemm_peak" 200 1 2>&1 | sed -n 's/^Core: //p' | head -1)
    echo "OpenBLAS core (auto): $core"
    if [ "$core" = Prescott ] || [ -z "$core" ]; then
        if grep -q avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=SkylakeX; else export OPENBLAS_CORETYPE=Haswell; fi
        echo "OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE set for every run"
    fi
    echo "one core's DGEMM: $("$bench/dgemm_peak" 2000 3 2>&1 | tail -1)"
} > "$OUT/machine.txt" 2>&1
export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-}
[ -n "$OPENBLAS_CORETYPE" ] || unset OPENBLAS_CORETYPE

# one canopy-solve run: LABEL RANKS THREADS CUTS ARGS...
solve() {
    local label=$1 np=$2 nt=$3 cuts=$4; shift 4
    [ "$(left)" -gt 20 ] || return 1
    local dist=; [ "$np" -gt 1 ] && dist=--distributed
    local tr=${TR:-${OMPI_MCA_btl_vader_single_copy_mechanism:-default}}
    env ${TR:+OMPI_MCA_btl_vader_single_copy_mechanism=$TR} timeout 120 $MPIRUN -np "$np" canopy-solve --threads "$nt" --fanin-cuts "$cuts" $dist --json "$@" \
        2> "$OUT/last.err" | head -1 |
        sed "s/^{/{\"label\": \"$label\", \"cuts\": \"$cuts\", \"transport\": \"$tr\", /" >> "$OUT/runs.jsonl"
    [ "${PIPESTATUS[0]}" = 0 ] || { echo "FAILED $label: $(head -3 "$OUT/last.err")" >> "$OUT/runs.err"; }
}

canopy-simulate --laplacian 10x10x10 --ranks 1 --threads 1 > /dev/null 2>&1   # calibrates the cost model
lap=${BIG_LAPLACIAN:-80x80x80}
skip() { case " ${BIG_SKIP:-} " in *" $1 "*) return 0 ;; esac; return 1; }
# BIG_TRANSPORTS="none cma": the 80^3 layouts of several ranks (BIG_RANKS, default "2 4 8 16") under
# each of Open MPI's single-copy settings in turn and each communication-thread count of BIG_COMM
# (default "1"; e.g. "1 0"), fan-in cuts off, two rounds alternated, instead of the cuts rounds below
if [ -n "${BIG_TRANSPORTS:-}" ]; then
    solve "lap${lap%%x*}-1x$NC" 1 "$NC" off --laplacian $lap --repeat 2
    for round in 1 2; do
        for np in ${BIG_RANKS:-2 4 8 16}; do
            for TR in $BIG_TRANSPORTS; do
                for ct in ${BIG_COMM:-1}; do
                    solve "lap${lap%%x*}-${np}x$((NC/np))-ct$ct" $np $((NC/np)) off --laplacian $lap --repeat 2 --comm-threads $ct
                done
            done
        done
    done
    TR=
fi
for round in 1 2; do
    [ -z "${BIG_TRANSPORTS:-}" ] || break
    solve "lap${lap%%x*}-1x$NC" 1 "$NC" off --laplacian $lap --repeat 2
    for cuts in off on; do
        solve "lap${lap%%x*}-2x$((NC/2))" 2 $((NC/2)) $cuts --laplacian $lap --repeat 2
        solve "lap${lap%%x*}-4x$((NC/4))" 4 $((NC/4)) $cuts --laplacian $lap --repeat 2
    done
done
if [ -z "${BIG_TRANSPORTS:-}" ]; then
    solve "lap${lap%%x*}-8x$((NC/8))" 8 $((NC/8)) off --laplacian $lap --repeat 2
    solve "lap${lap%%x*}-16x$((NC/16))" 16 $((NC/16)) off --laplacian $lap --repeat 2
fi
for l in "1 $NC" "2 $((NC/2))" "4 $((NC/4))" "8 $((NC/8))" "16 $((NC/16))"; do
    set -- $l
    [ "$(left)" -gt 20 ] && ! skip simulate || break
    # the solver's own calibrated model, read as it is; the ranks share this node
    cm=$(ls "$OUT"/cache/canopy/cost-model-*.txt 2>/dev/null | head -1)
    timeout 60 canopy-simulate --laplacian $lap --ranks "$1" --threads "$2" --ranks-per-node "$1" ${cm:+--cost-cache "$cm"} \
        --json 2>/dev/null | head -1 |
        sed "s/^{/{\"label\": \"lap${lap%%x*}-$1x$2\", /" >> "$OUT/simulate.jsonl"
done
if [ "$(left)" -gt 60 ] && ! skip mumps; then
    timeout 100 $MPIRUN -np "$NC" "$bench/mumps_driver" --spd --label lap${lap%%x*}-mumps-$NC --laplacian $lap \
        >> "$OUT/mumps.txt" 2>&1
fi
G3=${MATS:+$MATS/G3_circuit.mtx.gz}
if [ -n "$G3" ] && [ -f "$G3" ] && ! skip g3; then
    solve "g3-1x$NC" 1 "$NC" off --kind spd "$G3" --repeat 2
    for cuts in off on; do
        solve "g3-2x$((NC/2))" 2 $((NC/2)) $cuts --kind spd "$G3" --repeat 2
        solve "g3-4x$((NC/4))" 4 $((NC/4)) $cuts --kind spd "$G3" --repeat 2
    done
fi
if [ -n "$MATS" ] && ! skip sweep; then
    for f in $(ls -Sr "$MATS"); do
        case $f in G3_circuit*) continue ;; *.mtx|*.mtx.gz|*.rb|*.rsa|*.rua|*.cua|*.cua.gz|*.rsa.gz|*.rua.gz) ;; *) continue ;; esac
        for l in "2 $((NC/2)) --distributed" "4 $((NC/4)) --comm-threads 2"; do
            [ "$(left)" -gt 15 ] || break 2
            set -- $l
            np=$1 nt=$2; shift 2
            r=$(timeout 60 $MPIRUN -np "$np" canopy-solve --threads "$nt" "$@" --json "$MATS/$f" 2>"$OUT/last.err" | head -1)
            rc=${PIPESTATUS[0]}
            be=$(printf '%s' "$r" | sed -n 's/.*"backward_error": \([^,]*\),.*/\1/p')
            echo "rc=$rc be=${be:--} | $f np=$np --threads $nt $* | $(head -c 160 "$OUT/last.err" | tr '\n' ' ')" >> "$OUT/sweep.txt"
        done
    done
fi
cp "$OUT"/cache/canopy/cost-model-*.txt "$OUT/cost-model.txt" 2>/dev/null
rm -f "$OUT/last.err"; rm -rf "$OUT/cache"
echo "done in $(( $(date +%s) - T0 )) s" >> "$OUT/machine.txt"
