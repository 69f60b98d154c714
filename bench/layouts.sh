#!/bin/sh
# Hybrid layouts on every shared matrix (issue 9's table): canopy-solve under each layout below,
# every shared matrix but G3_circuit (size), Andrews (singular) and mbeacxc (structurally
# singular), REPEAT times each, every run under `timeout`. A run fails when it exits non-zero,
# dies of a signal, hangs past the timeout, or reports a backward error above 1e-12. Prints a
# Markdown table (runs, failures by kind) and the first failures; the raw lines go to
# results/layouts-<date>.txt. Layouts beyond the machine's cores are oversubscribed: this checks
# correctness, not speed.
#
#   bench/layouts.sh [--repeat R] [--timeout S] [--layouts "NAME ..."] [--ab OLD_CANOPY_SOLVE]
#
# --ab OLD: also time the one-rank factorization (1 x 2 threads, 3D Laplacian 50^3 and
# G3_circuit) of OLD against this build's canopy-solve, alternating, 5 runs each, medians.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
bin=$top/canopy-solve
dir=${CANOPY_TEST_MATRICES:-$top/../shared/matrices}
repeat=2
limit=300
layouts="1x16-dynamic 1x16-static 2x8-distributed 4x4-comm2 3x3 8x2"
ab=""
while [ $# -gt 0 ]; do
    case $1 in
        --repeat) repeat=$2; shift 2 ;;
        --timeout) limit=$2; shift 2 ;;
        --layouts) layouts=$2; shift 2 ;;
        --ab) ab=$2; shift 2 ;;
        *) echo "usage: $0 [--repeat R] [--timeout S] [--layouts \"NAME ...\"] [--ab OLD_CANOPY_SOLVE]" >&2; exit 2 ;;
    esac
done
[ -x "$bin" ] || { echo "build canopy-solve first (make)" >&2; exit 1; }
[ -f "$dir/MANIFEST.md" ] || { echo "shared matrices not found in $dir" >&2; exit 1; }
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpiexec=${MPIEXEC:-mpiexec}
case $($mpiexec --version 2>&1) in
    *"Open MPI"* | *OpenRTE*) mflags="--oversubscribe --bind-to none" ;;
    *) mflags="" ;;
esac
mkdir -p "$here/results"
raw=$here/results/layouts-$(date +%Y%m%d-%H%M%S).txt
: >"$raw"

# layout NAME -> ranks, then canopy-solve flags
layout_ranks() { case $1 in 1x*) echo 1 ;; 2x*) echo 2 ;; 3x*) echo 3 ;; 4x*) echo 4 ;; 8x*) echo 8 ;; esac; }
layout_flags() {
    case $1 in
        1x16-dynamic) echo "--threads 16 --scheduler dynamic" ;;
        1x16-static) echo "--threads 16 --scheduler static" ;;
        2x8-distributed) echo "--threads 8 --distributed" ;;
        4x4-comm2) echo "--threads 4 --comm-threads 2" ;;
        3x3) echo "--threads 3 --scheduler static --comm-threads 0 --distributed --tree binary" ;;
        8x2) echo "--threads 2 --comm-threads 2 --tree flat" ;;
        *) echo "unknown layout $1" >&2; exit 2 ;;
    esac
}
# the kind each file is solved as (as tests/run_matrices.sh)
kind_flags() {
    case $1 in
        lund_a.rsa | nos5.mtx | 494_bus.mtx | g20.rua | 1138_bus.mtx | bcsstk*) echo "--kind spd" ;;
        ex14.rua.gz | cg20.cua | qc324.cua.gz | helmholtz_2D.mtx.gz) echo "--kind symmetric" ;;
        mhd1280b.cua) echo "--kind hermitian" ;;
        *) echo "" ;;
    esac
}

files=$(cd "$dir" && ls | grep -E '\.(mtx|rua|rsa|cua)(\.gz)?$' | grep -v -E '^(G3_circuit|Andrews|mbeacxc)\.')
echo "| layout | runs | failed | errors | signals | hangs | backward error > 1e-12 | seconds |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for L in $layouts; do
    np=$(layout_ranks "$L")
    flags=$(layout_flags "$L")
    runs=0 failed=0 errs=0 sigs=0 hangs=0 berrs=0
    t0=$(date +%s)
    for f in $files; do
        r=1
        while [ $r -le "$repeat" ]; do
            # shellcheck disable=SC2086
            out=$(timeout -s INT -k 20 "$limit" $mpiexec $mflags -n "$np" "$bin" --json $flags $(kind_flags "$f") "$dir/$f" 2>&1)
            rc=$?
            runs=$((runs + 1))
            be=$(printf '%s\n' "$out" | sed -n 's/.*"backward_error": \([^,]*\),.*/\1/p' | head -1)
            what=ok
            if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
                what=hang; hangs=$((hangs + 1))
            elif [ $rc -ne 0 ] && printf '%s\n' "$out" | grep -q -i -E 'signal|segmentation|core dumped|killed'; then
                what=signal; sigs=$((sigs + 1))
            elif [ $rc -ne 0 ]; then
                what=error; errs=$((errs + 1))
            elif ! awk -v b="$be" 'BEGIN { exit !(b != "" && b + 0 <= 1e-12) }'; then
                what=berr; berrs=$((berrs + 1))
            fi
            [ $what = ok ] || failed=$((failed + 1))
            msg=$(printf '%s\n' "$out" | grep -v -E '^\{|warning' | grep -i -E 'fail|error|signal' | head -1)
            echo "$L $f rep $r rc $rc $what berr ${be:-none} $msg" >>"$raw"
            r=$((r + 1))
        done
    done
    echo "| $L | $runs | $failed | $errs | $sigs | $hangs | $berrs | $(($(date +%s) - t0)) |"
done
bad=$(grep -v -E ' ok berr ' "$raw" | head -10)
[ -n "$bad" ] && { echo; echo "first failures:"; echo "$bad"; }
echo
echo "raw: $raw"

if [ -n "$ab" ]; then
    [ -x "$ab" ] || { echo "--ab: $ab is not executable" >&2; exit 1; }
    echo
    echo "| matrix (1 rank x 2 threads) | factorize, old (median of 5) | factorize, new | new/old |"
    echo "|---|---:|---:|---:|"
    for m in "--laplacian 50x50x50" "--kind spd $dir/G3_circuit.mtx.gz"; do
        o="" n=""
        for i in 1 2 3 4 5; do
            # shellcheck disable=SC2086
            o="$o $("$ab" --json --threads 2 --cost-cache fixed $m 2>/dev/null | sed -n 's/.*"time_factorize": \([^,]*\),.*/\1/p' | head -1)"
            # shellcheck disable=SC2086
            n="$n $("$bin" --json --threads 2 --cost-cache fixed $m 2>/dev/null | sed -n 's/.*"time_factorize": \([^,]*\),.*/\1/p' | head -1)"
        done
        med() { echo "$1" | tr ' ' '\n' | grep -v '^$' | sort -g | sed -n 3p; }
        mo=$(med "$o") mn=$(med "$n")
        echo "| ${m##*/} | $mo | $mn | $(awk -v a="$mn" -v b="$mo" 'BEGIN { printf "%.3f", a / b }') |"
    done
fi
