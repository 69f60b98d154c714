#!/bin/sh
# canopy-solve end to end: usage errors exit 2, bad input exits 1 with a message, the built-in
# problems solve to a backward error <= 1e-12, --json has the documented keys, --repeat and
# --nrhs work, and two MPI ranks give the same answer as one.
# canopy-simulate: usage errors, its JSON figures (the network's bound, top2d shadows) and a
# simulated trace canopy-trace reads.
bin=${top_builddir:-.}/canopy-solve
data=${top_srcdir:-.}/tests/data
fails=0
t() { # description, expected exit code, command...
    d=$1; want=$2; shift 2
    out=$("$@" 2>&1); rc=$?
    if [ "$rc" -ne "$want" ]; then
        echo "FAIL: $d: exit $rc, expected $want"; printf '%s\n' "$out" | head -20; fails=$((fails + 1))
    else
        echo "ok: $d"
    fi
}
be_ok() { # json line -> 0 if backward error <= 1e-12
    be=$(printf '%s\n' "$1" | sed -n 's/.*"backward_error": \([^,]*\),.*/\1/p')
    awk -v b="$be" 'BEGIN { exit !(b != "" && b != "null" && b + 0 <= 1e-12) }'
}

t "--help" 0 "$bin" --help
t "--version" 0 "$bin" --version
t "unknown option" 2 "$bin" --frobnicate 3
t "bad thread count" 2 "$bin" --threads -1 --laplacian 5
t "bad scheduler" 2 "$bin" --scheduler fast --laplacian 5
t "bad bind list" 2 "$bin" --bind 3-1 --laplacian 5
t "two inputs" 2 "$bin" --laplacian 5 --helmholtz 5
t "missing file" 1 "$bin" /nonexistent/matrix.mtx
t "bad environment" 2 env CANOPY_NUMA=far "$bin" --laplacian 5
for f in "$data"/bad_*.mtx; do
    [ -f "$f" ] && t "malformed $(basename "$f")" 1 "$bin" "$f"
done
# the memory check on one rank: refused before anything is allocated, with the way out
mo=$("$bin" --kind spd --memory-limit 1e6 --laplacian 20x20x20 2>&1); rc=$?
if [ "$rc" -eq 1 ] && printf '%s\n' "$mo" | grep -q "out of memory.*only 0.001 GB are available.*memory-check=off"; then
    echo "ok: one rank over the memory limit refused"; else
    echo "FAIL: one rank over the memory limit (exit $rc)"; printf '%s\n' "$mo" | tail -3; fails=$((fails + 1)); fi
t "one rank, memory-check off" 0 "$bin" --kind spd --memory-limit 1e6 --memory-check off --laplacian 20x20x20
# accepted-and-validated options of later releases
t "bad --progress" 2 "$bin" --progress sometimes --laplacian 5

# progress: forced on, the phase appears on stderr as a rewritten line (polled five times a second:
# the run lasts longer than that); off by default when stderr is not a terminal, and with --json
p=$("$bin" --progress on --laplacian 40x40x40 2>&1 >/dev/null | tr '\r' '\n')
if printf '%s\n' "$p" | grep -q "canopy-solve: \(analyze\|factorize\|solve\)"; then
    echo "ok: --progress on"
else
    echo "FAIL: --progress on shows no phases"; printf '%s\n' "$p" | head -5; fails=$((fails + 1))
fi
for args in "--laplacian 12x12x12" "--json --laplacian 12x12x12"; do
    # shellcheck disable=SC2086
    if "$bin" $args 2>&1 >/dev/null | tr '\r' '@' | grep -q '@'; then
        echo "FAIL: progress lines without a terminal ($args)"; fails=$((fails + 1))
    else
        echo "ok: no progress without a terminal ($args)"
    fi
done

t "threaded options accepted" 0 "$bin" --threads 2 --scheduler dynamic --numa global --bind 0,1 \
    --comm-threads 0 --tree binary --laplacian 6x6x6

for args in "--laplacian 12x12x12" "--laplacian 30x30" "--laplacian 8x8x8 --stencil 27" "--helmholtz 60" \
            "--laplacian 10x10x10 --factorization ldlt" "--laplacian 10x10x10 --factorization lu" \
            "--laplacian 10x10x10 --ordering natural" "--laplacian 10x10x10 --amalgamation 0" \
            "--laplacian 10x10x10 --split 8" "--laplacian 9x9x9 --nrhs 3 --repeat 2"; do
    # shellcheck disable=SC2086
    j=$("$bin" --json $args 2>&1)
    if [ $? -eq 0 ] && be_ok "$j"; then echo "ok: $args"; else echo "FAIL: $args"; echo "$j"; fails=$((fails + 1)); fi
done

j=$("$bin" --json --ordering-threads 2 --laplacian 10x10x10)
for k in n nnz nnz_factor flops time_analyze time_factorize time_solve gflops_factorize backward_error \
         forward_error refinement_steps perturbed_pivots peak_memory_bytes ranks threads_per_rank factorization status; do
    printf '%s\n' "$j" | grep -q "\"$k\": " || { echo "FAIL: json lacks $k"; fails=$((fails + 1)); }
done
printf '%s\n' "$j" | grep -q '"factorization": "llt"' || { echo "FAIL: SPD Laplacian not LL^T"; fails=$((fails + 1)); }

# two ranks: same nnz(L) (the same ordering: SCOTCH on 2 threads in both) and an accurate answer
if [ -n "$MPIEXEC" ]; then
    j2=$($MPIEXEC -n 2 "$bin" --json --ordering-threads 2 --laplacian 10x10x10 2>&1)
    n1=$(printf '%s\n' "$j" | sed -n 's/.*"nnz_factor": \([0-9]*\),.*/\1/p')
    n2=$(printf '%s\n' "$j2" | sed -n 's/.*"nnz_factor": \([0-9]*\),.*/\1/p')
    if [ -n "$n1" ] && [ "$n1" = "$n2" ] && be_ok "$j2"; then echo "ok: 2 ranks"; else
        echo "FAIL: 2 ranks"; echo "$j2"; fails=$((fails + 1)); fi
    # --distributed with a file: each rank reads its part of the entries (canopy_read_matrix_part);
    # b = A ones and the residual are sums over the parts
    for f in hb_real_sym.rsa hb_complex_unsym.cua mm_real_general.mtx mm_skew.mtx; do
        for extra in "" "--refine 0"; do
            # shellcheck disable=SC2086
            jd=$($MPIEXEC -n 2 "$bin" --json --distributed $extra "$data/$f" 2>&1)
            if [ $? -eq 0 ] && be_ok "$jd"; then echo "ok: 2 ranks --distributed $extra $f"; else
                echo "FAIL: 2 ranks --distributed $extra $f"; echo "$jd"; fails=$((fails + 1)); fi
        done
    done
    t "2 ranks --distributed, bad file" 1 $MPIEXEC -n 2 "$bin" --distributed "$data/bad_nan.mtx"
    # --distributed with a generated matrix: each rank keeps its block of columns only, and b and
    # the residual are sums over the ranks' blocks as for a file's parts
    for np in 2 3; do
        for args in "--laplacian 10x10x10" "--refine 0 --laplacian 10x10x10" "--factorization lu --laplacian 8x8x8" \
                    "--refine 0 --helmholtz 40"; do
            # shellcheck disable=SC2086
            jd=$($MPIEXEC -n $np "$bin" --json --distributed $args 2>&1)
            if [ $? -eq 0 ] && be_ok "$jd"; then echo "ok: $np ranks --distributed $args"; else
                echo "FAIL: $np ranks --distributed $args"; echo "$jd"; fails=$((fails + 1)); fi
        done
    done
    # the memory prediction (issue 31): the heaviest rank's predicted memory within 10% of the
    # peak Canopy's allocator counted on the heaviest rank (the structure every rank holds was
    # missing: G3_circuit on 4 ranks 18% low; here 30^3 was 9% low on 2 and 3 ranks, 13-14% on 4
    # ranks static and on 3 centralized, 10% on one rank; the one-rank peak includes the
    # application's copy of A, which canopy-solve makes after creating the solver)
    for layout in "2 --threads 1 --distributed" "3 --threads 2 --distributed" "4 --threads 2 --scheduler static --distributed" \
                  "3 --threads 1" "1 --threads 2"; do
        # shellcheck disable=SC2086
        jp=$($MPIEXEC -n ${layout%% *} "$bin" --json --kind spd --cost-cache fixed ${layout#* } --laplacian 30x30x30 2>/dev/null | tail -1)
        r=$(printf '%s\n' "$jp" | awk '{ p = $0; sub(/.*"memory_predicted_rank_max": /, "", p); sub(/,.*/, "", p);
                                        m = $0; sub(/.*"peak_memory_rank_max": /, "", m); sub(/,.*/, "", m);
                                        if (m + 0 == 0) { m = $0; sub(/.*"peak_memory_bytes": /, "", m); sub(/,.*/, "", m) }
                                        if (m + 0 > 0) printf "%.3f", p / m }')
        if [ -n "$r" ] && awk -v r="$r" 'BEGIN { exit !(r >= 0.9 && r <= 1.1) }'; then echo "ok: predicted/peak memory $r (ranks: $layout)"; else
            echo "FAIL: predicted/peak memory '$r' ($layout), not within 10%"; fails=$((fails + 1)); fi
        # and as the OS counts it (MPI's and the libraries' memory measured at the prediction):
        # within 10% of the heaviest rank's peak resident set (0.99-1.03 here)
        r=$(printf '%s\n' "$jp" | awk '{ p = $0; sub(/.*"memory_predicted_rss_rank_max": /, "", p); sub(/,.*/, "", p);
                                        m = $0; sub(/.*"rss_peak_rank_max": /, "", m); sub(/,.*/, "", m);
                                        if (m + 0 > 0) printf "%.3f", p / m }')
        if [ -n "$r" ] && awk -v r="$r" 'BEGIN { exit !(r >= 0.9 && r <= 1.1) }'; then echo "ok: predicted/OS peak $r (ranks: $layout)"; else
            echo "FAIL: predicted/OS peak '$r' ($layout), not within 10%"; fails=$((fails + 1)); fi
    done
    # the memory check (issue 31): a limit below the prediction refuses before anything is
    # allocated, on every rank, saying how many ranks would fit; those ranks then pass the check.
    # The fixed cost model: a model calibrated under load plans each run its own way (CI failed
    # here under MPICH with the timed model)
    pm=$($MPIEXEC -n 2 "$bin" --json --threads 1 --kind spd --cost-cache fixed --laplacian 30x30x30 2>/dev/null | tail -1 |
        sed -n 's/.*"memory_predicted_rank_max": \([^,]*\),.*/\1/p')
    lim=$(awk -v p="$pm" 'BEGIN { if (p + 0 > 0) printf "%.0f", 0.8 * p }')
    if [ -n "$lim" ]; then
        mo=$($MPIEXEC -n 2 "$bin" --threads 1 --kind spd --cost-cache fixed --memory-limit "$lim" --laplacian 30x30x30 2>&1); rc=$?
        fit=$(printf '%s\n' "$mo" | sed -n 's/.*it fits on \([0-9]*\) ranks x 1 threads.*/\1/p' | head -1)
        if [ "$rc" -eq 1 ] && [ -n "$fit" ] && [ "$fit" -gt 2 ]; then echo "ok: 2 ranks refused, fits on $fit"; else
            echo "FAIL: 2 ranks over the memory limit (exit $rc, fits on '$fit')"; printf '%s\n' "$mo" | tail -3; fails=$((fails + 1)); fi
        if [ -n "$fit" ] && [ "$fit" -le 8 ]; then
            jm=$($MPIEXEC -n "$fit" "$bin" --json --threads 1 --kind spd --cost-cache fixed --memory-limit "$lim" --laplacian 30x30x30 2>&1 | tail -1)
            if be_ok "$jm"; then echo "ok: $fit ranks fit the same limit"; else
                echo "FAIL: $fit ranks under the limit the refusal named"; echo "$jm" | tail -3; fails=$((fails + 1)); fi
        fi
    else
        echo "FAIL: no memory_predicted_rank_max on 2 ranks"; fails=$((fails + 1))
    fi
    # the mapping respects the limit where it can (option mapping): a limit between the heaviest
    # rank of the memory fallback and that of the flops mapping refuses mapping=flops, and the
    # default (auto) passes with the memory mapping. 25^3 on 4 ranks: 14.4 and 15.0 MB
    mx() { sed -n 's/.*"memory_predicted_rank_max": \([^,]*\),.*/\1/p'; }
    # (fan-in buffers whole: fanin-cuts=auto would cut them first, below)
    mf=$($MPIEXEC -n 4 "$bin" --json --threads 1 --kind spd --cost-cache fixed --mapping flops --fanin-cuts off --laplacian 25x25x25 2>/dev/null | tail -1 | mx)
    mm=$($MPIEXEC -n 4 "$bin" --json --threads 1 --kind spd --cost-cache fixed --mapping memory --fanin-cuts off --laplacian 25x25x25 2>/dev/null | tail -1 | mx)
    lim=$(awk -v f="$mf" -v m="$mm" 'BEGIN { if (m + 0 > 0 && m + 0 < f + 0) printf "%.0f", (m + f) / 2 }')
    if [ -n "$lim" ]; then
        mo=$($MPIEXEC -n 4 "$bin" --threads 1 --kind spd --cost-cache fixed --mapping flops --fanin-cuts off --memory-limit "$lim" --laplacian 25x25x25 2>&1); rc=$?
        if [ "$rc" -eq 1 ] && printf '%s\n' "$mo" | grep -q "only .* GB are available"; then echo "ok: 4 ranks, mapping=flops refused under $lim"; else
            echo "FAIL: 4 ranks, mapping=flops under $lim (exit $rc)"; printf '%s\n' "$mo" | tail -3; fails=$((fails + 1)); fi
        jm=$($MPIEXEC -n 4 "$bin" --json --threads 1 --kind spd --cost-cache fixed --fanin-cuts off --memory-limit "$lim" --laplacian 25x25x25 2>&1 | tail -1)
        if be_ok "$jm" && printf '%s\n' "$jm" | grep -q '"mapping": "memory"'; then echo "ok: 4 ranks fit $lim with the memory mapping"; else
            echo "FAIL: 4 ranks, the memory mapping under $lim"; echo "$jm" | tail -3; fails=$((fails + 1)); fi
    else
        echo "FAIL: no memory mapping lighter than the flops one (flops '$mf', memory '$mm')"; fails=$((fails + 1))
    fi
    # fanin-cuts=auto (the default): under a limit between the flops plan with its buffers whole and
    # the same plan with them cut, the cut plan runs (more messages, the same answer)
    msg() { sed -n 's/.*"comm_msgs": \([0-9]*\),.*/\1/p'; }
    mc=$($MPIEXEC -n 4 "$bin" --json --threads 1 --kind spd --cost-cache fixed --mapping flops --fanin-cuts on --laplacian 25x25x25 2>/dev/null | tail -1 | mx)
    lim=$(awk -v f="$mf" -v c="$mc" 'BEGIN { if (c + 0 > 0 && c + 0 < f + 0) printf "%.0f", (c + f) / 2 }')
    if [ -n "$lim" ]; then
        jw=$($MPIEXEC -n 4 "$bin" --json --threads 1 --kind spd --cost-cache fixed --mapping flops --fanin-cuts off --laplacian 25x25x25 2>&1 | tail -1)
        ja=$($MPIEXEC -n 4 "$bin" --json --threads 1 --kind spd --cost-cache fixed --mapping flops --memory-limit "$lim" --laplacian 25x25x25 2>&1 | tail -1)
        nw=$(printf '%s\n' "$jw" | msg); na=$(printf '%s\n' "$ja" | msg)
        if be_ok "$ja" && [ -n "$nw" ] && [ -n "$na" ] && [ "$na" -gt "$nw" ]; then echo "ok: fanin-cuts=auto cuts under $lim ($nw -> $na messages)"; else
            echo "FAIL: fanin-cuts=auto under $lim (messages '$nw' -> '$na')"; echo "$ja" | tail -3; fails=$((fails + 1)); fi
    else
        echo "FAIL: cutting the buffers does not lighten 25^3 on 4 ranks (whole '$mf', cut '$mc')"; fails=$((fails + 1))
    fi

    # fanin-cuts=on: the fan-in buffers go in more messages (one per burst of contributions), the
    # same answer; off: one message per buffer
    cm() { sed -n 's/.*"comm_msgs": \([0-9]*\).*/\1/p'; }
    j0=$($MPIEXEC -n 3 "$bin" --json --threads 1 --kind spd --fanin-cuts off --laplacian 10x10x10 2>&1 | tail -1)
    j1=$($MPIEXEC -n 3 "$bin" --json --threads 1 --kind spd --fanin-cuts on --laplacian 10x10x10 2>&1 | tail -1)
    m0=$(printf '%s\n' "$j0" | cm)
    m1=$(printf '%s\n' "$j1" | cm)
    if be_ok "$j0" && be_ok "$j1" && [ -n "$m0" ] && [ -n "$m1" ] && [ "$m1" -gt "$m0" ]; then
        echo "ok: 3 ranks, fanin-cuts=on sends $m1 messages against $m0"
    else
        echo "FAIL: 3 ranks, fanin-cuts (messages '$m0' and '$m1')"; echo "$j1" | tail -2; fails=$((fails + 1))
    fi

    # rank 0 releases its scaled copy of A once the entries are out: refactorizations and the
    # fallback from LL^T to LDL^T (a KKT matrix claimed SPD) rebuild it
    jr=$($MPIEXEC -n 2 "$bin" --json --repeat 3 --laplacian 9x9x9 2>&1 | tail -1)
    if be_ok "$jr"; then echo "ok: 2 ranks --repeat 3"; else echo "FAIL: 2 ranks --repeat 3"; echo "$jr"; fails=$((fails + 1)); fi
    hg=${top_srcdir:-.}/../shared/matrices/hangGlider_2.mtx
    if [ -f "$hg" ]; then
        jf=$($MPIEXEC -n 2 "$bin" --json --kind spd "$hg" 2>&1 | grep "^{" | tail -1) # its warning (perturbed pivots) may come last
        if be_ok "$jf" && printf '%s\n' "$jf" | grep -q '"factorization": "ldlt"'; then echo "ok: 2 ranks, LL^T falls back to LDL^T"
        else echo "FAIL: 2 ranks, LL^T fallback"; echo "$jf"; fails=$((fails + 1)); fi
        # the fallback's new kind is predicted and checked again before it allocates: a limit
        # that LL^T's plan passes (the analysis' figure) but LDL^T's heaviest rank exceeds refuses
        # (buffers whole: fanin-cuts=auto could cut LDL^T's under the limit; the JSON's 6 digits:
        # limits at the midpoint, or 1e-5 under LDL^T's figure on one rank, where LL^T needs 0.1% less)
        fo="--threads 1 --cost-cache fixed --mapping flops --fanin-cuts off --kind spd"
        # shellcheck disable=SC2086
        pl=$($MPIEXEC -n 2 "$bin" --json --analyze-only $fo "$hg" 2>/dev/null | grep "^{" | tail -1 | mx)
        # shellcheck disable=SC2086
        pf=$($MPIEXEC -n 2 "$bin" --json $fo "$hg" 2>/dev/null | grep "^{" | tail -1 | mx)
        lim=$(awk -v l="$pl" -v f="$pf" 'BEGIN { if (l + 0 > 0 && l * 1.001 < f + 0) printf "%.0f", (l + f) / 2 }')
        if [ -n "$lim" ]; then
            # shellcheck disable=SC2086
            mo=$($MPIEXEC -n 2 "$bin" $fo --memory-limit "$lim" "$hg" 2>&1); rc=$?
            if [ "$rc" -eq 1 ] && printf '%s\n' "$mo" | grep -q "only .* GB are available"; then echo "ok: 2 ranks, the LDL^T fallback checked against $lim (LL^T $pl, LDL^T $pf)"; else
                echo "FAIL: 2 ranks, the fallback's memory check (exit $rc)"; printf '%s\n' "$mo" | tail -3; fails=$((fails + 1)); fi
        else echo "FAIL: 2 ranks, no LDL^T prediction above LL^T's after the fallback ('$pl', '$pf')"; fails=$((fails + 1)); fi
        # one rank: the same (the check passed for LL^T: the fallback was tried)
        pf=$("$bin" --json --threads 1 --cost-cache fixed --kind spd "$hg" 2>/dev/null | grep "^{" | tail -1 | mx)
        lim=$(awk -v f="$pf" 'BEGIN { if (f + 0 > 1) printf "%.0f", f * (1 - 1e-5) }')
        mo=$("$bin" --verbose 1 --threads 1 --cost-cache fixed --kind spd --memory-limit "${lim:-1}" "$hg" 2>&1); rc=$?
        if [ -n "$lim" ] && [ "$rc" -eq 1 ] && printf '%s\n' "$mo" | grep -q "falling back" &&
            printf '%s\n' "$mo" | grep -q "only .* GB are available"; then echo "ok: 1 rank, the LDL^T fallback checked against $lim"; else
            echo "FAIL: 1 rank, the fallback's memory check (exit $rc, limit '$lim')"; printf '%s\n' "$mo" | tail -3; fails=$((fails + 1)); fi
    fi
    # PT-SCOTCH on both ranks, or (a build without it) a refusal that says why
    jp=$($MPIEXEC -n 2 "$bin" --json --ordering ptscotch --laplacian 10x10x10 2>&1)
    rc=$?
    if [ $rc -eq 0 ] && be_ok "$jp"; then echo "ok: 2 ranks --ordering ptscotch"
    elif [ $rc -eq 2 ] && printf '%s\n' "$jp" | grep -q "without PT-SCOTCH"; then echo "ok: --ordering ptscotch refused (no PT-SCOTCH)"
    else echo "FAIL: 2 ranks --ordering ptscotch"; echo "$jp"; fails=$((fails + 1)); fi
fi
# selected inversion: the diagonal as a Matrix Market file, listed entries, the JSON figures, bad lists
sv=${TMPDIR:-/tmp}/canopy_cli_selinv.$$
t "selinv diag" 0 "$bin" --laplacian 6x5x4 --selinv diag --selinv-out "$sv.mtx"
if [ "$(sed -n 3p "$sv.mtx" 2>/dev/null)" = "120 120 120" ] && [ "$(grep -c '^[0-9]' "$sv.mtx")" -eq 121 ]; then
    echo "ok: --selinv-out writes the 120 diagonal entries"
else echo "FAIL: --selinv-out"; head -4 "$sv.mtx"; fails=$((fails + 1)); fi
printf '%% pairs\n1 1\n120 3\n\n7 7\n' >"$sv.txt"
t "selinv entries" 0 "$bin" --laplacian 6x5x4 --selinv-entries "$sv.txt" --selinv-out "$sv.e.mtx"
# A^-1(1,1) from the diagonal run (the inversion) and from the list (a solve): the same to rounding
d1=$(awk 'NR==4 {print $3}' "$sv.mtx"); e1=$(awk 'NR==4 {print $3}' "$sv.e.mtx")
if [ -n "$d1" ] && awk -v a="$d1" -v b="$e1" 'BEGIN { d = a - b; exit !(b != "" && d * d <= 1e-26 * a * a) }'; then
    echo "ok: listed entry (1,1) = diagonal entry"
else echo "FAIL: listed (1,1) '$e1' vs diagonal '$d1'"; fails=$((fails + 1)); fi
j=$("$bin" --json --laplacian 6x5x4 --selinv pattern)
for k in time_selinv gflops_selinv selinv_entries selinv_ratio; do
    printf '%s\n' "$j" | grep -q "\"$k\": " || { echo "FAIL: json lacks $k"; fails=$((fails + 1)); }
done
printf '1 1\n3 x\n' >"$sv.bad"
t "selinv bad list" 1 "$bin" --laplacian 6x5x4 --selinv-entries "$sv.bad"
printf '1 121\n' >"$sv.bad"
t "selinv index out of range" 1 "$bin" --laplacian 6x5x4 --selinv-entries "$sv.bad"
t "selinv missing list" 1 "$bin" --laplacian 6x5x4 --selinv-entries /nonexistent/list
t "selinv bad what" 2 "$bin" --laplacian 6x5x4 --selinv everything
t "selinv-out alone" 2 "$bin" --laplacian 6x5x4 --selinv-out "$sv.mtx"
rm -f "$sv.mtx" "$sv.e.mtx" "$sv.txt" "$sv.bad"

# the BLAS as the cost model measured it: --json names it and its DGEMM rate. A slow rate fed in
# (CANOPY_TEST_GEMM_GFLOPS stands for what the calibration measures) on a CPU whose vector units
# Canopy can estimate is flagged in the statistics and warned of on stderr, once per process;
# OpenBLAS made to run its SSE kernels (OPENBLAS_CORETYPE=Prescott) on a CPU with AVX2 or AVX-512
# is too, with the fix, and once for two ranks
err=${TMPDIR:-/tmp}/canopy_cli_blas.$$
jb=$(CANOPY_TEST_GEMM_GFLOPS=0.1 "$bin" --json --repeat 2 --cost-cache none --laplacian 6x6x6 2>"$err")
nw=$(grep -c "canopy: warning: .*DGEMM at 0.1 GFlop/s on one core" "$err")
expected=$(printf '%s\n' "$jb" | sed -n 's/.*"blas_gflops_expected": \([^,]*\),.*/\1/p')
if printf '%s\n' "$jb" | grep -q '"blas_gflops": 0.1, "blas_gflops_expected": [0-9.e+]*, "blas_warning": [01], "blas_name": "[^"]' &&
    printf '%s\n' "$jb" | grep -q '"blas_message": "'; then
    echo "ok: --json reports the BLAS: $(printf '%s\n' "$jb" | grep -o '"blas_name": "[^"]*"'), expected $expected GFlop/s"
else
    echo "FAIL: --json lacks the BLAS figures"; printf '%s\n' "$jb" | tr ',' '\n' | grep blas; fails=$((fails + 1))
fi
if awk -v e="$expected" 'BEGIN { exit !(e > 0) }'; then
    if printf '%s\n' "$jb" | grep -q '"blas_warning": 1,' && [ "$nw" -eq 1 ]; then
        echo "ok: a slow measured DGEMM is flagged and warned of once"
    else
        echo "FAIL: a slow measured DGEMM: $nw warning(s)"; cat "$err"; fails=$((fails + 1))
    fi
fi
if printf '%s\n' "$jb" | grep -q '"blas_name": "OpenBLAS' && grep -Eq '^flags.* (avx2|avx512f)( |$)' /proc/cpuinfo 2>/dev/null; then
    for ranks in 1 2; do
        launch=""
        [ "$ranks" -gt 1 ] && { [ -n "$MPIEXEC" ] || continue; launch="$MPIEXEC -n $ranks"; }
        # shellcheck disable=SC2086
        jw=$(OPENBLAS_CORETYPE=Prescott $launch "$bin" --json --repeat 2 --cost-cache fixed --laplacian 6x6x6 2>"$err")
        nw=$(grep -c "canopy: warning: OpenBLAS .* runs its Prescott kernels .*OPENBLAS_CORETYPE=Prescott asks for them: set OPENBLAS_CORETYPE=" "$err")
        if printf '%s\n' "$jw" | grep -q '"blas_warning": 1, "blas_name": "OpenBLAS [^"]*Prescott"' && [ "$nw" -eq 1 ]; then
            echo "ok: OpenBLAS's Prescott kernels on this CPU: flagged, warned of once ($ranks rank(s))"
        else
            echo "FAIL: Prescott kernels on $ranks rank(s): $nw warning(s)"; cat "$err"
            printf '%s\n' "$jw" | tr ',' '\n' | grep blas; fails=$((fails + 1))
        fi
    done
else
    echo "skipped: OpenBLAS's kernel choice (not OpenBLAS, or a CPU without AVX2)"
fi
rm -f "$err"

# canopy-simulate: usage, the JSON figures, a trace canopy-trace reads, bad input
sim=${top_builddir:-.}/canopy-simulate
tr=${top_builddir:-.}/canopy-trace
t "simulate --help" 0 "$sim" --help
t "simulate without input" 2 "$sim" --ranks 4
t "simulate bad ranks" 2 "$sim" --ranks 0 --laplacian 8
t "simulate bad bandwidth" 2 "$sim" --bandwidth -3 --laplacian 8
t "simulate --ordering ptscotch on 2 ranks" 2 "$sim" --ranks 2 --ordering ptscotch --laplacian 8
t "simulate missing file" 1 "$sim" /nonexistent/matrix.mtx
t "simulate text" 0 "$sim" --ranks 3 --threads 4 --cost-cache fixed --laplacian 10x10x10
trace=${TMPDIR:-/tmp}/canopy_cli_sim.$$
j=$("$sim" --json --ranks 16 --threads 8 --cost-cache fixed --core-gflops 50 --load-gemm 1.8 --trace "$trace" --laplacian 12x12x12)
for k in ranks threads time_factorize time_1x1 speedup efficiency efficiency_loaded critical_path time_solve levels \
         idle_fraction factor_bytes fanin_bytes memory_bytes plan_bytes msgs bytes solve_msgs solve_bytes median stddev; do
    printf '%s\n' "$j" | grep -q "\"$k\": " || { echo "FAIL: simulate json lacks $k"; fails=$((fails + 1)); }
done
printf '%s\n' "$j" | grep -q '"core_gflops": 50,' || { echo "FAIL: --core-gflops not applied"; fails=$((fails + 1)); }
printf '%s\n' "$j" | grep -q '"plan_bytes": [1-9]' || { echo "FAIL: simulate's plan of all ranks has no size"; fails=$((fails + 1)); }
# the heaviest rank's parts: each positive, together no more than its peak (the rest: A, structure)
printf '%s\n' "$j" | awk '{
    m = $0; sub(/.*"memory_bytes": {[^}]*"max": /, "", m); sub(/,.*/, "", m)
    for (i = 1; i <= 3; i++) { k = i == 1 ? "factor" : i == 2 ? "fanin" : "work"; v[i] = $0
        sub(".*\"heavy_" k "_bytes\": ", "", v[i]); sub(/,.*/, "", v[i]) }
    exit !(v[1] > 0 && v[2] > 0 && v[3] > 0 && v[1] + v[2] + v[3] <= m + 0 && m > 0) }' ||
    { echo "FAIL: simulate's heaviest rank's parts"; fails=$((fails + 1)); }
# every rank's analysis: the planning's peak and the block structure, 12 bytes a column, 24 a cblk,
# 16 a blok
printf '%s\n' "$j" | awk '{
    split("n ncblk nblok plan_peak_bytes analysis_bytes plan_bytes", k, " ")
    for (i = 1; i <= 6; i++) { v[i] = $0; sub(".*\"" k[i] "\": ", "", v[i]); sub(/[,}].*/, "", v[i]) }
    want = v[4] + 12 * v[1] + 24 * v[2] + 16 * v[3]
    exit !(v[3] > v[2] && v[2] > 0 && v[4] + 0 >= v[6] + 0 && v[6] > 0 && (v[5] - want) ^ 2 <= (1e-5 * want) ^ 2) }' ||
    { echo "FAIL: simulate's analysis bytes (the plan and the structure)"; fails=$((fails + 1)); }
t "simulated trace reads back" 0 "$tr" "$trace"
rm -f "$trace"
# --mapping / --memory-limit: the real run's rule; memory lowers the heaviest rank (25^3 on 4 x 1:
# 15.0 -> 14.4 MB), auto keeps flops without a limit and takes memory under one between the two
smx() { sed -n 's/.*"memory_bytes": {[^}]*"max": \([^,]*\),.*/\1/p'; }
sf=$("$sim" --json --ranks 4 --threads 1 --kind spd --cost-cache fixed --fanin-cuts off --laplacian 25x25x25)
sm=$("$sim" --json --ranks 4 --threads 1 --kind spd --cost-cache fixed --fanin-cuts off --mapping memory --laplacian 25x25x25)
lim=$(awk -v f="$(printf '%s\n' "$sf" | smx)" -v m="$(printf '%s\n' "$sm" | smx)" 'BEGIN { if (m + 0 > 0 && m + 0 < f + 0) printf "%.0f", (m + f) / 2 }')
sa=$("$sim" --json --ranks 4 --threads 1 --kind spd --cost-cache fixed --fanin-cuts off --memory-limit "${lim:-1}" --laplacian 25x25x25)
if printf '%s\n' "$sf" | grep -q '"mapping": "flops"' && printf '%s\n' "$sm" | grep -q '"mapping": "memory"' && [ -n "$lim" ] &&
   printf '%s\n' "$sa" | grep -q '"mapping": "memory"'; then echo "ok: simulate --mapping memory lighter, auto under $lim"
else echo "FAIL: simulate --mapping (limit '$lim')"; fails=$((fails + 1)); fi
t "simulate bad --mapping" 2 "$sim" --mapping heavy --laplacian 8
# --cost-cache FILE: a model made on another machine is read as it is, never recalibrated nor
# written over (a model as a 16-core Xeon wrote it, another machine's key); --ranks-per-node loads
# the kernels with the node's busy cores: 4 ranks x 2 threads on one node are slower than on four
cmf=$(mktemp "${TMPDIR:-/tmp}/canopy_cli_cm.XXXXXX")
cat > "$cmf" <<'MODEL'
# Canopy kernel cost model: seconds = latency + flops / (peak * d / (d + d_half))
format 3
key_cpu A machine that is not this one (test_cli.sh)
key_blas OpenBLAS 0.0.0 Test
key_threads 16
gemm_gflops 67.694823337297407
calibrated 1
latency 4.6889935561293775e-08
load_threads 16
load_gemm 1.3770997100282658
load_scatter 1.4079916937091947
peak_gemm 68362764869.107758
d_half_gemm 2.5150701270433697
peak_trsm 23214421237.324554
d_half_trsm 29.76507717589341
peak_potrf 64807082776.407684
d_half_potrf 412.61230379362121
peak_getrf 14399157698.474314
d_half_getrf 46.481196113654732
peak_sytrf 45201465706.918228
d_half_sytrf 466.19859352961453
peak_scatter 2317359874.7402053
d_half_scatter 0
MODEL
before=$(cksum < "$cmf")
pk=$(sed -n 's/^peak_gemm //p' "$cmf")
j1=$("$sim" --json --ranks 4 --threads 2 --cost-cache "$cmf" --laplacian 16x16x16)
j4=$("$sim" --json --ranks 4 --threads 2 --ranks-per-node 4 --cost-cache "$cmf" --laplacian 16x16x16)
g=$(printf '%s\n' "$j1" | sed -n 's/.*"core_gflops": \([^,]*\),.*/\1/p')
w1=$(printf '%s\n' "$j1" | sed -n 's/.*"work": \([^,]*\),.*/\1/p'); w4=$(printf '%s\n' "$j4" | sed -n 's/.*"work": \([^,]*\),.*/\1/p')
if [ "$(cksum < "$cmf")" = "$before" ] && awk -v g="$g" -v p="$pk" 'BEGIN { exit !(p > 0 && g > 0 && (g * 1e9 / p - 1) ^ 2 < 1e-8) }'; then
    echo "ok: simulate --cost-cache reads another machine's model as it is ($g GFlop/s)"
else echo "FAIL: simulate --cost-cache FILE (core_gflops '$g', the file's peak '$pk', file unchanged: $([ "$(cksum < "$cmf")" = "$before" ] && echo yes || echo no))"; fails=$((fails + 1)); fi
if printf '%s\n' "$j4" | grep -q '"ranks_per_node": 4' && awk -v a="$w1" -v b="$w4" 'BEGIN { exit !(a > 0 && b > a) }'; then
    echo "ok: simulate --ranks-per-node 4: work $w4 against $w1 s"
else echo "FAIL: simulate --ranks-per-node (work '$w1' and '$w4')"; fails=$((fails + 1)); fi
rm -f "$cmf"
t "simulate bad --ranks-per-node" 2 "$sim" --ranks 2 --ranks-per-node 3 --laplacian 8
# --top2d: a prediction the factorization does not execute, said so, with the grids' figures
t "simulate bad --top2d" 2 "$sim" --top2d round --laplacian 8
jt=$("$sim" --json --ranks 8 --threads 2 --split 48 --2d-levels 8 --top2d square --cost-cache fixed --laplacian 16x16x16)
printf '%s\n' "$jt" | grep -q '"top2d_shape": 1, "top2d_cblks": [1-9]' || { echo "FAIL: --top2d square tiles nothing"; fails=$((fails + 1)); }
for k in top2d_shared top2d_grids top2d_root_grid top2d_fanin_msgs top2d_factor_bytes top2d_bcast_bytes; do
    printf '%s\n' "$jt" | grep -q "\"$k\": " || { echo "FAIL: simulate json lacks $k"; fails=$((fails + 1)); }
done
"$sim" --ranks 8 --threads 2 --split 48 --2d-levels 8 --top2d square --cost-cache fixed --laplacian 16x16x16 |
    grep -q "a MODEL: the factorization does not execute this shape" ||
    { echo "FAIL: --top2d square does not say it is a model"; fails=$((fails + 1)); }
"$sim" --ranks 8 --threads 2 --split 48 --2d-levels 8 --top2d flat --cost-cache fixed --laplacian 16x16x16 |
    grep -q "flat: what top2d=flat executes" ||
    { echo "FAIL: --top2d flat does not say it is what top2d=flat executes"; fails=$((fails + 1)); }

# the network: the busiest node's bytes and their time at the bandwidth; with the top off they are
# the fan-in bytes the heaviest sender sends
jn=$("$sim" --json --ranks 8 --threads 2 --cost-cache fixed --laplacian 16x16x16)
printf '%s\n' "$jn" | python3 -c '
import json, sys
d = json.loads(sys.stdin.read().strip().splitlines()[-1])
s, r, b = d["net_sent_max"], d["net_recv_max"], d["net_bound"]
assert s > 0 and r > 0 and abs(b * d["bandwidth"] - max(s, r)) <= 1e-4 * max(s, r), (s, r, b)  # JSON: 6 digits
assert abs(s - d["bytes"]["max"]) <= 1e-4 * s, (s, d["bytes"]["max"])' ||
    { echo "FAIL: the network figures (net_sent_max, net_recv_max, net_bound)"; fails=$((fails + 1)); }

# shadows (top2d-shadow): on by default under flat, far fewer fan-in bytes; lean holds less; auto
# takes lean under a memory limit the plain plan exceeds
shadow() { "$sim" --json --ranks 16 --threads 4 --cost-cache fixed --core-gflops 50 --laplacian 40x40x40 --top2d flat "$@"; }
{ shadow --top2d-shadow off; shadow; shadow --top2d-shadow lean; shadow --memory-limit 48e6; } | python3 -c '
import json, sys
off, on, lean, lim = [json.loads(l) for l in sys.stdin.read().strip().splitlines()]
assert [x["top2d_shadow"] for x in (off, on, lean, lim)] == ["off", "on", "lean", "lean"], "modes"
assert on["bytes"]["total"] < 0.5 * off["bytes"]["total"], ("fan-in bytes", on["bytes"]["total"], off["bytes"]["total"])
assert lean["memory_bytes"]["max"] < on["memory_bytes"]["max"], ("lean", lean["memory_bytes"]["max"], on["memory_bytes"]["max"])
assert lim["memory_bytes"]["max"] <= 48e6 < on["memory_bytes"]["max"], ("limit", lim["memory_bytes"]["max"])
# the planning held at least its plan; under the limit the lean candidate beside the plain plan
assert all(x["plan_peak_bytes"] >= x["plan_bytes"] > 0 for x in (off, on, lean, lim)), "plan peak"
assert lim["plan_peak_bytes"] >= 2 * lim["plan_bytes"], ("two plans", lim["plan_peak_bytes"], lim["plan_bytes"])' ||
    { echo "FAIL: top2d-shadow (off, on, lean, auto under a memory limit)"; fails=$((fails + 1)); }

echo "$fails failed"
[ "$fails" -eq 0 ]
