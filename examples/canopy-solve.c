/*
 * canopy-solve: the command-line driver. Reads a matrix (or builds a model problem), solves
 * A x = b with b = A * ones so the exact solution is known, refines, and reports backward and
 * forward errors, nnz(L), flops, time per phase and GFlop/s (text or --json).
 * Uses the public API only, as an application would.
 */
#include <canopy.h>

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli_selinv.h"

typedef struct cli {
    canopy_options opts;
    int nrhs, repeat, json, stencil, analyze_only;
    int kind_override; /* -1: as read */
    const char *file;
    long lap[3];       /* --laplacian NXxNYxNZ */
    long helm[2];      /* --helmholtz NXxNY */
    int have_lap, have_helm;
    int distributed;   /* --distributed: every rank reads the input and passes its share of the columns */
    int progress;      /* --progress on|off; -1: auto (on a terminal, without --json) */
    cli_selinv sel;    /* --selinv, --selinv-out, --selinv-entries */
} cli;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: canopy-solve [options] [FILE.mtx[.gz] | FILE.rb | --laplacian NX[xNY[xNZ]] | --helmholtz N[xM]]\n"
            "Without an input, solves the built-in 3D Laplacian 50x50x50 and the Helmholtz problem 500x500.\n"
            "Right-hand side b = A*ones (the exact solution is all ones).\n\n"
            "input:\n"
            "  --laplacian NX[xNY[xNZ]]  Laplacian (5-point in 2D, 7-point in 3D; --stencil 27)\n"
            "  --helmholtz N[xM]         Helmholtz-type model problem on an N x M grid\n"
            "  --stencil 5|7|27          stencil of --laplacian\n"
            "  --kind spd|symmetric|hermitian|general  override the kind of a file (a symmetric file is read as\n"
            "                            'symmetric' and factorized LDL^T unless --kind spd)\n"
            "solve:\n"
            "  --nrhs K                  right-hand sides (default 1)\n"
            "  --refine N                refinement steps at most (default 100)\n"
            "  --refine-tolerance T      target backward error (default 1e-14)\n"
            "  --repeat R                factorize R times and report each\n"
            "  --json                    one JSON object per problem on stdout\n"
            "  --analyze-only            stop after the analysis (ordering, nnz(L), flops)\n"
            "  --progress on|off         the running phase on stderr, with the share of the factorization's\n"
            "                            predicted work done and the time left (default: on a terminal, after\n"
            "                            2 s in a phase, and not with --json)\n"
            "  --selinv diag|pattern     after the solve, selected entries of A^-1: its diagonal, or every entry in\n"
            "                            the pattern of the factors (canopy_selinv; over the factors unless\n"
            "                            --selinv-memory separate)\n"
            "  --selinv-out FILE.mtx     write them as a Matrix Market coordinate file (1-based, general)\n"
            "  --selinv-entries FILE     the entries of A^-1 listed in FILE (two 1-based indices per line)\n"
            "  --distributed             every rank gives the solver its own part of the matrix\n"
            "                            (canopy_set_matrix_distributed) instead of rank 0 all of it: a file's\n"
            "                            share of entries (canopy_read_matrix_part), a generated matrix's\n"
            "                            block of columns\n"
            "runtime options (also CANOPY_<NAME> in the environment):\n"
            "  --threads N  --bind none|core|LIST  --numa local|global|interleave\n"
            "  --scheduler static|dynamic  --comm-threads 0|1|2  --tree flat|binary|shifted\n"
            "  --factorization auto|llt|ldlt|lu  --ordering auto|scotch|ptscotch|natural  --scaling auto|none|equilibrate|matching\n"
            "  --pivot-threshold X  --amalgamation 0|1  --amalgamation-fill X  --split auto|0|N\n"
            "  --2d-levels auto|0|N  --ordering-threads N\n"
            "  --trace FILE  --cost-cache PATH|none|fixed  --verbose 0..3\n"
            "  several ranks: --mapping auto|flops|memory  --memory-limit BYTES  --memory-check on|off\n"
            "  --root-grid off|on|auto (the root separator factored by every rank on a 2D grid)\n"
            "  --help, --version\n");
}

/* ---- progress on a terminal ------------------------------------------------------------ */

/* A thread of rank 0 that asks the solver what it is doing (canopy_get_progress) five times a
 * second and rewrites one line of stderr; the line goes once the phase ends. */
typedef struct progress {
    canopy_solver *s;
    double delay;       /* seconds a phase runs before it is shown */
    atomic_int stop;
    pthread_t th;
    int started;
} progress;

static double mono_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void *progress_main(void *arg)
{
    progress *p = arg;
    static const char *const names[] = {"", "analyze", "factorize", "solve", "selected inversion"};
    canopy_phase last = CANOPY_PHASE_IDLE;
    double since = mono_seconds(), last_done = 0;
    int shown = 0;
    while (!atomic_load(&p->stop)) {
        canopy_phase ph = CANOPY_PHASE_IDLE;
        double done = -1, now = mono_seconds();
        canopy_get_progress(p->s, &ph, &done);
        if (ph != last) {
            if (shown) fprintf(stderr, "\r%79s\r", "");
            shown = 0;
            last = ph;
            since = now;
            last_done = 0;
        }
        if (ph == CANOPY_PHASE_FACTORIZE && done >= 0 && done + 0.01 < last_done) since = now; /* the next one */
        if (done >= 0) last_done = done;
        double t = now - since;
        if (ph != CANOPY_PHASE_IDLE && ph <= CANOPY_PHASE_SELINV && t >= p->delay) {
            char line[160];
            if (ph == CANOPY_PHASE_FACTORIZE && done > 0.02 && t * (1 - done) / done >= 1)
                snprintf(line, sizeof line, "canopy-solve: factorize %3.0f%% of the predicted work, %.1f s, about %.0f s left",
                         100 * done, t, t * (1 - done) / done);
            else if (ph == CANOPY_PHASE_FACTORIZE && done > 0.02)
                snprintf(line, sizeof line, "canopy-solve: factorize %3.0f%% of the predicted work, %.1f s, under 1 s left",
                         100 * done, t);
            else if (ph == CANOPY_PHASE_FACTORIZE && done >= 0)
                snprintf(line, sizeof line, "canopy-solve: factorize %3.0f%% of the predicted work, %.1f s", 100 * done, t);
            else
                snprintf(line, sizeof line, "canopy-solve: %s, %.1f s", names[ph], t);
            fprintf(stderr, "\r%-79s", line);
            fflush(stderr);
            shown = 1;
        }
        struct timespec nap = {0, 200000000};
        nanosleep(&nap, NULL);
    }
    if (shown) fprintf(stderr, "\r%79s\r", "");
    return NULL;
}

static void progress_start(progress *p, canopy_solver *s, const cli *c, int rank)
{
    memset(p, 0, sizeof *p);
    int on = c->progress >= 0 ? c->progress : isatty(STDERR_FILENO) && !c->json;
    if (!on || rank != 0) return;
    p->s = s;
    p->delay = c->progress > 0 ? 0.0 : 2.0;
    atomic_init(&p->stop, 0);
    p->started = pthread_create(&p->th, NULL, progress_main, p) == 0;
}

static void progress_stop(progress *p)
{
    if (!p->started) return;
    atomic_store(&p->stop, 1);
    pthread_join(p->th, NULL);
    p->started = 0;
}

static int parse_dims(const char *s, long *d, int maxd)
{
    int k = 0;
    const char *p = s;
    while (k < maxd) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        /* canopy_int may be 32 bits: refuse what would silently wrap */
        if (errno || end == p || v < 1 || (sizeof(canopy_int) < sizeof(long) && v > (long)INT32_MAX)) return -1;
        d[k++] = v;
        if (*end == '\0') return k;
        if (*end != 'x' && *end != 'X') return -1;
        p = end + 1;
    }
    return -1;
}

static int parse_int_arg(const char *s, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

/* returns 0 ok, 1 exit success (help), 2 usage error */
static int parse_args(int argc, char **argv, cli *c, int rank)
{
    canopy_options_default(&c->opts);
    char msg[512];
    if (canopy_options_from_env(&c->opts, msg, sizeof msg) != CANOPY_SUCCESS) {
        if (rank == 0) fprintf(stderr, "canopy-solve: %s\n", msg);
        return 2;
    }
    c->nrhs = 1;
    c->repeat = 1;
    c->stencil = 0;
    c->kind_override = -1;
    c->progress = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            if (rank == 0) usage(stdout);
            return 1;
        } else if (!strcmp(a, "--version")) {
            if (rank == 0) printf("canopy-solve %s\n", CANOPY_VERSION_STRING);
            return 1;
        } else if (!strcmp(a, "--json")) {
            c->json = 1;
        } else if (!strcmp(a, "--analyze-only")) {
            c->analyze_only = 1;
        } else if (!strcmp(a, "--distributed")) {
            c->distributed = 1;
        } else if (!strcmp(a, "--progress")) {
            if (v == NULL || (strcmp(v, "on") && strcmp(v, "off"))) {
                if (rank == 0) fprintf(stderr, "canopy-solve: --progress needs on or off\n");
                return 2;
            }
            c->progress = !strcmp(v, "on");
            i++;
        } else if (strncmp(a, "--", 2) == 0) {
            if (v == NULL) {
                if (rank == 0) fprintf(stderr, "canopy-solve: option %s needs a value\n", a);
                return 2;
            }
            const char *name = a + 2;
            int bad = 0;
            if (!strcmp(name, "laplacian")) {
                long d[3] = {1, 1, 1};
                int k = parse_dims(v, d, 3);
                bad = k < 1;
                if (k == 1) d[1] = d[2] = d[0];
                memcpy(c->lap, d, sizeof d);
                if (k == 2) c->lap[2] = 1;
                c->have_lap = 1;
            } else if (!strcmp(name, "helmholtz")) {
                long d[2] = {1, 1};
                int k = parse_dims(v, d, 2);
                bad = k < 1;
                if (k == 1) d[1] = d[0];
                memcpy(c->helm, d, sizeof d);
                c->have_helm = 1;
            } else if (!strcmp(name, "stencil")) {
                bad = parse_int_arg(v, 5, 27, &c->stencil) || (c->stencil != 5 && c->stencil != 7 && c->stencil != 27);
            } else if (!strcmp(name, "nrhs")) {
                bad = parse_int_arg(v, 1, 100000, &c->nrhs);
            } else if (!strcmp(name, "repeat")) {
                bad = parse_int_arg(v, 1, 100000, &c->repeat);
            } else if (!strcmp(name, "selinv")) {
                c->sel.what = !strcmp(v, "diag") ? 1 : !strcmp(v, "pattern") ? 2 : 0;
                bad = c->sel.what == 0;
            } else if (!strcmp(name, "selinv-out")) {
                c->sel.out = v;
            } else if (!strcmp(name, "selinv-entries")) {
                c->sel.entries = v;
            } else if (!strcmp(name, "kind")) {
                if (!strcmp(v, "spd")) c->kind_override = CANOPY_KIND_SPD;
                else if (!strcmp(v, "symmetric")) c->kind_override = CANOPY_KIND_SYMMETRIC;
                else if (!strcmp(v, "general")) c->kind_override = CANOPY_KIND_GENERAL;
                else if (!strcmp(v, "hermitian")) c->kind_override = CANOPY_KIND_HERMITIAN;
                else bad = 1;
            } else if (canopy_options_set(&c->opts, name, v, msg, sizeof msg) != CANOPY_SUCCESS) {
                if (rank == 0) fprintf(stderr, "canopy-solve: %s\n", msg);
                return 2;
            }
            if (bad) {
                if (rank == 0) fprintf(stderr, "canopy-solve: invalid value '%s' for %s\n", v, a);
                return 2;
            }
            i++;
        } else if (c->file == NULL) {
            c->file = a;
        } else {
            if (rank == 0) fprintf(stderr, "canopy-solve: more than one input file given\n");
            return 2;
        }
    }
    if (c->opts.ordering == CANOPY_ORDER_USER) {
        if (rank == 0) fprintf(stderr, "canopy-solve: --ordering user needs a permutation: use the API (canopy_set_permutation)\n");
        return 2;
    }
    if (c->sel.out && !c->sel.what && !c->sel.entries) {
        if (rank == 0) fprintf(stderr, "canopy-solve: --selinv-out needs --selinv diag|pattern or --selinv-entries\n");
        return 2;
    }
    if (!!c->file + c->have_lap + c->have_helm > 1) {
        if (rank == 0) fprintf(stderr, "canopy-solve: give one input: a file, --laplacian or --helmholtz\n");
        return 2;
    }
    return 0;
}

/*
 * y = A x for a matrix as read (real, or complex as (re, im) pairs): one stored triangle of a
 * symmetric kind is mirrored (conjugated for Hermitian). rowsum, if not NULL, receives sum_j |a_ij|.
 */
static void spmv(const canopy_csc *A, const double *x, double *y, double *rowsum)
{
    const double *v = A->values;
    int cplx = A->arith == CANOPY_COMPLEX, s = cplx ? 2 : 1;
    int mirror = A->kind != CANOPY_KIND_GENERAL && A->triangle != CANOPY_TRIANGLE_BOTH;
    double conj_sign = A->kind == CANOPY_KIND_HERMITIAN ? -1.0 : 1.0;
    for (canopy_int i = 0; i < s * A->n; i++) y[i] = 0;
    if (rowsum)
        for (canopy_int i = 0; i < A->n; i++) rowsum[i] = 0;
    for (canopy_int j = 0; j < A->n; j++)
        for (canopy_int p = A->colptr[j] - A->base; p < A->colptr[j + 1] - A->base; p++) {
            canopy_int i = A->rowind[p] - A->base;
            double ar = v[s * p], ai = cplx ? v[s * p + 1] : 0;
            double mag = cplx ? hypot(ar, ai) : fabs(ar);
            if (rowsum) rowsum[i] += mag;
            if (cplx) {
                y[2 * i] += ar * x[2 * j] - ai * x[2 * j + 1];
                y[2 * i + 1] += ar * x[2 * j + 1] + ai * x[2 * j];
            } else {
                y[i] += ar * x[j];
            }
            if (mirror && i != j) {
                if (rowsum) rowsum[j] += mag;
                if (cplx) {
                    double bi = conj_sign * ai;
                    y[2 * j] += ar * x[2 * i] - bi * x[2 * i + 1];
                    y[2 * j + 1] += ar * x[2 * i + 1] + bi * x[2 * i];
                } else {
                    y[j] += ar * x[i];
                }
            }
        }
}

/* Normwise backward error of x (first column) from r = A x and the row sums rs of |A|. */
static double backward_error(int sc, int n, const double *b, const double *x, const double *r, const double *rs)
{
    double an = 0, rn = 0, xn = 0, bn = 0;
    for (int i = 0; i < n; i++) {
        if (sc == 2) {
            rn = fmax(rn, hypot(b[2 * i] - r[2 * i], b[2 * i + 1] - r[2 * i + 1]));
            xn = fmax(xn, hypot(x[2 * i], x[2 * i + 1]));
            bn = fmax(bn, hypot(b[2 * i], b[2 * i + 1]));
        } else {
            rn = fmax(rn, fabs(b[i] - r[i]));
            xn = fmax(xn, fabs(x[i]));
            bn = fmax(bn, fabs(b[i]));
        }
        an = fmax(an, rs[i]);
    }
    return rn / (an * xn + bn);
}

static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20) printf("\\u%04x", *s);
        else putchar(*s);
    }
    putchar('"');
}

static void json_num(const char *key, double v, int last)
{
    if (isfinite(v)) printf("\"%s\": %.6g%s", key, v, last ? "" : ", ");
    else printf("\"%s\": null%s", key, last ? "" : ", ");
}

/* The first column of rank me's block of n columns over P ranks (me = P: n). */
static canopy_int block_start(canopy_int n, int me, int P)
{
    return (canopy_int)((int64_t)n * me / P);
}

/*
 * --distributed with a generated matrix: keep only this rank's block of columns [j0, j1) (what it
 * passes to canopy_set_matrix_distributed) in new arrays of the block's size, as a part in global
 * numbering (n + 1 column pointers, the columns outside the block empty) like a file read by parts,
 * and free the whole matrix, so that it is not held through the factorization. The new arrays are
 * the driver's (malloc): free them with free_block. 0 on success, -1 out of memory (A untouched).
 */
static int keep_block(canopy_csc *A, int me, int P)
{
    canopy_int j0 = block_start(A->n, me, P), j1 = block_start(A->n, me + 1, P);
    canopy_int p0 = A->colptr[j0] - A->base, p1 = A->colptr[j1] - A->base;
    size_t sz = A->arith == CANOPY_COMPLEX ? 2 * sizeof(double) : sizeof(double);
    canopy_int *cp = malloc(((size_t)A->n + 1) * sizeof *cp);
    canopy_int *ri = malloc(((size_t)(p1 - p0) + 1) * sizeof *ri);
    void *v = malloc(((size_t)(p1 - p0) + 1) * sz);
    if (!cp || !ri || !v) {
        free(cp);
        free(ri);
        free(v);
        return -1;
    }
    for (canopy_int j = 0; j <= A->n; j++) {
        canopy_int jj = j < j0 ? j0 : j > j1 ? j1 : j;
        cp[j] = A->colptr[jj] - A->colptr[j0] + A->base;
    }
    memcpy(ri, A->rowind + p0, (size_t)(p1 - p0) * sizeof *ri);
    memcpy(v, (char *)A->values + (size_t)p0 * sz, (size_t)(p1 - p0) * sz);
    canopy_csc whole = *A;
    canopy_csc_free(&whole);
    A->colptr = cp;
    A->rowind = ri;
    A->values = v;
    return 0;
}

/* Free a matrix made by keep_block. */
static void free_block(canopy_csc *A)
{
    free(A->colptr);
    free(A->rowind);
    free(A->values);
    memset(A, 0, sizeof *A);
}

/* Solve one problem; returns the process exit code contribution (0 ok, 1 error). */
static int run_problem(const cli *c, MPI_Comm comm, const char *name, canopy_csc *A, int rank)
{
    canopy_solver *s = NULL;
    canopy_status st = canopy_create(comm, &c->opts, &s);
    if (st < 0) {
        if (rank == 0)
            fprintf(stderr, "canopy-solve: %s: cannot create solver: %s (%s)\n", name, canopy_strerror(st),
                    canopy_last_error(NULL));
        return 1;
    }
    progress prog;
    progress_start(&prog, s, c, rank);
    double *b = NULL, *x = NULL;
    int n = rank == 0 ? (int)A->n : 0;
    /* --distributed: every rank holds a part of the entries (a file's share, or a generated
     * matrix's block of columns, see keep_block), and products with A are sums over the ranks */
    const int part = c->distributed;
    double *ftimes = calloc(2 * (size_t)c->repeat, sizeof *ftimes); /* factorization, then fill times */
    canopy_status fst = CANOPY_SUCCESS, rst = CANOPY_SUCCESS;
    char fmsg[600] = ""; /* the factorization's warning, before later calls replace it */
    const char *stage = "set_matrix";
    if (c->distributed) {
        /* this rank's consecutive block of columns, in global numbering (a generated matrix, whose
         * other columns keep_block emptied); a file read by parts (canopy_read_matrix_part) holds
         * this rank's entries in any column: all columns */
        int P, me;
        MPI_Comm_size(comm, &P);
        MPI_Comm_rank(comm, &me);
        canopy_int j0 = c->file ? 0 : block_start(A->n, me, P);
        canopy_int j1 = c->file ? A->n : block_start(A->n, me + 1, P);
        canopy_int *cols = malloc(((size_t)(j1 - j0) + 1) * sizeof *cols);
        canopy_int *cp = malloc(((size_t)(j1 - j0) + 1) * sizeof *cp);
        if (cols && cp) {
            for (canopy_int j = j0; j < j1; j++) {
                cols[j - j0] = j + A->base;
                cp[j - j0] = A->colptr[j] - A->colptr[j0] + A->base;
            }
            cp[j1 - j0] = A->colptr[j1] - A->colptr[j0] + A->base;
        } else {
            /* out of memory here: a piece without arrays, which every rank's call refuses alike */
            free(cols);
            free(cp);
            cols = cp = NULL;
        }
        size_t sz = A->arith == CANOPY_COMPLEX ? 2 * sizeof(double) : sizeof(double);
        canopy_dist_csc D = {.n = A->n, .ncols = j1 - j0, .cols = cols, .colptr = cp,
                             .rowind = A->rowind + (A->colptr[j0] - A->base),
                             .values = (char *)A->values + (size_t)(A->colptr[j0] - A->base) * sz, .base = A->base,
                             .arith = A->arith, .kind = A->kind, .triangle = A->triangle};
        st = canopy_set_matrix_distributed(s, &D);
        free(cols);
        free(cp);
    } else {
        st = canopy_set_matrix(s, rank == 0 ? A : NULL);
    }
    if (st >= 0) {
        stage = "analyze";
        st = canopy_analyze(s);
    }
    for (int r = 0; st >= 0 && !c->analyze_only && r < c->repeat; r++) {
        stage = "factorize";
        st = fst = canopy_factorize(s);
        if (fst > 0) snprintf(fmsg, sizeof fmsg, "%s", canopy_last_error(s));
        canopy_stats tmp;
        canopy_get_stats(s, &tmp);
        if (ftimes) {
            ftimes[r] = tmp.time_factorize;
            ftimes[c->repeat + r] = tmp.time_fill;
        }
        if (!c->json && rank == 0 && c->repeat > 1 && st >= 0)
            printf("  factorization %d: %.3f s, %.2f GFlop/s (filling the memory %.3f s)\n", r + 1, tmp.time_factorize,
                   tmp.gflops_factorize, tmp.time_fill);
    }
    double ferr = NAN;
    int sc = (rank == 0 || part) && A->arith == CANOPY_COMPLEX ? 2 : 1; /* doubles per scalar */
    if (st >= 0 && !c->analyze_only) {
        size_t len = (size_t)n * (size_t)c->nrhs;
        if (part) {
            /* b = A ones, summed over the ranks' parts onto rank 0 */
            int nn = (int)A->n;
            double *ones = calloc((size_t)sc * nn + 1, sizeof *ones), *bp = malloc(((size_t)sc * nn + 1) * sizeof *bp);
            if (rank == 0) {
                b = malloc((len ? sc * len : 1) * sizeof *b);
                x = malloc((len ? sc * len : 1) * sizeof *x);
            }
            if (!ones || !bp || (rank == 0 && (!b || !x))) {
                fprintf(stderr, "canopy-solve: out of memory for the right-hand sides\n");
                MPI_Abort(comm, 1);
            }
            for (int i = 0; i < nn; i++) ones[(size_t)sc * i] = 1.0;
            spmv(A, ones, bp, NULL);
            MPI_Reduce(bp, rank == 0 ? b : NULL, sc * nn, MPI_DOUBLE, MPI_SUM, 0, comm);
            if (rank == 0) {
                for (int k = 1; k < c->nrhs; k++) memcpy(b + (size_t)k * sc * n, b, (size_t)sc * n * sizeof *b);
                memcpy(x, b, sc * len * sizeof *b);
            }
            free(ones);
            free(bp);
        } else if (rank == 0) {
            b = malloc((len ? sc * len : 1) * sizeof *b);
            x = malloc((len ? sc * len : 1) * sizeof *x);
            double *ones = calloc((size_t)sc * n + 1, sizeof *ones);
            if (!b || !x || !ones) {
                fprintf(stderr, "canopy-solve: out of memory for the right-hand sides\n");
                MPI_Abort(comm, 1); /* the driver, not the library: nothing sensible to continue with */
            }
            for (int i = 0; i < n; i++) ones[(size_t)sc * i] = 1.0;
            spmv(A, ones, b, NULL);
            for (int k = 1; k < c->nrhs; k++) memcpy(b + (size_t)k * sc * n, b, (size_t)sc * n * sizeof *b);
            memcpy(x, b, sc * len * sizeof *b);
            free(ones);
        }
        stage = "solve";
        st = canopy_solve(s, c->nrhs, x, n);
        if (st >= 0 && c->opts.refine_max_iter > 0) {
            stage = "refine";
            st = rst = canopy_refine(s, c->nrhs, b, n, x, n);
        }
        if (st >= 0 && rank == 0) {
            ferr = 0;
            for (size_t i = 0; i < len; i++)
                ferr = fmax(ferr, sc == 2 ? hypot(x[2 * i] - 1.0, x[2 * i + 1]) : fabs(x[i] - 1.0));
        }
    }
    cli_selinv_result sel = {0};
    const int want_selinv = c->sel.what || c->sel.entries;
    if (st >= 0 && !c->analyze_only && want_selinv) {
        stage = "selinv";
        int cx = (rank == 0 || part) && A->arith == CANOPY_COMPLEX;
        canopy_int nn = rank == 0 || part ? A->n : 0;
        canopy_status sst = cli_selinv_run(&c->sel, s, nn, cx, rank, name, &sel);
        if (sst < 0) st = sst;
    }
    canopy_stats S;
    canopy_get_stats(s, &S);
    if (c->opts.refine_max_iter == 0 && st >= 0 && !c->analyze_only && part) {
        /* the residual's product over the parts: x to every rank, the sums to rank 0 */
        int nn = (int)A->n;
        double *xp = malloc(((size_t)sc * nn + 1) * sizeof *xp), *r = malloc(((size_t)sc * nn + 1) * sizeof *r);
        double *rs = malloc(((size_t)nn + 1) * sizeof *rs);
        if (!xp || !r || !rs) MPI_Abort(comm, 1);
        if (rank == 0) memcpy(xp, x, (size_t)sc * nn * sizeof *xp);
        MPI_Bcast(xp, sc * nn, MPI_DOUBLE, 0, comm);
        spmv(A, xp, r, rs);
        MPI_Reduce(rank == 0 ? MPI_IN_PLACE : r, rank == 0 ? r : NULL, sc * nn, MPI_DOUBLE, MPI_SUM, 0, comm);
        MPI_Reduce(rank == 0 ? MPI_IN_PLACE : rs, rank == 0 ? rs : NULL, nn, MPI_DOUBLE, MPI_SUM, 0, comm);
        if (rank == 0) S.backward_error = backward_error(sc, n, b, x, r, rs);
        free(xp);
        free(r);
        free(rs);
    } else if (c->opts.refine_max_iter == 0 && st >= 0 && !c->analyze_only && rank == 0) {
        /* no refinement asked: still report the normwise backward error of the plain solve */
        double *r = malloc(((size_t)sc * n + 1) * sizeof *r), *rs = malloc(((size_t)n + 1) * sizeof *rs);
        spmv(A, x, r, rs);
        S.backward_error = backward_error(sc, n, b, x, r, rs);
        free(r);
        free(rs);
    }
    progress_stop(&prog);
    int code = st < 0 ? 1 : 0;
    if (rank == 0) {
        if (st < 0) fprintf(stderr, "canopy-solve: %s: %s failed: %s (%s)\n", name, stage, canopy_strerror(st),
                            canopy_last_error(s));
        else if (fst > 0) fprintf(stderr, "canopy-solve: %s: %s\n", name, fmsg);
        if (st >= 0 && rst > 0) fprintf(stderr, "canopy-solve: %s: %s\n", name, canopy_last_error(s));
        if (c->json) {
            printf("{\"matrix\": ");
            json_string(name);
            printf(", \"n\": %lld, \"nnz\": %lld, \"nnz_factor\": %lld, ", (long long)S.n, (long long)S.nnz,
                   (long long)S.nnz_factor);
            json_num("flops", S.flops, 0);
            json_num("time_order", S.time_order, 0);
            json_num("time_symbolic", S.time_symbolic, 0);
            json_num("time_analyze", S.time_analyze, 0);
            json_num("time_factorize", S.time_factorize, 0);
            printf("\"time_factorize_runs\": [");
            for (int r = 0; r < c->repeat; r++) printf("%s%.6g", r ? ", " : "", ftimes ? ftimes[r] : 0.0);
            printf("], \"time_fill_runs\": [");
            for (int r = 0; r < c->repeat; r++) printf("%s%.6g", r ? ", " : "", ftimes ? ftimes[c->repeat + r] : 0.0);
            printf("], ");
            json_num("time_solve", S.time_solve, 0);
            json_num("time_refine", S.time_refine, 0);
            json_num("gflops_factorize", S.gflops_factorize, 0);
            json_num("backward_error", st < 0 ? NAN : S.backward_error, 0);
            json_num("forward_error", ferr, 0);
            printf("\"refinement_steps\": %d, \"perturbed_pivots\": %lld, \"peak_memory_bytes\": %zu, "
                   "\"factor_bytes\": %zu, \"ncblk\": %lld, \"nrhs\": %d, \"ranks\": %d, \"threads_per_rank\": %d, "
                   "\"factorization\": \"%s\", \"status\": %d, \"status_text\": ",
                   S.refinement_steps, (long long)S.perturbed_pivots, S.peak_memory_bytes, S.factor_bytes,
                   (long long)S.ncblk, c->nrhs, S.ranks, S.threads_per_rank, canopy_factorization_name(S.factorization),
                   (int)st);
            json_string(st < 0 ? canopy_last_error(s) : canopy_strerror(st));
            printf(", \"scheduler\": \"%s\", \"numa\": \"%s\", \"numa_nodes\": %d, \"bound\": %d, ",
                   S.scheduler == CANOPY_SCHED_DYNAMIC ? "dynamic" : "static",
                   S.numa == CANOPY_NUMA_GLOBAL ? "global" : S.numa == CANOPY_NUMA_INTERLEAVE ? "interleave" : "local",
                   S.numa_nodes, S.bound);
            if (want_selinv) {
                json_num("time_selinv", sel.time, 0);
                json_num("gflops_selinv", sel.gflops, 0);
                json_num("selinv_ratio", S.time_factorize > 0 ? sel.time / S.time_factorize : NAN, 0);
                printf("\"selinv_entries\": %lld, \"selinv_comm_msgs\": %lld, \"selinv_comm_bytes\": %lld, ",
                       (long long)sel.entries, (long long)S.selinv_comm_msgs, (long long)S.selinv_comm_bytes);
                json_num("selinv_bytes_rank_min", S.selinv_bytes_rank_min, 0);
                json_num("selinv_bytes_rank_max", S.selinv_bytes_rank_max, 0);
                json_num("selinv_bytes_rank_median", S.selinv_bytes_rank_median, 0);
                json_num("selinv_bytes_rank_stddev", S.selinv_bytes_rank_stddev, 0);
            }
            json_num("time_factorize_predicted", S.time_factorize_predicted, 0);
            printf("\"twod_levels\": %d, \"twod_cblks\": %lld, \"top2d_cblks\": %lld, \"split_width\": %d, ", S.twod_levels,
                   (long long)S.twod_cblks, (long long)S.top2d_cblks, S.split_width);
            json_num("busy_fraction", S.busy_fraction, 0);
            json_num("time_lock_wait", S.time_lock_wait, 0);
            printf("\"handovers\": %lld, \"fanin_early\": %lld, ", (long long)S.handovers,
                   (long long)S.fanin_early);
            json_num("time_fill", S.time_fill, 0);
            printf("\"distributed_input\": %d, \"comm_threads\": %d, \"tree\": \"%s\", \"comm_msgs\": %lld, "
                   "\"comm_bytes\": %lld, \"comm_msgs_without_fanin\": %lld, \"comm_bytes_without_fanin\": %lld, "
                   "\"solve_comm_msgs\": %lld, \"solve_comm_bytes\": %lld, ",
                   c->distributed, S.comm_threads,
                   S.tree == CANOPY_TREE_FLAT ? "flat" : S.tree == CANOPY_TREE_BINARY ? "binary" : "shifted",
                   (long long)S.comm_msgs, (long long)S.comm_bytes, (long long)S.comm_msgs_without_fanin,
                   (long long)S.comm_bytes_without_fanin, (long long)S.solve_comm_msgs, (long long)S.solve_comm_bytes);
            json_num("comm_bytes_rank_min", S.comm_bytes_rank_min, 0);
            json_num("comm_bytes_rank_max", S.comm_bytes_rank_max, 0);
            json_num("comm_bytes_rank_median", S.comm_bytes_rank_median, 0);
            json_num("comm_bytes_rank_stddev", S.comm_bytes_rank_stddev, 0);
            json_num("comm_msgs_rank_min", S.comm_msgs_rank_min, 0);
            json_num("comm_msgs_rank_max", S.comm_msgs_rank_max, 0);
            json_num("comm_msgs_rank_median", S.comm_msgs_rank_median, 0);
            json_num("comm_msgs_rank_stddev", S.comm_msgs_rank_stddev, 0);
            json_num("solve_bytes_rank_min", S.solve_bytes_rank_min, 0);
            json_num("solve_bytes_rank_max", S.solve_bytes_rank_max, 0);
            json_num("solve_bytes_rank_median", S.solve_bytes_rank_median, 0);
            json_num("solve_bytes_rank_stddev", S.solve_bytes_rank_stddev, 0);
            json_num("factor_bytes_rank_min", S.factor_bytes_rank_min, 0);
            json_num("factor_bytes_rank_max", S.factor_bytes_rank_max, 0);
            json_num("peak_memory_rank_min", S.peak_memory_rank_min, 0);
            json_num("peak_memory_rank_max", S.peak_memory_rank_max, 0);
            json_num("peak_memory_rank0", S.peak_memory_rank0, 0);
            json_num("peak_memory_rank_mean", S.peak_memory_rank_mean, 0);
            json_num("rss_peak_rank0", S.rss_peak_rank0, 0);
            json_num("rss_peak_rank_mean", S.rss_peak_rank_mean, 0);
            json_num("rss_peak_rank_min", S.rss_peak_rank_min, 0);
            json_num("rss_peak_rank_max", S.rss_peak_rank_max, 0);
            json_num("memory_predicted_rank_max", S.memory_predicted_rank_max, 0);
            json_num("memory_predicted_rss_rank_max", S.memory_predicted_rss_rank_max, 0);
            json_num("memory_limit_rank", S.memory_limit_rank, 0);
            /* the tree's mapping onto the ranks (option mapping; one rank: by flops) */
            printf("\"mapping\": \"%s\", ", S.mapping == 2 ? "memory" : "flops");
            /* the root factored on a grid of ranks (option root-grid): [rows, columns, root columns] */
            if (S.root_columns > 0)
                printf("\"root_grid\": [%d, %d, %lld], \"time_root\": [%g, %g, %g, %g], ", S.root_pr, S.root_pc,
                       (long long)S.root_columns, S.time_root_wait, S.time_root_scatter, S.time_root_factor, S.time_root_gather);
            else printf("\"root_grid\": null, ");
            /* the BLAS the cost model measured (its warning went to stderr once) */
            json_num("blas_gflops", S.blas_gflops, 0);
            json_num("blas_gflops_expected", S.blas_gflops_expected, 0);
            printf("\"blas_warning\": %d, \"blas_name\": ", S.blas_warning);
            json_string(S.blas_name);
            printf(", \"blas_message\": ");
            json_string(S.blas_message);
            printf(", ");
            printf("\"steals\": %lld, \"steals_remote\": %lld, \"factor_bytes_unlocated\": %lld, \"threads\": [",
                   (long long)S.steals, (long long)S.steals_remote, (long long)S.factor_bytes_unlocated);
            for (int t = 0; t < S.threads_per_rank; t++) {
                canopy_thread_stats ts;
                if (canopy_get_thread_stats(s, t, &ts) != CANOPY_SUCCESS) break;
                printf("%s{\"core\": %d, \"node\": %d, \"busy\": %.6g, \"tasks\": %lld, \"steals\": %lld, "
                       "\"factor_bytes\": %lld}", t ? ", " : "", ts.core, ts.node, ts.busy, (long long)ts.tasks,
                       (long long)ts.steals, (long long)ts.factor_bytes);
            }
            printf("], \"numa_placement\": [");
            for (int nd = 0; nd < S.numa_nodes; nd++) {
                canopy_node_stats ns;
                if (canopy_get_node_stats(s, nd, &ns) != CANOPY_SUCCESS) break;
                printf("%s{\"node\": %d, \"factor_bytes_planned\": %lld, \"factor_bytes_found\": %lld}", nd ? ", " : "",
                       nd, (long long)ns.factor_bytes_planned, (long long)ns.factor_bytes_found);
            }
            printf("]}\n");
        } else if (S.n > 0) {
            printf("%s\n", name);
            printf("  n = %lld, nnz(A) = %lld, factorization %s, %d rank(s) x %d thread(s)\n", (long long)S.n,
                   (long long)S.nnz, canopy_factorization_name(S.factorization), S.ranks, S.threads_per_rank);
            if (st >= 0 || S.nnz_factor > 0)
                printf("  nnz(L) = %lld, flops = %.3e, column blocks = %lld\n", (long long)S.nnz_factor, S.flops,
                       (long long)S.ncblk);
            if (st >= 0 && c->analyze_only) {
                printf("  time: analyze %.3f s (ordering %.3f, symbolic %.3f)\n", S.time_analyze, S.time_order,
                       S.time_symbolic);
            } else if (st >= 0) {
                printf("  time: analyze %.3f s (ordering %.3f, symbolic %.3f), factorize %.3f s, solve %.3f s, refine %.3f s\n",
                       S.time_analyze, S.time_order, S.time_symbolic, S.time_factorize, S.time_solve, S.time_refine);
                printf("  factorization speed %.2f GFlop/s, perturbed pivots %lld; %.3f s of it filling the factor's memory\n",
                       S.gflops_factorize, (long long)S.perturbed_pivots, S.time_fill);
                printf("  threads: %d, scheduler %s, numa %s; predicted %.3f s, busy %.0f%%, lock wait %.3f s "
                       "(%lld updates handed over), steals %lld (%lld across nodes)\n",
                       S.threads_per_rank, S.scheduler == CANOPY_SCHED_DYNAMIC ? "dynamic" : "static",
                       S.numa == CANOPY_NUMA_GLOBAL ? "global" : S.numa == CANOPY_NUMA_INTERLEAVE ? "interleave" : "local",
                       S.time_factorize_predicted, 100 * S.busy_fraction, S.time_lock_wait, (long long)S.handovers,
                       (long long)S.steals, (long long)S.steals_remote);
                if (S.twod_cblks > 0)
                    printf("  2D tasks: %lld column blocks in the top %d level(s) of the thread tree, tiles of %d "
                           "rows at most\n", (long long)S.twod_cblks, S.twod_levels, S.split_width);
                if (S.root_columns > 0)
                    printf("  root: %lld columns factored on a %d x %d grid of ranks (root-grid)\n",
                           (long long)S.root_columns, S.root_pr, S.root_pc);
                printf("  backward error %.3e after %d refinement step(s), forward error %.3e\n", S.backward_error,
                       S.refinement_steps, ferr);
                printf("  peak memory %.1f MiB (factors %.1f MiB)\n", S.peak_memory_bytes / 1048576.0,
                       S.factor_bytes / 1048576.0);
                if (S.blas_name[0] && S.blas_gflops > 0)
                    printf("  BLAS %s: DGEMM %.1f GFlop/s on one core (the CPU's vector units: about %.0f)%s\n",
                           S.blas_name, S.blas_gflops, S.blas_gflops_expected,
                           S.blas_warning ? ", far too slow: see the warning" : "");
                else if (S.blas_warning)
                    printf("  BLAS %s: slow on this CPU: see the warning\n", S.blas_name);
                if (want_selinv)
                    printf("  selected inversion: %.3f s (%.2f x the factorization), %.2f GFlop/s, %lld entries%s%s\n",
                           sel.time, S.time_factorize > 0 ? sel.time / S.time_factorize : NAN, sel.gflops,
                           (long long)sel.entries, c->sel.out ? " written to " : "", c->sel.out ? c->sel.out : "");
                if (want_selinv && S.ranks > 1)
                    printf("  selected inversion broadcasts: %lld messages, %.4g MB; per rank min %.4g median %.4g "
                           "max %.4g std-dev %.4g MB\n",
                           (long long)S.selinv_comm_msgs, S.selinv_comm_bytes * 1e-6, S.selinv_bytes_rank_min * 1e-6,
                           S.selinv_bytes_rank_median * 1e-6, S.selinv_bytes_rank_max * 1e-6,
                           S.selinv_bytes_rank_stddev * 1e-6);
            }
        }
        fflush(stdout);
    }
    free(b);
    free(x);
    free(ftimes);
    canopy_destroy(&s);
    return code;
}

/* Build or read the matrix on rank 0; the outcome is shared so all ranks agree. */
static int load(const cli *c, int which, canopy_csc *A, char *name, size_t nlen, int rank, MPI_Comm comm)
{
    canopy_status st = CANOPY_SUCCESS;
    char msg[1800] = "";
    if (rank == 0 || c->distributed) {
        memset(A, 0, sizeof *A);
        if (which == 0 && c->file) {
            int P = 1;
            MPI_Comm_size(comm, &P);
            /* --distributed: each rank keeps only its share of the file's entries */
            st = c->distributed ? canopy_read_matrix_part(c->file, rank, P, A, msg, sizeof msg)
                                : canopy_read_matrix(c->file, A, msg, sizeof msg);
            snprintf(name, nlen, "%s", c->file);
            if (st == CANOPY_SUCCESS && c->kind_override >= 0) {
                if (c->kind_override != CANOPY_KIND_GENERAL && A->kind == CANOPY_KIND_GENERAL) {
                    /* a symmetric matrix stored in full as 'general' (Harwell-Boeing RUA, say) */
                    A->triangle = CANOPY_TRIANGLE_BOTH;
                }
                if (c->kind_override == CANOPY_KIND_GENERAL && A->kind != CANOPY_KIND_GENERAL &&
                    A->triangle != CANOPY_TRIANGLE_BOTH) {
                    snprintf(msg, sizeof msg, "--kind general: a symmetric file stores one triangle; use --factorization lu instead");
                    st = CANOPY_ERR_ARGUMENT;
                } else {
                    A->kind = (canopy_matrix_kind)c->kind_override;
                }
            }
        } else if (which == 0 && c->have_lap) {
            int stencil = c->stencil ? c->stencil : (c->lap[2] == 1 ? 5 : 7);
            st = canopy_generate_laplacian((canopy_int)c->lap[0], (canopy_int)c->lap[1], (canopy_int)c->lap[2], stencil, A);
            snprintf(name, nlen, "laplacian %ldx%ldx%ld (%d-point)", c->lap[0], c->lap[1], c->lap[2], stencil);
        } else if ((which == 0 && c->have_helm) || which == 1) {
            long nx = c->have_helm ? c->helm[0] : 500, ny = c->have_helm ? c->helm[1] : 500;
            st = canopy_generate_helmholtz((canopy_int)nx, (canopy_int)ny, A);
            snprintf(name, nlen, "helmholtz %ldx%ld", nx, ny);
        } else {
            st = canopy_generate_laplacian(50, 50, 50, 7, A);
            snprintf(name, nlen, "laplacian 50x50x50 (7-point)");
        }
        if (st < 0 && msg[0] == '\0') snprintf(msg, sizeof msg, "%s: %s", name, canopy_strerror(st));
        if (st == CANOPY_SUCCESS && A->arith == CANOPY_PATTERN) {
            snprintf(msg, sizeof msg, "%s: pattern-only matrix: there are no values to factorize", name);
            st = CANOPY_ERR_MATRIX;
        }
        if (st == CANOPY_SUCCESS && c->distributed && !c->file) {
            /* a generated matrix: this rank keeps its block of columns only */
            int P = 1;
            MPI_Comm_size(comm, &P);
            if (keep_block(A, rank, P) != 0) {
                canopy_csc_free(A);
                snprintf(msg, sizeof msg, "%s: out of memory keeping this rank's columns", name);
                st = CANOPY_ERR_NOMEM;
            }
        }
    }
    int ist = (int)st, worst = ist;
    /* with --distributed every rank reads: the worst outcome stops all */
    MPI_Allreduce(&ist, &worst, 1, MPI_INT, MPI_MIN, comm);
    if (ist < 0 && (rank == 0 || c->distributed)) fprintf(stderr, "canopy-solve: %s\n", msg);
    ist = worst;
    return ist < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    cli c;
    memset(&c, 0, sizeof c);
    int code = parse_args(argc, argv, &c, rank), worst;
    /* Every rank must take the same path: agree on the outcome of parsing (a usage error on any
     * rank stops all), then run with rank 0's settings (the input is read on rank 0 only). */
    MPI_Allreduce(&code, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (worst != 0) {
        if (code == 0 && worst == 2 && rank == 0) fprintf(stderr, "canopy-solve: another rank refused its arguments\n");
        MPI_Finalize();
        return worst == 1 ? 0 : 2;
    }
    const char *my_file = c.file; /* a pointer into this rank's own argv */
    MPI_Bcast(&c, (int)sizeof c, MPI_BYTE, 0, MPI_COMM_WORLD);
    c.file = my_file;
    int problems = (c.file || c.have_lap || c.have_helm) ? 1 : 2;
    int failed = 0;
    for (int p = 0; p < problems; p++) {
        canopy_csc A;
        char name[1100];
        memset(&A, 0, sizeof A);
        const int block = c.distributed && !c.file; /* a generated matrix's block (keep_block) */
        if (load(&c, p, &A, name, sizeof name, rank, MPI_COMM_WORLD)) {
            if (block) free_block(&A); /* another rank failed: this one may hold its block */
            failed = 1;
            break;
        }
        failed |= run_problem(&c, MPI_COMM_WORLD, name, &A, rank);
        if (block) free_block(&A);
        else if (rank == 0 || c.distributed) canopy_csc_free(&A);
    }
    MPI_Finalize();
    return failed;
}
