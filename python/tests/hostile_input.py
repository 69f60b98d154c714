"""A matrix whose index arrays lie (built without SciPy's full check, or changed afterwards),
given to every path that takes a matrix: each must raise ValueError before anything reads the
indices. Run in a subprocess by test_canopy.py (a crash then fails the test, not pytest):
python hostile_input.py CASE; exit status 0 when every path raised ValueError."""
import sys

import numpy as np
import scipy.sparse as sp

import canopy

N = 6


def tridiagonal(fmt):
    A = sp.diags([-np.ones(N - 1), 3 * np.ones(N), -np.ones(N - 1)], [-1, 0, 1], format=fmt)
    if fmt in ("csc", "csr", "bsr"):
        A.indptr = A.indptr.astype(np.int64)
        A.indices = A.indices.astype(np.int64)
    return A


def hostile(case):
    A = tridiagonal("csr" if case.startswith("csr") else "coo" if case.startswith("coo") else
                    "bsr" if case.startswith("bsr") else "csc")
    if case in ("csc_huge", "csr_huge", "bsr_huge"):
        A.indices[4] = 2 ** 40
    elif case == "csc_negative":
        A.indices[4] = -3
    elif case == "csc_n":
        A.indices[4] = N
    elif case == "csc_decreasing":
        A.indptr[3] = A.indptr[5]
    elif case == "csc_indptr_short":
        A.indptr = A.indptr[:-1]
    elif case == "csc_indptr_end":
        A.indptr[-1] = 10 ** 12
    elif case == "csc_float_indices":
        A.indices = A.indices.astype(float)
    elif case == "csc_data_short":
        A.data = A.data[:-2]
    elif case == "coo_huge":
        row = A.row.astype(np.int64)
        row[3] = 2 ** 40
        A.coords = (row, A.col.astype(np.int64))   # (the row setter would wrap it to 32 bits)
    elif case == "coo_negative":
        A.col[3] = -1
    else:
        raise SystemExit("unknown case %s" % case)
    return A


CASES = ("csc_huge", "csr_huge", "bsr_huge", "csc_negative", "csc_n", "csc_decreasing", "csc_indptr_short",
         "csc_indptr_end", "csc_float_indices", "csc_data_short", "coo_huge", "coo_negative")

if __name__ == "__main__":
    M = hostile(sys.argv[1])
    good = tridiagonal("csc")
    paths = [("Solver, kind inferred", lambda: canopy.Solver(M)),
             ("Solver, kind general", lambda: canopy.Solver(M, kind="general")),
             ("spsolve", lambda: canopy.spsolve(M, np.ones(N))),
             ("factorized", lambda: canopy.factorized(M)),
             ("factorize(A_new)", lambda: canopy.Solver(good).factorize(M)),
             ("distributed", lambda: canopy.Solver(M, kind="symmetric", distributed=True)),
             ("distributed factorize(A_new)",
              lambda: canopy.Solver(good, kind="general", distributed=True).factorize(M))]
    fails = 0
    for name, call in paths:
        try:
            call()
            print("FAIL: %s accepted the matrix" % name)
            fails += 1
        except ValueError as e:
            print("%s: %s" % (name, e))
        except Exception as e:   # noqa: BLE001 (anything but ValueError is a failure)
            print("FAIL: %s raised %r" % (name, e))
            fails += 1
    sys.exit(1 if fails else 0)
