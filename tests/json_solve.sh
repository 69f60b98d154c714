# shellcheck shell=sh disable=SC2086,SC2154 # word lists on purpose; bin, name, solve_extra: the caller's
# What the canopy-solve --json tests share (tests/test_root_grid.sh, tests/test_top2d.sh), sourced
# after they set bin (canopy-solve) and name (the temporary folder's): MPI's flags and a timeout
# (CANOPY_TEST_MPI_TIMEOUT, default 120 s), $tmp, bad (count a failure), solve (one run's JSON
# line, $solve_extra added to its arguments), field, same_diag (two diagonals of A^-1), gen (the
# complex and real 7-point 12^3 operators with a shift, written as Matrix Market).
[ -n "$MPIEXEC" ] || { echo "MPIEXEC not set: skipped"; exit 77; }
[ -x "$bin" ] || { echo "$bin is not built"; exit 1; }
OMPI_ALLOW_RUN_AS_ROOT=1; OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM OMPI_MCA_rmaps_base_oversubscribe
case "$($MPIEXEC --version 2>&1)" in
    *"Open MPI"* | *OpenRTE* | *open-mpi.org*) flags="--oversubscribe --allow-run-as-root --bind-to none" ;;
    *) flags="" ;;
esac
tmo=""
command -v timeout >/dev/null 2>&1 && tmo="timeout -s INT -k 20 ${CANOPY_TEST_MPI_TIMEOUT:-120}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/canopy-test-$name.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

# solve NAME RANKS ARGS...: canopy-solve --json on RANKS ranks, its JSON line in $tmp/NAME.json
solve() {
    name=$1 np=$2
    shift 2
    $tmo $MPIEXEC $flags -n "$np" "$bin" --json --cost-cache fixed $solve_extra "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
    rc=$?
    grep '^{' "$tmp/$name.out" | tail -1 >"$tmp/$name.json"
    case $rc in
        0) ;;
        124 | 137) bad "$name: no end after the time limit (hang?)"; return 1 ;;
        *) bad "$name: exit status $rc: $(grep -v '^--\|^ \|^$' "$tmp/$name.err" | head -3)"; return 1 ;;
    esac
}
field() { sed -n "s/.*\"$2\": \([^],]*\).*/\1/p" "$tmp/$1.json"; }
# same_diag A B: the two selected-inversion diagonals agree to 1e-10 relative (to the largest entry)
same_diag() {
    awk 'FNR <= 3 || /^%/ { next } { v = (NF >= 4) ? sqrt($3 * $3 + $4 * $4) : ($3 < 0 ? -$3 : $3) }
         FNR == NR { a[FNR] = $3; b[FNR] = $4; if (v > m) m = v; n++; next }
         { d = $3 - a[FNR]; e = $4 - b[FNR]; d = sqrt(d * d + e * e); if (d > dm) dm = d; k++ }
         END { if (n == 0 || k != n || dm > 1e-10 * m) { printf "n %d/%d, max diff %g of %g\n", n, k, dm, m; exit 1 } }' \
        "$tmp/$1.mtx" "$tmp/$2.mtx" || bad "$1 and $2: the diagonals of A^-1 differ"
}

# gen GENERAL SHIFT COMPLEX FILE
gen() {
    awk -v nx=12 -v gen="$1" -v d="$2" -v cplx="$3" 'BEGIN {
        n = nx * nx * nx
        im = cplx ? " 0.5" : ""; lo = cplx ? " 0.1" : ""; up = cplx ? " -0.2" : ""
        for (z = 0; z < nx; z++) for (y = 0; y < nx; y++) for (x = 0; x < nx; x++) {
            i = x + nx * (y + nx * z) + 1; e[++c] = i " " i " " d im
            for (s = 0; s < 3; s++) {
                if ((s == 0 && x + 1 == nx) || (s == 1 && y + 1 == nx) || (s == 2 && z + 1 == nx)) continue
                j = i + (s == 0 ? 1 : s == 1 ? nx : nx * nx); e[++c] = j " " i " -1" lo
                if (gen) e[++c] = i " " j " -0.5" up
            }
        }
        printf "%%%%MatrixMarket matrix coordinate %s %s\n%d %d %d\n", cplx ? "complex" : "real", gen ? "general" : "symmetric", n, n, c
        for (k = 1; k <= c; k++) print e[k]
    }' >"$4"
}
