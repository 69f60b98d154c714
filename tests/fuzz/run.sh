#!/bin/sh
# Run each libFuzzer target of the matrix readers for FUZZ_SECONDS (default 15) from its seed
# corpus: usage run.sh CORPUS_DIR TARGET...  ("make fuzz-run" calls it).
#
# Target fuzz_X starts from CORPUS_DIR/mm (X = mm, mm_gz) or CORPUS_DIR/hb (X = hb, hb_gz), the
# compressed ones also from CORPUS_DIR/gz (raw gzip files), with the format's tokens from
# CORPUS_DIR/../mm.dict or hb.dict. New inputs go to a scratch directory, never into the
# committed corpus. A crash, a sanitizer report, a leak, a timeout (10 s) or an allocation beyond
# 512 MiB fails the run; the input is kept in tests/fuzz/artifacts/ (of the build directory),
# shown as text, and the command that replays it is printed.
set -u
corpus=$1
shift
seconds=${FUZZ_SECONDS:-15}
artifacts=tests/fuzz/artifacts
mkdir -p "$artifacts"
# the targets rewrite their input file for every run: memory-backed /dev/shm when there is one
[ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ] && TMPDIR=/dev/shm && export TMPDIR
work=$(mktemp -d "${TMPDIR:-/tmp}/canopy-fuzz-run.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT INT TERM
status=0
for target in "$@"; do
    name=$(basename "$target")
    case $name in
        fuzz_mm) seeds="$corpus/mm" dict=mm ;;
        fuzz_mm_gz) seeds="$corpus/mm $corpus/gz" dict=mm ;;
        fuzz_hb) seeds="$corpus/hb" dict=hb ;;
        fuzz_hb_gz) seeds="$corpus/hb $corpus/gz" dict=hb ;;
        *) echo "run.sh: unknown target $name" >&2; exit 2 ;;
    esac
    rm -f "$artifacts/$name-"*
    mkdir -p "$work/$name"
    start=$(date +%s)
    # shellcheck disable=SC2086
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
        "$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=512 -max_len=4096 \
        -dict="$corpus/../$dict.dict" -print_final_stats=1 -artifact_prefix="$artifacts/$name-" "$work/$name" $seeds >"$work/$name.log" 2>&1
    rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$name.log")
    echo "$name: ${runs:-?} inputs in $(($(date +%s) - start)) s, exit status $rc"
    if [ "$rc" -ne 0 ]; then
        status=1
        tail -60 "$work/$name.log"
        for a in "$artifacts/$name-"*; do
            [ -f "$a" ] || continue
            echo "--- input $a ($(wc -c <"$a") bytes); replay: $target $a"
            od -c "$a" | head -20
        done
    fi
done
exit $status
