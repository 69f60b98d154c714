"""The C library through cffi in ABI mode: libcanopy is opened at import, no compiler involved.

cffi's ABI mode reads these declarations instead of canopy.h (whose MPI types differ between Open
MPI and MPICH): communicators cross as Fortran integer handles (canopy_f_create), statistics by
name (canopy_f_stat), and the index type's width is asked of the library (canopy_f_int_size).
Every call releases the GIL while it runs.
"""
import os

from cffi import FFI

_CDEF = """
typedef struct canopy_solver canopy_solver;
typedef struct canopy_csc {
    canopy_int n;
    canopy_int *colptr;
    canopy_int *rowind;
    void *values;
    int base;
    int arith;
    int kind;
    int triangle;
} canopy_csc;
typedef struct canopy_dist_csc {
    canopy_int n;
    canopy_int ncols;
    canopy_int *cols;
    canopy_int *colptr;
    canopy_int *rowind;
    void *values;
    int base;
    int arith;
    int kind;
    int triangle;
} canopy_dist_csc;
typedef struct canopy_selinv_request {
    void *diag;
    canopy_csc pattern;
    canopy_int nentries;
    const canopy_int *rows;
    const canopy_int *cols;
    void *values;
    int64_t perturbed_pivots;
} canopy_selinv_request;
int canopy_f_create(int comm, const char *options, canopy_solver **s, char *msg, int msglen);
int canopy_f_comm_self(void);
int canopy_f_comm_world(void);
int canopy_f_mpi_init(int *initialized_here);
int canopy_f_mpi_finalize(void);
int canopy_f_comm_rank(int comm);
int canopy_f_comm_size(int comm);
int canopy_f_bcast_int(int comm, int value);
int canopy_f_allreduce_max_int(int comm, int value);
double canopy_f_stat(const canopy_solver *s, const char *name);
int canopy_set_matrix(canopy_solver *s, const canopy_csc *A);
int canopy_update_values(canopy_solver *s, const void *values);
int canopy_set_matrix_distributed(canopy_solver *s, const canopy_dist_csc *A);
int canopy_update_values_distributed(canopy_solver *s, const void *values);
int canopy_solve_distributed(canopy_solver *s, canopy_int nrhs, canopy_int nloc, const canopy_int *rows, void *b,
                             canopy_int ldb);
int canopy_refine_distributed(canopy_solver *s, canopy_int nrhs, canopy_int nloc, const canopy_int *rows,
                              const void *b, canopy_int ldb, void *x, canopy_int ldx);
int canopy_solve_distributed_trans(canopy_solver *s, int trans, canopy_int nrhs, canopy_int nloc, const canopy_int *rows,
                                   void *b, canopy_int ldb);
int canopy_refine_distributed_trans(canopy_solver *s, int trans, canopy_int nrhs, canopy_int nloc,
                                    const canopy_int *rows, const void *b, canopy_int ldb, void *x, canopy_int ldx);
int canopy_analyze(canopy_solver *s);
int canopy_factorize(canopy_solver *s);
int canopy_solve(canopy_solver *s, canopy_int nrhs, void *b, canopy_int ldb);
int canopy_refine(canopy_solver *s, canopy_int nrhs, const void *b, canopy_int ldb, void *x, canopy_int ldx);
int canopy_solve_trans(canopy_solver *s, int trans, canopy_int nrhs, void *b, canopy_int ldb);
int canopy_refine_trans(canopy_solver *s, int trans, canopy_int nrhs, const void *b, canopy_int ldb, void *x,
                        canopy_int ldx);
int canopy_selinv(canopy_solver *s, int what, canopy_selinv_request *req);
void canopy_csc_free(canopy_csc *A);
int canopy_interrupt(canopy_solver *s);
int canopy_get_progress(const canopy_solver *s, int *phase, double *done);
int canopy_destroy(canopy_solver **s);
const char *canopy_last_error(const canopy_solver *s);
const char *canopy_strerror(int st);
"""


def _library_path():
    path = os.environ.get("CANOPY_LIBRARY")
    if path:
        return path
    try:
        from . import _config
        return _config.LIBRARY
    except ImportError:
        return "libcanopy.so"   # a source tree: the loader's search path


def _open():
    probe = FFI()
    probe.cdef("int canopy_f_int_size(void);")
    path = _library_path()
    try:
        lib = probe.dlopen(path, probe.RTLD_NOW | probe.RTLD_GLOBAL)
    except OSError as e:
        raise ImportError("canopy: cannot load %s (%s): reinstall the package against an installed Canopy, or set "
                          "CANOPY_LIBRARY" % (path, e)) from None
    width = lib.canopy_f_int_size()
    ffi = FFI()
    ffi.cdef(("typedef int%d_t canopy_int;\n" % (8 * width)) + _CDEF)
    return ffi, ffi.dlopen(path, ffi.RTLD_NOW | ffi.RTLD_GLOBAL), width, path


ffi, lib, INT_BYTES, LIBRARY = _open()
