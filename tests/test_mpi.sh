#!/bin/sh
# Multi-rank integration suite (tests/test_mpi.c): every matrix of its list under a covering set
# of layouts on 1, 2, 3 and 4 ranks (1, 2, 4 with CANOPY_TEST_QUICK=1), the solutions compared
# across rank counts; then 2 ranks with the eager limit of the shared-memory transport at its
# minimum and at a very large value, a run with CANOPY_STRESS=1 (random delays in the library's
# communication and worker threads), and the error agreement runs. Every run is under `timeout`
# (CANOPY_TEST_MPI_TIMEOUT seconds, default 300): a hang fails the test instead of blocking CI.
bin="${top_builddir:-.}/tests/test_mpi"
[ -n "$MPIEXEC" ] || { echo "MPIEXEC not set: skipped"; exit 77; }
[ -x "$bin" ] || { echo "$bin is not built"; exit 1; }

quick=0
case "${CANOPY_TEST_QUICK:-0}" in "" | 0) ;; *) quick=1 ;; esac
limit=${CANOPY_TEST_MPI_TIMEOUT:-300}
# shellcheck source=tests/mpirun.sh
. "${top_srcdir:-.}/tests/mpirun.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/canopy-test-mpi.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# The MPI flavour of the launcher decides its flags and how to set the eager limit.
version=$($MPIEXEC --version 2>&1)
case "$version" in
    *"Open MPI"* | *OpenRTE* | *open-mpi.org*)
        flavour=openmpi
        flags="--oversubscribe --allow-run-as-root --bind-to none" ;;
    *HYDRA* | *MPICH* | *mpich*)
        flavour=mpich
        flags="" ;;
    *)
        flavour=unknown
        flags="" ;;
esac
echo "launcher: $MPIEXEC ($flavour)"

if [ $quick = 1 ]; then ranks="1 2 4"; else ranks="1 2 3 4"; fi
# (nproc counts the usable cores, but reads OMP_NUM_THREADS, which tests/wrapper.sh sets to 1)
cores=$( (unset OMP_NUM_THREADS OMP_THREAD_LIMIT; nproc) 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
# list N: the program's option choosing its list of matrices for a run on N ranks: the quick list
# in quick mode; with MPICH also when N ranks oversubscribe the cores (MPICH waits busily in every
# blocking call, a second or so per layout on 4 ranks over 2 cores: the whole list would take
# minutes)
list() {
    if [ $quick = 1 ] || { [ $flavour = mpich ] && [ "$1" -gt "$cores" ]; }; then
        echo "--quick"
    fi
}

# 1. the whole list on each rank count; rank 0 writes the first layout's solutions
for n in $ranks; do
    # shellcheck disable=SC2046,SC2086
    run "$n rank(s) $(list "$n")" $MPIEXEC $flags -n "$n" "$bin" $(list "$n") --out "$tmp/sol.$n"
    if [ "$n" != 1 ]; then
        run "solutions on $n ranks = solutions on 1 rank" "$bin" --compare "$tmp/sol.1" "$tmp/sol.$n"
    fi
done

# 2. the eager limit at its minimum and at a very large value (2 ranks)
eager_min=""
eager_max=""
case $flavour in
    openmpi)
        # the shared-memory BTL: "sm" from Open MPI 5, "vader" before
        info=$(dirname "$MPIEXEC")/ompi_info
        [ -x "$info" ] || info=$(command -v ompi_info)
        btl=""
        for b in sm vader; do
            if [ -n "$info" ] && "$info" --param btl $b --level 9 --parsable 2>/dev/null | grep -q "btl_${b}_eager_limit"; then
                btl=$b
                break
            fi
        done
        if [ -z "$btl" ]; then
            echo "note: no shared-memory BTL eager limit found with ompi_info: eager-limit runs skipped"
        else
            # ob1 + shared memory forced, so that the BTL's limit is the one in effect (not UCX's);
            # the smallest accepted value: the first one the probe (MPI_Init + a ring exchange) passes
            sel="--mca pml ob1 --mca btl self,$btl"
            for v in 1 16 32 48 56 64 96 128 256 512 1024; do
                # shellcheck disable=SC2086
                if $tmo $MPIEXEC $flags $sel --mca "btl_${btl}_eager_limit" $v -n 2 "$bin" --probe >/dev/null 2>&1; then
                    eager_min="$sel --mca btl_${btl}_eager_limit $v"
                    break
                fi
            done
            # the largest of 64, 16, 4 MiB accepted, with a shared segment large enough for the
            # BTL's free list of 8 eager fragments (tmpfs: only the pages used are allocated)
            for v in "67108864 1073741824" "16777216 268435456" "4194304 67108864"; do
                big="$sel --mca btl_${btl}_eager_limit ${v% *} --mca btl_${btl}_segment_size ${v#* }"
                # shellcheck disable=SC2086
                if $tmo $MPIEXEC $flags $big -n 2 "$bin" --probe >/dev/null 2>&1; then
                    eager_max=$big
                    break
                fi
            done
            [ -n "$eager_min" ] || echo "note: no small eager limit accepted by $btl"
            [ -n "$eager_max" ] || echo "note: no large eager limit accepted by $btl"
        fi ;;
    mpich)
        # every spelling at once (the ones of other devices are ignored): CH4 (OFI netmod eager size,
        # POSIX shared-memory queue cell size: larger messages are pipelined through cells), CH3
        # (nemesis shared memory, netmod eager size), and UCX's own rendezvous threshold (ch4:ucx)
        mpich_env() {
            echo "MPIR_CVAR_CH4_OFI_EAGER_MAX_MSG_SIZE=$1 MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE=$2" \
                "MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE=$1 MPIR_CVAR_NEMESIS_SHM_EAGER_MAX_SZ=$1 UCX_RNDV_THRESH=$1"
        }
        for v in 0 64 128 256 512 1024 2048 4096; do
            # shellcheck disable=SC2046,SC2086
            if env $(mpich_env $v $v) $tmo $MPIEXEC $flags -n 2 "$bin" --probe >/dev/null 2>&1; then
                eager_min=$v
                break
            fi
        done
        eager_max=67108864 ;;
    *)
        echo "note: unknown MPI flavour: eager-limit runs skipped" ;;
esac
if [ $flavour = openmpi ]; then
    # shellcheck disable=SC2046,SC2086
    [ -n "$eager_min" ] && run "2 ranks, eager limit at its minimum ($eager_min)" \
        $MPIEXEC $flags $eager_min -n 2 "$bin" $(list 2) --out "$tmp/sol.eagermin"
    # shellcheck disable=SC2046,SC2086
    [ -n "$eager_max" ] && run "2 ranks, large eager limit ($eager_max)" \
        $MPIEXEC $flags $eager_max -n 2 "$bin" $(list 2) --out "$tmp/sol.eagermax"
elif [ $flavour = mpich ]; then
    # shellcheck disable=SC2046,SC2086
    [ -n "$eager_min" ] && run "2 ranks, eager limit at its minimum ($(mpich_env $eager_min $eager_min))" \
        env $(mpich_env $eager_min $eager_min) $MPIEXEC $flags -n 2 "$bin" $(list 2) --out "$tmp/sol.eagermin"
    # the queue cells stay at 1 MiB (64 of them per rank in shared memory)
    # shellcheck disable=SC2046,SC2086
    run "2 ranks, eager limit 64 MiB ($(mpich_env $eager_max 1048576))" \
        env $(mpich_env $eager_max 1048576) $MPIEXEC $flags -n 2 "$bin" $(list 2) --out "$tmp/sol.eagermax"
fi
for f in eagermin eagermax; do
    [ -f "$tmp/sol.$f" ] && run "solutions with eager limit ${f#eager} = solutions on 1 rank" \
        "$bin" --compare "$tmp/sol.1" "$tmp/sol.$f"
done

# 3. stress: random delays in the communication thread and the workers (read by the library)
if [ $quick = 1 ]; then n=2; else n=3; fi
# shellcheck disable=SC2046,SC2086
run "$n ranks, CANOPY_STRESS=1 $(list $n)" env CANOPY_STRESS=1 $MPIEXEC $flags -n $n "$bin" $(list $n) --out "$tmp/sol.stress"
run "solutions under stress = solutions on 1 rank" "$bin" --compare "$tmp/sol.1" "$tmp/sol.stress"

# 4. error agreement: bad input on one rank, LL^T forced on an indefinite matrix
if [ $quick = 1 ]; then counts="2"; else counts="2 3"; fi
for n in $counts; do
    # shellcheck disable=SC2086
    run "$n ranks, error agreement" $MPIEXEC $flags -n "$n" "$bin" --errors
done
echo "test_mpi.sh: passed"
