#!/bin/sh
# shellcheck disable=SC2086 # $lap, $flags, $tmo: word lists on purpose
# The shared top's 2D column blocks cyclic over their ranks with updates where their target lives
# (option top2d=flat: facing groups sent after their TRSM, sched_fanout) end to end through
# canopy-solve --json: LL^T, LDL^T and LU before refinement (--refine 0) with backward error
# <= 1e-12 on flat grids of 2 to 9 ranks, more messages than top2d=off (the groups did travel) and
# the same diagonal of A^-1, with and without shadows, lean or not (top2d-shadow); auto keeping the flat top only
# where the simulation predicts it 10% faster; complex; every comm-threads mode and both schedulers; static
# bitwise reproducible; distributed input and refactorization; an indefinite LL^T refused on every
# rank without a hang; shared matrices of three kinds. Under `timeout` (CANOPY_TEST_MPI_TIMEOUT).
bin="${top_builddir:-.}/canopy-solve" name=top2d solve_extra="--2d-levels 4"
# shellcheck source=tests/json_solve.sh
. "${top_srcdir:-.}/tests/json_solve.sh"
# check NAME: status 0 (or the perturbed-pivots warning), backward error <= 1e-12
check() {
    [ -s "$tmp/$1.json" ] || { bad "$1: no JSON"; return 1; }
    [ "$(field "$1" status)" -ge 0 ] 2>/dev/null || bad "$1: status $(field "$1" status)"
    awk -v e="$(field "$1" backward_error)" 'BEGIN { exit !(e != "" && e + 0 <= 1e-12) }' ||
        bad "$1: backward error $(field "$1" backward_error)"
}
# more_msgs A B: B sent more messages than A (top2d's groups on top of the fan-in)
more_msgs() {
    awk -v a="$(field "$1" comm_msgs)" -v b="$(field "$2" comm_msgs)" 'BEGIN { exit !(b + 0 > a + 0) }' ||
        bad "$2: $(field "$2" comm_msgs) messages, not more than $1's $(field "$1" comm_msgs): no group sent?"
}

lap="--laplacian 20x20x20 --refine 0"
echo "== flat grids (ranks x threads) x llt, ldlt, lu on $lap against top2d off"
for f in llt ldlt lu; do
    for shape in 2x1 3x1 4x2 6x1 8x1 9x1; do
        p=${shape%x*} t=${shape#*x}
        solve "off-$f-$shape" "$p" $lap --factorization $f --threads "$t" --top2d off --selinv diag \
            --selinv-out "$tmp/off-$f-$shape.mtx" && check "off-$f-$shape"
        solve "on-$f-$shape" "$p" $lap --factorization $f --threads "$t" --top2d flat --selinv diag \
            --selinv-out "$tmp/on-$f-$shape.mtx" && check "on-$f-$shape" && more_msgs "off-$f-$shape" "on-$f-$shape" &&
            same_diag "off-$f-$shape" "on-$f-$shape"
        [ "$(field "off-$f-$shape" top2d_cblks)" = 0 ] || bad "off-$f-$shape: top2d_cblks $(field "off-$f-$shape" top2d_cblks)"
        [ "$(field "on-$f-$shape" top2d_cblks)" -gt 0 ] 2>/dev/null || bad "on-$f-$shape: no top2d column block"
    done
done

echo "== top2d-shadow=off (updates into a wider grid's column blocks on their own rank): the same diagonal"
for c in "llt 8x1" "lu 9x1" "ldlt 4x2"; do
    f=${c% *} shape=${c#* } p=${shape%x*} t=${shape#*x}
    solve "noshadow-$f-$shape" "$p" $lap --factorization $f --threads "$t" --top2d flat --top2d-shadow off --selinv diag \
        --selinv-out "$tmp/noshadow-$f-$shape.mtx" && check "noshadow-$f-$shape" && same_diag "on-$f-$shape" "noshadow-$f-$shape"
    [ "$(field "noshadow-$f-$shape" comm_msgs)" != "$(field "on-$f-$shape" comm_msgs)" ] ||
        bad "$shape: as many messages with and without shadows ($(field "on-$f-$shape" comm_msgs)): no shadow here?"
done

echo "== top2d-shadow=lean (the updates reading another rank's copy run first): the same diagonal"
for c in "ldlt 8x1" "lu 4x2"; do
    f=${c% *} shape=${c#* } p=${shape%x*} t=${shape#*x}
    solve "lean-$f-$shape" "$p" $lap --factorization $f --threads "$t" --top2d flat --top2d-shadow lean --selinv diag \
        --selinv-out "$tmp/lean-$f-$shape.mtx" && check "lean-$f-$shape" && same_diag "on-$f-$shape" "lean-$f-$shape"
done

echo "== auto: the flat top only where the plan's simulation predicts it at least 10% faster"
for shape in 2x1 4x2 9x1; do
    p=${shape%x*} t=${shape#*x}
    solve "auto-$shape" "$p" $lap --factorization llt --threads "$t" --top2d auto || continue
    check "auto-$shape"
    pa=$(field "auto-$shape" time_factorize_predicted) po=$(field "off-llt-$shape" time_factorize_predicted)
    pf=$(field "on-llt-$shape" time_factorize_predicted) tc=$(field "auto-$shape" top2d_cblks)
    awk -v a="$pa" -v o="$po" -v f="$pf" -v c="$tc" 'BEGIN {
        if (c > 0) exit !(a == f && f <= 0.9 * o); else exit !(c == 0 && a == o && f > 0.9 * o) }' ||
        bad "auto on $shape: predicted $pa with $tc top2d column blocks, off $po, flat $pf"
done

echo "== every comm-threads mode, both schedulers (4 ranks x 2 threads, LU)"
for ct in 0 1 2; do
    for sc in static dynamic; do
        solve "ct$ct-$sc" 4 $lap --factorization lu --threads 2 --comm-threads $ct --scheduler $sc --top2d flat &&
            check "ct$ct-$sc"
    done
done

# complex symmetric and unsymmetric 7-point 12^3 operators with an imaginary shift (gen)
gen 0 6.5 1 "$tmp/zsym.mtx"
gen 1 6.5 1 "$tmp/zgen.mtx"
echo "== complex on 4 ranks: symmetric LDL^T and LU, unsymmetric LU"
for c in "zsym ldlt" "zsym lu" "zgen lu"; do
    m=${c% *} f=${c#* }
    solve "z-$m-$f" 4 "$tmp/$m.mtx" --refine 0 --factorization $f --threads 1 --top2d flat && check "z-$m-$f"
done

echo "== scheduler static: two runs, bitwise the same diagonal of A^-1"
for i in 1 2; do
    solve "static$i" 4 $lap --factorization ldlt --threads 2 --scheduler static --top2d flat --selinv diag \
        --selinv-out "$tmp/static$i.mtx" && check "static$i"
done
cmp -s "$tmp/static1.mtx" "$tmp/static2.mtx" || bad "scheduler static: two runs wrote different diagonals"
[ "$(field static1 backward_error)" = "$(field static2 backward_error)" ] || bad "scheduler static: different backward errors"

echo "== distributed input, refactorization"
for f in llt lu; do
    solve "dist-$f" 4 $lap --factorization $f --threads 1 --top2d flat --distributed && check "dist-$f"
    solve "repeat-$f" 4 $lap --factorization $f --threads 1 --top2d flat --repeat 2 && check "repeat-$f"
done

echo "== LL^T of an indefinite matrix: refused, no hang"
gen 0 5.7 0 "$tmp/indef.mtx"
for n in 4 6; do
    $tmo $MPIEXEC $flags -n $n "$bin" "$tmp/indef.mtx" --kind spd --factorization llt --threads 1 --2d-levels 4 \
        --top2d flat >"$tmp/indef.out" 2>&1
    rc=$?
    case $rc in
        124 | 137) bad "indefinite LL^T on $n ranks: no end (hang?)" ;;
        0) bad "indefinite LL^T on $n ranks: succeeded" ;;
        *) grep -q "not positive definite" "$tmp/indef.out" || bad "indefinite LL^T on $n ranks: $(head -3 "$tmp/indef.out")" ;;
    esac
done

mats=${CANOPY_TEST_MATRICES:-${top_srcdir:-.}/../shared/matrices}
if [ -f "$mats/MANIFEST.md" ]; then
    echo "== shared matrices on 4 and 6 ranks (SPD, symmetric indefinite, unsymmetric)"
    for c in "bcsstk13.mtx.gz spd" "ex14.rua.gz symmetric" "sherman3.mtx general"; do
        m=${c% *} k=${c#* }
        for n in 4 6; do solve "$m-$n" $n "$mats/$m" --kind "$k" --threads 1 --top2d flat && check "$m-$n"; done
    done
else
    echo "note: shared matrices not found ($mats): skipped those cases"
fi

[ $fails -eq 0 ] || { echo "test_top2d.sh: $fails failure(s)"; exit 1; }
echo "test_top2d.sh: passed"
