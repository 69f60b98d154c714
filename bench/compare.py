#!/usr/bin/env python3
"""Run canopy-solve --json, the CHOLMOD driver and the MUMPS driver on the same matrices,
alternating the solvers and repeating, and print a Markdown table of medians.

Called by run.sh (which builds the drivers and pins BLAS to one thread); see README.md.
Raw JSON lines go to bench/results/<timestamp>.jsonl. Timings are reported, never asserted.
"""
import argparse
import datetime
import json
import math
import os
import shlex
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_MATRIX_DIR = os.path.join(ROOT, "..", "shared", "matrices")
DEFAULT_MPIRUN = "mpirun --allow-run-as-root --oversubscribe --bind-to none"
SOLVERS = ("canopy", "cholmod", "mumps")


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="run.sh",
        description="Canopy vs CHOLMOD vs MUMPS on the same matrices (medians of R runs).",
        epilog="MATRIX: a .mtx/.mtx.gz/.rb/.rsa/.rua file, or --laplacian NXxNYxNZ / NXxNY. "
               "Without MATRIX: --laplacian 50x50x50, --laplacian 60x60x60 and the SPD shared "
               "matrices G3_circuit, bcsstk16, Andrews (as --spd).")
    p.add_argument("--repeat", type=int, default=3, help="runs per solver and matrix (default 3)")
    p.add_argument("--threads", type=int, default=1,
                   help="Canopy worker threads per rank (default 1; peers stay sequential)")
    p.add_argument("--ranks", type=int, default=1, help="Canopy MPI ranks (default 1)")
    p.add_argument("--solvers", default=",".join(SOLVERS),
                   help="comma-separated subset of canopy,cholmod,mumps")
    p.add_argument("--spd", action="store_true",
                   help="the given matrices are SPD: LL^T in Canopy, SYM=1 in MUMPS, CHOLMOD "
                        "also on general-storage files")
    p.add_argument("--cholmod-ordering", default="default",
                   help="default (CHOLMOD's AMD-then-METIS strategy), metis, nesdis, amd")
    p.add_argument("--mumps-ordering", default="scotch",
                   help="scotch (ICNTL(7)=3, default), ptscotch (ICNTL(28)=2, ICNTL(29)=1), "
                        "amd, amf, pord, qamd, auto")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per run (default 1800)")
    p.add_argument("--no-dgemm", action="store_true", help="skip the DGEMM peak measurement")
    p.add_argument("--results", default=os.path.join(HERE, "results"),
                   help="folder for the raw JSON lines (default bench/results)")
    args, rest = p.parse_known_args(argv)

    matrices = []
    i = 0
    while i < len(rest):
        tok = rest[i]
        if tok == "--laplacian":
            if i + 1 >= len(rest):
                p.error("--laplacian needs NXxNY[xNZ]")
            matrices.append({"kind": "laplacian", "arg": rest[i + 1], "spd": True,
                             "label": "laplacian-" + rest[i + 1]})
            i += 2
        elif tok.startswith("--laplacian="):
            grid = tok.split("=", 1)[1]
            matrices.append({"kind": "laplacian", "arg": grid, "spd": True,
                             "label": "laplacian-" + grid})
            i += 1
        elif tok.startswith("-"):
            p.error("unknown option " + tok)
        else:
            matrices.append({"kind": "file", "arg": tok, "spd": args.spd,
                             "label": os.path.basename(tok)})
            i += 1
    if not matrices:
        matrices = default_matrices()
    args.matrices = matrices
    args.solvers = [s for s in args.solvers.split(",") if s]
    for s in args.solvers:
        if s not in SOLVERS:
            p.error("unknown solver " + s)
    if args.repeat < 1 or args.threads < 1 or args.ranks < 1:
        p.error("--repeat, --threads and --ranks must be >= 1")
    return args


def default_matrices():
    mdir = os.environ.get("BENCH_MATRIX_DIR", DEFAULT_MATRIX_DIR)
    out = [{"kind": "laplacian", "arg": g, "spd": True, "label": "laplacian-" + g}
           for g in ("50x50x50", "60x60x60")]
    for name, note in (("G3_circuit.mtx.gz", ""), ("bcsstk16.mtx.gz", ""),
                       ("Andrews.mtx.gz", " (singular PSD: factorization speed only)")):
        path = os.path.normpath(os.path.join(mdir, name))
        if os.path.exists(path):
            out.append({"kind": "file", "arg": path, "spd": True, "label": name, "note": note})
        else:
            print("note: %s not found, skipped" % path, file=sys.stderr)
    return out


def find_canopy_solve():
    env = os.environ.get("CANOPY_SOLVE")
    if env:
        return env
    for cand in (os.path.join(ROOT, "_build", "canopy-solve"), os.path.join(ROOT, "canopy-solve"),
                 os.path.join(os.environ.get("CANOPY_PREFIX", "/nonexistent"), "bin", "canopy-solve")):
        if os.access(cand, os.X_OK):
            return cand
    return "canopy-solve"


def last_json(text):
    """The last line of the output that is a JSON object."""
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict):
                return obj
    return None


def command(solver, m, args):
    mpirun = shlex.split(os.environ.get("BENCH_MPIRUN", DEFAULT_MPIRUN))
    inp = ["--laplacian", m["arg"]] if m["kind"] == "laplacian" else [m["arg"]]
    if solver == "canopy":
        cmd = [find_canopy_solve(), "--json", "--threads", str(args.threads)]
        if m["spd"] and m["kind"] == "file":
            cmd += ["--kind", "spd"]  # read as symmetric, factorized LL^T as CHOLMOD does
        cmd += shlex.split(os.environ.get("CANOPY_SOLVE_FLAGS", "")) + inp
        return mpirun + ["-np", str(args.ranks)] + cmd
    drv = [os.path.join(HERE, solver + "_driver"), "--label", m["label"]]
    if m["spd"]:
        drv.append("--spd")
    drv += ["--ordering", args.cholmod_ordering if solver == "cholmod" else args.mumps_ordering]
    drv += inp
    if solver == "mumps":
        return mpirun + ["-np", "1"] + drv
    return drv


def run_one(solver, m, args):
    cmd = command(solver, m, args)
    env = dict(os.environ)
    env["OPENBLAS_NUM_THREADS"] = "1"
    env["OMP_NUM_THREADS"] = "1"
    if solver == "canopy":
        env["CANOPY_THREADS"] = str(args.threads)
    try:
        cp = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            timeout=args.timeout, universal_newlines=True)
        out, err, rc = cp.stdout, cp.stderr, cp.returncode
    except subprocess.TimeoutExpired:
        out, err, rc = "", "timed out after %g s" % args.timeout, -1
    except OSError as e:
        out, err, rc = "", str(e), -1
    rec = last_json(out)
    if rec is None:
        tail = (err.strip().splitlines() or ["no output"])[-1][:200]
        rec = {"status": "error: no JSON (rc=%d): %s" % (rc, tail)}
    rec["solver"] = solver
    rec["matrix"] = m["label"]
    rec["rc"] = rc
    rec["command"] = " ".join(shlex.quote(c) for c in cmd)
    if solver == "canopy":
        rec.setdefault("ordering", "scotch (Canopy default)")
        # canopy-solve reports its status as a code or word; anything not an error counts.
        st = rec.get("status", "ok")
        if isinstance(st, (int, float)):
            rec["status"] = ("ok" if st >= 0 else "error: %s (%d)"
                             % (rec.get("status_text", "status"), st))
        elif rc != 0 and not str(st).startswith(("error", "n/a")):
            rec["status"] = "error: rc=%d %s" % (rc, st)
    return rec


def ok(rec):
    st = str(rec.get("status", "ok")).lower()
    return not (st.startswith("error") or st.startswith("n/a") or st.startswith("fail"))


def num(rec, key):
    v = rec.get(key)
    return float(v) if isinstance(v, (int, float)) and math.isfinite(v) else None


def median_of(recs, key):
    vals = [v for v in (num(r, key) for r in recs) if v is not None]
    return statistics.median(vals) if vals else None


def dgemm_peak(results):
    exe = os.path.join(HERE, "dgemm_peak")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    try:
        cp = subprocess.run([exe, "2000", "5"], stdout=subprocess.PIPE, env=env,
                            universal_newlines=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as e:
        print("note: dgemm_peak failed: %s" % e, file=sys.stderr)
        return None
    rec = last_json(cp.stdout)
    if rec is None:
        return None
    results.write(json.dumps(rec) + "\n")
    return num(rec, "gflops")


def fmt(v, spec):
    return "n/a" if v is None else format(v, spec)


def main(argv):
    args = parse_args(argv)
    os.makedirs(args.results, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    raw_path = os.path.join(args.results, stamp + ".jsonl")
    with open(raw_path, "w") as raw:
        peak = None if args.no_dgemm else dgemm_peak(raw)
        runs = {}
        for m in args.matrices:
            dead = set()
            for r in range(args.repeat):
                # Rotate the order every repetition so no solver always runs first (cold caches,
                # turbo, a neighbour's noise are spread over all of them).
                k = r % len(args.solvers)
                order = args.solvers[k:] + args.solvers[:k]
                for s in order:
                    if s in dead:
                        continue
                    rec = run_one(s, m, args)
                    rec["repeat"] = r
                    raw.write(json.dumps(rec) + "\n")
                    raw.flush()
                    runs.setdefault((m["label"], s), []).append(rec)
                    print("[%d/%d] %-8s %-22s %s  factorize %s s" % (
                        r + 1, args.repeat, s, m["label"], rec.get("status", "?"),
                        fmt(num(rec, "time_factorize"), ".3f")), file=sys.stderr)
                    if not ok(rec):
                        dead.add(s)  # n/a or broken: repeating it tells nothing new
        if not args.no_dgemm:
            # Measured again at the end: the best of both is the peak (a busy machine only
            # ever makes DGEMM slower).
            late = dgemm_peak(raw)
            if late is not None and (peak is None or late > peak):
                peak = late
    print_table(args, runs, peak, raw_path)
    return 0


def print_table(args, runs, peak, raw_path):
    ncore = args.threads * args.ranks
    if not args.no_dgemm:
        print("DGEMM peak, 1 thread (cblas_dgemm 2000x2000, OPENBLAS_NUM_THREADS=1): %s GFlop/s"
              % fmt(peak, ".2f"))
        print()
    print("Medians of %d run(s); Canopy with %d rank(s) x %d thread(s); CHOLMOD and MUMPS "
          "sequential, one BLAS thread. ratio = Canopy factorize time / peer factorize time "
          "(< 1: Canopy faster). %% peak = GFlop/s / (cores x DGEMM peak), cores = %d for Canopy, "
          "1 for the peers." % (args.repeat, args.ranks, args.threads, ncore))
    print()
    head = ["solver", "matrix", "n", "nnz(L)", "flops", "analyze s", "factorize s", "solve s",
            "GFlop/s", "% peak", "backward err", "ordering", "Canopy/peer fact.", "status"]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join(["---", "---"] + ["---:"] * 9 + ["---", "---:", "---"]) + "|")
    for m in args.matrices:
        can = runs.get((m["label"], "canopy"), [])
        can_ok = [r for r in can if ok(r)]
        t_can = median_of(can_ok, "time_factorize")
        for s in args.solvers:
            recs = runs.get((m["label"], s), [])
            if not recs:
                continue
            good = [r for r in recs if ok(r)]
            last = good[-1] if good else recs[-1]
            status = "ok (%d/%d)" % (len(good), len(recs)) if good else str(last.get("status"))
            status = status.replace("|", "/")
            tf = median_of(good, "time_factorize")
            fl = median_of(good, "flops")  # SCOTCH orderings differ a little run to run
            gf = fl / tf * 1e-9 if fl and tf else None
            cores = ncore if s == "canopy" else 1
            pct = 100.0 * gf / (cores * peak) if gf and peak else None
            ratio = t_can / tf if (s != "canopy" and t_can and tf) else None
            n = num(last, "n")
            lnz = median_of(good, "nnz_factor")
            row = [s, m["label"] + m.get("note", ""), fmt(n, ".0f"), fmt(lnz, ".4g"),
                   fmt(fl, ".3g"), fmt(median_of(good, "time_analyze"), ".3g"),
                   fmt(tf, ".3g"), fmt(median_of(good, "time_solve"), ".3g"), fmt(gf, ".2f"),
                   fmt(pct, ".0f"), fmt(median_of(good, "backward_error"), ".1e"),
                   str(last.get("ordering", "")) or "-",
                   fmt(ratio, ".2f") if s != "canopy" else "-", status]
            print("| " + " | ".join(row) + " |")
    print()
    print("Raw JSON lines: %s" % os.path.relpath(raw_path, ROOT))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
