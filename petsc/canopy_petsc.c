/*
 * The PETSc solver package "canopy": MatGetFactor for LU (AIJ, BAIJ) and Cholesky (AIJ, BAIJ,
 * SBAIJ), sequential or MPI, over Canopy's distributed input, so that a PETSc program switches
 * with -pc_factor_mat_solver_type canopy. Built as libcanopy_petsc.so: PETSc's dynamic loading
 * (-dll_append <libdir>/libcanopy_petsc.so) calls PetscDLLibraryRegister_canopy_petsc, which
 * registers the package; a program linked with the library may call CanopyPetscRegister instead.
 *
 * Data path: each rank gives Canopy the entries of its own rows (MatGetRow, global indices),
 * regrouped by column: Canopy takes any distribution of the entries (canopy_set_matrix_distributed)
 * and moves them to the owners of their column blocks. A numeric factorization of the same
 * pattern re-reads the values in the same order (canopy_update_values_distributed): the analysis
 * is reused. Solves (plain and transposed) go through canopy_solve_distributed_trans on the
 * vectors' own rows.
 *
 * Failures are PETSc's kind: the factor's error type on every rank (KSP: DIVERGED_PC_FAILED), an
 * Inf solution for a solve that has none, a PETSc error only when the matrix asks for errors;
 * Canopy's warnings go to PetscInfo.
 */
#include <petsc/private/matimpl.h>
#include <canopy.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if !defined(PETSC_USE_REAL_DOUBLE)
#error "Canopy computes in double precision (real or complex): PETSc must be built with --with-precision=double"
#endif

#define MATSOLVERCANOPY "canopy"

typedef struct {
    canopy_solver *s;
    PetscBool upper;         /* SBAIJ: the rows hold their upper part (j >= i) */
    PetscBool lower_only;    /* Cholesky on AIJ/BAIJ: keep the entries with j <= i */
    canopy_matrix_kind kind;
    /* this rank's piece, by column */
    canopy_int ncols, nnz;
    canopy_int *cols, *colptr, *rowind;
    PetscScalar *values;
    PetscInt *slot;          /* [entries read] place in values of each entry MatGetRow gives, -1 dropped */
    PetscInt *rcol;          /* [entries read] its column: a new pattern is refused, never misread */
    PetscInt nread;
    canopy_int *rows;        /* [nloc] this rank's rows, global (the vectors' layout) */
    PetscInt nloc;
    PetscBool analyzed, factorized;
    PetscBool reanalyze;     /* the analysis saw a zero row or column: analyze again with the next values */
    PetscBool strict;        /* option strict: solves after perturbed pivots refine, and may fail */
    PetscBool erroriffailure; /* the matrix's: a failure is a PETSc error instead of factorerrortype / Inf */
    int64_t perturbed;       /* pivots the last factorization perturbed */
} Mat_Canopy;

/*
 * Canopy's options, as -mat_canopy_<name> ('-' in a name becomes '_'): -help prints each with its
 * line of help, the values an enumerated one takes, and its value now (Canopy's default, or the
 * CANOPY_* environment's; README "Options" has the long version)
 */
typedef struct {
    const char *name, *help, *choices;
} CanopyOption;

static const CanopyOption canopy_options_help[] = {
    {"threads", "worker threads per rank (0: the cores of the rank's CPU binding)", NULL},
    {"bind", "workers bound one per core, breadth-first over the topology, or to the OS cores of a list like 0,2,4-7",
     "none, core, LIST"},
    {"numa", "who first touches the factors: each worker its blocks (local), the calling thread (global), or pages "
             "spread over the nodes (interleave)", "local, global, interleave"},
    {"scheduler", "dynamic: subtree queues with work stealing (faster); static: fixed task lists (bitwise "
                  "reproducible factors)", "static, dynamic"},
    {"comm-threads", "several ranks: 1 = a communication thread drives MPI, 0 = idle workers do, 2 = one thread for "
                     "sends and one for receives", "0, 1, 2"},
    {"tree", "several ranks: shape of the solve's broadcasts and reductions", "flat, binary, shifted"},
    {"factorization", "auto: LU for -pc_type lu; for -pc_type cholesky LL^T when the matrix is MAT_SPD, LDL^T "
                      "otherwise", "auto, llt, ldlt, lu"},
    {"ordering", "fill-reducing ordering; auto: PT-SCOTCH on several ranks (when built with it), SCOTCH otherwise",
     "auto, scotch, ptscotch, natural"},
    {"scaling", "auto: matching and scaling for LU, symmetric scaling for LDL^T, none for LL^T",
     "auto, none, equilibrate, matching"},
    {"pivot-threshold", "static pivoting: pivots below this times ||A||_inf (scaled) are perturbed, in (0, 1]", NULL},
    {"amalgamation", "relaxed supernode amalgamation", "0, 1"},
    {"amalgamation-fill", "extra zeros allowed when merging supernodes, as a fraction (0 to 10)", NULL},
    {"refine", "refinement steps at most (solves with -mat_canopy_strict on after perturbed pivots)", NULL},
    {"refine-tolerance", "refinement's target normwise backward error, in [0, 1]", NULL},
    {"verbose", "messages on stderr of rank 0, 0 to 3", NULL},
    {"trace", "FILE: per-thread trace of the factorization and solves", NULL},
    {"split", "split column blocks wider than N (0: never; auto: chosen by simulation)", NULL},
    {"2d-levels", "2D tasks in the top N levels of the thread tree (0: 1D only; auto: chosen by simulation)", NULL},
    {"cost-cache", "kernel cost model: PATH of the cache file, none (calibrate, no file), fixed (built-in, network untimed); unset: "
                   "calibrate once and cache under ~/.cache/canopy", NULL},
    {"memory-check", "refuse a factorization, before allocating, when a rank's predicted memory exceeds "
                     "memory-limit", "on, off"},
    {"memory-limit", "bytes per rank (0: the node's available memory divided by its ranks)", NULL},
    {"comm-heatmap", "FILE.svg or FILE.png: rank 0 writes the rank x rank volume after each factorization", NULL},
    {"selinv-memory", "where the selected inversion works: over the factors or in a copy", "inplace, separate"},
    {"ordering-threads", "SCOTCH's threads (0: the workers; fix it for identical orderings everywhere)", NULL},
    {"strict", "after perturbed pivots, solves refine and give Inf when no solution is found", "on, off"},
    {"mapping", "several ranks: the tree onto the ranks by flops, or by factor memory; auto: by flops unless a rank "
                "would exceed memory-limit", "auto, flops, memory"},
    {"root-grid", "several ranks: the root separator factored by all ranks on a 2D grid (MUMPS's 2D root); auto: "
                  "when it is at least max(800, 70 sqrt(ranks)) columns wide and predicted faster", "off, on, auto"},
    {"fanin-cuts", "several ranks: fan-in buffers sent in several messages where the plan leaves a gap or a rank "
                   "holds too much (less memory, more bytes); auto: only when a rank would exceed memory-limit",
     "auto, off, on"},
    {"update-buffer", "several ranks: a worker's update buffer at most, N entries (a larger update goes in row "
                      "chunks; auto: 1048576; off: whole updates)", NULL},
    {"top2d", "several ranks: the top's column blocks cyclic over their ranks, updates where their target lives; "
              "auto: when predicted 10% faster", "off, flat, auto"},
    {"top2d-shadow", "top2d flat: updates into an ancestor on more ranks summed on one rank of the source's (one "
                     "fan-in buffer per ancestor column block, not one per rank); lean: their copies freed early; "
                     "auto: lean when a rank would exceed memory-limit", "auto, lean, off"},
};

/* The value of option @p name in @p o, as -mat_canopy_<name> would give it */
static void CanopyOptionNow(const canopy_options *o, const char *name, char *buf, size_t len)
{
    static const char *const bind[] = {"none", "core"}, *const numa[] = {"local", "global", "interleave"},
                             *const sched[] = {"static", "dynamic"}, *const tree[] = {"flat", "binary", "shifted"},
                             *const fact[] = {"auto", "llt", "ldlt", "lu"},
                             *const order[] = {"scotch", "natural", "user", "ptscotch", "auto"},
                             *const scal[] = {"auto", "none", "equilibrate", "matching"},
                             *const selinv[] = {"inplace", "separate"}, *const mapping[] = {"auto", "flops", "memory"},
                             *const rootgrid[] = {"off", "on", "auto"}, *const cuts[] = {"auto", "off", "on"},
                             *const top2d[] = {"off", "flat", "auto"}, *const shadow[] = {"auto", "lean", "off"};
#define CANOPY_PICK(names, v) ((size_t)(v) < sizeof names / sizeof names[0] ? names[(size_t)(v)] : "?")
    const char *t = NULL;
    int i = 0;
    double d = 0;
    enum { TEXT, INT, REAL, AUTO_INT } kind = TEXT;
    if (!strcmp(name, "threads")) kind = INT, i = o->threads;
    else if (!strcmp(name, "bind")) t = o->bind == CANOPY_BIND_LIST ? o->bind_list : CANOPY_PICK(bind, o->bind);
    else if (!strcmp(name, "numa")) t = CANOPY_PICK(numa, o->numa);
    else if (!strcmp(name, "scheduler")) t = CANOPY_PICK(sched, o->scheduler);
    else if (!strcmp(name, "comm-threads")) kind = INT, i = o->comm_threads;
    else if (!strcmp(name, "tree")) t = CANOPY_PICK(tree, o->tree);
    else if (!strcmp(name, "factorization")) t = CANOPY_PICK(fact, o->factorization);
    else if (!strcmp(name, "ordering")) t = CANOPY_PICK(order, o->ordering);
    else if (!strcmp(name, "scaling")) t = CANOPY_PICK(scal, o->scaling);
    else if (!strcmp(name, "pivot-threshold")) kind = REAL, d = o->pivot_threshold;
    else if (!strcmp(name, "amalgamation")) kind = INT, i = o->amalgamation;
    else if (!strcmp(name, "amalgamation-fill")) kind = REAL, d = o->amalgamation_fill;
    else if (!strcmp(name, "refine")) kind = INT, i = o->refine_max_iter;
    else if (!strcmp(name, "refine-tolerance")) kind = REAL, d = o->refine_tolerance;
    else if (!strcmp(name, "verbose")) kind = INT, i = o->verbose;
    else if (!strcmp(name, "trace")) t = o->trace_file[0] ? o->trace_file : "(none)";
    else if (!strcmp(name, "split")) kind = AUTO_INT, i = o->split_size;
    else if (!strcmp(name, "2d-levels")) kind = AUTO_INT, i = o->twod_levels;
    else if (!strcmp(name, "cost-cache")) t = o->cost_cache[0] ? o->cost_cache : "(calibrate once, cached)";
    else if (!strcmp(name, "memory-check")) t = o->memory_check ? "on" : "off";
    else if (!strcmp(name, "memory-limit")) kind = REAL, d = o->memory_limit;
    else if (!strcmp(name, "comm-heatmap")) t = o->comm_heatmap[0] ? o->comm_heatmap : "(none)";
    else if (!strcmp(name, "selinv-memory")) t = CANOPY_PICK(selinv, o->selinv_memory);
    else if (!strcmp(name, "ordering-threads")) kind = INT, i = o->ordering_threads;
    else if (!strcmp(name, "strict")) t = o->strict ? "on" : "off";
    else if (!strcmp(name, "mapping")) t = CANOPY_PICK(mapping, o->mapping);
    else if (!strcmp(name, "root-grid")) t = CANOPY_PICK(rootgrid, o->root_grid);
    else if (!strcmp(name, "fanin-cuts")) t = CANOPY_PICK(cuts, o->fanin_cuts);
    else if (!strcmp(name, "top2d")) t = CANOPY_PICK(top2d, o->top2d);
    else if (!strcmp(name, "top2d-shadow")) t = CANOPY_PICK(shadow, o->top2d_shadow);
    else if (!strcmp(name, "update-buffer")) {
        if (o->update_buffer > 0) kind = REAL, d = o->update_buffer;
        else t = o->update_buffer < 0 ? "off" : "auto";
    }
    else t = "?";
#undef CANOPY_PICK
    if (kind == INT || (kind == AUTO_INT && i >= 0)) snprintf(buf, len, "%d", i);
    else if (kind == AUTO_INT) snprintf(buf, len, "auto");
    else if (kind == REAL) snprintf(buf, len, "%g", d);
    else snprintf(buf, len, "%s", t);
}

/* A Canopy status: an error is a PETSc error, a warning goes to PetscInfo (-info shows it) */
static PetscErrorCode CanopyCheck(Mat F, canopy_status st, const char *call)
{
    Mat_Canopy *c = (Mat_Canopy *)F->data;
    PetscFunctionBegin;
    /* Canopy's statuses are agreed over the ranks: every rank raises the same error */
    PetscCheck(st >= 0, PetscObjectComm((PetscObject)F), PETSC_ERR_LIB, "Canopy %s: %s", call,
               canopy_last_error(c->s));
    if (st > 0) PetscCall(PetscInfo(F, "Canopy %s: %s: %s\n", call, canopy_strerror(st), canopy_last_error(c->s)));
    PetscFunctionReturn(0);
}

/*
 * A failure PETSc lets the solver package report instead of raising an error, unless the matrix
 * says errors (MatSetErrorIfFailure, -ksp_error_if_not_converged): as PETSc's MUMPS interface, the
 * factor's error type, which PCSetUp turns into the KSP's DIVERGED_PC_FAILED (and SNES and TS into
 * a failed step they may retry). Canopy agrees statuses over the ranks: every rank sets the same.
 */
static PetscErrorCode CanopyFail(Mat F, MatFactorError type, const char *call, const char *msg)
{
    Mat_Canopy *c = (Mat_Canopy *)F->data;
    PetscFunctionBegin;
    PetscCheck(!c->erroriffailure, PetscObjectComm((PetscObject)F), type == MAT_FACTOR_OUTMEMORY ? PETSC_ERR_MEM : PETSC_ERR_LIB,
               "Canopy %s: %s", call, msg);
    F->factorerrortype = type;
    PetscCall(PetscInfo(F, "Canopy %s: %s\n", call, msg));
    PetscFunctionReturn(0);
}

/* The factor error type of a Canopy error PETSc may see as a failed factorization, or NOERROR */
static MatFactorError CanopyFailure(canopy_status st, PetscBool analysis)
{
    if (st == CANOPY_ERR_SINGULAR) return analysis ? MAT_FACTOR_STRUCT_ZEROPIVOT : MAT_FACTOR_NUMERIC_ZEROPIVOT;
    if (st == CANOPY_ERR_NOT_SPD) return MAT_FACTOR_NUMERIC_ZEROPIVOT;
    if (st == CANOPY_ERR_NOMEM) return MAT_FACTOR_OUTMEMORY;
    return MAT_FACTOR_NOERROR;
}

static int cmp_pair(const void *a, const void *b)
{
    const PetscInt *x = a, *y = b;
    if (x[0] != y[0]) return (x[0] > y[0]) - (x[0] < y[0]);
    return (x[1] > y[1]) - (x[1] < y[1]);
}

/* The entries of this rank's rows kept for Canopy: one triangle for Cholesky (SBAIJ rows with a
 * block size above 1 also give the lower part of their diagonal blocks), all of them for LU */
static PetscBool keep(const Mat_Canopy *c, PetscInt i, PetscInt j)
{
    return c->upper ? j >= i : c->lower_only ? j <= i : PETSC_TRUE;
}

/* A condition true on some rank raises the same error on all (Canopy's next call is collective) */
static PetscErrorCode CanopyAgree(Mat F, PetscBool bad, const char *what)
{
    PetscMPIInt mine = bad ? 1 : 0, any = 0;
    PetscFunctionBegin;
    PetscCallMPI(MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, PetscObjectComm((PetscObject)F)));
    PetscCheck(!any, PetscObjectComm((PetscObject)F), PETSC_ERR_ARG_INCOMP, "Canopy: %s", what);
    PetscFunctionReturn(0);
}

/* Read the rows' values in MatGetRow order into c->values (through c->slot); *other: this rank's
 * pattern is not the analyzed one (CanopyZeroLine's reduction refuses it on every rank) */
static PetscErrorCode CanopyReadValues(Mat A, Mat_Canopy *c, PetscBool *other_out)
{
    PetscInt rstart, rend, q = 0;
    PetscBool other = PETSC_FALSE;
    PetscFunctionBegin;
    PetscCall(MatGetOwnershipRange(A, &rstart, &rend));
    if (c->upper) PetscCall(MatGetRowUpperTriangular(A));
    for (PetscInt i = rstart; i < rend; i++) {
        PetscInt nc;
        const PetscInt *cj;
        const PetscScalar *v;
        PetscCall(MatGetRow(A, i, &nc, &cj, &v));
        for (PetscInt k = 0; k < nc && !other; k++, q++) {
            if (q >= c->nread || cj[k] != c->rcol[q]) other = PETSC_TRUE;
            else if (c->slot[q] >= 0) c->values[c->slot[q]] = v[k];
        }
        PetscCall(MatRestoreRow(A, i, &nc, &cj, &v));
    }
    if (c->upper) PetscCall(MatRestoreRowUpperTriangular(A));
    *other_out = other || q != c->nread ? PETSC_TRUE : PETSC_FALSE;
    PetscFunctionReturn(0);
}

/*
 * The first row or column (global index, -1 for none; the same on every rank) whose stored values
 * are all zero: the matrix is then exactly singular, a numeric failure as MUMPS and PETSc's own LU
 * report it (Canopy's static pivoting would perturb the zero pivot and solve something else).
 * The values are the ones read for Canopy: with one triangle (Cholesky), row i and column i are
 * the same line. Columns spread over the ranks: one reduction of n bytes, and one more that says
 * whether some rank's pattern is not the analyzed one (@p other: CanopyReadValues; the same error
 * on every rank then, Canopy's next call being collective).
 */
static PetscErrorCode CanopyZeroLine(Mat F, Mat_Canopy *c, PetscInt N, PetscBool other, PetscInt *line, PetscBool *row)
{
    unsigned char *flag; /* 1: row i has a nonzero, 2: column i has one; flag[N]: 1 another pattern */
    PetscFunctionBegin;
    PetscCall(PetscCalloc1(N + 1, &flag));
    flag[N] = other ? 1 : 0;
    for (canopy_int k = 0; k < c->ncols; k++)
        for (canopy_int e = c->colptr[k]; e < c->colptr[k + 1]; e++)
            if (c->values[e] != (PetscScalar)0) {
                flag[c->rowind[e]] |= 1;
                flag[c->cols[k]] |= 2;
            }
    for (PetscInt off = 0; off < N + 1; off += (PetscInt)1 << 30) {
        PetscMPIInt len = (PetscMPIInt)PetscMin(N + 1 - off, (PetscInt)1 << 30);
        PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, flag + off, len, MPI_UNSIGNED_CHAR, MPI_BOR, PetscObjectComm((PetscObject)F)));
    }
    other = flag[N] ? PETSC_TRUE : PETSC_FALSE;
    if (other) PetscCall(PetscFree(flag));
    PetscCheck(!other, PetscObjectComm((PetscObject)F), PETSC_ERR_ARG_INCOMP,
               "Canopy: the matrix's pattern is not the one analyzed (use DIFFERENT_NONZERO_PATTERN, or a new factor)");
    *line = -1;
    *row = PETSC_TRUE;
    for (PetscInt i = 0; i < N && *line < 0; i++) {
        unsigned char f = c->kind == CANOPY_KIND_GENERAL ? flag[i] : flag[i] ? 3 : 0;
        if (f != 3) {
            *line = i;
            *row = !(f & 1);
        }
    }
    PetscCall(PetscFree(flag));
    PetscFunctionReturn(0);
}

/* The pattern of this rank's rows regrouped by column (slot: where each entry read goes) */
static PetscErrorCode CanopyBuildPiece(Mat A, Mat_Canopy *c)
{
    PetscInt rstart, rend, total = 0, kept = 0;
    PetscInt *trip; /* (column, row, read index) */
    PetscFunctionBegin;
    PetscCall(MatGetOwnershipRange(A, &rstart, &rend));
    if (c->upper) PetscCall(MatGetRowUpperTriangular(A));
    for (PetscInt i = rstart; i < rend; i++) {
        PetscInt nc;
        PetscCall(MatGetRow(A, i, &nc, NULL, NULL));
        total += nc;
        PetscCall(MatRestoreRow(A, i, &nc, NULL, NULL));
    }
    PetscCall(PetscMalloc1(3 * total + 1, &trip));
    PetscCall(PetscMalloc1(total + 1, &c->slot));
    PetscCall(PetscMalloc1(total + 1, &c->rcol));
    c->nread = total;
    PetscInt q = 0;
    for (PetscInt i = rstart; i < rend; i++) {
        PetscInt nc;
        const PetscInt *cj;
        PetscCall(MatGetRow(A, i, &nc, &cj, NULL));
        for (PetscInt k = 0; k < nc; k++, q++) {
            c->slot[q] = -1;
            c->rcol[q] = cj[k];
            if (!keep(c, i, cj[k])) continue;
            trip[3 * kept] = cj[k];
            trip[3 * kept + 1] = i;
            trip[3 * kept + 2] = q;
            kept++;
        }
        PetscCall(MatRestoreRow(A, i, &nc, &cj, NULL));
    }
    if (c->upper) PetscCall(MatRestoreRowUpperTriangular(A));
    qsort(trip, (size_t)kept, 3 * sizeof(PetscInt), cmp_pair);
    PetscInt ncols = 0;
    for (PetscInt e = 0; e < kept; e++)
        if (e == 0 || trip[3 * e] != trip[3 * (e - 1)]) ncols++;
    PetscCall(PetscMalloc1(ncols + 1, &c->cols));
    PetscCall(PetscMalloc1(ncols + 1, &c->colptr));
    PetscCall(PetscMalloc1(kept + 1, &c->rowind));
    PetscCall(PetscMalloc1(kept + 1, &c->values));
    ncols = 0;
    for (PetscInt e = 0; e < kept; e++) {
        if (e == 0 || trip[3 * e] != trip[3 * (e - 1)]) {
            c->cols[ncols] = (canopy_int)trip[3 * e];
            c->colptr[ncols++] = (canopy_int)e;
        }
        c->rowind[e] = (canopy_int)trip[3 * e + 1];
        c->slot[trip[3 * e + 2]] = e;
    }
    c->colptr[ncols] = (canopy_int)kept;
    c->ncols = (canopy_int)ncols;
    c->nnz = (canopy_int)kept;
    PetscCall(PetscFree(trip));
    /* the vectors' rows */
    c->nloc = rend - rstart;
    PetscCall(PetscMalloc1(c->nloc + 1, &c->rows));
    for (PetscInt i = 0; i < c->nloc; i++) c->rows[i] = (canopy_int)(rstart + i);
    PetscFunctionReturn(0);
}

static void CanopyFreePiece(Mat_Canopy *c)
{
    PetscFree(c->cols);
    PetscFree(c->colptr);
    PetscFree(c->rowind);
    PetscFree(c->values);
    PetscFree(c->slot);
    PetscFree(c->rcol);
    PetscFree(c->rows);
    c->ncols = c->nnz = 0;
    c->nread = c->nloc = 0;
}

/* A new solver on F's communicator with the environment's and -mat_canopy_* options */
static PetscErrorCode CanopyCreate(Mat F, Mat_Canopy *c)
{
    canopy_options o;
    char msg[512] = "", name[64], value[1024], now[1024], help[512];
    PetscFunctionBegin;
    canopy_options_default(&o);
    PetscCheck(canopy_options_from_env(&o, msg, sizeof msg) == CANOPY_SUCCESS, PetscObjectComm((PetscObject)F),
               PETSC_ERR_ARG_WRONG, "Canopy: %s", msg);
    PetscOptionsBegin(PetscObjectComm((PetscObject)F), ((PetscObject)F)->prefix, "Canopy options", "Mat");
    for (size_t k = 0; k < sizeof canopy_options_help / sizeof canopy_options_help[0]; k++) {
        const CanopyOption *t = &canopy_options_help[k];
        PetscBool set = PETSC_FALSE;
        snprintf(name, sizeof name, "-mat_canopy_%s", t->name);
        for (char *p = name; *p; p++)
            if (*p == '-' && p > name) *p = '_';
        if (t->choices) snprintf(help, sizeof help, "%s; one of: %s", t->help, t->choices);
        else snprintf(help, sizeof help, "%s", t->help);
        CanopyOptionNow(&o, t->name, now, sizeof now);
        value[0] = '\0';
        PetscCall(PetscOptionsString(name, help, "Canopy's README, Options", now, value, sizeof value, &set));
        if (set)
            PetscCheck(canopy_options_set(&o, t->name, value, msg, sizeof msg) == CANOPY_SUCCESS,
                       PetscObjectComm((PetscObject)F), PETSC_ERR_ARG_WRONG, "%s: %s", name, msg);
    }
    PetscOptionsEnd();
    c->strict = o.strict ? PETSC_TRUE : PETSC_FALSE;
    canopy_status st = canopy_create(PetscObjectComm((PetscObject)F), &o, &c->s);
    PetscCheck(st >= 0, PetscObjectComm((PetscObject)F), PETSC_ERR_LIB, "Canopy canopy_create: %s",
               canopy_last_error(NULL));
    PetscFunctionReturn(0);
}

/* symbolic: the pattern to Canopy and its analysis (ordering, symbolic factorization, plan) */
static PetscErrorCode CanopySymbolic(Mat F, Mat A)
{
    Mat_Canopy *c = (Mat_Canopy *)F->data;
    PetscInt N;
    PetscFunctionBegin;
    if (c->s) canopy_destroy(&c->s);
    CanopyFreePiece(c);
    c->analyzed = c->factorized = c->reanalyze = PETSC_FALSE;
    c->erroriffailure = A->erroriffailure;
    F->factorerrortype = MAT_FACTOR_NOERROR;
    PetscCall(MatGetSize(A, &N, NULL));
    /* PETSc's 64-bit indices into a 32-bit Canopy: refuse what does not fit (on every rank) */
    PetscCall(CanopyAgree(F, (int64_t)N > (int64_t)(sizeof(canopy_int) == 4 ? INT32_MAX : INT64_MAX) - 1,
                          "the matrix is too large for Canopy's index type (build Canopy with --enable-int64)"));
    PetscCall(CanopyCreate(F, c));
    PetscCall(CanopyBuildPiece(A, c));
    PetscCall(CanopyAgree(F, sizeof(canopy_int) == 4 && (int64_t)c->nnz >= (int64_t)INT32_MAX,
                          "a rank's entries overflow Canopy's index type (build Canopy with --enable-int64)"));
    PetscBool other;
    PetscCall(CanopyReadValues(A, c, &other));
    PetscCall(CanopyAgree(F, other, "the matrix's pattern changed while it was read"));
    canopy_dist_csc d = {.n = (canopy_int)N, .ncols = c->ncols, .cols = c->cols, .colptr = c->colptr,
                         .rowind = c->rowind, .values = c->values, .base = 0,
#if defined(PETSC_USE_COMPLEX)
                         .arith = CANOPY_COMPLEX,
#else
                         .arith = CANOPY_REAL,
#endif
                         .kind = c->kind,
                         .triangle = c->kind == CANOPY_KIND_GENERAL ? CANOPY_TRIANGLE_BOTH
                                     : c->upper               ? CANOPY_TRIANGLE_UPPER
                                                              : CANOPY_TRIANGLE_LOWER};
    PetscCall(CanopyCheck(F, canopy_set_matrix_distributed(c->s, &d), "canopy_set_matrix_distributed"));
    /* the analysis judges the pattern only; a pattern without a perfect matching (a row or column
     * without any entry) is a failed symbolic factorization, for good: PETSc asks for a new one
     * only with a new pattern */
    canopy_status st = canopy_analyze(c->s);
    MatFactorError fail = CanopyFailure(st, PETSC_TRUE);
    if (fail != MAT_FACTOR_NOERROR) {
        PetscCall(CanopyFail(F, fail, "canopy_analyze", canopy_last_error(c->s)));
        PetscFunctionReturn(0);
    }
    PetscCall(CanopyCheck(F, st, "canopy_analyze"));
    c->analyzed = PETSC_TRUE;
    /* values that leave a line zero gave the analysis no scaling (Canopy's matching and scaling
     * are computed from the analysis' values): the first factorization that has no zero line
     * analyzes again */
    PetscInt line;
    PetscBool row;
    PetscCall(CanopyZeroLine(F, c, N, PETSC_FALSE, &line, &row));
    c->reanalyze = line >= 0;
    PetscFunctionReturn(0);
}

/*
 * Solves: op(A) X = B on the vectors' own rows, op = A (MatSolve, MatMatSolve) or A^T
 * (MatSolveTranspose, MatMatSolveTranspose: the same factors, used transposed). PETSc's
 * MatSolveAdd and MatSolveTransposeAdd fall back on these. With option strict, after a
 * factorization that perturbed pivots, the solution is refined against B: a refinement that
 * cannot make it a solution (a numerically singular matrix, B not in its range) is
 * CANOPY_ERR_SINGULAR, and so is a solution that is not finite. The solution is then Inf, as
 * PETSc leaves it after a failed factorization (KSP: DIVERGED_NANORINF in a Krylov method; with
 * preonly the Inf solution itself, since PETSc 3.18 lets only the setup mark the PC as failed),
 * unless the matrix says errors. Any other error is a PETSc error; warnings go to PetscInfo.
 */
static PetscErrorCode CanopySolveArrays(Mat F, canopy_trans trans, PetscInt nrhs, const PetscScalar *b, PetscInt ldb,
                                        PetscScalar *x, PetscInt ldx, PetscBool *failed)
{
    Mat_Canopy *c = (Mat_Canopy *)F->data;
    const char *call = "canopy_solve_distributed_trans";
    canopy_int lb = (canopy_int)(ldb > 0 ? ldb : 1), lx = (canopy_int)(ldx > 0 ? ldx : 1);
    PetscFunctionBegin;
    /* x holds b: solve in place */
    canopy_status st = canopy_solve_distributed_trans(c->s, trans, (canopy_int)nrhs, (canopy_int)c->nloc, c->rows, x, lx);
    if (st >= 0 && c->strict && c->perturbed > 0) {
        canopy_stats stats;
        call = "canopy_refine_distributed_trans";
        st = canopy_refine_distributed_trans(c->s, trans, (canopy_int)nrhs, (canopy_int)c->nloc, c->rows, b, lb, x, lx);
        canopy_get_stats(c->s, &stats);
        PetscCall(PetscInfo(F, "Canopy: %" PetscInt64_FMT " pivots perturbed, refinement of op(A) = A%s: %d steps, backward error %g\n",
                            (PetscInt64)c->perturbed, trans == CANOPY_TRANS_NONE ? "" : "^T", stats.refinement_steps,
                            stats.backward_error));
    }
    *failed = PETSC_FALSE;
    if (st == CANOPY_ERR_SINGULAR && !c->erroriffailure) {
        PetscCall(PetscInfo(F, "Canopy %s: %s (the solution is set to Inf)\n", call, canopy_last_error(c->s)));
        *failed = PETSC_TRUE;
        PetscFunctionReturn(0);
    }
    PetscCall(CanopyCheck(F, st, call));
    PetscFunctionReturn(0);
}

static PetscErrorCode CanopySolveVec(Mat F, canopy_trans trans, Vec b, Vec x)
{
    Mat_Canopy *c = (Mat_Canopy *)F->data;
    PetscScalar *xa;
    const PetscScalar *ba;
    PetscBool failed;
    PetscFunctionBegin;
    PetscCall(VecCopy(b, x));
    PetscCall(VecGetArray(x, &xa));
    PetscCall(VecGetArrayRead(b, &ba));
    PetscCall(CanopySolveArrays(F, trans, 1, ba, c->nloc, xa, c->nloc, &failed));
    PetscCall(VecRestoreArrayRead(b, &ba));
    PetscCall(VecRestoreArray(x, &xa));
    if (failed) PetscCall(VecSetInf(x));
    PetscFunctionReturn(0);
}

static PetscErrorCode MatSolve_Canopy(Mat F, Vec b, Vec x)
{
    return CanopySolveVec(F, CANOPY_TRANS_NONE, b, x);
}

static PetscErrorCode MatSolveTranspose_Canopy(Mat F, Vec b, Vec x)
{
    return CanopySolveVec(F, CANOPY_TRANS_T, b, x);
}

static PetscErrorCode CanopySolveMat(Mat F, canopy_trans trans, Mat B, Mat X)
{
    PetscScalar *xa;
    const PetscScalar *ba;
    PetscInt nrhs, lda, ldb;
    PetscBool dense, failed;
    PetscFunctionBegin;
    PetscCall(PetscObjectTypeCompareAny((PetscObject)X, &dense, MATSEQDENSE, MATMPIDENSE, ""));
    PetscCheck(dense, PetscObjectComm((PetscObject)F), PETSC_ERR_ARG_WRONG, "Canopy: MatMatSolve needs a dense X");
    PetscCall(PetscObjectTypeCompareAny((PetscObject)B, &dense, MATSEQDENSE, MATMPIDENSE, ""));
    PetscCheck(dense, PetscObjectComm((PetscObject)F), PETSC_ERR_ARG_WRONG, "Canopy: MatMatSolve needs a dense B");
    PetscCall(MatCopy(B, X, SAME_NONZERO_PATTERN));
    PetscCall(MatGetSize(X, NULL, &nrhs));
    PetscCall(MatDenseGetLDA(X, &lda));
    PetscCall(MatDenseGetLDA(B, &ldb));
    PetscCall(MatDenseGetArray(X, &xa));
    PetscCall(MatDenseGetArrayRead(B, &ba));
    PetscCall(CanopySolveArrays(F, trans, nrhs, ba, ldb, xa, lda, &failed));
    PetscCall(MatDenseRestoreArrayRead(B, &ba));
    PetscCall(MatDenseRestoreArray(X, &xa));
    if (failed) PetscCall(MatSetInf(X));
    PetscFunctionReturn(0);
}

static PetscErrorCode MatMatSolve_Canopy(Mat F, Mat B, Mat X)
{
    return CanopySolveMat(F, CANOPY_TRANS_NONE, B, X);
}

static PetscErrorCode MatMatSolveTranspose_Canopy(Mat F, Mat B, Mat X)
{
    return CanopySolveMat(F, CANOPY_TRANS_T, B, X);
}

/*
 * numeric: the values in the analyzed order, then the factorization. A zero row or column, a
 * failed factorization (a zero matrix, LL^T of a matrix that is not positive definite, memory)
 * set the factor's error type on every rank; perturbed pivots (static pivoting) are a warning
 * (PetscInfo), which with option strict the solves check by refinement.
 */
static PetscErrorCode CanopyNumeric(Mat F, Mat A)
{
    Mat_Canopy *c = (Mat_Canopy *)F->data;
    PetscInt N, line;
    PetscBool row;
    char msg[128];
    PetscFunctionBegin;
    c->erroriffailure = A->erroriffailure;
    if (!c->analyzed) { /* the symbolic factorization failed: its error type stays */
        PetscCall(PetscInfo(F, "Canopy: numeric factorization after a failed analysis\n"));
        PetscFunctionReturn(0);
    }
    F->factorerrortype = MAT_FACTOR_NOERROR;
    c->factorized = PETSC_FALSE;
    PetscBool other;
    PetscCall(CanopyReadValues(A, c, &other));
    PetscCall(MatGetSize(A, &N, NULL));
    PetscCall(CanopyZeroLine(F, c, N, other, &line, &row));
    if (line >= 0) {
        PetscCall(PetscSNPrintf(msg, sizeof msg, "%s %" PetscInt_FMT " of the matrix is zero", row ? "row" : "column", line));
        PetscCall(CanopyFail(F, MAT_FACTOR_NUMERIC_ZEROPIVOT, "numeric factorization", msg));
        PetscFunctionReturn(0);
    }
    canopy_status st = canopy_update_values_distributed(c->s, c->values);
    if (st == CANOPY_ERR_MATRIX) { /* NaN or Inf among the values */
        PetscCall(CanopyFail(F, MAT_FACTOR_OTHER, "canopy_update_values_distributed", canopy_last_error(c->s)));
        PetscFunctionReturn(0);
    }
    PetscCall(CanopyCheck(F, st, "canopy_update_values_distributed"));
    if (c->reanalyze) {
        /* the analysis' values had a zero line: these have none, and give the scaling */
        PetscCall(PetscInfo(F, "Canopy: analyzing again with values that have no zero row or column\n"));
        st = canopy_analyze(c->s);
        MatFactorError fail = CanopyFailure(st, PETSC_TRUE);
        if (fail != MAT_FACTOR_NOERROR) {
            c->analyzed = PETSC_FALSE;
            PetscCall(CanopyFail(F, fail, "canopy_analyze", canopy_last_error(c->s)));
            PetscFunctionReturn(0);
        }
        PetscCall(CanopyCheck(F, st, "canopy_analyze"));
        c->reanalyze = PETSC_FALSE;
    }
    st = canopy_factorize(c->s);
    MatFactorError fail = CanopyFailure(st, PETSC_FALSE);
    if (fail != MAT_FACTOR_NOERROR) {
        PetscCall(CanopyFail(F, fail, "canopy_factorize", canopy_last_error(c->s)));
        PetscFunctionReturn(0);
    }
    PetscCall(CanopyCheck(F, st, "canopy_factorize"));
    canopy_stats stats;
    canopy_get_stats(c->s, &stats);
    c->perturbed = stats.perturbed_pivots;
    if (st == CANOPY_SUCCESS && c->perturbed > 0) /* several ranks: the figure says it, not the status */
        PetscCall(PetscInfo(F, "Canopy canopy_factorize: %" PetscInt64_FMT " pivots were perturbed (static pivoting)\n",
                            (PetscInt64)c->perturbed));
    c->factorized = PETSC_TRUE;
    F->ops->solve = MatSolve_Canopy;
    F->ops->solvetranspose = MatSolveTranspose_Canopy;
    F->ops->matsolve = MatMatSolve_Canopy;
    F->ops->matsolvetranspose = MatMatSolveTranspose_Canopy;
    F->assembled = PETSC_TRUE;
    F->preallocated = PETSC_TRUE;
    PetscFunctionReturn(0);
}

static PetscErrorCode MatLUFactorNumeric_Canopy(Mat F, Mat A, const MatFactorInfo *info)
{
    (void)info;
    return CanopyNumeric(F, A);
}

static PetscErrorCode MatLUFactorSymbolic_Canopy(Mat F, Mat A, IS r, IS col, const MatFactorInfo *info)
{
    (void)r;
    (void)col;
    (void)info;
    PetscFunctionBegin;
    PetscCall(CanopySymbolic(F, A));
    F->ops->lufactornumeric = MatLUFactorNumeric_Canopy;
    PetscFunctionReturn(0);
}

static PetscErrorCode MatCholeskyFactorNumeric_Canopy(Mat F, Mat A, const MatFactorInfo *info)
{
    (void)info;
    return CanopyNumeric(F, A);
}

static PetscErrorCode MatCholeskyFactorSymbolic_Canopy(Mat F, Mat A, IS perm, const MatFactorInfo *info)
{
    Mat_Canopy *c = (Mat_Canopy *)F->data;
    PetscBool set, flg;
    (void)perm;
    (void)info;
    PetscFunctionBegin;
    /* LL^T when PETSc knows A is SPD, LDL^T otherwise (as MUMPS's Cholesky) */
    PetscCall(MatIsSPDKnown(A, &set, &flg));
    c->kind = set && flg ? CANOPY_KIND_SPD : CANOPY_KIND_SYMMETRIC;
#if defined(PETSC_USE_COMPLEX)
    PetscBool hset, herm;
    PetscCall(MatIsHermitianKnown(A, &hset, &herm));
    if (hset && herm) c->kind = CANOPY_KIND_HERMITIAN;
#endif
    PetscCall(CanopySymbolic(F, A));
    F->ops->choleskyfactornumeric = MatCholeskyFactorNumeric_Canopy;
    PetscFunctionReturn(0);
}

static PetscErrorCode MatView_Canopy(Mat F, PetscViewer viewer)
{
    Mat_Canopy *c = (Mat_Canopy *)F->data;
    PetscBool ascii;
    PetscViewerFormat format;
    PetscFunctionBegin;
    PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &ascii));
    if (!ascii) PetscFunctionReturn(0);
    PetscCall(PetscViewerGetFormat(viewer, &format));
    if (format != PETSC_VIEWER_ASCII_INFO && format != PETSC_VIEWER_ASCII_INFO_DETAIL) PetscFunctionReturn(0);
    PetscCall(PetscViewerASCIIPrintf(viewer, "Canopy run parameters:\n"));
    if (!c->s || !c->analyzed) {
        PetscCall(PetscViewerASCIIPrintf(viewer, "  (not analyzed yet)\n"));
        PetscFunctionReturn(0);
    }
    canopy_stats st;
    canopy_get_stats(c->s, &st);
    PetscCall(PetscViewerASCIIPrintf(viewer, "  factorization %s, %d rank(s) x %d thread(s), scheduler %s, tree %s\n",
                                     canopy_factorization_name(st.factorization), st.ranks, st.threads_per_rank,
                                     st.scheduler == CANOPY_SCHED_DYNAMIC ? "dynamic" : "static",
                                     st.tree == CANOPY_TREE_FLAT ? "flat" : st.tree == CANOPY_TREE_BINARY ? "binary" : "shifted"));
    PetscCall(PetscViewerASCIIPrintf(viewer, "  n %lld, nnz(A) %lld, nnz(L) %lld, column blocks %lld, flops %g\n",
                                     (long long)st.n, (long long)st.nnz, (long long)st.nnz_factor, (long long)st.ncblk,
                                     st.flops));
    PetscCall(PetscViewerASCIIPrintf(viewer, "  analyze %g s, last factorization %g s (%g GFlop/s), perturbed pivots %lld\n",
                                     st.time_analyze, st.time_factorize, st.gflops_factorize,
                                     (long long)st.perturbed_pivots));
    PetscCall(PetscViewerASCIIPrintf(viewer, "  BLAS %s: DGEMM %.1f GFlop/s on one core%s (the CPU's vector units: about %.0f)%s%s\n",
                                     st.blas_name, st.blas_gflops, st.blas_gflops > 0 ? "" : " (not measured)",
                                     st.blas_gflops_expected, st.blas_warning ? "; WARNING: " : "", st.blas_message));
    PetscFunctionReturn(0);
}

static PetscErrorCode MatGetInfo_Canopy(Mat F, MatInfoType flag, MatInfo *info)
{
    Mat_Canopy *c = (Mat_Canopy *)F->data;
    (void)flag;
    PetscFunctionBegin;
    PetscCall(PetscMemzero(info, sizeof *info));
    if (c->s && c->analyzed) {
        canopy_stats st;
        canopy_get_stats(c->s, &st);
        info->nz_used = info->nz_allocated = (PetscLogDouble)st.nnz_factor;
        info->memory = (PetscLogDouble)st.factor_bytes;
        info->factor_mallocs = 0;
        info->fill_ratio_needed = info->fill_ratio_given = st.nnz > 0 ? (PetscLogDouble)st.nnz_factor / (PetscLogDouble)st.nnz : 0;
    }
    info->block_size = 1.0;
    PetscFunctionReturn(0);
}

static PetscErrorCode MatFactorGetSolverType_Canopy(Mat F, MatSolverType *type)
{
    (void)F;
    PetscFunctionBegin;
    *type = MATSOLVERCANOPY;
    PetscFunctionReturn(0);
}

static PetscErrorCode MatDestroy_Canopy(Mat F)
{
    Mat_Canopy *c = (Mat_Canopy *)F->data;
    PetscFunctionBegin;
    if (c) {
        if (c->s) canopy_destroy(&c->s);
        CanopyFreePiece(c);
    }
    PetscCall(PetscFree(F->data));
    PetscCall(PetscObjectComposeFunction((PetscObject)F, "MatFactorGetSolverType_C", NULL));
    PetscFunctionReturn(0);
}

static PetscErrorCode MatGetFactor_Canopy(Mat A, MatFactorType ftype, Mat *F)
{
    Mat B;
    Mat_Canopy *c;
    PetscBool sbaij;
    PetscFunctionBegin;
    PetscCall(PetscObjectTypeCompareAny((PetscObject)A, &sbaij, MATSEQSBAIJ, MATMPISBAIJ, ""));
    PetscCheck(ftype == MAT_FACTOR_LU || ftype == MAT_FACTOR_CHOLESKY, PetscObjectComm((PetscObject)A), PETSC_ERR_SUP,
               "Canopy factors LU and Cholesky only");
    PetscCheck(!sbaij || ftype == MAT_FACTOR_CHOLESKY, PetscObjectComm((PetscObject)A), PETSC_ERR_SUP,
               "Canopy: an SBAIJ matrix (one triangle) needs -pc_type cholesky; use AIJ for LU");
    PetscCall(MatCreate(PetscObjectComm((PetscObject)A), &B));
    PetscCall(MatSetSizes(B, A->rmap->n, A->cmap->n, A->rmap->N, A->cmap->N));
    PetscCall(PetscStrallocpy(MATSOLVERCANOPY, &((PetscObject)B)->type_name));
    PetscCall(MatSetUp(B));
    PetscCall(PetscNew(&c));
    c->upper = sbaij;
    c->lower_only = ftype == MAT_FACTOR_CHOLESKY && !sbaij;
    c->kind = ftype == MAT_FACTOR_LU ? CANOPY_KIND_GENERAL : CANOPY_KIND_SYMMETRIC;
    B->data = c;
    B->factortype = ftype;
    B->canuseordering = PETSC_FALSE; /* Canopy orders (SCOTCH, PT-SCOTCH) */
    B->ops->view = MatView_Canopy;
    B->ops->getinfo = MatGetInfo_Canopy;
    B->ops->destroy = MatDestroy_Canopy;
    if (ftype == MAT_FACTOR_LU) {
        B->ops->lufactorsymbolic = MatLUFactorSymbolic_Canopy;
        PetscCall(PetscFree(B->preferredordering[MAT_FACTOR_LU]));
        PetscCall(PetscStrallocpy(MATORDERINGEXTERNAL, (char **)&B->preferredordering[MAT_FACTOR_LU]));
    } else {
        B->ops->choleskyfactorsymbolic = MatCholeskyFactorSymbolic_Canopy;
        PetscCall(PetscFree(B->preferredordering[MAT_FACTOR_CHOLESKY]));
        PetscCall(PetscStrallocpy(MATORDERINGEXTERNAL, (char **)&B->preferredordering[MAT_FACTOR_CHOLESKY]));
    }
    PetscCall(PetscObjectComposeFunction((PetscObject)B, "MatFactorGetSolverType_C", MatFactorGetSolverType_Canopy));
    PetscCall(PetscFree(B->solvertype));
    PetscCall(PetscStrallocpy(MATSOLVERCANOPY, &B->solvertype));
    *F = B;
    PetscFunctionReturn(0);
}

/** Register the package "canopy" with PETSc (for programs linked with libcanopy_petsc). */
PETSC_EXTERN PetscErrorCode CanopyPetscRegister(void);
PETSC_EXTERN PetscErrorCode CanopyPetscRegister(void)
{
    static const MatType lu_types[] = {MATSEQAIJ, MATMPIAIJ, MATSEQBAIJ, MATMPIBAIJ};
    static const MatType chol_types[] = {MATSEQAIJ, MATMPIAIJ, MATSEQBAIJ, MATMPIBAIJ, MATSEQSBAIJ, MATMPISBAIJ};
    PetscFunctionBegin;
    /* PETSc 3.18's MatSolverTypeRegister reads its list head before it initializes the Mat
     * package, which registers the built-in packages: a first call from -dll_append (inside
     * PetscInitialize, before the package is up) would start a new list and lose them all
     * (MUMPS, PETSc's own LU and ILU: "Could not locate solver type petsc") */
    PetscCall(MatInitializePackage());
    for (size_t k = 0; k < sizeof lu_types / sizeof lu_types[0]; k++)
        PetscCall(MatSolverTypeRegister(MATSOLVERCANOPY, lu_types[k], MAT_FACTOR_LU, MatGetFactor_Canopy));
    for (size_t k = 0; k < sizeof chol_types / sizeof chol_types[0]; k++)
        PetscCall(MatSolverTypeRegister(MATSOLVERCANOPY, chol_types[k], MAT_FACTOR_CHOLESKY, MatGetFactor_Canopy));
    PetscFunctionReturn(0);
}

/* called by PETSc when -dll_append / -dll_prepend loads libcanopy_petsc.so */
PETSC_EXTERN PetscErrorCode PetscDLLibraryRegister_canopy_petsc(void);
PETSC_EXTERN PetscErrorCode PetscDLLibraryRegister_canopy_petsc(void)
{
    return CanopyPetscRegister();
}
