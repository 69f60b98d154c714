#!/usr/bin/env python3
"""Multicore: every phase of Canopy per thread count (issue 10's figures), PaStiX-style.

For each matrix and thread count (default 1 and 2), alternating all configurations run by run and
repeating (--reps, medians):
  - analysis and its ordering, first factorization (allocation, first touch, assembly included)
    and a refactorization (--repeat 2), first/repeat, predicted vs measured factorization
    (the simulation with the calibrated, loaded cost model), busy fraction;
  - the solve with 1 and with 32 right-hand sides (no refinement: the substitutions alone);
  - the static (bitwise reproducible) scheduler against the dynamic one;
  - CHOLMOD and MUMPS (1 rank) on the same number of BLAS threads, when their drivers are built.
Prints Markdown tables and the 2-core targets of issue 10 with met / not met; raw JSON lines go to
bench/results/multicore-<timestamp>.jsonl. Timings are reported, never asserted.

    bench/multicore.sh [--reps 3] [--threads 1,2] [--quick] [MATRIX ...]

MATRIX: a file, or laplacian:NXxNYxNZ (default: laplacian:50x50x50, laplacian:60x60x60 and
G3_circuit when the shared matrices are there; --quick: 40x40x40 only).
"""
import argparse
import datetime
import json
import os
import shlex
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402  (canopy-solve lookup, JSON parsing)

TARGETS_2CORE = {  # issue 10, "On this 2-core machine"
    "solve32_speedup": 1.6, "solve1_speedup": 1.2, "first_over_repeat": 1.05,
    "static_over_dynamic": 1.15, "predicted_within": 0.15,
}


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--no-peers", action="store_true")
    p.add_argument("--predict", default="16", help="thread counts to predict by simulation (analysis only)")
    p.add_argument("matrices", nargs="*")
    a = p.parse_args(argv)
    a.threads = [int(t) for t in a.threads.split(",") if t]
    return a


def matrices(args):
    if args.matrices:
        names = args.matrices
    elif args.quick:
        names = ["laplacian:40x40x40"]
    else:
        names = ["laplacian:50x50x50", "laplacian:60x60x60"]
        g3 = os.path.join(os.environ.get("BENCH_MATRIX_DIR", compare.DEFAULT_MATRIX_DIR), "G3_circuit.mtx.gz")
        if os.path.exists(g3):
            names.append(os.path.normpath(g3))
    out = []
    for n in names:
        if n.startswith("laplacian:"):
            out.append({"label": "laplacian-" + n[10:], "inp": ["--laplacian", n[10:]], "spd": True})
        else:
            out.append({"label": os.path.basename(n), "inp": [n, "--kind", "spd"] if "G3" in n else [n],
                        "spd": "G3" in n, "path": n})
    return out


def configs(args):
    out = []
    for t in args.threads:
        out.append(("dyn%d" % t, t, ["--scheduler", "dynamic", "--repeat", "2"]))
        out.append(("sta%d" % t, t, ["--scheduler", "static", "--repeat", "2"]))
        out.append(("rhs32-%d" % t, t, ["--scheduler", "dynamic", "--nrhs", "32"]))
        if t > 1:
            out.append(("oned%d" % t, t, ["--scheduler", "dynamic", "--2d-levels", "0", "--repeat", "2"]))
    if not args.no_peers:
        for peer in ("cholmod", "mumps"):
            if os.access(os.path.join(HERE, peer + "_driver"), os.X_OK):
                for t in args.threads:
                    out.append(("%s%d" % (peer, t), t, None))
    return out


def run(key, t, extra, m):
    env = dict(os.environ)
    for v in list(env):
        if v.startswith("CANOPY_") and v != "CANOPY_SOLVE":
            env.pop(v)
    if extra is None:  # a peer: its threads are its BLAS's
        peer = key.rstrip("0123456789")
        env["OPENBLAS_NUM_THREADS"] = env["OMP_NUM_THREADS"] = str(t)
        inp = ["--laplacian", m["inp"][1]] if m["inp"][0] == "--laplacian" else [m["path"]]
        cmd = [os.path.join(HERE, peer + "_driver"), "--label", m["label"]] + (["--spd"] if m["spd"] else []) + inp
        if peer == "mumps":
            cmd = shlex.split(os.environ.get("BENCH_MPIRUN", compare.DEFAULT_MPIRUN)) + [
                "-x", "OPENBLAS_NUM_THREADS", "-x", "OMP_NUM_THREADS", "-np", "1"] + cmd
    else:
        env["OPENBLAS_NUM_THREADS"] = env["OMP_NUM_THREADS"] = "1"
        cmd = [compare.find_canopy_solve(), "--json", "--threads", str(t), "--refine", "0"] + extra + m["inp"]
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    rec = compare.last_json(p.stdout) or {}
    rec.update({"config": key, "bench_threads": t, "bench_matrix": m["label"], "rc": p.returncode})
    return rec


def num(r, k):
    v = r.get(k)
    return v if isinstance(v, (int, float)) and v == v else None


def med(runs, m, key, fn):
    vals = [fn(r) for r in runs if r["bench_matrix"] == m and r["config"] == key and r["rc"] == 0]
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def f(v, spec="%.3f"):
    return "n/a" if v is None else spec % v


def first(r):
    x = r.get("time_factorize_runs")
    return x[0] if isinstance(x, list) and x else None


def repeat(r):
    x = r.get("time_factorize_runs")
    return min(x[1:]) if isinstance(x, list) and len(x) > 1 else None


def fill_first(r):
    x = r.get("time_fill_runs")
    return x[0] if isinstance(x, list) and x else None


def fill_repeat(r):
    x = r.get("time_fill_runs")
    return min(x[1:]) if isinstance(x, list) and len(x) > 1 else None


def fill_rate(r):
    """GB/s at which the first factorization faulted in (and filled) the factor's memory."""
    x, b = fill_first(r), num(r, "factor_bytes")
    return b / x / 1e9 if x and b else None


def peer_factor(r):
    return num(r, "time_factorize") if num(r, "time_factorize") is not None else num(r, "t_factor")


def peer_solve(r):
    return num(r, "time_solve") if num(r, "time_solve") is not None else num(r, "t_solve")


def main(argv):
    args = parse_args(argv)
    ms, cf = matrices(args), configs(args)
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    raw = os.path.join(HERE, "results", "multicore-%s.jsonl" % datetime.datetime.now().strftime("%Y%m%d-%H%M%S"))
    runs = []
    with open(raw, "w") as out:
        for rep in range(args.reps):
            for m in ms:
                for key, t, extra in (cf if rep % 2 == 0 else list(reversed(cf))):
                    r = run(key, t, extra, m)
                    runs.append(r)
                    out.write(json.dumps(r) + "\n")
                    out.flush()
    T = args.threads
    print("### Multicore: phases x threads (medians of %d runs, seconds; raw: %s)\n" % (args.reps, os.path.relpath(raw)))
    print("| matrix | threads | analyze (ordering) | factorize first | repeat | first/repeat | fill first / repeat "
          "(GB/s) | predicted (/repeat) | busy | static repeat (/dynamic) | 1D repeat (/2D auto) | solve 1 RHS "
          "| solve 32 RHS |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    verdict = []
    for m in ms:
        lab = m["label"]
        for t in T:
            d, s, q = "dyn%d" % t, "sta%d" % t, "rhs32-%d" % t
            fi, re_ = med(runs, lab, d, first), med(runs, lab, d, repeat)
            pr = med(runs, lab, d, lambda r: num(r, "time_factorize_predicted"))
            sr = med(runs, lab, s, repeat)
            od = med(runs, lab, "oned%d" % t, repeat)
            print("| %s | %d | %s (%s) | %s | %s | %s | %s / %s (%s) | %s (%s) | %s | %s (%s) | %s (%s) | %s | %s |" % (
                lab, t, f(med(runs, lab, d, lambda r: num(r, "time_analyze"))),
                f(med(runs, lab, d, lambda r: num(r, "time_order"))), f(fi), f(re_),
                f(fi / re_ if fi and re_ else None, "%.2f"), f(med(runs, lab, d, fill_first)),
                f(med(runs, lab, d, fill_repeat)), f(med(runs, lab, d, fill_rate), "%.2f"), f(pr),
                f(pr / re_ if pr and re_ else None, "%.2f"), f(med(runs, lab, d, lambda r: num(r, "busy_fraction")), "%.2f"),
                f(sr), f(sr / re_ if sr and re_ else None, "%.2f"), f(od), f(od / re_ if od and re_ else None, "%.2f"),
                f(med(runs, lab, d, lambda r: num(r, "time_solve")), "%.4f"),
                f(med(runs, lab, q, lambda r: num(r, "time_solve")), "%.4f")))
            if fi and re_:
                verdict.append(("%s %dT first/repeat" % (lab, t), fi / re_, TARGETS_2CORE["first_over_repeat"], "<="))
            if sr and re_ and t > 1:
                verdict.append(("%s %dT static/dynamic" % (lab, t), sr / re_, TARGETS_2CORE["static_over_dynamic"], "<="))
            if pr and re_:
                verdict.append(("%s %dT |predicted/measured - 1|" % (lab, t), abs(pr / re_ - 1),
                                TARGETS_2CORE["predicted_within"], "<="))
    if len(T) > 1:
        t1, tn = T[0], T[-1]
        print("\n### Speedup %d -> %d threads (medians)\n" % (t1, tn))
        print("| matrix | factorize (repeat) | solve 1 RHS | solve 32 RHS |")
        print("|---|---:|---:|---:|")
        for m in ms:
            lab = m["label"]
            sp = []
            for key, fn in (("dyn", repeat), ("dyn", lambda r: num(r, "time_solve")),
                            ("rhs32-", lambda r: num(r, "time_solve"))):
                a, b = med(runs, lab, key + str(t1), fn), med(runs, lab, key + str(tn), fn)
                sp.append(a / b if a and b else None)
            print("| %s | %s | %s | %s |" % (lab, f(sp[0], "%.2f"), f(sp[1], "%.2f"), f(sp[2], "%.2f")))
            if sp[1]:
                verdict.append(("%s solve 1 RHS speedup" % lab, sp[1], TARGETS_2CORE["solve1_speedup"], ">="))
            if sp[2]:
                verdict.append(("%s solve 32 RHS speedup" % lab, sp[2], TARGETS_2CORE["solve32_speedup"], ">="))
    peers = [k for k, _, e in cf if e is None]
    if peers:
        print("\n### Peers on the same BLAS threads (medians, seconds; MUMPS: 1 rank)\n")
        print("| matrix | solver | threads | factorize | solve 1 RHS |")
        print("|---|---|---:|---:|---:|")
        for m in ms:
            for t in T:
                print("| %s | Canopy | %d | %s | %s |" % (m["label"], t, f(med(runs, m["label"], "dyn%d" % t, repeat)),
                                                         f(med(runs, m["label"], "dyn%d" % t, lambda r: num(r, "time_solve")), "%.4f")))
                for k in peers:
                    if k.endswith(str(t)):
                        print("| %s | %s | %d | %s | %s |" % (m["label"], k.rstrip("0123456789"), t,
                                                             f(med(runs, m["label"], k, peer_factor)),
                                                             f(med(runs, m["label"], k, peer_solve), "%.4f")))
    predict = [int(x) for x in args.predict.split(",") if x.strip()]
    if predict:
        print("\n### What the plan's simulation predicts (analysis only, this machine's cost model under load)\n")
        print("| matrix | threads | 1D predicted | 2D auto predicted | 1D / 2D | 2D levels | 2D cblks | GFlop/s (2D) |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        env = dict(os.environ)
        env["OPENBLAS_NUM_THREADS"] = "1"
        for m in ms:
            for t in predict:
                rec = {}
                for lv in ("0", "auto"):
                    cmd = [compare.find_canopy_solve(), "--json", "--analyze-only", "--threads", str(t),
                           "--ordering-threads", "2", "--2d-levels", lv] + m["inp"]
                    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       universal_newlines=True)
                    rec[lv] = compare.last_json(p.stdout) or {}
                a, b = num(rec["0"], "time_factorize_predicted"), num(rec["auto"], "time_factorize_predicted")
                fl = num(rec["auto"], "flops")
                print("| %s | %d | %s | %s | %s | %s | %s | %s |" % (
                    m["label"], t, f(a, "%.4f"), f(b, "%.4f"), f(a / b if a and b else None, "%.2f"),
                    rec["auto"].get("twod_levels", "n/a"), rec["auto"].get("twod_cblks", "n/a"),
                    f(fl / b / 1e9 if fl and b else None, "%.0f")))
    print("\n### Issue 10's 2-core targets\n")
    for name, v, target, op in verdict:
        ok = v <= target if op == "<=" else v >= target
        print("- %s: %.3f (target %s %.2f): %s" % (name, v, op, target, "met" if ok else "not met"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
