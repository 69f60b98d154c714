#!/usr/bin/env python3
"""PT-SCOTCH against sequential SCOTCH: what the parallel ordering costs and what it gives.

For each matrix, canopy-solve --analyze-only --json runs with ordering=scotch on one rank (the
reference: SCOTCH on rank 0) and with ordering=ptscotch on each rank count (PT-SCOTCH on every
rank), one worker thread per rank and ordering-threads=1 so that both orderings run on one core
per rank. The table gives nnz(L), the predicted flops and their ratios to the sequential
ordering's, and the ordering time (medians of --repeat alternating runs).
"""
import argparse
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402  (canopy-solve lookup, JSON parsing)
import mpi  # noqa: E402  (the MPI flavour and its launcher)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--ranks", default="1,2,4")
    p.add_argument("matrices", nargs="*", help="files, or laplacian:NXxNYxNZ (default: 50^3, 60^3, G3_circuit)")
    return p.parse_args(argv)


def run(cmd, env):
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    r = compare.last_json(p.stdout)
    if p.returncode != 0 or r is None:
        return {"status": "error: exit %d: %s" % (p.returncode, (p.stderr.strip().splitlines() or ["?"])[-1][:120])}
    return r


def med(rs, key):
    vals = [r.get(key) for r in rs if isinstance(r.get(key), (int, float))]
    return statistics.median(vals) if vals else None


def main(argv):
    args = parse_args(argv)
    flavor, version, _ = mpi.mpi_library()
    launch = mpi.launcher(flavor)
    g3 = os.path.join(os.environ.get("BENCH_MATRIX_DIR", compare.DEFAULT_MATRIX_DIR), "G3_circuit.mtx.gz")
    mats = args.matrices or ["laplacian:50x50x50", "laplacian:60x60x60", g3]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    solve = compare.find_canopy_solve()
    ranks = [int(x) for x in args.ranks.split(",")]
    print("**PT-SCOTCH vs SCOTCH** (%s; canopy-solve --analyze-only, 1 thread per rank, ordering-threads 1; "
          "medians of %d; ratios = PT-SCOTCH / sequential SCOTCH on rank 0)\n" % (version, args.repeat))
    print("| matrix | ordering | ranks | nnz(L) | flops | nnz(L) ratio | flops ratio | ordering s | analysis s | status |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for m in mats:
        inp = ["--laplacian", m.split(":", 1)[1]] if m.startswith("laplacian:") else \
              (["--kind", "spd", m] if "G3" in os.path.basename(m) else [m])
        base = [solve, "--json", "--analyze-only", "--threads", "1", "--ordering-threads", "1"]
        confs = [("scotch", 1)] + [("ptscotch", R) for R in ranks]
        runs = {c: [] for c in confs}
        for _ in range(args.repeat):
            for o, R in confs:  # alternating
                cmd = base + ["--ordering", o] + inp
                runs[(o, R)].append(run(launch + ["-n", str(R)] + cmd if R > 1 or o == "ptscotch" else cmd, env))
        ref = runs[("scotch", 1)]
        rn, rf = med(ref, "nnz_factor"), med(ref, "flops")
        name = m.split(":", 1)[1] if m.startswith("laplacian:") else os.path.basename(m)
        for o, R in confs:
            rs = [r for r in runs[(o, R)] if r.get("nnz_factor")]
            n, f = med(rs, "nnz_factor"), med(rs, "flops")
            print("| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s |" % (
                name, o, R, "%d" % n if n else "", "%.3g" % f if f else "",
                "%.3f" % (n / rn) if n and rn else "", "%.3f" % (f / rf) if f and rf else "",
                "%.2f" % med(rs, "time_order") if rs else "", "%.2f" % med(rs, "time_analyze") if rs else "",
                "ok (%d/%d)" % (len(rs), len(runs[(o, R)])) if rs else runs[(o, R)][0].get("status", "error")))
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
