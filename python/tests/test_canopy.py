"""The Python package against SciPy: every kind, real and complex, the shared matrices,
refactorization, many right-hand sides, input formats, selected inversion, bad input, Ctrl-C."""
import signal
import subprocess
import sys
import threading
import time
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sla
from scipy.sparse.linalg import MatrixRankWarning

import canopy
import hostile_input
from conftest import shared


def laplacian(nx, ny=1, nz=1):
    def d(m):
        return sp.diags([-np.ones(m - 1), 2 * np.ones(m), -np.ones(m - 1)], [-1, 0, 1])
    e = [sp.identity(m) for m in (nx, ny, nz)]
    A = sp.kron(sp.kron(d(nx), e[1]), e[2]) + sp.kron(sp.kron(e[0], d(ny)), e[2]) + sp.kron(sp.kron(e[0], e[1]), d(nz))
    return A.tocsc()


def backward_error(A, x, b):
    r = b - A @ x
    return np.abs(r).max() / (abs(A).sum(axis=1).max() * np.abs(x).max() + np.abs(b).max())


def check(A, x, b, ref=None, tol=1e-12, ftol=1e-8):
    assert backward_error(A, x, b) <= tol
    if ref is not None:
        assert np.abs(x - ref).max() <= ftol * np.abs(ref).max()


# (file, kind given or None to infer, agreement with SciPy's x: both are backward stable, so it
# is the condition number's): SPD, symmetric indefinite, unsymmetric, complex
SHARED = [("nos5.mtx", "spd", 1e-8), ("bcsstk26.mtx", None, 1e-6), ("hangGlider_2.mtx", None, 1e-4),
          ("sherman3.mtx", None, 1e-8), ("west0479.mtx", None, 1e-6), ("nnc1374.mtx", None, 1e-6),
          ("young1c.mtx", None, 1e-8), ("helmholtz_2D.mtx.gz", None, 1e-8), ("cryg2500.mtx", None, 1e-4)]


@pytest.mark.parametrize("name,kind,ftol", SHARED)
def test_shared_against_scipy(name, kind, ftol):
    A = shared(name)
    rng = np.random.default_rng(1)
    b = rng.standard_normal(A.shape[0])
    if np.iscomplexobj(A.data):
        b = b + 1j * rng.standard_normal(A.shape[0])
    x = canopy.spsolve(A, b, kind=kind, threads=2)
    check(A, x, b, sla.spsolve(A, b), tol=1e-12, ftol=ftol)


def test_kinds_and_inference():
    A = laplacian(12, 11)
    b = np.arange(A.shape[0], dtype=float)
    ref = sla.spsolve(A, b)
    for kind, fact in (("spd", "llt"), ("symmetric", "ldlt"), ("general", "lu")):
        with canopy.Solver(A, kind=kind) as s:
            check(A, s.solve(b), b, ref)
            assert s.stats["factorization"] == fact
    with canopy.Solver(A) as s:
        assert s.kind == "symmetric"
    U = (A + sp.triu(A, 1) * 0.5).tocsc()
    with canopy.Solver(U) as s:
        assert s.kind == "general"
        check(U, s.solve(b), b, sla.spsolve(U, b))


def diffusion_convection(n=200, jump=1e10, c=0.02):
    """-(k u')' + c u' on (0, 1), central differences, k = 1 on the left half and @p jump on the
    right: unsymmetric by c / h only, 5e-15 of max|A| (a tolerance of 1e-14 calls it symmetric)."""
    h = 1.0 / (n + 1)
    k = np.where(np.arange(n + 1) < (n + 1) // 2, 1.0, jump)   # at the midpoints i - 1/2
    return sp.diags([-k[1:-1] / h ** 2 - c / (2 * h), (k[:-1] + k[1:]) / h ** 2, -k[1:-1] / h ** 2 + c / (2 * h)],
                    [-1, 0, 1], format="csc")


def test_inferred_symmetry_is_exact():
    """Without kind, symmetric only when A == A^T exactly: badly scaled unsymmetric matrices
    whose asymmetry is tiny next to max|A| are solved as given, as SciPy solves them."""
    A = sp.csc_matrix(np.array([[1e10, 0, 0], [0, 1e-6, 1e-5], [0, 0, 1e-6]]))
    b = np.ones(3)
    with canopy.Solver(A) as s:
        assert s.kind == "general"
        x = s.refine(b)
    assert abs(x[1] - -9e6) <= 1e-12 * 9e6
    check(A, x, b, sla.spsolve(A, b), ftol=1e-12)
    C = diffusion_convection()
    b = np.ones(C.shape[0])
    assert abs(C - C.T).max() <= 1e-14 * abs(C).max()           # symmetric to the old tolerance
    ref = sla.spsolve(C, b)
    lower = sla.spsolve((sp.tril(C) + sp.tril(C, -1).T).tocsc(), b)
    assert np.abs(lower - ref).max() >= 0.1 * np.abs(ref).max()  # and its lower triangle is 11% off
    with canopy.Solver(C) as s:
        assert s.kind == "general"
    for refine in (True, False):
        x = canopy.spsolve(C, b, refine=refine)
        assert np.abs(x - ref).max() <= 1e-12 * np.abs(ref).max()
    # complex: Hermitian but for the last bit of one entry's imaginary part
    H = (laplacian(6, 5) * (1 + 0j) + sp.diags(1j * np.ones(29), 1) - sp.diags(1j * np.ones(29), -1)).tocsc()
    with canopy.Solver(H) as s:
        assert s.kind == "hermitian"
    H2 = H.copy()
    H2[3, 4] = H2[3, 4] * (1 + 2 ** -52)
    z = np.arange(30) * (1 - 1j)
    with canopy.Solver(H2) as s:
        assert s.kind == "general"
        check(H2, s.refine(z), z, sla.spsolve(H2, z), ftol=1e-12)
    # exactly symmetric, duplicates summed first (as the library sums them), explicit zeros aside
    L = laplacian(5, 4).tocoo()
    D = sp.coo_matrix((np.concatenate([L.data / 2, L.data / 2, [0.0]]),
                       (np.concatenate([L.row, L.row, [0]]), np.concatenate([L.col, L.col, [7]]))), shape=L.shape)
    with canopy.Solver(D) as s:
        assert s.kind == "symmetric"
        check(L, s.solve(np.ones(20)), np.ones(20), sla.spsolve(L.tocsc(), np.ones(20)))


def test_explicit_symmetric_kind_needs_exact_symmetry():
    """kind='symmetric'/'spd'/'hermitian' for a matrix symmetric only to rounding: ValueError (the
    lower triangle would be another matrix); its symmetric part (A + A.T) / 2 is exactly
    symmetric, and is then the matrix solved."""
    C = diffusion_convection()
    b = np.ones(C.shape[0])
    for kind in ("symmetric", "spd", "hermitian"):
        with pytest.raises(ValueError, match=r"not (symmetric|Hermitian).*\(A \+ A(\.conj\(\))?\.T\) / 2"):
            canopy.Solver(C, kind=kind)
    S = ((C + C.T) / 2).tocsc()
    x = canopy.spsolve(S, b, kind="spd")
    check(S, x, b, sla.spsolve(S, b), ftol=1e-12)
    H = (laplacian(4, 4) * (2 + 0j) + sp.diags(1j * np.ones(15), 1) - sp.diags(1j * np.ones(15), -1)).tocsc()
    H[2, 2] += 1e-300j   # not real on the diagonal: not Hermitian
    with pytest.raises(ValueError, match="not Hermitian"):
        canopy.Solver(H, kind="hermitian")
    Hh = ((H + H.conj().T) / 2).tocsc()
    with canopy.Solver(Hh, kind="hermitian") as s:
        z = np.ones(16) + 1j
        check(Hh, s.solve(z), z, sla.spsolve(Hh, z))


def test_complex_kinds():
    A = laplacian(9, 8).astype(complex)
    H = (A + 1j * (sp.triu(A, 1) - sp.tril(A, -1)) * 0.3).tocsc()   # Hermitian positive definite
    S = (A * (1 + 0.5j)).tocsc()                                     # complex symmetric
    rng = np.random.default_rng(2)
    b = rng.standard_normal(A.shape[0]) + 1j * rng.standard_normal(A.shape[0])
    with canopy.Solver(H) as s:
        assert s.kind == "hermitian"
        check(H, s.solve(b), b, sla.spsolve(H, b))
    with canopy.Solver(S) as s:
        assert s.kind == "symmetric"
        check(S, s.solve(b), b, sla.spsolve(S, b))
    # a real matrix, complex right-hand side: refused (the factors are real)
    with canopy.Solver(laplacian(5, 5)) as s, pytest.raises(ValueError):
        s.solve(b[:25])


def trans_cases():
    """(kind, A) for every kind and arithmetic (complex positive definite is kind='hermitian',
    LL^H), each A's transpose and conjugate transpose distinct from A where the kind allows."""
    L = laplacian(6, 5)
    n = L.shape[0]
    R = sp.random(n, n, density=0.1, random_state=4, format="csc")
    G = (L + R + sp.diags(0.4 * np.ones(n - 1), 1)).tocsc()
    Gc = (G + 1j * sp.random(n, n, density=0.1, random_state=5) + 0.5j * sp.identity(n)).tocsc()
    S = (L - 3 * sp.identity(n) + R + R.T).tocsc()                        # symmetric indefinite
    Sc = (S * (1 + 0.5j) + 1j * sp.diags([np.ones(n - 2), np.ones(n - 2)], [-2, 2])).tocsc()   # complex symmetric
    Hpd = (L * (1 + 0j) + 0.3j * (sp.triu(L, 1) - sp.tril(L, -1))).tocsc()   # Hermitian positive definite
    Hin = (Hpd - 3 * sp.identity(n)).tocsc()                               # Hermitian indefinite
    return [("general", G), ("general", Gc), ("symmetric", S), ("symmetric", Sc), ("spd", L), ("hermitian", Hpd),
            ("hermitian", Hin), ("hermitian", L)]


@pytest.mark.parametrize("case", range(8))
def test_transposed_solves(case):
    """solve/refine/__call__/factorized with trans 'N', 'T', 'H' against SciPy's
    splu(A).solve(b, trans) and against the exact solution of A^T x = b, A^H x = b: every kind,
    real and complex, one and several right-hand sides, the same factors throughout."""
    kind, A = trans_cases()[case]
    n = A.shape[0]
    cx = np.iscomplexobj(A.data)
    rng = np.random.default_rng(case)
    B = rng.standard_normal((n, 3)) + (1j * rng.standard_normal((n, 3)) if cx else 0)
    lu = sla.splu(A.tocsc())
    ops = {"N": A, "T": A.T.tocsc(), "H": A.conj().T.tocsc()}
    with canopy.Solver(A, kind=kind) as s:
        f = canopy.factorized(A, kind=kind)
        for t, M in ops.items():
            X = np.linalg.solve(M.toarray(), B)      # the exact solution of op(A) X = B
            ref = lu.solve(B, trans=t)
            for got in (s.solve(B, trans=t), s.refine(B, trans=t), s(B, trans=t), f(B, trans=t)):
                assert got.shape == B.shape
                for j in range(3):
                    check(M, got[:, j], B[:, j], X[:, j], tol=1e-12, ftol=1e-9)
                assert np.abs(got - ref).max() <= 1e-9 * np.abs(ref).max()
            x1 = s.refine(B[:, 1], x=s.solve(B[:, 1], trans=t), trans=t)
            check(M, x1, B[:, 1], X[:, 1], tol=1e-14, ftol=1e-9)
            assert s.stats["backward_error"] <= 1e-14
            assert f(B[:, 0], t).shape == (n,)
        f.close()
        # the operators differ where they should: the test above means something
        if kind == "general":
            assert np.abs(s.solve(B, "T") - s.solve(B)).max() > 1e-3 * np.abs(s.solve(B)).max()
        if cx and kind in ("general", "symmetric"):
            assert np.abs(s.solve(B, "H") - s.solve(B, "T")).max() > 1e-3 * np.abs(s.solve(B)).max()
        with pytest.raises(ValueError, match="trans"):
            s.solve(B, trans="C")


def test_refactorization_and_many_rhs():
    A = laplacian(10, 9, 8)
    n = A.shape[0]
    rng = np.random.default_rng(3)
    B = rng.standard_normal((n, 5))
    s = canopy.Solver(A, kind="spd", threads=2)
    s.analyze()
    s.factorize()
    X = s.solve(B)
    assert X.shape == (n, 5)
    for j in range(5):
        check(A, X[:, j], B[:, j])
    t_analyze = s.stats["time_analyze"]
    # same pattern, new values: the analysis is reused
    A2 = (A + 3 * sp.identity(n)).tocsc()
    s.factorize(A2)
    assert s.stats["time_analyze"] == t_analyze
    X2 = s.refine(B)
    for j in range(5):
        check(A2, X2[:, j], B[:, j])
    assert s.stats["backward_error"] <= 1e-12
    with pytest.raises(ValueError):
        s.factorize(laplacian(10, 9, 7))   # another pattern
    s.close()


def test_input_formats():
    A = laplacian(7, 6)
    b = np.ones(A.shape[0])
    ref = sla.spsolve(A, b)
    forms = [A.tocsr(), A.tocoo(), A.tolil(), sp.csc_array(A), sp.csr_array(A), A.astype(np.float32)]
    for M in forms:
        check(A, canopy.spsolve(M, b), b, ref)
    # duplicates in COO are summed, as SciPy does
    C = A.tocoo()
    D = sp.coo_matrix((np.concatenate([C.data, C.data]), (np.concatenate([C.row, C.row]),
                                                          np.concatenate([C.col, C.col]))), shape=A.shape)
    check(2 * A, canopy.spsolve(D, b), b, ref / 2)
    f = canopy.factorized(A)
    check(A, f(b), b, ref)
    check(A, f.solve(2 * b), 2 * b, 2 * ref)


def test_selinv_against_dense():
    A = laplacian(8, 7).tocsc()
    Z = np.linalg.inv(A.toarray())
    with canopy.Solver(A, kind="spd", selinv_memory="separate") as s:
        d = s.selinv("diag")
        assert np.abs(d - np.diag(Z)).max() <= 1e-12 * np.abs(Z).max()
        P = s.selinv("pattern")
        assert P.nnz >= A.nnz
        Pc = P.tocoo()
        assert np.abs(Pc.data - Z[Pc.row, Pc.col]).max() <= 1e-12 * np.abs(Z).max()
        rows, cols = [0, 5, 55], [55, 5, 0]
        v = s.selinv("entries", rows=rows, cols=cols)
        assert np.abs(v - Z[rows, cols]).max() <= 1e-12 * np.abs(Z).max()
        assert s.stats["selinv_entries"] == 3
        # separate: the factors are still there
        check(A, s.solve(np.ones(56)), np.ones(56))


def test_bad_input():
    A = laplacian(6, 5)
    with pytest.raises(ValueError):
        canopy.Solver(sp.random(5, 6, density=0.5, format="csc"))
    with pytest.raises(ValueError, match="not symmetric"):
        canopy.Solver((A + sp.triu(A, 1)).tocsc(), kind="spd")
    with pytest.raises(TypeError):
        canopy.Solver(A.toarray())
    with pytest.raises(canopy.CanopyError, match="threads"):
        canopy.Solver(A, threads="many")
    with pytest.raises(canopy.CanopyError) as e:
        canopy.Solver(A, no_such_option=1)
    assert e.value.status < 0
    with pytest.raises(canopy.CanopyError, match="structurally singular"):
        canopy.Solver(sp.csc_matrix((3, 3))).factorize()                        # zero matrix
    N = A.copy()
    N.data[3] = np.nan
    with pytest.raises(canopy.CanopyError, match="(?i)nan|finite"):
        canopy.spsolve(N, np.ones(30))
    with canopy.Solver(A) as s:
        with pytest.raises(ValueError):
            s.solve(np.ones(7))
        with pytest.raises(ValueError):
            s.selinv("everything")
    with pytest.raises(canopy.CanopyError, match="(?i)positive definite"):
        canopy.spsolve((A - 10 * sp.identity(30)).tocsc(), np.ones(30), kind="spd", factorization="llt")


@pytest.mark.parametrize("case", hostile_input.CASES)
def test_hostile_index_arrays(case):
    """Index arrays out of range, negative, too short, unordered pointers... on every path that
    takes a matrix: ValueError before any of SciPy's compiled code reads them. In a subprocess:
    a crash fails this test instead of ending pytest."""
    p = subprocess.run([sys.executable, hostile_input.__file__, case], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=120)
    assert p.returncode == 0, "exit status %d:\n%s" % (p.returncode, p.stdout)
    assert p.stdout.count("canopy: ") == 7, p.stdout


def caught(call):
    """call()'s result (or the CanopyError it raised) and the categories of its warnings."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            out = call()
        except canopy.CanopyError as e:
            out = e
    return out, {q.category for q in w}


def rank_deficient():
    """(name, A, a b in A's range, a b outside it): a 2 x 2 of rank 1, real symmetric, real
    unsymmetric and complex symmetric; a 100 x 100 unsymmetric matrix with row 57 a copy of row
    23 (SciPy's LU meets an exact zero pivot); the 100 x 100 graph Laplacian (Neumann boundary,
    constants in its null space; SciPy meets no exact zero there)."""
    rng = np.random.default_rng(7)
    U = (laplacian(10, 10) + sp.diags(0.3 * np.ones(99), 1)).tolil()
    U[57, :] = U[23, :]
    U = U.tocsc()
    G = laplacian(10, 10).tolil()
    G.setdiag(0)
    G = G.tocsc()
    G = (G - sp.diags(np.asarray(G.sum(axis=1)).ravel())).tocsc()
    x0 = rng.standard_normal(100)
    out = [("2x2", sp.csc_matrix([[1., 2], [2, 4]]), np.array([1., 2]), np.array([1., 1])),
           ("2x2 unsymmetric", sp.csc_matrix([[1., 2], [3, 6]]), np.array([1., 3]), np.array([1., 1])),
           ("2x2 complex", sp.csc_matrix(np.array([[1, 2j], [2j, -4]])), np.array([1 + 2j, 2j - 4]), np.array([1, 1j])),
           ("row copied", U, U @ x0, rng.standard_normal(100)),
           ("graph Laplacian", G, G @ x0, np.ones(100) + rng.standard_normal(100))]
    return out


@pytest.mark.parametrize("case", range(5))
def test_rank_deficient_like_scipy(case):
    """spsolve and factorized on singular matrices, beside SciPy's spsolve: b outside the range
    gives NaN and MatrixRankWarning, as SciPy's on an exactly singular matrix; b in the range
    gives a solution (backward error <= 1e-14, residual tiny: where Canopy differs from SciPy's
    NaN) with the CanopyWarning of the perturbed pivots; strict=True raises CanopyError instead
    of the NaN; several right-hand sides: NaN only in the columns without a solution."""
    name, A, good, bad = rank_deficient()[case]
    ref, ref_warned = caught(lambda: sla.spsolve(A, bad))
    if name != "graph Laplacian":   # exactly singular for SciPy: NaN
        assert np.isnan(ref).all() and MatrixRankWarning in ref_warned
    else:                           # not exactly: a number that solves nothing
        assert np.abs(A @ ref - bad).max() > 1e-3 * np.abs(bad).max()
    for f in (lambda b: canopy.spsolve(A, b), lambda b: canopy.factorized(A)(b),
              lambda b: canopy.spsolve(A, b, refine=False), lambda b: canopy.spsolve(A, b, kind="general")):
        x, warned = caught(lambda: f(bad))
        assert np.isnan(x).all() and MatrixRankWarning in warned, name
        x, warned = caught(lambda: f(good))
        assert MatrixRankWarning not in warned and canopy.CanopyWarning in warned
        check(A, x, good, tol=1e-14)
        assert np.abs(A @ x - good).max() <= 1e-6 * np.abs(good).max()
    e, _ = caught(lambda: canopy.spsolve(A, bad, strict=True))
    assert isinstance(e, canopy.CanopyError) and e.status == -6 and "singular" in str(e)
    x, _ = caught(lambda: canopy.spsolve(A, good, strict=True))
    check(A, x, good, tol=1e-14)
    X, warned = caught(lambda: canopy.spsolve(A, np.column_stack([good, bad, 2 * good])))
    assert MatrixRankWarning in warned and np.isnan(X[:, 1]).all() and not np.isnan(X[:, [0, 2]]).any()
    check(A, X[:, 0], good, tol=1e-14)
    check(A, X[:, 2], 2 * good, tol=1e-14)


def test_structurally_singular_like_scipy():
    """A zero column: spsolve warns MatrixRankWarning and returns NaN as SciPy's does;
    strict=True and factorized raise CanopyError (a RuntimeError, as SciPy's splu raises)."""
    A = sp.csc_matrix(np.array([[2., 1, 0], [1, 3, 0], [0, 1, 0]]))
    b = np.ones(3)
    ref, ref_warned = caught(lambda: sla.spsolve(A, b))
    x, warned = caught(lambda: canopy.spsolve(A, b))
    assert np.isnan(ref).all() and MatrixRankWarning in ref_warned
    assert x.shape == (3,) and np.isnan(x).all() and MatrixRankWarning in warned
    X, _ = caught(lambda: canopy.spsolve((A * 1j).tocsc(), np.ones((3, 2))))
    assert X.shape == (3, 2) and X.dtype == np.complex128 and np.isnan(X).all()
    for call in (lambda: canopy.spsolve(A, b, strict=True), lambda: canopy.factorized(A)):
        e, _ = caught(call)
        assert isinstance(e, RuntimeError) and e.status == -6
    with pytest.raises(RuntimeError):
        sla.factorized(A)


def test_stats():
    A = laplacian(9, 9, 9)
    with canopy.Solver(A, threads=2) as s:
        s.refine(np.ones(A.shape[0]))
        st = s.stats
        assert st["n"] == 729 and st["nnz_factor"] > A.nnz // 2 and st["flops"] > 0
        assert st["threads_per_rank"] == 2 and st["ranks"] == 1
        assert 0 <= st["backward_error"] <= 1e-12
        assert st["mapping"] is None and st["fanin_early"] == 0  # one rank: no mapping, no fan-in
        assert st["root_grid"] is None  # one rank: no grid


def test_interrupt_and_gil():
    """Ctrl-C during a long factorization: KeyboardInterrupt once it has stopped and cleaned up;
    the solver factorizes again afterwards. Other Python threads run meanwhile (the GIL is free)."""
    A = laplacian(45, 45, 45)
    s = canopy.Solver(A, kind="spd", threads=1)
    s.analyze()
    ticks = []
    stop = threading.Event()
    # Python's own Ctrl-C handler, whatever this process inherited (a job started in the
    # background of a script starts with SIGINT ignored, and Python then installs none)
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)

    def tick():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.005)

    ticker = threading.Thread(target=tick)
    ticker.start()
    fired = threading.Event()

    def interrupt():
        signal.raise_signal(signal.SIGINT)
        fired.set()

    # a loaded machine may run the timer late, after the factorization: then the
    # KeyboardInterrupt comes while waiting for it below, and the factors are whole
    timer = threading.Timer(0.15, interrupt)
    timer.start()
    finished = []
    try:
        with pytest.raises(KeyboardInterrupt):
            s.factorize()
            finished.append(True)
            fired.wait(120)
            for _ in range(1000):   # the main thread runs Python's handler at its next step
                time.sleep(0.01)
    finally:
        timer.cancel()
        stop.set()
        ticker.join()
        signal.signal(signal.SIGINT, inherited)
    assert len(ticks) > 3
    from canopy._lib import ffi, lib
    b = np.ones(A.shape[0])
    if not finished:
        # the interrupted factors are not used: the C library refuses a solve until the next factorize
        assert lib.canopy_solve(s._handle(), 1, ffi.from_buffer(b), A.shape[0]) == -8
    s.factorize()
    check(A, s.refine(b), b)
    s.close()


def test_second_thread_refused():
    """A call from a second thread while a factorization runs on the same solver raises
    CanopyError (CANOPY_ERR_BUSY) and changes nothing; asserted only for calls made between two
    progress readings that both said "factorize" (no timing assumption)."""
    from canopy._lib import ffi, lib
    A = laplacian(30, 30, 30)
    s = canopy.Solver(A, kind="spd", threads=1)
    s.analyze()
    b = np.ones(A.shape[0])
    phase, done = ffi.new("int *"), ffi.new("double *")

    def factorizing():
        lib.canopy_get_progress(s._handle(), phase, done)
        return phase[0] == 2   # CANOPY_PHASE_FACTORIZE

    seen = []
    for _ in range(20):
        t = threading.Thread(target=s.factorize)
        t.start()
        while t.is_alive() and not seen:
            if not factorizing():
                continue
            try:
                s.solve(b)
                outcome = None
            except canopy.CanopyError as e:
                outcome = e
            if factorizing():
                seen.append(outcome)
        t.join()
        if seen:
            break
    assert seen, "never caught the factorization at work"
    assert isinstance(seen[0], canopy.CanopyError) and seen[0].status == -15
    assert "still running" in str(seen[0])
    check(A, s.refine(b), b)
    s.close()


def test_solvers_left_open_at_exit():
    """A solver never closed (factorized() keeps one) is freed at exit before MPI ends."""
    code = ("import numpy as np, scipy.sparse as sp, canopy\n"
            "A = sp.diags([-np.ones(99), 2 * np.ones(100), -np.ones(99)], [-1, 0, 1]).tocsc()\n"
            "f = canopy.factorized(A)\n"
            "assert abs(f(np.ones(100))[0] - 50) < 1e-9\n")
    p = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "MPI_FINALIZE" not in p.stderr


# ---- SciPy's spsolve contract, side by side with scipy.sparse.linalg.spsolve ---------------------
def scipy_spsolve(A, b):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sp.SparseEfficiencyWarning)
        return sla.spsolve(A, b)


@pytest.mark.parametrize("fmt", ["csc", "csr", "coo"])
@pytest.mark.parametrize("array", [False, True])
def test_sparse_b_gives_sparse_x(fmt, array):
    U = (laplacian(6, 5) + sp.triu(laplacian(6, 5), 1) * 0.5).tocsc()   # unsymmetric
    rng = np.random.default_rng(3)
    for M in (U, U.tocsr(), sp.csc_array(U), sp.csr_array(U), U.tocoo()):
        B = sp.random(30, 4, density=0.2, format="csc", random_state=rng)
        B = (sp.csc_array(B) if array else B).asformat(fmt)
        x, ref = canopy.spsolve(M, B), scipy_spsolve(M, B)
        assert sp.issparse(x) and type(x) is type(ref) and x.format == ref.format and x.shape == ref.shape == (30, 4)
        assert x.dtype == ref.dtype == np.float64
        assert abs(x - ref).max() <= 1e-10 * abs(ref).max()
        check(U, x.toarray(), B.toarray())
    # a sparse b of one column is a vector: x dense of shape (n,), as SciPy
    b1 = sp.csc_matrix(np.ones((30, 1)))
    x, ref = canopy.spsolve(U, b1), scipy_spsolve(U, b1)
    assert isinstance(x, np.ndarray) and x.shape == ref.shape == (30,)
    # complex sparse b with a real A: complex x
    Bc = sp.csc_matrix(np.eye(30)[:, :3] * (1 + 2j))
    x, ref = canopy.spsolve(U, Bc), scipy_spsolve(U, Bc)
    assert sp.issparse(x) and x.dtype == ref.dtype == np.complex128
    assert abs(x - ref).max() <= 1e-10 * abs(ref).max()


def test_sparse_b_distributed_solution_and_singular():
    A = laplacian(5, 4)
    B = sp.identity(20, format="csc")
    x = canopy.spsolve(A, B)    # the inverse, as SciPy's
    assert abs(x - scipy_spsolve(A, B)).max() <= 1e-12 * abs(x).max()
    # structurally singular with a sparse b: RuntimeError, as SciPy's (it goes through factorized)
    Z = sp.csc_matrix((3, 3))
    with pytest.raises(RuntimeError):
        scipy_spsolve(Z, sp.identity(3, format="csc"))
    with pytest.raises(canopy.CanopyError):
        canopy.spsolve(Z, sp.identity(3, format="csc"))


def test_shapes_of_b_like_scipy():
    U = (laplacian(5, 4) + sp.triu(laplacian(5, 4), 1) * 0.5).tocsc()
    for shape in [(20,), (20, 1), (20, 3)]:
        b = np.arange(np.prod(shape), dtype=float).reshape(shape) + 1
        x, ref = canopy.spsolve(U, b), scipy_spsolve(U, b)
        assert x.shape == ref.shape == (shape if shape != (20, 1) else (20,))
        assert np.abs(x - ref).max() <= 1e-10 * np.abs(ref).max()
    # a list is taken, as SciPy's
    x = canopy.spsolve(U, list(range(20)))
    assert np.abs(x - scipy_spsolve(U, np.arange(20.0))).max() <= 1e-10 * np.abs(x).max()


@pytest.mark.parametrize("kind", [None, "general"])
def test_real_matrix_complex_b_like_scipy(kind):
    A = laplacian(6, 5)
    U = (A + sp.triu(A, 1) * 0.5).tocsc()
    rng = np.random.default_rng(4)
    for M in (A, U):
        for shape in [(30,), (30, 1), (30, 2)]:
            b = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
            x, ref = canopy.spsolve(M, b, kind=kind), scipy_spsolve(M, b)
            assert x.dtype == ref.dtype == np.complex128 and x.shape == ref.shape
            assert np.abs(x - ref).max() <= 1e-10 * np.abs(ref).max()
            check(M, x, b.reshape(x.shape))
        # factorized: the complex system too (SciPy's splu raises TypeError here; Canopy solves)
        f = canopy.factorized(M, kind=kind)
        b = rng.standard_normal(30) + 1j * rng.standard_normal(30)
        x = f(b)
        assert x.dtype == np.complex128
        check(M, x, b)
        check(M.T, f(b, "T"), b)


def test_real_matrix_complex_b_singular():
    # rank deficient with a complex b outside its range: NaN (real and imaginary) and MatrixRankWarning
    A = sp.csc_matrix(np.array([[1.0, 1.0], [1.0, 1.0]]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MatrixRankWarning)
        ref = sla.spsolve(A, np.array([1.0 + 1j, 2.0]))
    with pytest.warns(MatrixRankWarning), warnings.catch_warnings():
        warnings.simplefilter("ignore", canopy.CanopyWarning)   # the perturbed pivot
        x = canopy.spsolve(A, np.array([1.0 + 1j, 2.0]), kind="general")
    assert x.dtype == np.complex128 and np.isnan(x).all() and np.isnan(ref).all()


def test_dense_matrix_like_scipy():
    A = laplacian(5, 4)
    U = (A + sp.triu(A, 1) * 0.5).tocsc()
    b = np.ones(20)
    for D in (U.toarray(), A.toarray(), np.asarray(U.toarray(), dtype=np.float32)):
        with pytest.warns(sp.SparseEfficiencyWarning):
            ref = sla.spsolve(D, b)
        with pytest.warns(sp.SparseEfficiencyWarning) as w:
            x = canopy.spsolve(D, b)
        assert w[0].filename == __file__   # at the caller's line
        assert np.abs(x - ref).max() <= 1e-6 * np.abs(ref).max()
    with pytest.warns(sp.SparseEfficiencyWarning):
        f = canopy.factorized(U.toarray())
    check(U, f(b), b)
    # the Solver class keeps asking for a sparse matrix
    with pytest.raises(TypeError):
        canopy.Solver(U.toarray())


def test_empty_matrix_like_scipy():
    Z = sp.csc_matrix((0, 0))
    for b in (np.ones(0), np.ones((0, 2)), np.ones(0, dtype=complex)):
        x, ref = canopy.spsolve(Z, b), sla.spsolve(Z, b)
        assert isinstance(x, np.ndarray) and x.shape == ref.shape and x.size == 0
    x = canopy.spsolve(Z, sp.csc_matrix((0, 3)))
    assert sp.issparse(x) and x.shape == (0, 3) and x.nnz == 0
    with pytest.warns(sp.SparseEfficiencyWarning):
        x = canopy.spsolve(np.zeros((0, 0)), np.ones(0))
    assert x.shape == (0,)


BAD_ARGUMENTS = [
    ("non-square A", lambda A: (sp.random(5, 6, density=0.5, format="csc"), np.ones(5)), ValueError),
    ("b too long", lambda A: (A, np.ones(21)), ValueError),
    ("b too short (2-D)", lambda A: (A, np.ones((19, 2))), ValueError),
    ("sparse b too long", lambda A: (A, sp.csc_matrix(np.ones((21, 2)))), ValueError),
    ("b of ndim 3", lambda A: (A, np.ones((20, 1, 1))), ValueError),
    ("b scalar", lambda A: (A, 1.0), ValueError),
    ("b ragged", lambda A: (A, [[1.0, 2.0], [3.0]]), ValueError),
    ("b None", lambda A: (A, None), TypeError),
    ("b strings", lambda A: (A, np.array(["a"] * 20)), TypeError),
    ("b objects", lambda A: (A, np.array([object()] * 20)), TypeError),
    ("A a string", lambda A: ("A", np.ones(20)), TypeError),
    ("A a list", lambda A: (A.toarray().tolist(), np.ones(20)), TypeError),
    ("A None", lambda A: (None, np.ones(20)), TypeError),
    ("A dense of ndim 1", lambda A: (np.ones(20), np.ones(20)), ValueError),
    ("A dense of strings", lambda A: (np.full((20, 20), "a"), np.ones(20)), TypeError),
]


@pytest.mark.parametrize("what,args,error", BAD_ARGUMENTS, ids=[c[0] for c in BAD_ARGUMENTS])
def test_bad_arguments_before_factoring(monkeypatch, what, args, error):
    A, b = args(laplacian(5, 4))
    made = []
    real = canopy.solver.Solver

    class Watch(real):
        def __init__(self, *a, **k):
            made.append(1)
            super().__init__(*a, **k)
    monkeypatch.setattr(canopy.solver, "Solver", Watch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sp.SparseEfficiencyWarning)
        with pytest.raises(error):
            canopy.spsolve(A, b)
        if what.startswith("A") or what == "non-square A":
            with pytest.raises(error):
                canopy.factorized(A)
    assert not made   # refused before any solver was made, let alone a factorization
