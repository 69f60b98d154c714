#!/usr/bin/env python3
"""Across ranks: Canopy under mpiexec (2 ranks x 1 thread against 1 rank x 2 threads, eager limit
minimum vs maximum, communication threads, fan-in, tree shapes on 4 ranks) and Canopy vs MUMPS vs
SuperLU_DIST on 2 ranks x 1 thread, on the same matrices, alternating every configuration run by
run and repeating; prints six Markdown tables of medians:

  1. Canopy 2 ranks x 1 thread vs 1 rank x 2 threads (factorize and solve; target within 15 %)
  2. eager limit minimum vs maximum at 2 ranks x 1 thread (target within 5 %)
  3. --comm-threads 0 / 1 / 2 at 2 ranks x 1 thread
  4. messages and bytes with fan-in vs without (one message per remote update)
  5. --tree flat / binary / shifted at 4 ranks x 1 thread: per-rank volume balance
  6. Canopy vs MUMPS vs SuperLU_DIST at 2 ranks x 1 thread (target: Canopy fastest)

Called by mpi.sh (which builds the drivers); see README.md, "Across ranks". Raw JSON lines go to
bench/results/mpi-<timestamp>.jsonl. Canopy's JSON keys are read with .get(): a key the installed
canopy-solve does not print yet shows as "n/a". Timings are reported, never asserted.
"""
import argparse
import datetime
import json
import os
import re
import resource
import shlex
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402  (canopy-solve lookup, JSON parsing, medians, formatting)
import threads  # noqa: E402  (machine description, load average)

ROOT = compare.ROOT
TARGET_RANKS_VS_THREADS = 1.15   # 2 ranks x 1 thread at most 15 % slower than 1 rank x 2 threads
TARGET_EAGER = 0.05              # eager limit min vs max within 5 %
PEERS = ("mumps", "superlu_dist")
TREES = ("flat", "binary", "shifted")

# key -> (label, ranks, threads, comm threads, tree, eager) ; None = Canopy's default.
# "r2t1" (2 ranks x 1 thread, --comm-threads 1) is shared by tables 1, 3, 4 and 6.
CANOPY_CONFIGS = {
    "r1t2": ("Canopy 1 rank x 2 threads", 1, 2, None, None, None),
    "r2t1": ("Canopy 2 ranks x 1 thread", 2, 1, 1, None, None),
    "eager_min": ("Canopy 2x1, eager limit minimum", 2, 1, 1, None, "min"),
    "eager_max": ("Canopy 2x1, eager limit maximum", 2, 1, 1, None, "max"),
    "c0": ("Canopy 2x1, --comm-threads 0", 2, 1, 0, None, None),
    "c2": ("Canopy 2x1, --comm-threads 2", 2, 1, 2, None, None),
    "r4flat": ("Canopy 4x1, --tree flat", 4, 1, 1, "flat", None),
    "r4binary": ("Canopy 4x1, --tree binary", 4, 1, 1, "binary", None),
    "r4shifted": ("Canopy 4x1, --tree shifted", 4, 1, 1, "shifted", None),
}
PEER_LABEL = {"mumps": "MUMPS 2 ranks x 1 thread", "superlu_dist": "SuperLU_DIST 2 ranks x 1 thread"}
LABEL = dict([(k, v[0]) for k, v in CANOPY_CONFIGS.items()] + list(PEER_LABEL.items()))
TABLE_KEYS = {
    1: ["r1t2", "r2t1"],
    2: ["eager_min", "eager_max", "r2t1"],
    3: ["c0", "r2t1", "c2"],
    4: ["r2t1", "r4shifted"],
    5: ["r4flat", "r4binary", "r4shifted"],
    6: ["r2t1", "mumps", "superlu_dist"],
}
ALL_KEYS = ["r1t2", "r2t1", "eager_min", "eager_max", "c0", "c2", "r4flat", "r4binary",
            "r4shifted", "mumps", "superlu_dist"]


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="mpi.sh",
        description="Canopy across MPI ranks (ranks vs threads, eager limit, communication "
                    "threads, fan-in, tree shapes) and against MUMPS and SuperLU_DIST on 2 ranks "
                    "(medians of R alternating runs, Markdown tables).",
        epilog="MATRIX: a .mtx/.mtx.gz/.rb/.rsa/.rua file, or --laplacian NXxNYxNZ / NXxNY. "
               "Without MATRIX: --laplacian 50x50x50, --laplacian 60x60x60 and "
               "../shared/matrices/G3_circuit.mtx.gz (as --spd); --quick: 20x20x20 and 30x30x30.")
    p.add_argument("--repeat", type=int, default=3, help="runs per configuration and matrix (default 3)")
    p.add_argument("--quick", action="store_true",
                   help="default matrices replaced by --laplacian 20x20x20 and 30x30x30 (a check "
                        "that everything runs, not a measurement)")
    p.add_argument("--spd", action="store_true",
                   help="the given matrix files are SPD (canopy --kind spd, MUMPS SYM=1)")
    p.add_argument("--with-defaults", action="store_true",
                   help="run the default set as well as the given matrices")
    p.add_argument("--tables", default="1,2,3,4,5,6",
                   help="comma-separated tables to produce (default all); only their "
                        "configurations run")
    p.add_argument("--bind", default="",
                   help="Canopy --bind none|core|LIST for every Canopy run (default: Canopy's own)")
    p.add_argument("--canopy-flags", default=os.environ.get("CANOPY_SOLVE_FLAGS", ""),
                   help="more canopy-solve flags (default $CANOPY_SOLVE_FLAGS)")
    p.add_argument("--mumps-ordering", default="scotch", help="scotch (default), ptscotch, amd, ...")
    p.add_argument("--superlu-ordering", default="metis",
                   help="metis (METIS_AT_PLUS_A, default), parmetis, mmd, mmd_ata, natural")
    p.add_argument("--eager-min", default=None, metavar="ARGS",
                   help="launcher arguments and VAR=VALUE environment settings of the minimum eager "
                        "limit (default: found by probing the MPI library)")
    p.add_argument("--eager-max", default=None, metavar="ARGS",
                   help="the same for the maximum eager limit")
    p.add_argument("--timeout", type=float, default=900.0,
                   help="seconds per run before it is killed and counted as an error (default 900)")
    p.add_argument("--results", default=os.path.join(HERE, "results"),
                   help="folder for the raw JSON lines (default bench/results)")
    p.add_argument("--tables-from", metavar="FILE.jsonl", default=None,
                   help="run nothing: print the tables again from the raw JSON lines of an "
                        "earlier run (bench/results/mpi-*.jsonl)")
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
        matrices = default_matrices(args.quick) + matrices
    args.matrices = matrices
    try:
        args.table_list = sorted({int(t) for t in args.tables.split(",") if t.strip()})
    except ValueError:
        p.error("--tables wants numbers 1..6")
    if not args.table_list or any(t not in TABLE_KEYS for t in args.table_list):
        p.error("--tables wants numbers 1..6")
    wanted = {k for t in args.table_list for k in TABLE_KEYS[t]}
    args.keys = [k for k in ALL_KEYS if k in wanted]
    if args.repeat < 1 or args.timeout <= 0:
        p.error("--repeat must be >= 1, --timeout > 0")
    return args


def default_matrices(quick):
    if quick:
        return [{"kind": "laplacian", "arg": g, "spd": True, "label": "laplacian-" + g}
                for g in ("20x20x20", "30x30x30")]
    mdir = os.environ.get("BENCH_MATRIX_DIR", compare.DEFAULT_MATRIX_DIR)
    out = [{"kind": "laplacian", "arg": g, "spd": True, "label": "laplacian-" + g}
           for g in ("50x50x50", "60x60x60")]
    path = os.path.normpath(os.path.join(mdir, "G3_circuit.mtx.gz"))
    if os.path.exists(path):
        out.append({"kind": "file", "arg": path, "spd": True, "label": "G3_circuit.mtx.gz"})
    else:
        print("note: %s not found, skipped" % path, file=sys.stderr)
    return out


# ---------------------------------------------------------------------------------------------
# the MPI library: flavour, launcher, eager limit settings

def mpi_library():
    """('openmpi' | 'mpich' | 'unknown', first line of <launcher> --version, device or '').
    The launcher is BENCH_MPIRUN's first word, else mpiexec."""
    exe = (shlex.split(os.environ.get("BENCH_MPIRUN", "")) or ["mpiexec"])[0]
    try:
        out = subprocess.run([exe, "--version"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, universal_newlines=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown", "%s not found" % exe, ""
    first = next((ln.strip() for ln in out.splitlines() if ln.strip()), "?")
    if "OpenRTE" in out or "Open MPI" in out:
        return "openmpi", first, ""
    if "HYDRA" in out or "MPICH" in out:
        dev = ""
        try:
            v = subprocess.run(["mpichversion"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               universal_newlines=True, timeout=60).stdout
            m = re.search(r"MPICH Device:\s*(\S+)", v)
            dev = m.group(1) if m else ""
            m = re.search(r"MPICH Version:\s*(\S+)", v)
            if m:
                first = "MPICH %s (%s)" % (m.group(1), dev or "?")
        except (OSError, subprocess.TimeoutExpired):
            pass
        return "mpich", first, dev
    return "unknown", first, ""


def launcher(flavor):
    env = os.environ.get("BENCH_MPIRUN")
    if env:
        return shlex.split(env)
    if flavor == "openmpi":
        return ["mpiexec", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none"]
    return ["mpiexec"]  # MPICH's hydra binds nothing unless asked


def split_settings(text):
    """'--mca a 1 UCX_X=2' -> (['--mca', 'a', '1'], {'UCX_X': '2'})."""
    argv, env = [], {}
    for tok in shlex.split(text or ""):
        if not tok.startswith("-") and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", tok) and not argv[-1:] == ["--mca"]:
            k, v = tok.split("=", 1)
            env[k] = v
        else:
            argv.append(tok)
    return argv, env


def ompi_btl_name():
    """Open MPI's shared-memory BTL: 'sm' from Open MPI 5 on, 'vader' before."""
    try:
        out = subprocess.run(["ompi_info", "--param", "btl", "sm", "--level", "9"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             universal_newlines=True, timeout=60).stdout
        if "btl_sm_eager_limit" in out:
            return "sm"
    except (OSError, subprocess.TimeoutExpired):
        pass
    return "vader"


def shm_free():
    try:
        st = os.statvfs("/dev/shm")
        return st.f_bavail * st.f_frsize
    except OSError:
        return None


def probe_run(base, settings, timeout=120):
    """Run a tiny Canopy problem on 2 ranks with the given eager settings: (ok, output)."""
    argv, env_add = split_settings(settings)
    env = dict(os.environ, **env_add)
    cmd = base + argv + ["-n", "2", compare.find_canopy_solve(), "--json", "--threads", "1",
                         "--laplacian", "6x6x6"]
    try:
        cp = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                            universal_newlines=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, str(e)
    return cp.returncode == 0 and compare.last_json(cp.stdout) is not None, cp.stdout


def eager_settings(args, flavor, device, base):
    """The eager limit minimum and maximum settings for this MPI library, and how they were found.

    Open MPI: the shared-memory BTL's btl_<vader|sm>_eager_limit, with the point-to-point layer
    pinned to ob1 + that BTL (so the parameter is the one in force). The minimum is the value
    the BTL accepts (asked for 1, Open MPI refuses anything below its header size and says the
    minimum); the maximum is the largest of a few candidates that starts: the eager fragments
    must fit several times in the per-peer shared segment (btl_<btl>_segment_size, 4 MiB by
    default, so the eager limit is raised together with the segment).
    MPICH ch4:ucx: on-node messages go through UCX, whose rendezvous threshold UCX_RNDV_THRESH is
    the eager limit (0: everything rendezvous; inf: nothing). Other MPICH devices: the ch4 POSIX
    shared-memory cell size (MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE) or ch3's
    MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE / MPIR_CVAR_NEMESIS_SHM_EAGER_MAX_SZ (not verified here).
    """
    notes = []
    if args.eager_min is not None and args.eager_max is not None:
        return args.eager_min, args.eager_max, ["given on the command line"]
    if flavor == "openmpi":
        btl = ompi_btl_name()
        pin = "--mca pml ob1 --mca btl self,%s" % btl
        lo = args.eager_min
        if lo is None:
            ok, out = probe_run(base, "%s --mca btl_%s_eager_limit 1" % (pin, btl))
            m = re.search(r"eager limit minimum:\s*(\d+)", out)
            if ok:
                lo_val = 1
            elif m:
                lo_val = int(m.group(1))
                notes.append("Open MPI refuses btl_%s_eager_limit 1 (minimum %d)" % (btl, lo_val))
            else:
                lo_val = 1
                notes.append("probe of btl_%s_eager_limit 1 failed without naming a minimum"
                             % btl)
            lo = "%s --mca btl_%s_eager_limit %d" % (pin, btl, lo_val)
        hi = args.eager_max
        if hi is None:
            # segments are files in /dev/shm, one per rank, touched as far as the eager
            # fragments reach: leave room for 2 ranks twice over (a docker /dev/shm is 64 MiB)
            shm = shm_free()
            candidates = [(1 << 30, 64 << 20), (256 << 20, 16 << 20), (None, 448 << 10)]
            for seg, eag in candidates:
                if seg is not None and shm is not None and 4 * seg > shm:
                    notes.append("segment %d MiB skipped: /dev/shm has %d MiB free" % (
                        seg >> 20, shm >> 20))
                    continue
                s = "%s%s --mca btl_%s_eager_limit %d" % (
                    pin, "" if seg is None else " --mca btl_%s_segment_size %d" % (btl, seg), btl, eag)
                ok, _ = probe_run(base, s)
                if ok:
                    hi = s
                    break
                notes.append("refused: %s" % s.replace(pin + " ", ""))
            if hi is None:
                hi = pin
                notes.append("no large eager limit accepted: maximum = library default")
        return lo, hi, notes
    if flavor == "mpich":
        if "ucx" in device:
            return (args.eager_min or "UCX_RNDV_THRESH=0",
                    args.eager_max or "UCX_RNDV_THRESH=inf",
                    ["MPICH %s: on-node messages go through UCX" % device])
        if device.startswith("ch3"):
            return (args.eager_min or "MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE=0 MPIR_CVAR_NEMESIS_SHM_EAGER_MAX_SZ=0",
                    args.eager_max or "MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE=2147483647 "
                                      "MPIR_CVAR_NEMESIS_SHM_EAGER_MAX_SZ=2147483647",
                    ["MPICH %s: settings not verified on this machine" % device])
        return (args.eager_min or "MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE=4096",
                args.eager_max or "MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE=16777216 "
                                  "MPIR_CVAR_CH4_AM_PACK_BUFFER_SIZE=16777216",
                ["MPICH %s: settings not verified on this machine" % device])
    return args.eager_min or "", args.eager_max or "", ["unknown MPI library: eager limit unchanged"]


# ---------------------------------------------------------------------------------------------
# runs

def command_env(key, m, args, ctx):
    """Command line and environment of one run of configuration key on matrix m."""
    inp = ["--laplacian", m["arg"]] if m["kind"] == "laplacian" else [m["arg"]]
    env = dict(os.environ)
    for v in ("CANOPY_THREADS", "CANOPY_SCHEDULER", "CANOPY_NUMA", "CANOPY_BIND", "CANOPY_TRACE",
              "CANOPY_COMM_THREADS", "CANOPY_TREE"):
        env.pop(v, None)  # the command line says it all
    env["OPENBLAS_NUM_THREADS"] = "1"  # one BLAS thread per worker / per peer rank
    env["OMP_NUM_THREADS"] = "1"
    base = list(ctx["launcher"])
    fwd = ["OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"]
    if key in PEERS:
        drv = [os.path.join(HERE, key + "_driver"), "--label", m["label"]]
        if m["spd"]:
            drv.append("--spd")
        drv += ["--ordering", args.mumps_ordering if key == "mumps" else args.superlu_ordering]
        cmd_tail = ["-n", "2"] + drv + inp
        extra_argv = []
    else:
        _, ranks, nthreads, comm, tree, eager = CANOPY_CONFIGS[key]
        extra_argv = []
        if eager:
            extra_argv, eenv = split_settings(ctx["eager_" + eager])
            env.update(eenv)
            fwd += sorted(eenv)
        cmd = [compare.find_canopy_solve(), "--json", "--threads", str(nthreads)]
        if comm is not None:
            cmd += ["--comm-threads", str(comm)]
        if tree is not None:
            cmd += ["--tree", tree]
        if args.bind:
            cmd += ["--bind", args.bind]
        if m["spd"] and m["kind"] == "file":
            cmd += ["--kind", "spd"]
        cmd_tail = ["-n", str(ranks)] + cmd + shlex.split(args.canopy_flags) + inp
    if ctx["flavor"] == "openmpi":
        for v in fwd:
            extra_argv += ["-x", v]
    return base + extra_argv + cmd_tail, env


def run_one(key, m, args, ctx):
    cmd, env = command_env(key, m, args, ctx)
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
    # all processes of the run (launcher and ranks, waited for): CPU seconds per wall second
    rec["process_wall"] = wall
    rec["process_cpu"] = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    rec["solver"] = key if key in PEERS else "canopy"
    rec["config"] = key
    rec["matrix"] = m["label"]
    rec["rc"] = rc
    rec["command"] = " ".join(shlex.quote(c) for c in cmd)
    st = rec.get("status", "ok")
    if isinstance(st, (int, float)):
        rec["status"] = ("ok" if st >= 0 else "error: %s (%d)" % (rec.get("status_text", "status"), st))
    elif rc != 0 and not str(st).startswith(("error", "n/a")):
        rec["status"] = "error: rc=%d %s" % (rc, st)
    return rec


def main(argv):
    args = parse_args(argv)
    if args.tables_from:
        return replay(args.tables_from)
    os.makedirs(args.results, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    raw_path = os.path.join(args.results, "mpi-" + stamp + ".jsonl")
    flavor, version, device = mpi_library()
    base = launcher(flavor)
    ctx = {"flavor": flavor, "mpi": version, "device": device, "launcher": base,
           "eager_min": "", "eager_max": "", "eager_notes": []}
    if "eager_min" in args.keys:
        lo, hi, notes = eager_settings(args, flavor, device, base)
        ctx.update(eager_min=lo, eager_max=hi, eager_notes=notes)
    info = {"machine": threads.machine(), "date": datetime.datetime.now().isoformat(timespec="seconds"),
            "load_before": threads.load_avg(), "argv": argv, "ctx": ctx}
    print("MPI: %s; launcher: %s" % (version, " ".join(base)), file=sys.stderr)
    if ctx["eager_min"] or ctx["eager_max"]:
        print("eager limit minimum: %s\neager limit maximum: %s%s" % (
            ctx["eager_min"], ctx["eager_max"],
            "".join("\n  (%s)" % n for n in ctx["eager_notes"])), file=sys.stderr)
    runs = {}
    with open(raw_path, "w") as raw:
        raw.write(json.dumps({"bench": "mpi", **info}) + "\n")
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
                    rec = run_one(key, m, args, ctx)
                    rec["repeat"] = r
                    rec["load"] = threads.load_avg()
                    raw.write(json.dumps(rec) + "\n")
                    raw.flush()
                    runs.setdefault((m["label"], key), []).append(rec)
                    print("[%d/%d] %-12s %-20s %s  factorize %s s  solve %s s  (load %s)" % (
                        r + 1, args.repeat, key, m["label"], rec.get("status", "?"),
                        compare.fmt(compare.num(rec, "time_factorize"), ".3f"),
                        compare.fmt(compare.num(rec, "time_solve"), ".4f"), rec["load"]),
                        file=sys.stderr)
                    if not compare.ok(rec):
                        dead.add(key)  # n/a or broken: repeating it tells nothing new
        info["load_after"] = threads.load_avg()
        raw.write(json.dumps({"bench": "mpi-end", "load_after": info["load_after"]}) + "\n")
    print_tables(args, runs, info, raw_path)
    return 0


def replay(path):
    """Tables from the raw JSON lines of an earlier run."""
    header, end, runs, labels = None, {}, {}, []
    with open(path) as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            rec = json.loads(line)
            if rec.get("bench") == "mpi":
                header = rec
            elif rec.get("bench") == "mpi-end":
                end = rec
            elif "config" in rec:
                runs.setdefault((rec["matrix"], rec["config"]), []).append(rec)
                if rec["matrix"] not in labels:
                    labels.append(rec["matrix"])
    if header is None:
        sys.exit("%s: not an mpi.py result file (no header line)" % path)
    args = parse_args(header["argv"] + ["--tables-from", path])
    args.matrices = [{"label": lab} for lab in labels]
    args.repeat = max((r.get("repeat", 0) + 1 for recs in runs.values() for r in recs), default=0)
    info = {"machine": header["machine"], "date": header.get("date", "?"), "ctx": header["ctx"],
            "load_before": header.get("load_before", "?"), "load_after": end.get("load_after", "?")}
    print_tables(args, runs, info, path)
    return 0


# ---------------------------------------------------------------------------------------------
# tables

def good(runs, label, key):
    return [r for r in runs.get((label, key), []) if compare.ok(r)]


def med(runs, label, key, field):
    return compare.median_of(good(runs, label, key), field)


def status_of(runs, label, key):
    recs = runs.get((label, key), [])
    g = [r for r in recs if compare.ok(r)]
    if g:
        return "%d/%d" % (len(g), len(recs))
    return str(recs[-1].get("status", "?")).replace("|", "/")[:80] if recs else "-"


def f(v, spec):
    return compare.fmt(v, spec)


def ratio(a, b):
    return a / b if a is not None and b else None


def cpu_per_wall(runs, label, key):
    vals = []
    for r in good(runs, label, key):
        w, c = compare.num(r, "process_wall"), compare.num(r, "process_cpu")
        if w and c is not None:
            vals.append(c / w)
    return statistics.median(vals) if vals else None


def reported(runs, label, key, field):
    """What the runs' JSON said for a non-numeric or identifying key ('n/a' when absent)."""
    vals = []
    for r in good(runs, label, key):
        v = r.get(field)
        if v is not None and str(v) not in vals:
            vals.append(str(v))
    return "/".join(vals) if vals else "n/a"


def row(cells):
    print("| " + " | ".join(str(c) for c in cells) + " |")


def head(cells, align):
    row(cells)
    print("|" + "|".join(align) + "|")


def print_tables(args, runs, info, raw_path):
    mach, ctx = info["machine"], info["ctx"]
    has = set(args.keys)
    labels = [m["label"] for m in args.matrices]
    print("- Machine: %d cores in this process's cpuset, %d NUMA node(s), %s. Load average before: "
          "%s, after: %s (the host is shared)." % (mach["cores"], mach["numa_nodes"],
                                                   mach["cpu"] or "?", info["load_before"],
                                                   info["load_after"]))
    loads = [float(r["load"].split()[0]) for recs in runs.values() for r in recs
             if isinstance(r.get("load"), str) and r["load"] != "?"]
    if loads:
        print("- 1-minute load average after each run: min %.2f, median %.2f, max %.2f (%d cores)."
              % (min(loads), statistics.median(loads), max(loads), mach["cores"]))
    print("- MPI: %s; launcher `%s`; every rank runs OPENBLAS_NUM_THREADS=OMP_NUM_THREADS=1." % (
        ctx["mpi"], " ".join(ctx["launcher"])))
    extra = []
    if args.bind:
        extra.append("--bind " + args.bind)
    if args.canopy_flags:
        extra.append(args.canopy_flags)
    print("- Medians of %d run(s) per configuration, all configurations alternating run by run. "
          "Canopy: `canopy-solve --json` under the launcher%s; times as each solver reports them "
          "(the slowest rank's for the peers). Keys canopy-solve does not print show as n/a." % (
              args.repeat, (", " + " ".join(extra)) if extra else ""))
    print()

    if 1 in args.table_list:
        print("**1. Canopy: 2 ranks x 1 thread vs 1 rank x 2 threads** (ratio = 2x1 / 1x2; target: "
              "2x1 at most %d %% slower, ratio <= %.2f, for factorization and solve; CPU/wall = CPU "
              "seconds all processes of a run got per wall second of the whole run, start-up and "
              "input included: near 2 only on the large matrices when both cores worked)"
              % (round((TARGET_RANKS_VS_THREADS - 1) * 100), TARGET_RANKS_VS_THREADS))
        print()
        head(["matrix", "n", "fact. 1x2 s", "fact. 2x1 s", "fact. ratio", "solve 1x2 s",
              "solve 2x1 s", "solve ratio", "target", "ranks x threads (reported)", "CPU/wall 1x2",
              "CPU/wall 2x1", "runs"],
             ["---", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---", "---", "---:",
              "---:", "---"])
        for lab in labels:
            f12, f21 = med(runs, lab, "r1t2", "time_factorize"), med(runs, lab, "r2t1", "time_factorize")
            s12, s21 = med(runs, lab, "r1t2", "time_solve"), med(runs, lab, "r2t1", "time_solve")
            rf, rs = ratio(f21, f12), ratio(s21, s12)
            n = med(runs, lab, "r2t1", "n") or med(runs, lab, "r1t2", "n")
            if rf is None or rs is None:
                met = "n/a"
            else:
                met = "met" if max(rf, rs) <= TARGET_RANKS_VS_THREADS else "not met"
            rep = "%s / %s" % tuple(
                "%s x %s" % (reported(runs, lab, k, "ranks"), reported(runs, lab, k, "threads_per_rank"))
                for k in ("r1t2", "r2t1"))
            row([lab, f(n, ".0f"), f(f12, ".3f"), f(f21, ".3f"), f(rf, ".2f"), f(s12, ".4f"),
                 f(s21, ".4f"), f(rs, ".2f"), met, rep, f(cpu_per_wall(runs, lab, "r1t2"), ".2f"),
                 f(cpu_per_wall(runs, lab, "r2t1"), ".2f"),
                 ", ".join(status_of(runs, lab, k) for k in ("r1t2", "r2t1"))])
        print()

    if 2 in args.table_list:
        print("**2. Eager limit minimum vs maximum, Canopy 2 ranks x 1 thread** (ratio = min / max; "
              "target within %d %%: 0.95..1.05; the library's default eager limit for reference)"
              % round(TARGET_EAGER * 100))
        print()
        print("- minimum: `%s`" % (ctx.get("eager_min") or "(unchanged)"))
        print("- maximum: `%s`" % (ctx.get("eager_max") or "(unchanged)"))
        for note in ctx.get("eager_notes", []):
            print("- %s" % note)
        print()
        head(["matrix", "fact. min s", "fact. max s", "fact. ratio", "solve min s", "solve max s",
              "solve ratio", "fact. default s", "target", "runs (min, max, default)"],
             ["---", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---", "---"])
        for lab in labels:
            fl, fh = med(runs, lab, "eager_min", "time_factorize"), med(runs, lab, "eager_max", "time_factorize")
            sl, sh = med(runs, lab, "eager_min", "time_solve"), med(runs, lab, "eager_max", "time_solve")
            rf, rs = ratio(fl, fh), ratio(sl, sh)
            if rf is None:
                met = "n/a"
            else:
                worst = max(abs(rf - 1), abs(rs - 1) if rs is not None else 0)
                met = "met" if worst <= TARGET_EAGER else "not met"
            row([lab, f(fl, ".3f"), f(fh, ".3f"), f(rf, ".3f"), f(sl, ".4f"), f(sh, ".4f"),
                 f(rs, ".3f"), f(med(runs, lab, "r2t1", "time_factorize"), ".3f"), met,
                 ", ".join(status_of(runs, lab, k) for k in ("eager_min", "eager_max", "r2t1"))])
        print()

    if 3 in args.table_list:
        print("**3. Communication thread, Canopy 2 ranks x 1 thread** (`--comm-threads 0`: the "
              "workers call MPI themselves; 1: one dedicated thread, the default; 2: two; ratios "
              "against 1)")
        print()
        head(["matrix", "fact. c0 s", "fact. c1 s", "fact. c2 s", "c0/c1", "c2/c1", "solve c0 s",
              "solve c1 s", "solve c2 s", "comm_threads (reported)", "CPU/wall c0, c1, c2", "runs"],
             ["---", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---", "---",
              "---"])
        for lab in labels:
            t = {k: med(runs, lab, k, "time_factorize") for k in ("c0", "r2t1", "c2")}
            s = {k: med(runs, lab, k, "time_solve") for k in ("c0", "r2t1", "c2")}
            row([lab, f(t["c0"], ".3f"), f(t["r2t1"], ".3f"), f(t["c2"], ".3f"),
                 f(ratio(t["c0"], t["r2t1"]), ".2f"), f(ratio(t["c2"], t["r2t1"]), ".2f"),
                 f(s["c0"], ".4f"), f(s["r2t1"], ".4f"), f(s["c2"], ".4f"),
                 " / ".join(reported(runs, lab, k, "comm_threads") for k in ("c0", "r2t1", "c2")),
                 ", ".join(f(cpu_per_wall(runs, lab, k), ".2f") for k in ("c0", "r2t1", "c2")),
                 ", ".join(status_of(runs, lab, k) for k in ("c0", "r2t1", "c2"))])
        print()

    if 4 in args.table_list:
        print("**4. Fan-in: messages and bytes of the factorization with fan-in vs without** "
              "(without = one message per remote update, as Canopy counts it: "
              "`comm_msgs_without_fanin`, `comm_bytes_without_fanin`; saved = 1 - with / without)")
        print()
        head(["matrix", "configuration", "msgs", "msgs without fan-in", "msgs saved", "bytes",
              "bytes without fan-in", "bytes saved", "runs"],
             ["---", "---", "---:", "---:", "---:", "---:", "---:", "---:", "---"])
        for lab in labels:
            for k in ("r2t1", "r4shifted"):
                if k not in has or not runs.get((lab, k)):
                    continue
                mw, mo = med(runs, lab, k, "comm_msgs"), med(runs, lab, k, "comm_msgs_without_fanin")
                bw, bo = med(runs, lab, k, "comm_bytes"), med(runs, lab, k, "comm_bytes_without_fanin")
                row([lab, LABEL[k], f(mw, ".0f"), f(mo, ".0f"),
                     f(1 - mw / mo if mw is not None and mo else None, ".1%"), f(bw, ".4g"),
                     f(bo, ".4g"), f(1 - bw / bo if bw is not None and bo else None, ".1%"),
                     status_of(runs, lab, k)])
        print()

    if 5 in args.table_list:
        print("**5. Tree shapes, Canopy 4 ranks x 1 thread** (oversubscribed on %d cores: times "
              "only compare the shapes with each other). The trees carry the distributed solve "
              "(reductions of the forward contributions, broadcasts of the solution blocks): "
              "bytes sent per rank during the solve, min / max / median / standard deviation over "
              "the ranks as in the PSelInv paper's Table 1, max/min = imbalance; the "
              "factorization's fan-in goes straight to the owner whatever the shape (its per-rank "
              "max/min for reference)" % mach["cores"])
        print()
        head(["matrix", "tree", "tree (reported)", "fact. s", "solve s", "solve bytes/rank min",
              "max", "median", "std-dev", "max/min", "solve msgs (all ranks)",
              "fact. bytes/rank max/min", "runs"],
             ["---", "---", "---", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:",
              "---:", "---"])
        for lab in labels:
            for tree in TREES:
                k = "r4" + tree
                bmin, bmax = med(runs, lab, k, "solve_bytes_rank_min"), med(runs, lab, k, "solve_bytes_rank_max")
                fmin, fmax = med(runs, lab, k, "comm_bytes_rank_min"), med(runs, lab, k, "comm_bytes_rank_max")
                row([lab, tree, reported(runs, lab, k, "tree"),
                     f(med(runs, lab, k, "time_factorize"), ".3f"),
                     f(med(runs, lab, k, "time_solve"), ".4f"), f(bmin, ".4g"), f(bmax, ".4g"),
                     f(med(runs, lab, k, "solve_bytes_rank_median"), ".4g"),
                     f(med(runs, lab, k, "solve_bytes_rank_stddev"), ".3g"),
                     f(ratio(bmax, bmin), ".2f"),
                     f(med(runs, lab, k, "solve_comm_msgs"), ".0f"),
                     f(ratio(fmax, fmin), ".2f"),
                     status_of(runs, lab, k)])
        print()

    if 6 in args.table_list:
        print("**6. Canopy vs MUMPS vs SuperLU_DIST, 2 ranks x 1 thread each** (MUMPS: centralized "
              "input, ordering on the host; SuperLU_DIST: pdgssvx on a 1 x 2 grid, LU; times of "
              "the slowest rank; backward error without refinement in the peers, Canopy's after "
              "its own; ratio = Canopy / peer, below 1: Canopy faster; target: Canopy fastest in "
              "factorization)")
        print()
        head(["matrix", "solver", "ordering", "analyze s", "factorize s", "solve s",
              "backward err", "nnz(factor)", "flops", "Canopy/peer analyze", "Canopy/peer fact.",
              "Canopy/peer solve", "peak mem/rank max", "runs"],
             ["---", "---", "---", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:",
              "---:", "---:", "---"])
        for lab in labels:
            ca = {fld: med(runs, lab, "r2t1", fld) for fld in ("time_analyze", "time_factorize", "time_solve")}
            facts = {}
            for k in ("r2t1", "mumps", "superlu_dist"):
                recs = good(runs, lab, k)
                last = (recs or runs.get((lab, k), [{}]) or [{}])[-1]
                t = {fld: med(runs, lab, k, fld) for fld in ("time_analyze", "time_factorize", "time_solve")}
                facts[k] = t["time_factorize"]
                is_peer = k != "r2t1"
                row([lab, "canopy" if k == "r2t1" else k,
                     str(last.get("ordering", "scotch (Canopy default)" if k == "r2t1" else "")) or "-",
                     f(t["time_analyze"], ".3f"), f(t["time_factorize"], ".3f"), f(t["time_solve"], ".4f"),
                     f(med(runs, lab, k, "backward_error"), ".1e"),
                     f(med(runs, lab, k, "nnz_factor"), ".4g"), f(med(runs, lab, k, "flops"), ".3g"),
                     f(ratio(ca["time_analyze"], t["time_analyze"]), ".2f") if is_peer else "-",
                     f(ratio(ca["time_factorize"], t["time_factorize"]), ".2f") if is_peer else "-",
                     f(ratio(ca["time_solve"], t["time_solve"]), ".2f") if is_peer else "-",
                     f(med(runs, lab, k, "peak_memory_rank_max"), ".3g"),
                     status_of(runs, lab, k)])
            peers = [facts[k] for k in PEERS if facts.get(k) is not None]
            if facts.get("r2t1") is None or not peers:
                verdict = "n/a"
            else:
                verdict = "met" if facts["r2t1"] < min(peers) else "not met"
            row([lab, "**target: Canopy fastest (factorization)**", verdict] + [""] * 11)
        print()

    print("Raw JSON lines: %s" % os.path.relpath(raw_path, ROOT))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
