#!/bin/sh
# shellcheck disable=SC2086 # $lap, $flags, $tmo: word lists on purpose
# The root separator on a 2D grid of ranks (option root-grid, src/numeric/factor_root.c) end to
# end through canopy-solve --json: every layout factors the root on a grid (root_grid not null)
# with backward error <= 1e-12 and the same diagonal of A^-1 as root-grid=off (so the factor that
# went back to the 1D cblks is the right one, not just refined into shape); complex LDL^T and LU
# on generated files; static scheduler bitwise reproducible; distributed input; refactorization;
# real matrices of three kinds; a failing LL^T refused on every rank without a hang; auto refusing
# a narrow root. Every mpiexec runs under `timeout` (CANOPY_TEST_MPI_TIMEOUT, default 120 s).
bin="${top_builddir:-.}/canopy-solve" name=root
# shellcheck source=tests/json_solve.sh
. "${top_srcdir:-.}/tests/json_solve.sh"
grid() { sed -n -e 's/.*"root_grid": null.*/null/p' -e 's/.*"root_grid": \[\([^]]*\)\].*/\1/p' "$tmp/$1.json"; }
# check NAME WANT: status 0, backward error <= 1e-12, root_grid null (WANT=null) or not (WANT=grid)
check() {
    [ -s "$tmp/$1.json" ] || { bad "$1: no JSON"; return 1; }
    [ "$(field "$1" status)" = 0 ] || bad "$1: status $(field "$1" status)"
    awk -v e="$(field "$1" backward_error)" 'BEGIN { exit !(e != "" && e + 0 <= 1e-12) }' ||
        bad "$1: backward error $(field "$1" backward_error)"
    g=$(grid "$1")
    if [ "$2" = null ]; then [ "$g" = null ] || bad "$1: root_grid [$g], wanted null"
    elif [ -z "$g" ] || [ "$g" = null ]; then bad "$1: no root grid"; fi
}

lap="--laplacian 16x16x16"
echo "== layouts (ranks x threads) x llt, ldlt, lu on $lap against root-grid off"
for f in llt ldlt lu; do
    solve "off-$f" 2 $lap --factorization $f --threads 1 --root-grid off --selinv diag --selinv-out "$tmp/off-$f.mtx" &&
        check "off-$f" null
    for shape in 2x1 3x1 4x2 6x1 8x1 9x1; do
        p=${shape%x*} t=${shape#*x}
        solve "on-$f-$shape" "$p" $lap --factorization $f --threads "$t" --root-grid on --selinv diag \
            --selinv-out "$tmp/on-$f-$shape.mtx" && check "on-$f-$shape" grid && same_diag "off-$f" "on-$f-$shape"
    done
done

# canopy-solve has no complex generator: complex symmetric and unsymmetric 7-point 12^3 operators
# with an imaginary shift, written here (gen, tests/json_solve.sh)
gen 0 6.5 1 "$tmp/zsym.mtx"
gen 1 6.5 1 "$tmp/zgen.mtx"
echo "== complex on 4 ranks: symmetric LDL^T and LU, unsymmetric LU"
for c in "zsym ldlt" "zsym lu" "zgen lu"; do
    m=${c% *} f=${c#* }
    solve "z-$m-$f-off" 4 "$tmp/$m.mtx" --factorization $f --threads 1 --root-grid off --selinv diag --selinv-out "$tmp/z-$m-$f-off.mtx" &&
        solve "z-$m-$f" 4 "$tmp/$m.mtx" --factorization $f --threads 1 --root-grid on --selinv diag --selinv-out "$tmp/z-$m-$f.mtx" &&
        check "z-$m-$f" grid && same_diag "z-$m-$f-off" "z-$m-$f"
done

echo "== scheduler static: two runs, bitwise the same diagonal of A^-1"
for i in 1 2; do
    solve "static$i" 4 $lap --factorization ldlt --threads 2 --scheduler static --root-grid on --selinv diag \
        --selinv-out "$tmp/static$i.mtx" && check "static$i" grid
done
cmp -s "$tmp/static1.mtx" "$tmp/static2.mtx" || bad "scheduler static: two runs wrote different diagonals"
[ "$(field static1 backward_error)" = "$(field static2 backward_error)" ] || bad "scheduler static: different backward errors"

echo "== distributed input, refactorization"
for f in llt lu; do
    solve "dist-$f" 4 $lap --factorization $f --threads 1 --root-grid on --distributed && check "dist-$f" grid
    solve "repeat-$f" 4 $lap --factorization $f --threads 1 --root-grid on --repeat 2 && check "repeat-$f" grid
    [ "$(sed -n 's/.*"time_factorize_runs": \[\([^]]*\)\].*/\1/p' "$tmp/repeat-$f.json" | tr ',' '\n' | wc -l)" -eq 2 ] ||
        bad "repeat-$f: not two factorizations"
done

echo "== root-grid auto on a narrow root: not on a grid"
solve auto 4 $lap --threads 1 --root-grid auto && check auto null
# auto on a wide root keeps the grid only where the plan's simulation predicts it faster: not on 2
# ranks (the 1D chain overlaps the rest), yes on 64 nodes x 16 threads (canopy-simulate, no MPI)
sim="${top_builddir:-.}/canopy-simulate"
for case in "2 1 null" "64 16 ["; do
    set -- $case
    got=$("$sim" --ranks "$1" --threads "$2" --laplacian 40x40x40 --core-gflops 50 --cost-cache fixed --root-grid auto \
        --json 2>/dev/null | sed -n 's/.*"root_grid": \([^,]*\).*/\1/p')
    case "$got" in "$3"*) echo "ok: auto on $1 x $2: root_grid $got" ;; *) bad "auto on $1 x $2: root_grid '$got', wanted $3" ;; esac
done

echo "== LL^T of an indefinite matrix: refused, no hang"
# shift 5.7 < 6 - 6 cos(pi/13): the smallest eigenvalues go negative, the subdomains' stay
# positive, so the first non-positive pivot is met late (in the root)
gen 0 5.7 0 "$tmp/indef.mtx"
for n in 4 6; do
    $tmo $MPIEXEC $flags -n $n "$bin" "$tmp/indef.mtx" --kind spd --factorization llt --threads 1 --root-grid on \
        >"$tmp/indef.out" 2>&1
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
        for n in 4 6; do solve "$m-$n" $n "$mats/$m" --kind "$k" --threads 1 --root-grid on && check "$m-$n" grid; done
    done
else
    echo "note: shared matrices not found ($mats): skipped those cases"
fi

[ $fails -eq 0 ] || { echo "test_root_grid.sh: $fails failure(s)"; exit 1; }
echo "test_root_grid.sh: passed"
