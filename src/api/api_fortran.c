/*
 * The C side of the Fortran module (fortran/canopy.f90.in) and of the Python package (python/,
 * cffi in ABI mode): only what ISO_C_BINDING or cffi cannot reach
 * by itself. A Fortran communicator handle becomes an MPI_Comm (MPI_Comm_f2c), the options come
 * as one "name=value name=value" string, the matrix as 1-based CSC arrays, the statistics by
 * name, and messages are copied into Fortran character buffers. The other calls (analyze,
 * factorize, solve and refine as canopy_solve_trans / canopy_refine_trans, destroy) are the C
 * API's, bound directly.
 */
#include "api/api.h"

#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* Copy a NUL-terminated message into a Fortran buffer of @p len characters, blank-padded. */
static void to_fortran(const char *msg, char *buf, int len)
{
    if (buf == NULL || len <= 0) return;
    size_t m = msg ? strlen(msg) : 0;
    if (m > (size_t)len) m = (size_t)len;
    if (m) memcpy(buf, msg, m);
    memset(buf + m, ' ', (size_t)len - m);
}

CANOPY_EXPORT canopy_status canopy_f_create(MPI_Fint comm, const char *options, canopy_solver **s, char *msg, int msglen);
CANOPY_EXPORT canopy_status canopy_f_create(MPI_Fint comm, const char *options, canopy_solver **s, char *msg, int msglen)
{
    char text[512] = "";
    canopy_options o;
    canopy_options_default(&o);
    canopy_status st = canopy_options_from_env(&o, text, sizeof text);
    /* name=value pairs separated by blanks, commas or semicolons */
    for (const char *p = options ? options : ""; st == CANOPY_SUCCESS && *p;) {
        while (*p && (isspace((unsigned char)*p) || *p == ',' || *p == ';')) p++;
        const char *q = p;
        while (*q && !isspace((unsigned char)*q) && *q != ',' && *q != ';') q++;
        if (q > p) {
            char pair[256], *eq;
            size_t len = (size_t)(q - p);
            if (len >= sizeof pair || (memcpy(pair, p, len), pair[len] = '\0', (eq = strchr(pair, '=')) == NULL)) {
                snprintf(text, sizeof text, "canopy_create: option \"%.*s\" is not name=value", (int)(len > 200 ? 200 : len), p);
                st = CANOPY_ERR_ARGUMENT;
                break;
            }
            *eq = '\0';
            st = canopy_options_set(&o, pair, eq + 1, text, sizeof text);
        }
        p = q;
    }
    if (st != CANOPY_SUCCESS) {
        /* the same string on every rank: every rank refuses it alike, before any collective */
        if (s) *s = NULL;
        to_fortran(text, msg, msglen);
        return st;
    }
    st = canopy_create(MPI_Comm_f2c(comm), &o, s);
    to_fortran(st < 0 ? canopy_last_error(NULL) : "", msg, msglen);
    return st;
}

CANOPY_EXPORT canopy_status canopy_f_set_matrix(canopy_solver *s, canopy_int n, canopy_int *colptr, canopy_int *rowind,
                                                void *values, int arith, int kind, int triangle);
CANOPY_EXPORT canopy_status canopy_f_set_matrix(canopy_solver *s, canopy_int n, canopy_int *colptr, canopy_int *rowind,
                                                void *values, int arith, int kind, int triangle)
{
    if (colptr == NULL) return canopy_set_matrix(s, NULL); /* another rank gives it */
    canopy_csc A = {.n = n, .colptr = colptr, .rowind = rowind, .values = values, .base = 1,
                    .arith = (canopy_arith)arith, .kind = (canopy_matrix_kind)kind, .triangle = (canopy_triangle)triangle};
    return canopy_set_matrix(s, &A);
}

/* canopy_set_matrix_distributed with 1-based global columns and rows (every rank, its piece) */
CANOPY_EXPORT canopy_status canopy_f_set_matrix_distributed(canopy_solver *s, canopy_int n, canopy_int ncols,
                                                            canopy_int *cols, canopy_int *colptr, canopy_int *rowind,
                                                            void *values, int arith, int kind, int triangle);
CANOPY_EXPORT canopy_status canopy_f_set_matrix_distributed(canopy_solver *s, canopy_int n, canopy_int ncols,
                                                            canopy_int *cols, canopy_int *colptr, canopy_int *rowind,
                                                            void *values, int arith, int kind, int triangle)
{
    canopy_dist_csc A = {.n = n, .ncols = ncols, .cols = cols, .colptr = colptr, .rowind = rowind, .values = values,
                         .base = 1, .arith = (canopy_arith)arith, .kind = (canopy_matrix_kind)kind,
                         .triangle = (canopy_triangle)triangle};
    return canopy_set_matrix_distributed(s, &A);
}

/* canopy_solve_distributed_trans, or canopy_refine_distributed_trans when @p refine (every rank
 * alike: a rank without rows may pass NULL arrays), with 1-based rows: the C API's are 0-based. A
 * row out of range stays out of range, a bad @p trans stays bad (the library says which). */
CANOPY_EXPORT canopy_status canopy_f_solve_distributed(canopy_solver *s, int refine, int trans, canopy_int nrhs,
                                                       canopy_int nloc, const canopy_int *rows, void *b,
                                                       canopy_int ldb, void *x, canopy_int ldx);
CANOPY_EXPORT canopy_status canopy_f_solve_distributed(canopy_solver *s, int refine, int trans, canopy_int nrhs,
                                                       canopy_int nloc, const canopy_int *rows, void *b,
                                                       canopy_int ldb, void *x, canopy_int ldx)
{
    if (s == NULL) return CANOPY_ERR_ARGUMENT;
    canopy_err err = {0};
    canopy_int *r0 = nloc > 0 && rows ? canopy_alloc((size_t)nloc, sizeof(canopy_int), "solve rows", &err) : NULL;
    for (canopy_int i = 0; r0 && i < nloc; i++) r0[i] = rows[i] - 1;
    /* every rank takes part; NULL rows (none given, or the copy failed) are refused on every rank */
    canopy_status st = refine ? canopy_refine_distributed_trans(s, (canopy_trans)trans, nrhs, nloc, r0, b, ldb, x, ldx)
                              : canopy_solve_distributed_trans(s, (canopy_trans)trans, nrhs, nloc, r0, b, ldb);
    canopy_free(r0);
    return st;
}

/* the diagonal of A^-1 (canopy_selinv, CANOPY_SELINV_DIAG) into d on rank 0 (NULL elsewhere) */
CANOPY_EXPORT canopy_status canopy_f_selinv_diag(canopy_solver *s, void *d);
CANOPY_EXPORT canopy_status canopy_f_selinv_diag(canopy_solver *s, void *d)
{
    canopy_selinv_request rq = {.diag = d};
    return canopy_selinv(s, CANOPY_SELINV_DIAG, &rq);
}

CANOPY_EXPORT void canopy_f_error(const canopy_solver *s, char *buf, int len);
CANOPY_EXPORT void canopy_f_error(const canopy_solver *s, char *buf, int len)
{
    to_fortran(canopy_last_error(s), buf, len);
}

/* The statistics a Fortran code asks for by name (the JSON names of canopy-solve). */
CANOPY_EXPORT double canopy_f_stat(const canopy_solver *s, const char *name);
CANOPY_EXPORT double canopy_f_stat(const canopy_solver *s, const char *name)
{
    canopy_stats st;
    if (s == NULL || name == NULL || canopy_get_stats(s, &st) != CANOPY_SUCCESS) return -1;
    static const struct {
        const char *name;
        int is_int;
        size_t off;
    } table[] = {
        {"n", 1, offsetof(canopy_stats, n)},
        {"nnz", 1, offsetof(canopy_stats, nnz)},
        {"nnz_factor", 1, offsetof(canopy_stats, nnz_factor)},
        {"flops", 0, offsetof(canopy_stats, flops)},
        {"time_analyze", 0, offsetof(canopy_stats, time_analyze)},
        {"time_factorize", 0, offsetof(canopy_stats, time_factorize)},
        {"time_solve", 0, offsetof(canopy_stats, time_solve)},
        {"time_refine", 0, offsetof(canopy_stats, time_refine)},
        {"gflops_factorize", 0, offsetof(canopy_stats, gflops_factorize)},
        {"backward_error", 0, offsetof(canopy_stats, backward_error)},
        {"perturbed_pivots", 1, offsetof(canopy_stats, perturbed_pivots)},
        {"peak_memory_rank0", 0, offsetof(canopy_stats, peak_memory_rank0)},
        {"peak_memory_rank_mean", 0, offsetof(canopy_stats, peak_memory_rank_mean)},
        {"ncblk", 1, offsetof(canopy_stats, ncblk)},
        {"nblok", 1, offsetof(canopy_stats, nblok)},
        {"time_order", 0, offsetof(canopy_stats, time_order)},
        {"time_symbolic", 0, offsetof(canopy_stats, time_symbolic)},
        {"time_factorize_predicted", 0, offsetof(canopy_stats, time_factorize_predicted)},
        {"busy_fraction", 0, offsetof(canopy_stats, busy_fraction)},
        {"steals", 1, offsetof(canopy_stats, steals)},
        {"time_fill", 0, offsetof(canopy_stats, time_fill)},
        {"time_root_wait", 0, offsetof(canopy_stats, time_root_wait)},
        {"time_root_scatter", 0, offsetof(canopy_stats, time_root_scatter)},
        {"time_root_factor", 0, offsetof(canopy_stats, time_root_factor)},
        {"time_root_gather", 0, offsetof(canopy_stats, time_root_gather)},
        {"comm_msgs", 1, offsetof(canopy_stats, comm_msgs)},
        {"comm_bytes", 1, offsetof(canopy_stats, comm_bytes)},
        {"solve_comm_msgs", 1, offsetof(canopy_stats, solve_comm_msgs)},
        {"solve_comm_bytes", 1, offsetof(canopy_stats, solve_comm_bytes)},
        {"rss_peak_rank0", 0, offsetof(canopy_stats, rss_peak_rank0)},
        {"rss_peak_rank_max", 0, offsetof(canopy_stats, rss_peak_rank_max)},
        {"memory_predicted_rank_max", 0, offsetof(canopy_stats, memory_predicted_rank_max)},
        {"memory_predicted_rss_rank_max", 0, offsetof(canopy_stats, memory_predicted_rss_rank_max)},
        {"top2d_cblks", 1, offsetof(canopy_stats, top2d_cblks)},
        {"time_selinv", 0, offsetof(canopy_stats, time_selinv)},
        {"flops_selinv", 0, offsetof(canopy_stats, flops_selinv)},
        {"gflops_selinv", 0, offsetof(canopy_stats, gflops_selinv)},
        {"selinv_entries", 1, offsetof(canopy_stats, selinv_entries)},
        {"selinv_comm_msgs", 1, offsetof(canopy_stats, selinv_comm_msgs)},
        {"selinv_comm_bytes", 1, offsetof(canopy_stats, selinv_comm_bytes)},
        {"selinv_bytes_rank_min", 0, offsetof(canopy_stats, selinv_bytes_rank_min)},
        {"selinv_bytes_rank_max", 0, offsetof(canopy_stats, selinv_bytes_rank_max)},
        {"selinv_bytes_rank_median", 0, offsetof(canopy_stats, selinv_bytes_rank_median)},
        {"selinv_bytes_rank_stddev", 0, offsetof(canopy_stats, selinv_bytes_rank_stddev)},
        {"fanin_early", 1, offsetof(canopy_stats, fanin_early)},
        {"root_columns", 1, offsetof(canopy_stats, root_columns)},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (!strcmp(name, table[i].name)) {
            const char *p = (const char *)&st + table[i].off;
            if (table[i].is_int) {
                int64_t v;
                memcpy(&v, p, sizeof v);
                return (double)v;
            }
            double v;
            memcpy(&v, p, sizeof v);
            return v;
        }
    if (!strcmp(name, "refinement_steps")) return (double)st.refinement_steps;
    if (!strcmp(name, "factor_bytes")) return (double)st.factor_bytes;
    if (!strcmp(name, "peak_memory_bytes")) return (double)st.peak_memory_bytes;
    if (!strcmp(name, "factorization")) return (double)st.factorization;
    if (!strcmp(name, "ranks")) return (double)st.ranks;
    if (!strcmp(name, "threads_per_rank")) return (double)st.threads_per_rank;
    if (!strcmp(name, "comm_threads")) return (double)st.comm_threads;
    if (!strcmp(name, "mapping")) return (double)st.mapping;
    if (!strcmp(name, "root_pr")) return (double)st.root_pr;
    if (!strcmp(name, "root_pc")) return (double)st.root_pc;
    return -1;
}

/* ---- for other languages' bindings (Python's cffi, which cannot read mpi.h's types) ---------- */

/* sizeof(canopy_int): 4, or 8 with --enable-int64 */
CANOPY_EXPORT int canopy_f_int_size(void);
CANOPY_EXPORT int canopy_f_int_size(void)
{
    return (int)sizeof(canopy_int);
}

/* Fortran handles of MPI_COMM_SELF and MPI_COMM_WORLD (their values differ between MPIs) */
CANOPY_EXPORT int canopy_f_comm_self(void);
CANOPY_EXPORT int canopy_f_comm_self(void)
{
    return (int)MPI_Comm_c2f(MPI_COMM_SELF);
}

CANOPY_EXPORT int canopy_f_comm_world(void);
CANOPY_EXPORT int canopy_f_comm_world(void)
{
    return (int)MPI_Comm_c2f(MPI_COMM_WORLD);
}

/* this process's rank in the communicator of Fortran handle @p comm (-1 on failure) */
CANOPY_EXPORT int canopy_f_comm_rank(int comm);
CANOPY_EXPORT int canopy_f_comm_rank(int comm)
{
    int r = -1;
    if (MPI_Comm_rank(MPI_Comm_f2c((MPI_Fint)comm), &r) != MPI_SUCCESS) return -1;
    return r;
}

/* rank 0's @p value on every rank of the communicator of Fortran handle @p comm (-1 on failure) */
CANOPY_EXPORT int canopy_f_bcast_int(int comm, int value);
CANOPY_EXPORT int canopy_f_bcast_int(int comm, int value)
{
    if (MPI_Bcast(&value, 1, MPI_INT, 0, MPI_Comm_f2c((MPI_Fint)comm)) != MPI_SUCCESS) return -1;
    return value;
}

/* the largest @p value over the ranks of that communicator (-1 on failure): a flag every rank
 * learns before a collective call that one rank could not make */
CANOPY_EXPORT int canopy_f_allreduce_max_int(int comm, int value);
CANOPY_EXPORT int canopy_f_allreduce_max_int(int comm, int value)
{
    int out = -1;
    if (MPI_Allreduce(&value, &out, 1, MPI_INT, MPI_MAX, MPI_Comm_f2c((MPI_Fint)comm)) != MPI_SUCCESS) return -1;
    return out;
}

/* the number of ranks of that communicator (-1 on failure) */
CANOPY_EXPORT int canopy_f_comm_size(int comm);
CANOPY_EXPORT int canopy_f_comm_size(int comm)
{
    int r = -1;
    if (MPI_Comm_size(MPI_Comm_f2c((MPI_Fint)comm), &r) != MPI_SUCCESS) return -1;
    return r;
}

/*
 * MPI for a program that has not started it (a Python session without mpi4py): MPI_Init_thread
 * with MPI_THREAD_MULTIPLE unless MPI runs already; *here = 1 when this call started it (the
 * caller then ends it with canopy_f_mpi_finalize). CANOPY_ERR_MPI when it cannot start, or runs
 * with a thread level below MPI_THREAD_SERIALIZED: Python makes its long calls on a helper thread
 * (so that Ctrl-C reaches it), which is not the thread that started MPI. (A communicator of the
 * program's own does not come here: api_create_dist says what its thread level allows.)
 */
CANOPY_EXPORT canopy_status canopy_f_mpi_init(int *here);
CANOPY_EXPORT canopy_status canopy_f_mpi_init(int *here)
{
    int up = 0, done = 0, level = 0;
    if (here) *here = 0;
    MPI_Initialized(&up);
    MPI_Finalized(&done);
    if (done) return CANOPY_ERR_MPI;
    if (!up) {
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &level) != MPI_SUCCESS) return CANOPY_ERR_MPI;
        if (here) *here = 1;
    } else {
        MPI_Query_thread(&level);
    }
    return level >= MPI_THREAD_SERIALIZED ? CANOPY_SUCCESS : CANOPY_ERR_MPI;
}

CANOPY_EXPORT canopy_status canopy_f_mpi_finalize(void);
CANOPY_EXPORT canopy_status canopy_f_mpi_finalize(void)
{
    int up = 0, done = 0;
    MPI_Initialized(&up);
    MPI_Finalized(&done);
    if (up && !done && MPI_Finalize() != MPI_SUCCESS) return CANOPY_ERR_MPI;
    return CANOPY_SUCCESS;
}
