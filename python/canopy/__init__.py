"""Canopy: a hybrid MPI + threads sparse direct solver (LL^T, LDL^T, LU; real and complex).

    import canopy
    x = canopy.spsolve(A, b)                      # A any scipy.sparse matrix
    solve = canopy.factorized(A, threads=4)       # factors kept: solve(b1), solve(b2), ...
    s = canopy.Solver(A, kind="spd", ordering="scotch")
    s.analyze(); s.factorize(); x = s.solve(b); s.factorize(A2)   # A2: same pattern
    y = s.solve(b, trans="T")                     # A^T y = b ("H": A^H), as SciPy's splu
    d = s.selinv("diag")                          # the diagonal of A^-1
"""
from .solver import (CanopyError, CanopyWarning, Solver, factorized, spsolve)  # noqa: F401
from ._lib import LIBRARY  # noqa: F401

__all__ = ["Solver", "spsolve", "factorized", "CanopyError", "CanopyWarning"]
__version__ = "0.1.0"
