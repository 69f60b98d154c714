"""Canopy's solver for SciPy sparse matrices: Solver, spsolve, factorized."""
import atexit
import operator
import signal
import threading
import warnings
import weakref

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import MatrixRankWarning

from ._lib import INT_BYTES, ffi, lib

INDEX = np.int64 if INT_BYTES == 8 else np.int32
KINDS = {"general": 0, "symmetric": 1, "spd": 2, "hermitian": 3}
FACTORIZATIONS = {0: "auto", 1: "llt", 2: "ldlt", 3: "lu"}
_REAL, _COMPLEX = 0, 1
_TRIANGLE_BOTH, _TRIANGLE_LOWER = 0, 1
_ERR_SINGULAR = -6
_TRANS = {"N": 0, "T": 1, "H": 2}   # canopy_trans: A, A^T, A^H
_ERR_INTERRUPTED = -14
_ERR_BUSY = -15

# what Solver.stats reports (canopy-solve's JSON names)
STAT_NAMES = ("n", "nnz", "nnz_factor", "ncblk", "nblok", "flops", "time_order", "time_symbolic", "time_analyze",
              "time_factorize", "time_solve", "time_refine", "gflops_factorize", "backward_error",
              "refinement_steps", "perturbed_pivots", "factor_bytes", "peak_memory_bytes", "ranks",
              "threads_per_rank", "time_factorize_predicted", "busy_fraction", "steals", "time_fill", "comm_msgs",
              "comm_bytes", "solve_comm_msgs", "solve_comm_bytes", "peak_memory_rank0", "peak_memory_rank_mean",
              "rss_peak_rank0", "rss_peak_rank_max", "memory_predicted_rank_max", "memory_predicted_rss_rank_max",
              "time_selinv", "flops_selinv", "gflops_selinv", "selinv_entries",
              "selinv_comm_msgs", "selinv_comm_bytes", "selinv_bytes_rank_min", "selinv_bytes_rank_max",
              "selinv_bytes_rank_median", "selinv_bytes_rank_stddev", "fanin_early", "time_root_wait",
              "time_root_scatter", "time_root_factor", "time_root_gather", "top2d_cblks")
_INT_STATS = {"n", "nnz", "nnz_factor", "ncblk", "nblok", "refinement_steps", "perturbed_pivots", "factor_bytes",
              "peak_memory_bytes", "ranks", "threads_per_rank", "steals", "comm_msgs", "comm_bytes",
              "solve_comm_msgs", "solve_comm_bytes", "selinv_entries", "selinv_comm_msgs", "selinv_comm_bytes",
              "fanin_early"}


def _ptr(a):
    """A pointer to a contiguous array's data (C or Fortran order)."""
    return ffi.from_buffer(a.reshape(-1, order="A"))


def _indices(x, what):
    """x as an array of canopy_int, refusing what the index type cannot hold (no silent wrap)."""
    a = np.asarray(x)
    if a.size and (a.min() < 0 or a.max() > np.iinfo(INDEX).max):
        raise ValueError("canopy: %s hold values outside 0..%d (Canopy's index type; build it with "
                         "--enable-int64 for more)" % (what, np.iinfo(INDEX).max))
    return np.ascontiguousarray(a, dtype=INDEX)


def _trans(trans):
    """canopy_trans of 'N' (A x = b), 'T' (A^T x = b) or 'H' (A^H x = b; A^T for real A), as
    SciPy's splu(A).solve(b, trans) takes them."""
    t = _TRANS.get(trans.upper() if isinstance(trans, str) else trans)
    if t is None:
        raise ValueError("canopy: trans must be 'N', 'T' or 'H', not %r" % (trans,))
    return t


def _index_array(a, what):
    """A 1-D array of integers (an index array of a sparse matrix), or ValueError."""
    a = np.asarray(a)
    if a.ndim != 1 or not np.issubdtype(a.dtype, np.integer):
        raise ValueError("canopy: A's %s must be a 1-D array of integers, not %s of shape %s" % (what, a.dtype, a.shape))
    return a


def _values(a, nnz):
    """A's values (1-D, at least nnz of them), or ValueError."""
    a = np.asarray(a)
    if a.ndim != 1 or a.size < nnz:
        raise ValueError("canopy: A holds %d entries but its data array has shape %s" % (nnz, a.shape))
    return a[:nnz]


def _in_range(a, size, what):
    if a.size and (a.min() < 0 or a.max() >= size):
        raise ValueError("canopy: A's %s hold values outside 0..%d (%d..%d)" % (what, size - 1, a.min(), a.max()))


def _compressed(indptr, indices, data, major, minor, what):
    """The arrays of a CSC (what='column') or CSR matrix checked with NumPy alone, cut to their
    nnz entries."""
    indptr = _index_array(indptr, "%s pointers (indptr)" % what)
    indices = _index_array(indices, "indices")
    if indptr.size != major + 1:
        raise ValueError("canopy: A's %s pointers (indptr) hold %d values for %d %ss (expected %d)"
                         % (what, indptr.size, major, what, major + 1))
    if indptr[0] != 0 or (major and np.any(indptr[1:] < indptr[:-1])):
        raise ValueError("canopy: A's %s pointers (indptr) must start at 0 and never decrease" % what)
    nnz = int(indptr[-1])
    if indices.size < nnz:
        raise ValueError("canopy: A's %s pointers (indptr) end at %d but it has %d indices" % (what, nnz, indices.size))
    indices = indices[:nnz]
    _in_range(indices, minor, "indices")
    return indptr, indices, _values(data, nnz)


def _checked(A):
    """A as a CSC matrix, its shape and index arrays checked FIRST, with NumPy alone: a matrix
    built without SciPy's full check (csc_matrix((data, indices, indptr)) checks no index range),
    or whose arrays were changed afterwards, would make SciPy's compiled conversions and
    arithmetic (tocsc, A - A.T) read and write out of bounds. TypeError when A is not sparse,
    ValueError for any inconsistency."""
    if not sp.issparse(A):
        raise TypeError("canopy: A must be a scipy.sparse matrix or array")
    try:
        m, n = (operator.index(d) for d in A.shape)
    except (TypeError, ValueError):
        raise ValueError("canopy: A's shape %r is not two integers" % (A.shape,)) from None
    if m < 0 or n < 0 or m != n:
        raise ValueError("canopy: A must be square, not %d x %d" % (m, n))
    fmt = A.format
    if fmt in ("csc", "csr"):
        indptr, indices, data = _compressed(A.indptr, A.indices, A.data, n, n, "column" if fmt == "csc" else "row")
        if fmt == "csr":
            return sp.csr_matrix((data, indices, indptr), shape=(n, n)).tocsc()
        return sp.csc_matrix((data, indices, indptr), shape=(n, n))
    if fmt == "bsr":
        r, c = (operator.index(d) for d in A.blocksize)
        if r <= 0 or c <= 0 or n % r or n % c:
            raise ValueError("canopy: A's blocks of %d x %d do not tile %d x %d" % (r, c, n, n))
        data = np.asarray(A.data)
        indptr, indices, _ = _compressed(A.indptr, A.indices, np.arange(data.shape[0] if data.ndim else 0),
                                         n // r, n // c, "block row")
        if data.shape[1:] != (r, c):
            raise ValueError("canopy: A's blocks have shape %s, not (%d, %d)" % (data.shape[1:], r, c))
        return sp.bsr_matrix((data[:indices.size], indices, indptr), shape=(n, n), blocksize=(r, c)).tocsc()
    if fmt != "coo":
        A = A.tocoo()   # LIL, DOK, DIA: their conversions are NumPy's, bounded by their own arrays
    row = _index_array(A.row, "row indices")
    col = _index_array(A.col, "column indices")
    if row.size != col.size:
        raise ValueError("canopy: A has %d row indices and %d column indices" % (row.size, col.size))
    _in_range(row, n, "row indices")
    _in_range(col, n, "column indices")
    data = np.asarray(A.data)
    if data.ndim != 1 or data.size != row.size:
        raise ValueError("canopy: A has %d indices but its data array has shape %s" % (row.size, data.shape))
    return sp.coo_matrix((data, (row, col)), shape=(n, n)).tocsc()


class CanopyError(RuntimeError):
    """A Canopy call failed: .status is its canopy_status (negative), the message Canopy's."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class CanopyWarning(UserWarning):
    """A Canopy call succeeded with a warning (perturbed pivots, refinement not converged)."""


_mpi = {"lock": threading.Lock(), "ours": False, "finalized": False, "hook": False, "seq": 0}
_live = weakref.WeakSet()   # solvers not closed yet: freed at exit before MPI ends


def _close_all():
    # in the order they were made: on several ranks canopy_destroy is collective, and every rank
    # made its solvers in the same order (a WeakSet's order is not)
    for s in sorted(_live, key=lambda x: x._seq):
        s.close()


def _finalize_mpi():
    _close_all()
    _mpi["finalized"] = True
    lib.canopy_f_mpi_finalize()


def _comm_handle(comm):
    """The Fortran handle of an mpi4py communicator (or a handle given as an int); None: a
    communicator of one's own, MPI_COMM_SELF, MPI started here when no one did."""
    if comm is None:
        with _mpi["lock"]:
            here = ffi.new("int *")
            st = lib.canopy_f_mpi_init(here)
            if st < 0:
                raise CanopyError(st, "canopy: MPI cannot start (or runs below MPI_THREAD_SERIALIZED)")
            if here[0] and not _mpi["ours"]:
                _mpi["ours"] = True
                atexit.register(_finalize_mpi)
        return lib.canopy_f_comm_self()
    if hasattr(comm, "py2f"):
        return int(comm.py2f())
    if isinstance(comm, (int, np.integer)):
        return int(comm)
    raise TypeError("comm must be None, an mpi4py communicator or a Fortran communicator handle (int)")


def _option_string(options):
    parts = []
    for k, v in options.items():
        if v is None:
            continue
        if isinstance(v, bool):
            v = "on" if v else "off"
        v = str(v)
        if any(c.isspace() or c in ",;" for c in v) or not v:
            raise ValueError("canopy: option %s=%r: values cannot hold blanks, commas or semicolons" % (k, v))
        parts.append("%s=%s" % (k.replace("_", "-"), v))
    return " ".join(parts)


def _asymmetry(A, conj):
    """None when A == A^T (A^H with conj) exactly, entry by entry (an entry absent on one side
    equals an explicit zero on the other); otherwise the words for its largest difference. A is a
    canonical CSC matrix. No tolerance: a symmetric kind keeps only the lower triangle, so an
    upper triangle that differs, however little compared to max|A|, would be another matrix (a
    small entry beside a 1e10 one is not small for the answer)."""
    D = (A - (A.conj().T if conj else A.T)).tocoo()
    bad = np.flatnonzero(D.data != 0)   # NaN differs from itself: such a matrix is not symmetric
    if bad.size == 0:
        return None
    mag = np.abs(D.data[bad])
    k = bad[np.argmax(np.where(np.isnan(mag), np.inf, mag))]
    i, j = int(D.row[k]), int(D.col[k])
    def num(v):
        return repr(complex(v)) if np.iscomplexobj(v) else repr(float(v))
    if conj:
        return "A[%d, %d] = %s but conj(A[%d, %d]) = %s" % (i, j, num(A[i, j]), j, i, num(np.conj(A[j, i])))
    return "A[%d, %d] = %s but A[%d, %d] = %s" % (i, j, num(A[i, j]), j, i, num(A[j, i]))


class Solver:
    """A sparse direct solver for A x = b on one matrix (and refactorizations of its pattern).

    Solver(A, kind=None, comm=None, **options): A any scipy.sparse matrix or array, float64 or
    complex128 (other types are converted); kind 'general', 'symmetric', 'spd' or 'hermitian'
    (inferred when None: symmetric or Hermitian when A equals its transpose exactly, entry by
    entry, general otherwise; give kind='spd' for LL^T; a symmetric kind given for a matrix that
    is not exactly symmetric raises ValueError); options are Canopy's (threads=4, ordering='scotch',
    factorization='ldlt', ...: the names of the README, '_' for '-'). With an mpi4py
    communicator of several ranks, rank 0 gives A (the others None) and b, and gets x; or, with
    distributed=True, every rank gives its own part of A (an n x n matrix holding the entries it
    has, in global numbering; entries given by several ranks are summed) and kind must be given,
    and solve_distributed/refine_distributed take each rank's own rows of b.
    """

    def __init__(self, A=None, kind=None, comm=None, distributed=False, **options):
        self._s = None
        self.distributed = bool(distributed)
        self._comm = _comm_handle(comm)
        self.rank = lib.canopy_f_comm_rank(self._comm)
        self.ranks = lib.canopy_f_comm_size(self._comm)
        s = ffi.new("canopy_solver **")
        msg = ffi.new("char[512]")
        st = lib.canopy_f_create(self._comm, _option_string(options).encode(), s, msg, 512)
        if st < 0:
            raise CanopyError(st, ffi.string(msg, 512).decode(errors="replace").strip())
        self._s = s
        with _mpi["lock"]:
            _mpi["seq"] += 1
            self._seq = _mpi["seq"]
        _live.add(self)
        with _mpi["lock"]:
            if not _mpi["hook"]:
                # run before the exit hooks registered earlier (mpi4py's MPI_Finalize among them)
                _mpi["hook"] = True
                atexit.register(_close_all)
        self.n = 0
        self.kind = None
        self._analyzed = False
        self._factorized = False
        self._perturbed = False
        if self.distributed:
            self._set_distributed(A, kind)
            return
        # the matrix now when rank 0 has one (every rank learns it: canopy_set_matrix is collective)
        has = A is not None if self.rank == 0 else False
        if self.ranks > 1:
            has = lib.canopy_f_bcast_int(self._comm, 1 if has else 0) == 1
        if has:
            self.set_matrix(A, kind)

    # ---- life cycle -----------------------------------------------------------------------
    def close(self):
        """Free the solver (also on garbage collection and at the end of a with block)."""
        if self._s is not None and self._s[0] != ffi.NULL and not _mpi["finalized"]:
            # (after MPI ended, its communicators cannot be freed)
            if lib.canopy_destroy(self._s) == _ERR_BUSY:
                raise CanopyError(_ERR_BUSY, "canopy: close: another call on this solver is still running")
        self._s = None
        _live.discard(self)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _handle(self):
        if self._s is None:
            raise CanopyError(-8, "canopy: the solver was closed")
        return self._s[0]

    def _message(self):
        return ffi.string(lib.canopy_last_error(self._handle())).decode(errors="replace")

    def _warn(self, category, message=None, stacklevel=3):
        """A warning (Canopy's last message by default), at the line that called the method
        calling this (stacklevel=3) or its caller's (4)."""
        warnings.warn(message or self._message(), category, stacklevel=stacklevel + 1)

    def _check(self, st, call, warn=True):
        if st < 0:
            if st == _ERR_INTERRUPTED:
                raise KeyboardInterrupt("canopy: %s interrupted" % call)
            if st == _ERR_BUSY:   # the message belongs to the call that runs: not read here
                raise CanopyError(st, "canopy: %s: another call on this solver is still running "
                                      "(one call at a time per solver)" % call)
            raise CanopyError(st, self._message())
        if st > 0 and warn:
            warnings.warn(self._message(), CanopyWarning, stacklevel=3)
        return st

    def _run(self, fn, *args, keep=()):
        """A long call on another thread (the GIL is released inside it), so that Ctrl-C reaches
        Python meanwhile: canopy_interrupt then stops it at its next task, and KeyboardInterrupt
        propagates once the call has returned and cleaned up (one rank, main thread; otherwise a
        plain call). @p keep: the arrays the call writes into, held until it has returned.

        Meanwhile SIGINT only sets a flag: a KeyboardInterrupt raised anywhere in here (while the
        helper thread starts, say) would leave the call running under the next one."""
        if self.ranks > 1 or threading.current_thread() is not threading.main_thread():
            return fn(*args)
        try:
            previous = signal.getsignal(signal.SIGINT)
        except ValueError:
            previous = None
        if previous in (None, signal.SIG_IGN, signal.SIG_DFL):   # not Python's to handle: left alone
            return fn(*args)
        hits, out = [], []

        def call():
            try:
                out.append((fn(*args), keep))
            except BaseException as e:   # raised again by the caller's thread
                out.append((e, None))

        signal.signal(signal.SIGINT, lambda signum, frame: hits.append(frame))
        phase, done = ffi.new("int *"), ffi.new("double *")
        try:
            t = threading.Thread(target=call, daemon=True)
            t.start()
            asked = False
            while t.is_alive():
                if hits and not asked:
                    # once the call has begun (its phase is set): a call forgets requests made
                    # before it started, and a loaded machine may start the thread late
                    lib.canopy_get_progress(self._s[0], phase, done)
                    if phase[0] != 0:
                        lib.canopy_interrupt(self._s[0])
                        asked = True
                t.join(0.05 if asked or not hits else 0.001)
        finally:
            signal.signal(signal.SIGINT, previous)
        if hits:   # the program's own handler, as it would have run (Python's: KeyboardInterrupt)
            previous(signal.SIGINT, hits[0])
        result, held = out[0]
        if held is None and isinstance(result, BaseException):
            raise result
        return result

    # ---- the matrix -------------------------------------------------------------------------
    def _prepare(self, A, kind):
        A = _checked(A)   # before anything reads its indices
        if kind is not None and kind not in KINDS:
            raise ValueError("canopy: kind must be one of %s, not %r" % (", ".join(KINDS), kind))
        cx = np.iscomplexobj(A.data)
        dtype = np.complex128 if cx else np.float64
        if A.dtype != dtype:
            A = A.astype(dtype)
        if not A.has_canonical_format:   # (a copy: the user's arrays stay as they are)
            A = A.copy()
            A.sum_duplicates()
        if kind is None:   # symmetric or Hermitian only when exactly so
            if cx and _asymmetry(A, True) is None:
                kind = "hermitian"
            elif _asymmetry(A, False) is None:
                kind = "symmetric"
            else:
                kind = "general"
        elif kind != "general":
            what = _asymmetry(A, kind == "hermitian")
            if what is not None:
                h = kind == "hermitian"
                raise ValueError("canopy: kind=%r but A is not %s: %s (a symmetric kind needs A == %s exactly, entry "
                                 "by entry; to solve with the %s part, give (A + %s) / 2)"
                                 % (kind, "Hermitian" if h else "symmetric", what, "A^H" if h else "A^T",
                                    "Hermitian" if h else "symmetric", "A.conj().T" if h else "A.T"))
        if kind == "hermitian" and not cx:
            kind = "symmetric"   # a real Hermitian matrix is symmetric
        if kind != "general":
            A = sp.tril(A, format="csc")   # one triangle: half the data to copy
        if not A.has_canonical_format:
            A.sum_duplicates()
        indptr = _indices(A.indptr, "the column pointers (nnz)")
        indices = _indices(A.indices, "the row indices")
        data = np.ascontiguousarray(A.data, dtype=dtype)
        return kind, dtype, indptr, indices, data

    def set_matrix(self, A, kind=None):
        """Give the matrix (rank 0; the other ranks of a communicator pass None). Collective."""
        def prepare():
            if self.rank != 0:
                return None
            if A is None:
                raise ValueError("canopy: set_matrix: rank 0 gives the matrix")
            return self._prepare(A, kind)
        prepared = self._agreed(prepare)   # refused on rank 0: every rank raises, none waits in the call
        if self.rank != 0:
            self._check(lib.canopy_set_matrix(self._handle(), ffi.NULL), "canopy_set_matrix")
            self._analyzed = self._factorized = False
            return
        kind, dtype, indptr, indices, data = prepared
        csc = ffi.new("canopy_csc *")
        csc.n = A.shape[0]
        csc.colptr = ffi.cast("canopy_int *", ffi.from_buffer(indptr))
        csc.rowind = ffi.cast("canopy_int *", ffi.from_buffer(indices))
        csc.values = ffi.from_buffer(data)
        csc.base = 0
        csc.arith = _COMPLEX if dtype == np.complex128 else _REAL
        csc.kind = KINDS[kind]
        csc.triangle = _TRIANGLE_LOWER if kind != "general" else _TRIANGLE_BOTH
        self._check(lib.canopy_set_matrix(self._handle(), csc), "canopy_set_matrix")
        self.n, self.kind, self.dtype = A.shape[0], kind, dtype
        self._layout = (indptr, indices)
        self._analyzed = self._factorized = False

    def _local_piece(self, A, kind):
        """This rank's part as (indptr over its nonempty columns, their indices, rows, values)."""
        if not sp.issparse(A):
            raise TypeError("canopy: distributed=True: each rank gives a square scipy.sparse matrix of the global size "
                            "holding its own entries")
        A = _checked(A)   # before anything reads its indices
        cx = np.iscomplexobj(A.data)
        dtype = np.complex128 if cx else np.float64
        A = sp.csc_matrix(A, dtype=dtype)
        if kind != "general":
            A = sp.tril(A, format="csc")
        if not A.has_canonical_format:
            A = A.copy()
            A.sum_duplicates()
        counts = np.diff(A.indptr)
        cols = np.flatnonzero(counts)
        colptr = np.concatenate([[0], np.cumsum(counts[cols])])
        return (dtype, _indices(colptr, "the column pointers (nnz)"), _indices(cols, "the columns"),
                _indices(A.indices, "the row indices"), np.ascontiguousarray(A.data, dtype=dtype))

    def _agreed(self, fn):
        """fn() on every rank; if it raises on any, every rank raises (the collective call that
        follows must be made by all or none)."""
        err = None
        try:
            out = fn()
        except (TypeError, ValueError) as e:
            err, out = e, None
        if lib.canopy_f_allreduce_max_int(self._comm, 1 if err else 0) != 0:
            raise err if err else ValueError("canopy: another rank's matrix (or part of it) was refused")
        return out

    def _set_distributed(self, A, kind):
        if kind is None:
            raise ValueError("canopy: distributed=True needs kind ('general', 'symmetric', 'spd', 'hermitian')")
        if kind not in KINDS:
            raise ValueError("canopy: kind must be one of %s, not %r" % (", ".join(KINDS), kind))
        dtype, colptr, cols, rows, data = self._agreed(lambda: self._local_piece(A, kind))
        if lib.canopy_f_allreduce_max_int(self._comm, 1 if dtype == np.complex128 else 0) != (1 if dtype == np.complex128 else 0):
            raise ValueError("canopy: distributed=True: every rank's part must be real, or every rank's complex")
        if kind == "hermitian" and dtype != np.complex128:
            kind = "symmetric"
        d = ffi.new("canopy_dist_csc *")
        d.n = A.shape[0]
        d.ncols = cols.size
        d.cols = ffi.cast("canopy_int *", ffi.from_buffer(cols))
        d.colptr = ffi.cast("canopy_int *", ffi.from_buffer(colptr))
        d.rowind = ffi.cast("canopy_int *", ffi.from_buffer(rows))
        d.values = ffi.from_buffer(data)
        d.base = 0
        d.arith = _COMPLEX if dtype == np.complex128 else _REAL
        d.kind = KINDS[kind]
        d.triangle = _TRIANGLE_LOWER if kind != "general" else _TRIANGLE_BOTH
        self._check(lib.canopy_set_matrix_distributed(self._handle(), d), "canopy_set_matrix_distributed")
        self.n, self.kind, self.dtype = A.shape[0], kind, dtype
        self._layout = (colptr, cols, rows)
        self._analyzed = self._factorized = False

    def solve_distributed(self, rows, b, trans="N"):
        """x's rows @p rows (global, 0-based; each row on exactly one rank) from b's same rows
        (shape (len(rows),) or (len(rows), k)), every rank its own; trans 'T' or 'H' solves
        A^T x = b or A^H x = b (the same on every rank). Collective."""
        t = _trans(trans)
        if not self._factorized:
            self.factorize()
        r = _indices(rows, "rows").ravel()
        b = np.asarray(b)
        one = b.ndim == 1
        x = np.array(b.reshape(r.size, -1), dtype=self.dtype, order="F", copy=True)
        self._check(lib.canopy_solve_distributed_trans(self._handle(), t, x.shape[1], r.size,
                                                       ffi.cast("canopy_int *", ffi.from_buffer(r)), _ptr(x),
                                                       max(r.size, 1)), "canopy_solve_distributed_trans")
        return x[:, 0] if one else x

    def refine_distributed(self, rows, b, x=None, trans="N"):
        """Iterative refinement of x's rows against b's (as solve_distributed). Collective."""
        t = _trans(trans)
        if not self._factorized:
            self.factorize()
        r = _indices(rows, "rows").ravel()
        bb = np.array(np.asarray(b).reshape(r.size, -1), dtype=self.dtype, order="F", copy=True)
        xx = np.array((self.solve_distributed(r, b, trans) if x is None else np.asarray(x)).reshape(r.size, -1),
                      dtype=self.dtype, order="F", copy=True)
        self._check(lib.canopy_refine_distributed_trans(self._handle(), t, bb.shape[1], r.size,
                                                        ffi.cast("canopy_int *", ffi.from_buffer(r)), _ptr(bb),
                                                        max(r.size, 1), _ptr(xx), max(r.size, 1)),
                    "canopy_refine_distributed_trans")
        return xx[:, 0] if np.asarray(b).ndim == 1 else xx

    # ---- the phases ---------------------------------------------------------------------------
    def analyze(self):
        """Ordering, symbolic factorization and plan (reused by every factorize of the pattern)."""
        self._check(self._run(lib.canopy_analyze, self._handle()), "canopy_analyze")
        self._analyzed = True
        return self

    def factorize(self, A_new=None):
        """Numerical factorization; A_new: new values on the same pattern (the analysis is reused)."""
        if A_new is not None and self.distributed:
            def piece():
                dtype, colptr, cols, rows, data = self._local_piece(A_new, self.kind)
                if dtype != self.dtype or not all(np.array_equal(u, v) for u, v in zip((colptr, cols, rows), self._layout)):
                    raise ValueError("canopy: factorize(A_new): this rank's part must keep its pattern and type")
                return data
            data = self._agreed(piece)
            self._check(lib.canopy_update_values_distributed(self._handle(), ffi.from_buffer(data)),
                        "canopy_update_values_distributed")
        elif not self.distributed and (A_new is not None or self.ranks > 1):
            new = A_new is not None
            if self.ranks > 1:   # rank 0 says whether it has new values (the other ranks pass None)
                new = lib.canopy_f_bcast_int(self._comm, 1 if new and self.rank == 0 else 0) == 1

            def values():
                if self.rank != 0:
                    return None
                kind, dtype, indptr, indices, data = self._prepare(A_new, self.kind)
                if (dtype != self.dtype or not np.array_equal(indptr, self._layout[0])
                        or not np.array_equal(indices, self._layout[1])):
                    raise ValueError("canopy: factorize(A_new): A_new must have the pattern and type of the matrix "
                                     "analyzed")
                return data
            if new:   # canopy_update_values is collective: the other ranks pass NULL
                data = self._agreed(values)
                self._check(lib.canopy_update_values(self._handle(), ffi.from_buffer(data) if self.rank == 0 else ffi.NULL),
                            "canopy_update_values")
        if not self._analyzed:
            self.analyze()
        self._factorized = False   # until this factorization has succeeded
        self._check(self._run(lib.canopy_factorize, self._handle()), "canopy_factorize")
        # from the figures (global, on every rank): on several ranks the status does not say it
        self._perturbed = lib.canopy_f_stat(self._handle(), b"perturbed_pivots") > 0
        self._factorized = True
        return self

    def _rhs(self, b):
        if self.rank != 0:
            return None, 1, False
        b = np.asarray(b)
        one = b.ndim == 1
        if b.ndim not in (1, 2) or b.shape[0] != self.n:
            raise ValueError("canopy: b must have %d rows (1-D or 2-D), not shape %s" % (self.n, b.shape))
        dtype = np.complex128 if (np.iscomplexobj(b) or self.dtype == np.complex128) else np.float64
        if np.iscomplexobj(b) and self.dtype != np.complex128:
            raise ValueError("canopy: a complex right-hand side for a real matrix")
        x = np.array(b.reshape(self.n, -1), dtype=dtype, order="F", copy=True)
        return x, x.shape[1], one

    def solve(self, b, trans="N"):
        """x with A x = b for b of shape (n,) or (n, k) (rank 0; the other ranks pass None);
        trans 'T' or 'H' solves A^T x = b or A^H x = b with the same factors, as SciPy's
        splu(A).solve(b, trans)."""
        t = _trans(trans)
        if not self._factorized:
            self.factorize()
        x, k, one = self._rhs(b)
        self._check(lib.canopy_solve_trans(self._handle(), t, k, _ptr(x) if x is not None else ffi.NULL,
                                           max(self.n, 1)), "canopy_solve_trans")
        if x is None:
            return None
        return x[:, 0] if one else x

    def _refine(self, b, x, trans):
        """canopy_refine_trans on b (rank 0's; None elsewhere) from x (solve(b) when None): (x as
        an (n, k) array, canopy_refine's status, whether b was 1-D); a warning is the caller's."""
        t = _trans(trans)
        if not self._factorized:
            self.factorize()
        bb, k, one = self._rhs(b)
        given = x is not None
        if self.ranks > 1:   # rank 0's x (the others pass None): the solve below is collective
            given = lib.canopy_f_bcast_int(self._comm, 1 if given else 0) == 1
        if not given:
            x = self.solve(b, trans)
        xx = None
        if bb is not None:
            xx = np.array(np.asarray(x, dtype=bb.dtype).reshape(self.n, -1), order="F", copy=True)
        st = self._check(lib.canopy_refine_trans(self._handle(), t, k, _ptr(bb) if bb is not None else ffi.NULL,
                                                 max(self.n, 1), _ptr(xx) if xx is not None else ffi.NULL,
                                                 max(self.n, 1)), "canopy_refine_trans", warn=False)
        return xx, st, one

    def refine(self, b, x=None, trans="N"):
        """Iterative refinement of x (solve(b, trans) when None) to the backward error of option
        refine-tolerance, against A (trans 'N'), A^T ('T') or A^H ('H'); returns the refined x
        (stats['backward_error'] says how good; a CanopyWarning when it stopped short, a
        CanopyError with strict=True when the matrix is singular and b outside its range)."""
        xx, st, one = self._refine(b, x, trans)
        if st > 0:
            self._warn(CanopyWarning)
        if xx is None:
            return None
        return xx[:, 0] if one else xx

    def _answer(self, b, refine, trans="N"):
        """x as spsolve and factorized's function give it, with SciPy's convention for singular
        matrices: refined when asked, and always after perturbed pivots (only refinement tells a
        solution from garbage then); a column that refinement, after perturbed pivots, leaves
        without a solution (canopy_refine's rule: backward error above refine-tolerance, or x
        too large to tell from rounding) is NaN, with a MatrixRankWarning; strict=True raises
        CanopyError instead. A consistent singular system that refinement solves keeps its x."""
        if not self._factorized:
            self.factorize()
        split = self.rank == 0 and self.dtype == np.float64 and b is not None and np.iscomplexobj(b)
        if self.ranks > 1:
            split = lib.canopy_f_bcast_int(self._comm, 1 if split else 0) == 1
        if split:   # real A, complex b: the complex system, as SciPy's upcast, with A's real factors
            b = np.asarray(b) if self.rank == 0 else None
            xr = self._answer(b.real if b is not None else None, refine, trans)
            xi = self._answer(b.imag if b is not None else None, refine, trans)
            if xr is None:
                return None
            x = xr + 1j * xi
            x[np.isnan(xr) | np.isnan(xi)] = np.nan   # no solution in either part: none at all
            return x
        if not (refine or self._perturbed):
            return self.solve(b, trans)
        x, st, one = self._refine(b, None, trans)
        if st > 0 and self._perturbed:
            why = self._message()
            # which columns have no solution: canopy_refine judges all together, so one by one
            k = x.shape[1] if x is not None else 0
            if self.ranks > 1:
                k = lib.canopy_f_bcast_int(self._comm, k)
            bad = np.ones(k, dtype=bool)
            if k > 1:
                B = self._rhs(b)[0]
                for j in range(k):
                    xj, stj, _ = self._refine(B[:, j] if B is not None else None, x[:, j] if x is not None else None,
                                              trans)
                    if stj == 0:
                        bad[j] = False
                        if x is not None:
                            x[:, j] = xj[:, 0]
            if x is not None:
                x[:, bad] = np.nan
            self._warn(MatrixRankWarning, "canopy: the factorization perturbed pivots and refinement found no solution "
                                          "(%s): x is NaN%s, as SciPy's for a singular matrix (strict=True raises "
                                          "CanopyError)" % (why, "" if k == 1 else " in columns %s" % np.flatnonzero(bad).tolist()),
                       stacklevel=4)
        elif st > 0:
            self._warn(CanopyWarning, stacklevel=4)
        if x is None:
            return None
        return x[:, 0] if one else x

    def __call__(self, b, trans="N"):
        """x with A x = b (A^T x = b, A^H x = b with trans 'T', 'H') as the function of
        scipy.sparse.linalg.factorized gives it (SciPy's is splu(A).solve(b, trans)): solve(b,
        trans), and on a matrix whose factorization perturbed pivots, refined with SciPy's
        convention for singular matrices (NaN and MatrixRankWarning where there is no solution:
        see spsolve)."""
        return self._answer(b, False, trans)

    @property
    def stats(self):
        """The figures of the last phases (canopy-solve's JSON names), as a dict."""
        h = self._handle()
        out = {}
        for name in STAT_NAMES:
            v = lib.canopy_f_stat(h, name.encode())
            out[name] = int(v) if name in _INT_STATS else float(v)
        out["factorization"] = FACTORIZATIONS.get(int(lib.canopy_f_stat(h, b"factorization")), "auto")
        # several ranks: the plan's mapping onto the ranks (one rank: none)
        out["mapping"] = {1: "flops", 2: "memory"}.get(int(lib.canopy_f_stat(h, b"mapping")))
        # several ranks: the root factored on a grid of ranks (option root_grid), as (rows, columns, root columns)
        rc = int(lib.canopy_f_stat(h, b"root_columns"))
        out["root_grid"] = (int(lib.canopy_f_stat(h, b"root_pr")), int(lib.canopy_f_stat(h, b"root_pc")), rc) if rc > 0 else None
        return out

    # ---- selected inversion -----------------------------------------------------------------------
    def selinv(self, what="diag", rows=None, cols=None):
        """Entries of A^-1 without forming it: what='diag' (an array of n), 'pattern' (a
        scipy.sparse.csc_matrix holding every entry of A^-1 in the pattern of the factors), or
        'entries' with rows and cols (0-based; an array of their values). Option selinv_memory
        ('inplace', the default, overwrites the factors: solves then refuse until the next
        factorize; 'separate' keeps them)."""
        if not self._factorized:
            self.factorize()
        req = ffi.new("canopy_selinv_request *")
        root = self.rank == 0
        if what == "diag":
            out = np.zeros(self.n, dtype=self.dtype) if root else None
            if root:
                req.diag = ffi.from_buffer(out)
            self._check(self._run(lib.canopy_selinv, self._handle(), 0, req, keep=(out,)), "canopy_selinv")
            return out
        if what == "pattern":
            self._check(self._run(lib.canopy_selinv, self._handle(), 1, req), "canopy_selinv")
            if not root:
                return None
            P = req.pattern
            n = P.n
            nnz = int(P.colptr[n])
            ip = np.frombuffer(ffi.buffer(P.colptr, (n + 1) * INT_BYTES), dtype=INDEX).copy()
            ix = np.frombuffer(ffi.buffer(P.rowind, nnz * INT_BYTES), dtype=INDEX).copy()
            size = 16 if self.dtype == np.complex128 else 8
            v = np.frombuffer(ffi.buffer(P.values, nnz * size), dtype=self.dtype).copy()
            lib.canopy_csc_free(ffi.addressof(req, "pattern"))
            return sp.csc_matrix((v, ix, ip), shape=(n, n))
        if what == "entries":
            if root:
                r = _indices(rows, "rows").ravel()
                c = _indices(cols, "cols").ravel()
                if r.shape != c.shape:
                    raise ValueError("canopy: rows and cols must have the same length")
                out = np.zeros(r.size, dtype=self.dtype)
                req.nentries = r.size
                req.rows = ffi.cast("canopy_int *", ffi.from_buffer(r))
                req.cols = ffi.cast("canopy_int *", ffi.from_buffer(c))
                req.values = ffi.from_buffer(out)
            self._check(self._run(lib.canopy_selinv, self._handle(), 2, req, keep=(out, r, c) if root else ()),
                        "canopy_selinv")
            return out if root else None
        raise ValueError("canopy: selinv(what=...) is 'diag', 'pattern' or 'entries', not %r" % (what,))


def _strict(options):
    v = options.get("strict")
    return v is True or str(v).lower() in ("on", "1")


def _numeric(dtype, what):
    if dtype.kind not in "biufc":
        raise TypeError("canopy: %s must hold numbers (bool, integer, float or complex), not %s" % (what, dtype))


def _matrix_argument(A, who, comm):
    """A for spsolve and factorized, checked before anything is factored: a scipy.sparse matrix or
    array as it is, a dense 2-D ndarray as a csc_array with SciPy's SparseEfficiencyWarning (at
    the caller of @p who's caller), None (another rank's, with a communicator) as None. TypeError or ValueError else."""
    if A is None:
        if comm is None:
            raise TypeError("canopy: %s: A must be a scipy.sparse matrix or array, not None (None is for the ranks "
                            "other than 0 of a communicator)" % who)
        return None
    if not sp.issparse(A):
        if not isinstance(A, np.ndarray):
            raise TypeError("canopy: %s: A must be a scipy.sparse matrix or array (or a dense numpy.ndarray), "
                            "not %s" % (who, type(A).__name__))
        _numeric(A.dtype, "A")
        if A.ndim != 2:
            raise ValueError("canopy: %s: A must be 2-D, not of shape %s" % (who, A.shape))
        warnings.warn("canopy: %s: A is a dense ndarray, converted to CSC (as SciPy: give a scipy.sparse matrix)"
                      % who, sp.SparseEfficiencyWarning, stacklevel=3)
        A = sp.csc_array(np.asarray(A))
    _numeric(np.dtype(A.dtype), "A")
    if len(A.shape) != 2 or A.shape[0] != A.shape[1]:
        raise ValueError("canopy: %s: A must be square, not of shape %s" % (who, A.shape))
    return A


def _rhs_argument(A, b):
    """b for spsolve, checked against A (rank 0's; None elsewhere): (b, sparse) with b an
    ndarray of shape (n,) or (n, k) (SciPy's vectors, (n, 1) and sparse ones too, as (n,)), or a
    sparse matrix of k > 1 columns in CSC (sparse True)."""
    if A is None:
        return None, False
    n = A.shape[0]
    if b is None:
        raise TypeError("canopy: spsolve: b must be an array or a scipy.sparse matrix, not None")
    if sp.issparse(b):
        _numeric(np.dtype(b.dtype), "b")
        if len(b.shape) not in (1, 2) or b.shape[0] != n:
            raise ValueError("canopy: spsolve: b must have %d rows, not shape %s" % (n, b.shape))
        if len(b.shape) == 1 or b.shape[1] == 1:   # a vector: x dense of shape (n,), as SciPy
            return np.asarray(b.toarray()).reshape(n), False
        return (b if b.format == "csc" else b.tocsc()), True
    try:
        b = np.asarray(b)
    except (TypeError, ValueError) as e:   # ragged: ValueError, as NumPy's
        raise type(e)("canopy: spsolve: b must be an array or a scipy.sparse matrix (%s)" % e) from None
    _numeric(b.dtype, "b")
    if b.ndim not in (1, 2) or b.shape[0] != n:
        raise ValueError("canopy: spsolve: b must be of shape (%d,) or (%d, k), not %s" % (n, n, b.shape))
    if b.ndim == 2 and b.shape[1] == 1:
        b = b[:, 0]   # x of shape (n,), as SciPy's
    return b, False


def _sparse_solution(s, A, b, refine):
    """x for a sparse b of k > 1 columns (rank 0's; None elsewhere), solved by blocks of columns
    made dense: a sparse matrix of A's class (its format: csc, or csr for a CSR A), as SciPy's."""
    root = s.rank == 0
    k = b.shape[1] if root else 0
    step = max(1, (1 << 22) // max(s.n, 1))   # a block of some 32 MiB of float64
    blocks = -(-k // step)
    if s.ranks > 1:
        blocks = lib.canopy_f_bcast_int(s._comm, blocks)
    rows, cols, vals = [], [], []
    for j in range(blocks):
        X = s._answer(b[:, j * step:(j + 1) * step].toarray() if root else None, refine)
        if root:
            X = X.reshape(s.n, -1)
            r, c = np.nonzero(X)
            rows.append(r)
            cols.append(c + j * step)
            vals.append(X[r, c])
    if not root:
        return None
    dtype = np.complex128 if (s.dtype == np.complex128 or np.iscomplexobj(b.data)) else np.float64
    data = np.concatenate(vals).astype(dtype, copy=False) if vals else np.zeros(0, dtype)
    x = sp.coo_array((data, (np.concatenate(rows) if rows else np.zeros(0, int),
                             np.concatenate(cols) if cols else np.zeros(0, int))), shape=b.shape)
    return A.__class__(x, dtype=dtype) if A.format in ("csc", "csr") else sp.csc_array(x, dtype=dtype)


def spsolve(A, b, kind=None, comm=None, refine=True, **options):
    """x with A x = b, like scipy.sparse.linalg.spsolve; refined to the backward error of option
    refine-tolerance unless refine=False (and no pivot was perturbed).

    As SciPy's: b of shape (n,) or (n, k), or sparse; x of shape (n,) for b of shape (n,) or
    (n, 1) (dense or sparse), (n, k) otherwise, and for a sparse b of k > 1 columns a sparse
    matrix of A's class (CSC; CSR for a CSR A); a real A with a complex b solves the complex
    system (with A's real factors); a dense ndarray A is converted, with a SparseEfficiencyWarning;
    a 0 x 0 A gives an empty x. x is float64 or complex128 (Canopy's arithmetic; SciPy keeps
    float32). Bad arguments raise TypeError or ValueError before anything is factored.
    A singular matrix, as SciPy: MatrixRankWarning and NaN where there is no solution (the
    factorization finds it structurally singular, or refinement after perturbed pivots finds no
    x); a consistent singular system that refinement solves returns its x, with the
    CanopyWarning of the perturbed pivots. strict=True raises CanopyError instead of NaN; so
    does a structurally singular A with a sparse b (SciPy's RuntimeError there)."""
    A = _matrix_argument(A, "spsolve", comm)
    b, sparse_b = _rhs_argument(A, b)
    empty = A is not None and A.shape[0] == 0
    with Solver(None if empty else A, kind=kind, comm=comm, **options) as s:
        if s.ranks > 1:
            sparse_b = lib.canopy_f_bcast_int(s._comm, 1 if sparse_b else 0) == 1
            empty = lib.canopy_f_bcast_int(s._comm, 1 if empty else 0) == 1
        if empty:   # a 0 x 0 A (the solver was given no matrix): x empty, of b's shape
            if s.rank != 0:
                return None
            dtype = np.complex128 if np.dtype(A.dtype).kind == "c" or np.dtype(b.dtype).kind == "c" else np.float64
            if sparse_b:
                return A.__class__(b.shape, dtype=dtype) if A.format in ("csc", "csr") else sp.csc_array(b.shape, dtype=dtype)
            return np.zeros(b.shape, dtype=dtype)
        try:
            s.factorize()
        except CanopyError as e:
            if e.status != _ERR_SINGULAR or _strict(options) or sparse_b:
                raise
            warnings.warn("canopy: %s: x is NaN (as SciPy; strict=True raises CanopyError)" % e, MatrixRankWarning,
                          stacklevel=2)
            if s.rank != 0:
                return None
            dtype = np.complex128 if (s.dtype == np.complex128 or np.iscomplexobj(b)) else np.float64
            return np.full(b.shape, np.nan, dtype=dtype)
        if sparse_b:
            return _sparse_solution(s, A, b, refine)
        return s._answer(b, refine)


def factorized(A, kind=None, comm=None, **options):
    """A function solving A x = b with A's factors, like scipy.sparse.linalg.factorized:
    solve(b) or solve(b, trans) with trans 'N', 'T' or 'H' as SciPy's (the
    solver is freed with the function; CanopyError, a RuntimeError as SciPy's, for a matrix
    found structurally singular). Calls on a matrix whose factorization perturbed pivots are
    refined, with spsolve's convention for singular matrices. A dense ndarray A is converted with
    a SparseEfficiencyWarning, as SciPy's; a complex b for a real A solves the complex system
    (SciPy's splu raises TypeError)."""
    A = _matrix_argument(A, "factorized", comm)
    s = Solver(A, kind=kind, comm=comm, **options)
    s.factorize()
    return s
