#!/bin/sh
# Layout sweep (tests/test_mpi --sweep): the shared matrices solved on 2x4, 2x8, 3x3, 4x4 and
# 8x2 ranks x threads, far more threads than the machine has cores (oversubscribed), three
# layouts per shape crossing scheduler, comm-threads, centralized/distributed input and tree
# shape; backward error <= 1e-12 recomputed independently, the solutions of every shape equal to
# the 1 x 1 reference to rounding, and so the diagonal of A^-1 (canopy_selinv) of every matrix up
# to 20,000 unknowns whose factorization perturbed no pivot (first layout of each shape); a
# structurally singular matrix refused alike everywhere; the same with the root separator on a
# 2D grid of ranks (root-grid=on) on 3 x 3 and 4 x 4, and fan-in buffers cut (fanin-cuts=on; 4 x 4 also
# under scheduler=static) on
# 8 x 2; update products in row chunks (update-buffer=64) on 3 x 3 and, static, 2 x 4; the shared
# top's column blocks cyclic over their ranks with updates where their target lives (top2d=flat) on
# 2x1, 3x1, 4x2 (with update-buffer=64), 6x1, 8x1 and 9x1.
#
# make check runs the quick list (Laplacians down to one column, SPD, indefinite KKT, unsymmetric
# with and without matching, complex symmetric, Hermitian and unsymmetric, the structurally
# singular one) and a run under CANOPY_STRESS=1; CANOPY_TEST_SWEEP=full (what
# .ci/run sets) runs every shared matrix. Every run is under `timeout`
# (CANOPY_TEST_MPI_TIMEOUT seconds, default 600): a hang fails the test instead of blocking CI.
bin="${top_builddir:-.}/tests/test_mpi"
[ -n "$MPIEXEC" ] || { echo "MPIEXEC not set: skipped"; exit 77; }
[ -x "$bin" ] || { echo "$bin is not built"; exit 1; }

full=0
[ "${CANOPY_TEST_SWEEP:-}" = full ] && full=1
limit=${CANOPY_TEST_MPI_TIMEOUT:-600}
# shellcheck source=tests/mpirun.sh
. "${top_srcdir:-.}/tests/mpirun.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/canopy-test-layouts.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

version=$($MPIEXEC --version 2>&1)
case "$version" in
    *"Open MPI"* | *OpenRTE* | *open-mpi.org*) flags="--oversubscribe --allow-run-as-root --bind-to none" ;;
    *) flags="" ;;
esac
if [ $full = 1 ]; then list=""; else list="--quick"; fi
# the shared matrices are needed beyond the quick list's Laplacian; say so when absent
matrices=${CANOPY_TEST_MATRICES:-${top_srcdir:-.}/../shared/matrices}
[ -f "$matrices/MANIFEST.md" ] || echo "note: shared matrices not found: the Laplacian only"


# shellcheck disable=SC2086
run "1 x 1 reference $list" $MPIEXEC $flags -n 1 "$bin" --sweep 1 $list --out "$tmp/sol.ref"
for shape in 2x4 2x8 3x3 4x4 8x2; do
    p=${shape%x*}
    t=${shape#*x}
    # shellcheck disable=SC2086
    run "$p ranks x $t threads $list" $MPIEXEC $flags -n "$p" "$bin" --sweep "$t" $list --out "$tmp/sol.$shape"
    run "solutions on $shape = the 1 x 1 reference" "$bin" --compare "$tmp/sol.ref" "$tmp/sol.$shape"
done
# the root separator on a 2D grid of the ranks (root-grid=on): a flat 1 x 3 grid (3 x 3) and a 2 x 2
# grid (4 ranks x 4 threads), the same solutions
for shape in 3x3 4x4; do
    p=${shape%x*}
    t=${shape#*x}
    # shellcheck disable=SC2086
    run "$p ranks x $t threads, root-grid=on $list" env CANOPY_ROOT_GRID=on $MPIEXEC $flags -n "$p" "$bin" --sweep "$t" \
        $list --out "$tmp/sol.root$shape"
    run "solutions with the root on a grid, $shape = the 1 x 1 reference" "$bin" --compare "$tmp/sol.ref" "$tmp/sol.root$shape"
done
# fan-in buffers cut into several messages where the plan leaves a gap (fanin-cuts=on), on the
# shape with the most ranks
# shellcheck disable=SC2086
run "8 ranks x 2 threads, fanin-cuts=on $list" env CANOPY_FANIN_CUTS=on $MPIEXEC $flags -n 8 "$bin" --sweep 2 \
    $list --out "$tmp/sol.cuts"
run "solutions with cut fan-in buffers = the 1 x 1 reference" "$bin" --compare "$tmp/sol.ref" "$tmp/sol.cuts"
# the same under scheduler=static (the plan's ticket order), on 4 x 4 (2D tasks on 4 threads)
# shellcheck disable=SC2086
run "4 ranks x 4 threads, fanin-cuts=on, scheduler=static $list" env CANOPY_FANIN_CUTS=on CANOPY_SCHEDULER=static \
    $MPIEXEC $flags -n 4 "$bin" --sweep 4 $list --out "$tmp/sol.cuts_static"
run "solutions with cut fan-in buffers, static = the 1 x 1 reference" "$bin" --compare "$tmp/sol.ref" "$tmp/sol.cuts_static"
# update products larger than a worker's buffer (update-buffer=64 entries: most products) computed
# in row chunks in their turn on the target, under both schedulers
# shellcheck disable=SC2086
run "3 ranks x 3 threads, update-buffer=64 $list" env CANOPY_UPDATE_BUFFER=64 $MPIEXEC $flags -n 3 "$bin" --sweep 3 \
    $list --out "$tmp/sol.chunks"
run "solutions with chunked updates = the 1 x 1 reference" "$bin" --compare "$tmp/sol.ref" "$tmp/sol.chunks"
# shellcheck disable=SC2086
run "2 ranks x 4 threads, update-buffer=64, scheduler=static $list" env CANOPY_UPDATE_BUFFER=64 CANOPY_SCHEDULER=static \
    $MPIEXEC $flags -n 2 "$bin" --sweep 4 $list --out "$tmp/sol.chunks_static"
run "solutions with chunked updates, static = the 1 x 1 reference" "$bin" --compare "$tmp/sol.ref" "$tmp/sol.chunks_static"
# the shared top's 2D column blocks cyclic over their ranks, updates run where their target lives
# from facing groups sent after each TRSM (top2d=flat; test_mpi's sweep_top2d layouts, 2D tasks in
# the top 3 levels): flat grids of 2 to 9 ranks, one thread per rank, and 4 x 2 with its update
# chunks' products also cut in row chunks (update-buffer=64)
for shape in 2x1 3x1 4x2 6x1 8x1 9x1; do
    p=${shape%x*}
    t=${shape#*x}
    buf=
    [ "$shape" = 4x2 ] && buf=64
    # shellcheck disable=SC2086
    run "$p ranks x $t threads, top2d=flat${buf:+, update-buffer=$buf} $list" env CANOPY_TOP2D=flat \
        ${buf:+CANOPY_UPDATE_BUFFER=$buf} $MPIEXEC $flags -n "$p" "$bin" --sweep "$t" $list --out "$tmp/sol.top2d$shape"
    run "solutions with top2d=flat, $shape = the 1 x 1 reference" "$bin" --compare "$tmp/sol.ref" "$tmp/sol.top2d$shape"
done
# random delays in the communication threads and the workers, on the shape with the most threads
# and two communication threads
# shellcheck disable=SC2086
run "2 ranks x 8 threads, CANOPY_STRESS=1 $list" env CANOPY_STRESS=1 $MPIEXEC $flags -n 2 "$bin" --sweep 8 $list \
    --out "$tmp/sol.stress"
run "solutions under stress = the 1 x 1 reference" "$bin" --compare "$tmp/sol.ref" "$tmp/sol.stress"
echo "test_layouts.sh: passed"
