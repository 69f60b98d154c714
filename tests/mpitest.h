/*
 * Helpers shared by the multi-rank integration tests (tests/mpitest.c): independent residuals,
 * known solutions, distributed pieces, solution files. Public API and MPI only.
 */
#ifndef CANOPY_MPITEST_H
#define CANOPY_MPITEST_H

#include <canopy.h>

#include <complex.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NRHS 3
#define BERR_TOL 1e-12
/*
 * Tolerance of "the same solution up to rounding" (between layouts and between rank counts in
 * compare_files). Every layout refines to a backward error of about eps (refine-tolerance 1e-15:
 * with the default 1e-14 some layouts stop at 1e-14 and others at 1e-16, and their solutions of
 * ACTIVSg200_AC_kkt differed by 1e-9), so two solutions differ by about cond(A) * eps, which the
 * reference layout's distance to the known X (its forward error, ferr) measures. 1e-9 is far
 * above that for most matrices (forward errors <= 1e-10; differences seen <= 2e-11) and far below
 * what a wrong factor or a lost contribution gives (O(1)); an ill-conditioned matrix gets 100 x
 * its forward error instead (hangGlider_2: 7.6e-8, differences seen <= 6e-8; a singular one,
 * whose solutions differ by a null vector, gets no comparison at all in effect).
 */
#define SAME_TOL 1e-9
#define TEXT_LEN 1024
#define MAX_SOLUTIONS 64

extern int rank, nranks;
extern int failures; /* on this rank */

void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

typedef struct mcase {
    const char *name;    /* file under the shared matrices, or "laplacian" (generated) */
    int kind;            /* canopy_matrix_kind to force, -1: as the file says */
    int quick;           /* kept with --quick / CANOPY_TEST_QUICK (the sweep: see test_mpi.c) */
    int large;           /* layout sweep: one layout per ranks x threads shape */
    int refused;         /* structurally singular: every layout must refuse it, agreed, naming it */
} mcase;

typedef struct piece {
    canopy_dist_csc d;
    int64_t *jcol;       /* 0-based global column of each local column */
} piece;

size_t scalar_size(const canopy_csc *A);
double complex entry(const canopy_csc *A, int64_t p);
double complex get(const canopy_csc *A, const void *x, int64_t i);
void put(const canopy_csc *A, void *x, int64_t i, double complex z);
/** y = A x for nrhs columns (leading dimension n), and the row sums of |A| in rowabs (if not NULL). */
void spmv(const canopy_csc *A, int nrhs, const void *x, void *y, double *rowabs);
/** The known solution (NRHS columns). */
void *make_xtrue(const canopy_csc *A);
/** max over columns of ||b - A x||_inf / (||A||_inf ||x||_inf + ||b||_inf) */
double backward_error(const canopy_csc *A, const void *x, const void *b);
/** max over columns of max_i |x_i - y_i| / max_i |y_i| */
double rel_diff(const canopy_csc *A, const void *x, const void *y);
const char *matrix_dir(void);
/** 1: loaded, 0: not available, -1: error (the same on every rank). */
int load(const mcase *mc, canopy_csc *A);
void piece_free(piece *P);
void make_piece(const canopy_csc *A, int even, piece *P);
void check_pieces(const canopy_csc *A, const piece *P, const char *name);
void write_solution(FILE *f, const char *name, const canopy_csc *A, const void *x, double ferr);
/** One vector of A's size and arithmetic (the selected inversion's diagonal) as a solution entry. */
void write_vector(FILE *f, const char *name, const canopy_csc *A, const void *v, double ferr);
/** max |x - y| / max |y| over A's n entries of one vector */
double rel_diff_vector(const canopy_csc *A, const void *x, const void *y);
/** Every matrix of OTHER is in REF with the same solution up to rounding; 0 if so. */
int compare_files(const char *ref, const char *other);

#endif
