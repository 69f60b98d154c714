#!/usr/bin/env python3
"""Threads on one node: Canopy with 1 and 2 worker threads (static and dynamic scheduler, local
and global NUMA placement) next to CHOLMOD and MUMPS with 2 BLAS threads, on the same matrices,
alternating all configurations run by run and repeating; prints four Markdown tables of medians:

  1. Canopy 1 thread vs 2 threads: factorize seconds, speedup t1/t2, GFlop/s (target >= 1.8)
  2. Canopy 2 threads vs CHOLMOD (2 OpenBLAS threads) vs MUMPS (1 rank, 2 threads)
  3. V0 / V1 / V2 (numa=global+static, numa=local+static, numa=local+dynamic)
  4. the scheduler's predicted factorization time vs the measured one, for every Canopy run
  and a fifth, where the time of a 2-thread factorization goes (engine wall, busy, idle).

Called by threads.sh (which builds the drivers); see README.md, "Threads on one node".
Raw JSON lines go to bench/results/threads-<timestamp>.jsonl. Timings are reported, never
asserted: the targets are printed with "met" / "not met", the exit status does not depend on them.
"""
import argparse
import datetime
import glob
import json
import os
import platform
import resource
import shlex
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402  (shared helpers: canopy-solve lookup, JSON parsing, DGEMM peak)

ROOT = compare.ROOT
TARGET_SPEEDUP = 1.8
PASTIX_REF = {"laplacian-50x50x50": 2.1}   # PaStiX 6.4, 2 threads, this machine (seconds)
CANOPY_TARGET = {"laplacian-50x50x50": 1.5}  # what Canopy should need there

# (key, label, threads, scheduler, numa); "c2s" is V1, "c2d" V2, "c2g" V0.
CANOPY_CONFIGS = (
    ("c1", "Canopy 1 thread", 1, "static", "local"),
    ("c2s", "Canopy 2 threads static (V1)", 2, "static", "local"),
    ("c2d", "Canopy 2 threads dynamic (V2)", 2, "dynamic", "local"),
    ("c2g", "Canopy 2 threads global+static (V0)", 2, "static", "global"),
)
PEER_CONFIGS = (("cholmod", "CHOLMOD, 2 OpenBLAS threads"), ("mumps", "MUMPS, 1 rank x 2 threads"))
ALL_KEYS = [c[0] for c in CANOPY_CONFIGS] + [p[0] for p in PEER_CONFIGS]
LABEL = dict([(c[0], c[1]) for c in CANOPY_CONFIGS] + list(PEER_CONFIGS))


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="threads.sh",
        description="Canopy 1 vs 2 threads, vs CHOLMOD and MUMPS on 2 threads, V0/V1/V2, "
                    "predicted vs measured (medians of R alternating runs).",
        epilog="MATRIX: a .mtx/.mtx.gz/.rb/.rsa/.rua file, or --laplacian NXxNYxNZ / NXxNY. "
               "Without MATRIX: --laplacian 50x50x50, --laplacian 60x60x60 and "
               "../shared/matrices/G3_circuit.mtx.gz (as --spd). --with-defaults adds the "
               "given matrices to that set.")
    p.add_argument("--repeat", type=int, default=3, help="runs per configuration and matrix (default 3)")
    p.add_argument("--threads", type=int, default=2,
                   help="the 'many threads' count compared with 1 (default 2)")
    p.add_argument("--spd", action="store_true",
                   help="the given matrix files are SPD (canopy --kind spd, MUMPS SYM=1, CHOLMOD LL^T)")
    p.add_argument("--with-defaults", action="store_true",
                   help="run the default set as well as the given matrices")
    p.add_argument("--no-peers", action="store_true", help="Canopy only (tables 1, 3, 4, 5)")
    p.add_argument("--only", default="",
                   help="comma-separated subset of " + ",".join(ALL_KEYS) + " (default all)")
    p.add_argument("--bind", default="",
                   help="Canopy --bind none|core|LIST (default: Canopy's own, core)")
    p.add_argument("--split", type=int, default=None, help="Canopy --split N (default: none)")
    p.add_argument("--cost-cache", default="",
                   help="Canopy --cost-cache PATH|none|fixed (default: Canopy's cache in ~/.cache/canopy)")
    p.add_argument("--canopy-flags", default=os.environ.get("CANOPY_SOLVE_FLAGS", ""),
                   help="more canopy-solve flags (default $CANOPY_SOLVE_FLAGS)")
    p.add_argument("--cholmod-ordering", default="default",
                   help="default (CHOLMOD's AMD-then-METIS strategy), metis, nesdis, amd")
    p.add_argument("--mumps-ordering", default="scotch", help="scotch (default), ptscotch, amd, ...")
    p.add_argument("--timeout", type=float, default=900.0,
                   help="seconds per run before it is killed and counted as an error (default 900)")
    p.add_argument("--trace", action="store_true",
                   help="after the timed runs, one extra traced 2-thread static and dynamic run per "
                        "matrix (not in the medians), summarized by canopy-trace; traces in results/")
    p.add_argument("--no-dgemm", action="store_true", help="skip the DGEMM peak measurements")
    p.add_argument("--results", default=os.path.join(HERE, "results"),
                   help="folder for the raw JSON lines (default bench/results)")
    p.add_argument("--tables-from", metavar="FILE.jsonl", default=None,
                   help="run nothing: print the tables again from the raw JSON lines of an "
                        "earlier run (bench/results/threads-*.jsonl)")
    args, rest = p.parse_known_args(argv)

    matrices = []
    i = 0
    while i < len(rest):
        tok = rest[i]
        if tok == "--laplacian" or tok.startswith("--laplacian="):
            if "=" in tok:
                grid = tok.split("=", 1)[1]
                i += 1
            elif i + 1 < len(rest):
                grid = rest[i + 1]
                i += 2
            else:
                p.error("--laplacian needs NXxNY[xNZ]")
            matrices.append({"kind": "laplacian", "arg": grid, "spd": True,
                             "label": "laplacian-" + grid})
        elif tok.startswith("-"):
            p.error("unknown option " + tok)
        else:
            if not os.path.exists(tok) and not args.tables_from:
                p.error("no such matrix file: " + tok)
            matrices.append({"kind": "file", "arg": tok, "spd": args.spd,
                             "label": os.path.basename(tok)})
            i += 1
    if not matrices or args.with_defaults:
        matrices = default_matrices() + matrices
    args.matrices = matrices
    keys = [k for k in args.only.split(",") if k] or list(ALL_KEYS)
    for k in keys:
        if k not in ALL_KEYS:
            p.error("unknown configuration %s (one of %s)" % (k, ",".join(ALL_KEYS)))
    if args.no_peers:
        keys = [k for k in keys if k not in ("cholmod", "mumps")]
    args.keys = [k for k in ALL_KEYS if k in keys]
    if args.repeat < 1 or args.threads < 2 or args.timeout <= 0:
        p.error("--repeat must be >= 1, --threads >= 2, --timeout > 0")
    return args


def default_matrices():
    mdir = os.environ.get("BENCH_MATRIX_DIR", compare.DEFAULT_MATRIX_DIR)
    out = [{"kind": "laplacian", "arg": g, "spd": True, "label": "laplacian-" + g}
           for g in ("50x50x50", "60x60x60")]
    path = os.path.normpath(os.path.join(mdir, "G3_circuit.mtx.gz"))
    if os.path.exists(path):
        out.append({"kind": "file", "arg": path, "spd": True, "label": "G3_circuit.mtx.gz"})
    else:
        print("note: %s not found, skipped" % path, file=sys.stderr)
    return out


def canopy_config(key, args):
    for c in CANOPY_CONFIGS:
        if c[0] == key:
            return c[2] if c[2] == 1 else args.threads, c[3], c[4]
    raise KeyError(key)


def command_env(key, m, args, trace=None):
    """The command line and environment of one run of configuration key on matrix m."""
    inp = ["--laplacian", m["arg"]] if m["kind"] == "laplacian" else [m["arg"]]
    env = dict(os.environ)
    for v in ("CANOPY_THREADS", "CANOPY_SCHEDULER", "CANOPY_NUMA", "CANOPY_BIND", "CANOPY_TRACE"):
        env.pop(v, None)  # the command line says it all
    if key in ("cholmod", "mumps"):
        nt = str(args.threads)
        # the peers' threads are their BLAS's (and OpenMP's, where a build has it)
        env["OPENBLAS_NUM_THREADS"] = nt
        env["OMP_NUM_THREADS"] = nt
        drv = [os.path.join(HERE, key + "_driver"), "--label", m["label"]]
        if m["spd"]:
            drv.append("--spd")
        drv += ["--ordering", args.cholmod_ordering if key == "cholmod" else args.mumps_ordering]
        drv += inp
        if key == "mumps":
            mpirun = shlex.split(os.environ.get("BENCH_MPIRUN", compare.DEFAULT_MPIRUN))
            return mpirun + ["-x", "OPENBLAS_NUM_THREADS", "-x", "OMP_NUM_THREADS",
                             "-np", "1"] + drv, env
        return drv, env
    nthreads, sched, numa = canopy_config(key, args)
    env["OPENBLAS_NUM_THREADS"] = "1"  # Canopy forces it too: one BLAS thread per worker
    env["OMP_NUM_THREADS"] = "1"
    cmd = [compare.find_canopy_solve(), "--json", "--threads", str(nthreads),
           "--scheduler", sched, "--numa", numa]
    if args.bind:
        cmd += ["--bind", args.bind]
    if args.split is not None:
        cmd += ["--split", str(args.split)]
    if args.cost_cache:
        cmd += ["--cost-cache", args.cost_cache]
    if trace:
        cmd += ["--trace", trace]
    if m["spd"] and m["kind"] == "file":
        cmd += ["--kind", "spd"]
    cmd += shlex.split(args.canopy_flags) + inp
    return cmd, env


def run_one(key, m, args, trace=None):
    cmd, env = command_env(key, m, args, trace)
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    w0 = time.monotonic()
    try:
        cp = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            timeout=args.timeout, universal_newlines=True)
        out, err, rc = cp.stdout, cp.stderr, cp.returncode
    except subprocess.TimeoutExpired:
        out, err, rc = "", "timed out after %g s" % args.timeout, -1
    except OSError as e:
        out, err, rc = "", str(e), -1
    wall = time.monotonic() - w0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    rec = compare.last_json(out)
    if rec is None:
        tail = (err.strip().splitlines() or ["no output"])[-1][:200]
        rec = {"status": "error: no JSON (rc=%d): %s" % (rc, tail)}
    # the whole process (input, analysis, factorization, solve): CPU seconds it got per wall
    # second; with T threads busy it is near T only when T cores were free for it
    rec["process_wall"] = wall
    rec["process_cpu"] = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    rec["solver"] = "canopy" if key not in ("cholmod", "mumps") else key
    rec["config"] = key
    rec["matrix"] = m["label"]
    rec["rc"] = rc
    rec["env"] = {k: env[k] for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS") if k in env}
    rec["command"] = " ".join(shlex.quote(c) for c in cmd)
    st = rec.get("status", "ok")
    if isinstance(st, (int, float)):
        rec["status"] = ("ok" if st >= 0 else "error: %s (%d)" % (rec.get("status_text", "status"), st))
    elif rc != 0 and not str(st).startswith(("error", "n/a")):
        rec["status"] = "error: rc=%d %s" % (rc, st)
    return rec


def dgemm(results, nthreads):
    exe = os.path.join(HERE, "dgemm_peak")
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(nthreads), OMP_NUM_THREADS=str(nthreads))
    try:
        cp = subprocess.run([exe, "2000", "5"], stdout=subprocess.PIPE, env=env,
                            universal_newlines=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as e:
        print("note: dgemm_peak failed: %s" % e, file=sys.stderr)
        return None
    rec = compare.last_json(cp.stdout)
    if rec is None:
        return None
    rec["blas_threads"] = nthreads
    results.write(json.dumps(rec) + "\n")
    return compare.num(rec, "gflops")


def machine():
    """Cores of this process's cpuset, NUMA nodes, CPU model, load average."""
    ncores = len(os.sched_getaffinity(0))
    nodes = len(glob.glob("/sys/devices/system/node/node[0-9]*")) or 1
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"cores": ncores, "numa_nodes": nodes, "cpu": model, "host": platform.node()}


def cost_model_line():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    for path in sorted(glob.glob(os.path.join(base, "canopy", "cost-model*.txt"))):
        vals = {}
        try:
            with open(path) as f:
                for line in f:
                    parts = line.split(None, 1)
                    if len(parts) == 2 and not parts[0].startswith("#"):
                        vals[parts[0]] = parts[1].strip()
        except OSError:
            continue
        if "peak_gemm" in vals:
            # format 3 names the BLAS it was measured with (key_blas)
            blas = (vals["key_blas"] + ", ") if "key_blas" in vals else ""
            return "%s (%speak_gemm %.1f GFlop/s, calibrated %s)" % (
                path, blas, float(vals["peak_gemm"]) * 1e-9, vals.get("calibrated", "?"))
    return None


def load_avg():
    try:
        return "%.2f %.2f %.2f" % os.getloadavg()
    except OSError:
        return "?"


def replay(path):
    """Tables from the raw JSON lines of an earlier run."""
    header, end, runs, peaks, traces, labels = None, {}, {}, {}, {}, []
    with open(path) as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            rec = json.loads(line)
            if rec.get("bench") == "threads":
                header = rec
            elif rec.get("bench") == "threads-end":
                end = rec
            elif rec.get("bench") == "trace":
                traces[(rec["matrix"], rec["config"])] = rec["summary"]
            elif "blas_threads" in rec:
                t, g = rec["blas_threads"], compare.num(rec, "gflops")
                if g is not None and (peaks.get(t) is None or g > peaks[t]):
                    peaks[t] = g
            elif "config" in rec and not rec.get("traced"):
                runs.setdefault((rec["matrix"], rec["config"]), []).append(rec)
                if rec["matrix"] not in labels:
                    labels.append(rec["matrix"])
    if header is None:
        sys.exit("%s: not a threads.py result file (no header line)" % path)
    args = parse_args(header["argv"] + ["--tables-from", path])
    args.matrices = [{"label": lab} for lab in labels]
    args.keys = [k for k in ALL_KEYS if any(key == k for (_, key) in runs)]
    args.repeat = max((r.get("repeat", 0) + 1 for recs in runs.values() for r in recs), default=0)
    info = {"machine": header["machine"], "date": header.get("date", "?"),
            "load_before": header.get("load_before", "?"), "load_after": end.get("load_after", "?")}
    print_tables(args, runs, peaks, info, path, traces)
    return 0


def main(argv):
    args = parse_args(argv)
    if args.tables_from:
        return replay(args.tables_from)
    os.makedirs(args.results, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    raw_path = os.path.join(args.results, "threads-" + stamp + ".jsonl")
    mach = machine()
    info = {"machine": mach, "date": datetime.datetime.now().isoformat(timespec="seconds"),
            "load_before": load_avg(), "argv": argv}
    runs = {}
    traces = {}
    peaks = {}
    with open(raw_path, "w") as raw:
        raw.write(json.dumps({"bench": "threads", **info}) + "\n")
        if not args.no_dgemm:
            for t in (1, args.threads):
                peaks[t] = dgemm(raw, t)
        for m in args.matrices:
            dead = set()
            for r in range(args.repeat):
                # rotate the order every repetition: no configuration always runs first or
                # always right after the same neighbour (the host is shared)
                k = r % len(args.keys)
                order = args.keys[k:] + args.keys[:k]
                for key in order:
                    if key in dead:
                        continue
                    rec = run_one(key, m, args)
                    rec["repeat"] = r
                    rec["load"] = load_avg()
                    raw.write(json.dumps(rec) + "\n")
                    raw.flush()
                    runs.setdefault((m["label"], key), []).append(rec)
                    print("[%d/%d] %-8s %-20s %s  factorize %s s  predicted %s s  (load %s)" % (
                        r + 1, args.repeat, key, m["label"], rec.get("status", "?"),
                        compare.fmt(compare.num(rec, "time_factorize"), ".3f"),
                        compare.fmt(compare.num(rec, "time_factorize_predicted"), ".3f"),
                        rec["load"]), file=sys.stderr)
                    if not compare.ok(rec):
                        dead.add(key)  # n/a or broken: repeating it tells nothing new
            if args.trace:
                for key in ("c2s", "c2d"):
                    tpath = os.path.join(args.results, "threads-%s-%s-%s.trace" % (
                        stamp, m["label"].replace("/", "_"), key))
                    rec = run_one(key, m, args, trace=tpath)
                    rec["traced"] = True
                    raw.write(json.dumps(rec) + "\n")
                    traces[(m["label"], key)] = trace_summary(tpath)
                    raw.write(json.dumps({"bench": "trace", "matrix": m["label"], "config": key,
                                          "file": tpath, "summary": traces[(m["label"], key)]}) + "\n")
        if not args.no_dgemm:
            for t in (1, args.threads):
                late = dgemm(raw, t)
                if late is not None and (peaks.get(t) is None or late > peaks[t]):
                    peaks[t] = late
        info["load_after"] = load_avg()
        raw.write(json.dumps({"bench": "threads-end", "load_after": info["load_after"]}) + "\n")
    print_tables(args, runs, peaks, info, raw_path, traces)
    return 0


def trace_summary(path):
    exe = os.path.join(ROOT, "_build", "canopy-trace")
    if not os.access(exe, os.X_OK):
        exe = "canopy-trace"
    try:
        cp = subprocess.run([exe, path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            universal_newlines=True, timeout=300)
        keep, out = True, []
        for line in cp.stdout.splitlines():
            if line.startswith("phase "):
                keep = "'factorize'" in line
            if keep:
                out.append(line)
        return "\n".join(out).strip()
    except (OSError, subprocess.TimeoutExpired) as e:
        return "canopy-trace failed: %s" % e


# ---------------------------------------------------------------------------------------------
# tables

def good_runs(runs, label, key):
    return [r for r in runs.get((label, key), []) if compare.ok(r)]


def med(runs, label, key, field):
    return compare.median_of(good_runs(runs, label, key), field)


def engine_wall(rec):
    """The engine's wall time: sum of the threads' busy / (threads x busy_fraction)."""
    th = rec.get("threads")
    bf = compare.num(rec, "busy_fraction")
    if not isinstance(th, list) or not th or not bf:
        return None
    busy = sum(float(t.get("busy", 0)) for t in th)
    return busy / (len(th) * bf)


def med_derived(recs, fn):
    vals = [v for v in (fn(r) for r in recs) if v is not None]
    return statistics.median(vals) if vals else None


def status_of(runs, label, key):
    recs = runs.get((label, key), [])
    good = [r for r in recs if compare.ok(r)]
    if good:
        return "%d/%d" % (len(good), len(recs))
    return str(recs[-1].get("status", "?")).replace("|", "/")[:80] if recs else "-"


def f(v, spec):
    return compare.fmt(v, spec)


def row(cells):
    print("| " + " | ".join(cells) + " |")


def print_tables(args, runs, peaks, info, raw_path, traces):
    mach = info["machine"]
    T = args.threads
    has = set(args.keys)
    print("- Machine: %d cores in this process's cpuset, %d NUMA node(s), %s. Load average before: %s, "
          "after: %s (the host is shared)." % (mach["cores"], mach["numa_nodes"], mach["cpu"] or "?",
                                                info["load_before"], info["load_after"]))
    loads = [float(r["load"].split()[0]) for recs in runs.values() for r in recs
             if isinstance(r.get("load"), str) and r["load"] != "?"]
    if loads:
        print("- 1-minute load average after each run: min %.2f, median %.2f, max %.2f (%d cores; the "
              "bench's own runs account for 1 to %d of it, anything above means other work on the "
              "host)." % (min(loads), statistics.median(loads), max(loads), mach["cores"], T))
    if peaks:
        line = "- DGEMM 2000x2000 (cblas_dgemm, best of 5, before and after): %s." % ", ".join(
            "%d BLAS thread(s) %s GFlop/s" % (t, f(peaks[t], ".1f")) for t in sorted(peaks))
        if peaks.get(1) and peaks.get(T):
            eff = peaks[T] / peaks[1]
            line += (" %d-thread / 1-thread DGEMM = %.2f (%d.0 with %d free cores; well below it, "
                     "the cores were not free and no %d-thread speedup can be measured)." % (
                         T, eff, T, T, T))
        print(line)
    cm = cost_model_line()
    if cm and not args.cost_cache:
        print("- Canopy cost model: %s." % cm)
    extra = []
    if args.bind:
        extra.append("--bind " + args.bind)
    if args.split is not None:
        extra.append("--split %d" % args.split)
    if args.cost_cache:
        extra.append("--cost-cache " + args.cost_cache)
    if args.canopy_flags:
        extra.append(args.canopy_flags)
    print("- Medians of %d run(s) per configuration, all configurations alternating run by run. "
          "Canopy: plain execution (no mpirun), OPENBLAS_NUM_THREADS=1, default binding%s. "
          "Factorize seconds as each solver reports them (Canopy: planning, allocation, "
          "assembly and the numerical factorization)." % (
              args.repeat, (", " + " ".join(extra)) if extra else ""))
    print()

    labels = [m["label"] for m in args.matrices]

    if {"c1", "c2s", "c2d"} & has:
        print("**1. Canopy: 1 thread vs %d threads** (speedup = t1 / t%d; target >= %.1f; predicted "
              "speedup = the plan's simulated makespans, 1 thread / %d threads: the ceiling the "
              "plan itself allows)" % (T, T, TARGET_SPEEDUP, T))
        print()
        row(["matrix", "n", "flops", "1 thr s", "%d thr static s" % T, "%d thr dynamic s" % T,
             "speedup static", "speedup dynamic", "predicted speedup", "GFlop/s 1 thr", "GFlop/s static",
             "GFlop/s dynamic", "target %.1f" % TARGET_SPEEDUP, "runs"])
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
        for lab in labels:
            t1 = med(runs, lab, "c1", "time_factorize")
            ts = med(runs, lab, "c2s", "time_factorize")
            td = med(runs, lab, "c2d", "time_factorize")
            fl = None
            for k in ("c1", "c2s", "c2d", "c2g"):
                fl = fl or med(runs, lab, k, "flops")
            n = None
            for k in ("c1", "c2s", "c2d", "c2g"):
                n = n or med(runs, lab, k, "n")
            ss = t1 / ts if t1 and ts else None
            sd = t1 / td if t1 and td else None
            best = max([s for s in (ss, sd) if s is not None], default=None)
            p1 = med(runs, lab, "c1", "time_factorize_predicted")
            p2 = med(runs, lab, "c2s", "time_factorize_predicted") or \
                med(runs, lab, "c2d", "time_factorize_predicted")
            met = "n/a" if best is None else ("met (%.2f)" % best if best >= TARGET_SPEEDUP
                                              else "not met (%.2f)" % best)
            row([lab, f(n, ".0f"), f(fl, ".3g"), f(t1, ".3f"), f(ts, ".3f"), f(td, ".3f"),
                 f(ss, ".2f"), f(sd, ".2f"), f(p1 / p2 if p1 and p2 else None, ".2f"),
                 f(fl / t1 * 1e-9 if fl and t1 else None, ".1f"),
                 f(fl / ts * 1e-9 if fl and ts else None, ".1f"),
                 f(fl / td * 1e-9 if fl and td else None, ".1f"), met,
                 ", ".join(status_of(runs, lab, k) for k in ("c1", "c2s", "c2d"))])
        print()

    if "cholmod" in has or "mumps" in has:
        print("**2. Canopy %d threads vs CHOLMOD (OPENBLAS_NUM_THREADS=%d) vs MUMPS (1 rank, "
              "OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=%d)**, factorize seconds; ratio = Canopy best of "
              "static/dynamic / peer (< 1: Canopy faster)" % (T, T, T))
        print()
        row(["matrix", "Canopy static s", "Canopy dynamic s", "CHOLMOD s", "MUMPS s",
             "Canopy/CHOLMOD", "Canopy/MUMPS", "Canopy fastest", "reference", "runs (C, M)"])
        print("|---|---:|---:|---:|---:|---:|---:|---|---|---|")
        for lab in labels:
            ts = med(runs, lab, "c2s", "time_factorize")
            td = med(runs, lab, "c2d", "time_factorize")
            tc = med(runs, lab, "cholmod", "time_factorize")
            tm = med(runs, lab, "mumps", "time_factorize")
            best = min([t for t in (ts, td) if t], default=None)
            peers = [t for t in (tc, tm) if t]
            fastest = "n/a" if best is None or not peers else (
                "yes" if best < min(peers) else "no")
            ref = "-"
            if lab in PASTIX_REF and T == 2:
                tgt = CANOPY_TARGET[lab]
                ref = "PaStiX 6.4 %.1f s; target <= %.1f s: %s" % (
                    PASTIX_REF[lab], tgt, "n/a" if best is None else
                    ("met" if best <= tgt else "not met"))
            row([lab, f(ts, ".3f"), f(td, ".3f"),
                 f(tc, ".3f") if "cholmod" in has else "-", f(tm, ".3f") if "mumps" in has else "-",
                 f(best / tc if best and tc else None, ".2f"),
                 f(best / tm if best and tm else None, ".2f"), fastest, ref,
                 "%s, %s" % (status_of(runs, lab, "cholmod"), status_of(runs, lab, "mumps"))])
        print()

    if {"c2g", "c2s", "c2d"} & has:
        print("**3. V0 / V1 / V2, %d threads**, factorize seconds (V0 = numa=global + static: every "
              "cblk allocated by the main thread; V1 = numa=local + static: owner first touch; "
              "V2 = numa=local + dynamic: plus work stealing). This machine has %d NUMA node(s)%s." % (
                  T, mach["numa_nodes"],
                  ": placement cannot matter here, the table checks that local placement and the "
                  "dynamic scheduler cost nothing" if mach["numa_nodes"] == 1 else ""))
        print()
        row(["matrix", "V0 s", "V1 s", "V2 s", "V1/V0", "V2/V0", "steals V2", "remote steals V2"])
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for lab in labels:
            v0 = med(runs, lab, "c2g", "time_factorize")
            v1 = med(runs, lab, "c2s", "time_factorize")
            v2 = med(runs, lab, "c2d", "time_factorize")
            row([lab, f(v0, ".3f"), f(v1, ".3f"), f(v2, ".3f"),
                 f(v1 / v0 if v1 and v0 else None, ".2f"), f(v2 / v0 if v2 and v0 else None, ".2f"),
                 f(med(runs, lab, "c2d", "steals"), ".0f"),
                 f(med(runs, lab, "c2d", "steals_remote"), ".0f")])
        print()

    ckeys = [c[0] for c in CANOPY_CONFIGS if c[0] in has]
    if ckeys:
        print("**4. Predicted vs measured factorization time** (predicted = the plan's simulated "
              "makespan, `time_factorize_predicted`; engine = the task engine's wall time, "
              "sum(busy) / (threads x busy_fraction); ratios = measured / predicted)")
        print()
        row(["matrix", "configuration", "predicted s", "measured s", "measured/predicted",
             "engine s", "engine/predicted"])
        print("|---|---|---:|---:|---:|---:|---:|")
        for lab in labels:
            for k in ckeys:
                recs = good_runs(runs, lab, k)
                if not recs:
                    continue
                pr = compare.median_of(recs, "time_factorize_predicted")
                me = compare.median_of(recs, "time_factorize")
                en = med_derived(recs, engine_wall)
                row([lab, LABEL[k], f(pr, ".3f"), f(me, ".3f"),
                     f(me / pr if me and pr else None, ".2f"), f(en, ".3f"),
                     f(en / pr if en and pr else None, ".2f")])
        print()

        print("**5. Where the time goes** (medians; outside = factorize s - engine s: planning, "
              "allocation and first touch, assembly of A; busy = time in tasks per thread; "
              "idle = engine s - busy; process CPU/wall = CPU seconds the whole canopy-solve "
              "process got per wall second, reading and analysis included)")
        print()
        row(["matrix", "configuration", "factorize s", "engine s", "outside s", "busy fraction",
             "busy per thread s", "idle per thread s", "tasks per thread", "steals",
             "process CPU/wall"])
        print("|---|---|---:|---:|---:|---:|---|---|---|---:|---:|")
        for lab in labels:
            for k in ckeys:
                recs = good_runs(runs, lab, k)
                if not recs:
                    continue
                me = compare.median_of(recs, "time_factorize")
                en = med_derived(recs, engine_wall)
                nth = max((len(r.get("threads") or []) for r in recs), default=0)
                busy = [med_derived(recs, lambda r, i=i: _thr(r, i, "busy")) for i in range(nth)]
                tasks = [med_derived(recs, lambda r, i=i: _thr(r, i, "tasks")) for i in range(nth)]
                idle = [en - b if en is not None and b is not None else None for b in busy]
                row([lab, LABEL[k], f(me, ".3f"), f(en, ".3f"),
                     f(me - en if me is not None and en is not None else None, ".3f"),
                     f(compare.median_of(recs, "busy_fraction"), ".3f"),
                     " / ".join(f(b, ".3f") for b in busy) or "-",
                     " / ".join(f(x, ".3f") for x in idle) or "-",
                     " / ".join(f(t, ".0f") for t in tasks) or "-",
                     f(compare.median_of(recs, "steals"), ".0f"),
                     f(med_derived(recs, _cpu_per_wall), ".2f")])
        print()

    if traces:
        print("**Traces** (one extra run each, not in the medians; `canopy-trace` summaries)")
        print()
        for (lab, k), text in traces.items():
            print("%s, %s:" % (lab, LABEL[k]))
            print()
            print("```")
            print(text.rstrip())
            print("```")
            print()

    print("Raw JSON lines: %s" % os.path.relpath(raw_path, ROOT))


def _cpu_per_wall(rec):
    w, c = compare.num(rec, "process_wall"), compare.num(rec, "process_cpu")
    return c / w if w and c is not None else None


def _thr(rec, i, field):
    th = rec.get("threads")
    if not isinstance(th, list) or i >= len(th):
        return None
    v = th[i].get(field)
    return float(v) if isinstance(v, (int, float)) else None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
