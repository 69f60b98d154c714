#!/usr/bin/env python3
"""Memory per rank: is rank 0 heavier than the others?

For each matrix and rank count, Canopy (canopy-solve --json, centralized and --distributed input)
and MUMPS (mumps_driver, centralized assembled input) run under mpiexec; each rank measures the
process's peak resident set (getrusage) at the end, and the table gives rank 0's, the mean of the
others and their ratio (issue 14's target for Canopy with distributed input: <= 1.2), with
Canopy's own count (its allocator, rank 0 / mean of the others) beside. Medians of --repeat runs.

--together P1,P2 (issue 31): does adding ranks add memory? For one rank and P ranks (one thread
each), every rank's peak resident set minus that layout's baseline (the same command on a 3x3x3
Laplacian: MPI, the libraries, the threads), summed over the ranks and against one rank's
(target <= 1.3x), and the heaviest rank against its share, one rank's / P (target <= 1.6x), with
Canopy's prediction of its heaviest rank beside the measured one.
"""
import argparse
import os
import shlex
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402  (canopy-solve lookup, JSON parsing)
import mpi  # noqa: E402  (the MPI flavour and its launcher)

TARGET = 1.2


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--ranks", default="2,4")
    p.add_argument("--no-mumps", action="store_true", help="Canopy only")
    p.add_argument("--no-ptscotch", action="store_true", help="no ordering=scotch row (builds without PT-SCOTCH, where distributed input orders with SCOTCH anyway)")
    p.add_argument("--together", metavar="P1,P2,...", help="memory of P ranks together against one rank "
                   "(baselines subtracted; default matrix: --laplacian 60x60x60, SPD)")
    p.add_argument("--laplacian", metavar="NXxNYxNZ", help="a generated 7-point Laplacian (SPD) as the matrix")
    p.add_argument("--fanin-cuts", action="store_true", help="--together: a row of Canopy with distributed input and "
                   "fanin-cuts=on (fan-in buffers cut into messages of their own rows)")
    p.add_argument("matrices", nargs="*")
    return p.parse_args(argv)


def run(cmd, env):
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    r = compare.last_json(p.stdout)
    if p.returncode != 0 or r is None:
        return {"status": "error: exit %d: %s" % (p.returncode, (p.stderr.strip().splitlines() or ["?"])[-1][:120])}
    return r


def med(vals):
    vals = [v for v in vals if isinstance(v, (int, float))]
    return statistics.median(vals) if vals else None


def together(args, launch, fwd, env, version):
    """Issue 31's measure: the ranks' memory summed, and the heaviest rank, against one rank."""
    solve = compare.find_canopy_solve()
    spec = ["--laplacian", args.laplacian or "60x60x60"] if (args.laplacian or not args.matrices) else [args.matrices[0]]
    spd = bool(args.laplacian or not args.matrices) or "G3" in spec[-1]
    tiny = ["--laplacian", "3x3x3"]
    ranks = [int(x) for x in args.together.split(",")]
    if 1 not in ranks:
        ranks = [1] + ranks
    confs = [("canopy", "centralized", []), ("canopy", "distributed", ["--distributed"])]
    if args.fanin_cuts:
        confs.append(("canopy", "distributed, fanin-cuts=on", ["--distributed", "--fanin-cuts", "on"]))
    if not args.no_mumps:
        confs.append(("mumps", "centralized", []))

    def cmd(solver, extra, mat):
        if solver == "canopy":
            return [solve, "--json", "--threads", "1"] + (["--kind", "spd"] if spd else []) + extra + mat
        return [os.path.join(HERE, "mumps_driver"), "--label", " ".join(mat)] + (["--spd"] if spd else []) + \
            ["--ordering", "scotch"] + mat

    res = {}
    for _ in range(args.repeat):
        for R in ranks:
            for solver, inp, extra in confs:  # alternating
                base = run(launch + fwd + ["-n", str(R)] + cmd(solver, extra, tiny), env)
                full = run(launch + fwd + ["-n", str(R)] + cmd(solver, extra, spec), env)
                res.setdefault((solver, inp, R), []).append((base, full))
    print("**Memory of P ranks together against one rank** (%s, one thread per rank; MB of peak resident set "
          "per process (getrusage) minus the same layout's baseline (the 3x3x3 Laplacian); %s; medians of %d; "
          "targets: together <= 1.3x one rank, heaviest <= 1.6x its share)\n" % (" ".join(spec), version, args.repeat))
    print("| solver | input | ranks | baseline per rank | together | x one rank | heaviest | its share | x share | "
          "predicted heaviest (Canopy) | status |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    one = {}
    for solver, inp, _ in confs:
        for R in ranks:
            tot, heavy, basev, pred, good = [], [], [], [], 0
            for base, full in res[(solver, inp, R)]:
                if not (base.get("rss_peak_rank0") and full.get("rss_peak_rank0") and full.get("rss_peak_rank_max")):
                    continue
                good += 1
                b = (base["rss_peak_rank0"] + (R - 1) * base["rss_peak_rank_mean"]) / R
                total = full["rss_peak_rank0"] + (R - 1) * full["rss_peak_rank_mean"]
                tot.append(total - R * b)
                heavy.append(full["rss_peak_rank_max"] - base.get("rss_peak_rank_max", b))
                basev.append(b)
                if full.get("memory_predicted_rank_max"):
                    pred.append(full["memory_predicted_rank_max"])
            runs = res[(solver, inp, R)]
            if not good:
                print("| %s | %s | %d | | | | | | | | %s |" % (solver, inp, R, runs[0][1].get("status", runs[0][0].get("status", "error"))))
                continue
            t, h, b = med(tot), med(heavy), med(basev)
            if R == 1:
                one[(solver, inp)] = t
            o = one.get((solver, inp))
            share = o / R if o else None
            print("| %s | %s | %d | %.0f | %.0f | %s | %.0f | %s | %s | %s | ok (%d/%d) |" % (
                solver, inp, R, b / 1e6, t / 1e6, "%.2f" % (t / o) if o else "", h / 1e6,
                "%.0f" % (share / 1e6) if share else "", "%.2f" % (h / share) if share else "",
                "%.0f" % (med(pred) / 1e6) if pred else "-", good, len(runs)))
        sys.stdout.flush()
    return 0


def main(argv):
    args = parse_args(argv)
    flavor, version, _ = mpi.mpi_library()
    launch = mpi.launcher(flavor)
    g3 = os.path.join(os.environ.get("BENCH_MATRIX_DIR", compare.DEFAULT_MATRIX_DIR), "G3_circuit.mtx.gz")
    mats = args.matrices or [g3]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    fwd = []
    if flavor == "openmpi":
        fwd = ["-x", "OPENBLAS_NUM_THREADS", "-x", "OMP_NUM_THREADS"]
    if args.together:
        return together(args, launch, fwd, env, version)
    solve = compare.find_canopy_solve()
    print("**Peak resident memory per rank** (MB; getrusage at the end of each run; %s; medians of %d; "
          "ratio = rank 0 / mean of the other ranks, target <= %.1f with distributed input)\n"
          % (version, args.repeat, TARGET))
    print("| matrix | ranks | solver | input | rank 0 | others (mean) | ratio | Canopy's count: rank 0 / others | "
          "factorize (s) | status |")
    print("|---|---:|---|---|---:|---:|---:|---|---:|---|")
    for m in mats:
        spd = "G3" in os.path.basename(m)
        for R in [int(x) for x in args.ranks.split(",")]:
            # distributed input orders with PT-SCOTCH by default (ordering=auto) in PT-SCOTCH builds;
            # ordering=scotch gathers the pattern on rank 0 for the sequential ordering
            confs = [("canopy", "centralized", []), ("canopy", "distributed", ["--distributed"])]
            if not args.no_ptscotch:
                confs.append(("canopy", "distributed, scotch", ["--distributed", "--ordering", "scotch"]))
            if not args.no_mumps:
                confs.append(("mumps", "centralized", []))
            rows = {c[:2]: [] for c in confs}
            for _ in range(args.repeat):
                for solver, inp, extra in confs:  # alternating
                    if solver == "canopy":
                        cmd = [solve, "--json", "--threads", "1"] + (["--kind", "spd"] if spd else []) + extra + [m]
                    else:
                        cmd = [os.path.join(HERE, "mumps_driver"), "--label", os.path.basename(m)] + \
                              (["--spd"] if spd else []) + ["--ordering", "scotch", m]
                    rows[(solver, inp)].append(run(launch + fwd + ["-n", str(R)] + cmd, env))
            for solver, inp, _ in confs:
                rs = rows[(solver, inp)]
                ok = [r for r in rs if r.get("rss_peak_rank0")]
                r0 = med([r.get("rss_peak_rank0") for r in ok])
                rm = med([r.get("rss_peak_rank_mean") for r in ok])
                c0 = med([r.get("peak_memory_rank0") for r in ok])
                cm = med([r.get("peak_memory_rank_mean") for r in ok])
                tf = med([r.get("time_factorize") for r in ok])
                st = "ok (%d/%d)" % (len(ok), len(rs)) if ok else rs[0].get("status", "error")
                print("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                    os.path.basename(m), R, solver, inp,
                    "%.0f" % (r0 / 1e6) if r0 else "", "%.0f" % (rm / 1e6) if rm else "",
                    "%.2f" % (r0 / rm) if r0 and rm else "",
                    "%.0f / %.0f" % (c0 / 1e6, cm / 1e6) if c0 and cm else "-",
                    "%.2f" % tf if tf else "", st))
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
