/*
 * canopy-solve's selected inversion: --selinv diag|pattern, --selinv-out FILE.mtx,
 * --selinv-entries FILE (two 1-based integers per line; '%' or '#' lines are comments).
 */
#include "cli_selinv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the (i, j) pairs of a list file, 0-based; 0 on success, else a message in msg */
static int read_pairs(const char *path, canopy_int n, canopy_int **rows, canopy_int **cols, canopy_int *ne, char *msg,
                      size_t len)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        snprintf(msg, len, "cannot open %s: %s", path, strerror(errno));
        return 1;
    }
    size_t cap = 64, k = 0;
    canopy_int *r = malloc(cap * sizeof *r), *c = malloc(cap * sizeof *c);
    char line[512];
    long lineno = 0;
    int bad = r == NULL || c == NULL;
    if (bad) snprintf(msg, len, "out of memory reading %s", path);
    while (!bad && fgets(line, sizeof line, f)) {
        lineno++;
        char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        if (*p == '\n' || *p == '\0' || *p == '%' || *p == '#') continue;
        long long i, j;
        char extra;
        if (sscanf(p, "%lld %lld %c", &i, &j, &extra) != 2 || i < 1 || j < 1 || i > (long long)n || j > (long long)n) {
            snprintf(msg, len, "%s line %ld: expected two indices in 1..%lld", path, lineno, (long long)n);
            bad = 1;
            break;
        }
        if (k == cap) {
            cap *= 2;
            canopy_int *r2 = realloc(r, cap * sizeof *r), *c2 = r2 ? realloc(c, cap * sizeof *c) : NULL;
            if (r2) r = r2;
            if (c2) c = c2;
            if (!r2 || !c2) {
                snprintf(msg, len, "out of memory reading %s", path);
                bad = 1;
                break;
            }
        }
        r[k] = (canopy_int)(i - 1);
        c[k++] = (canopy_int)(j - 1);
    }
    fclose(f);
    if (bad) {
        free(r);
        free(c);
        return 1;
    }
    *rows = r;
    *cols = c;
    *ne = (canopy_int)k;
    return 0;
}

/* a Matrix Market coordinate file of nz entries (rows, cols 0-based; col NULL: the diagonal) */
static int write_mm(const char *path, canopy_int n, int cx, int64_t nz, const canopy_int *rows, const canopy_int *cols,
                    const canopy_csc *P, const double *v)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "canopy-solve: cannot write %s: %s\n", path, strerror(errno));
        return 1;
    }
    fprintf(f, "%%%%MatrixMarket matrix coordinate %s general\n", cx ? "complex" : "real");
    fprintf(f, "%% selected entries of the inverse (canopy-solve --selinv)\n");
    fprintf(f, "%lld %lld %lld\n", (long long)n, (long long)n, (long long)nz);
    if (P) {
        for (canopy_int j = 0; j < n; j++)
            for (canopy_int p = P->colptr[j]; p < P->colptr[j + 1]; p++) {
                const double *x = (const double *)P->values + (size_t)p * (cx ? 2 : 1);
                if (cx) fprintf(f, "%lld %lld %.17g %.17g\n", (long long)P->rowind[p] + 1, (long long)j + 1, x[0], x[1]);
                else fprintf(f, "%lld %lld %.17g\n", (long long)P->rowind[p] + 1, (long long)j + 1, x[0]);
            }
    } else {
        for (int64_t e = 0; e < nz; e++) {
            long long i = (rows ? rows[e] : e) + 1, j = (cols ? cols[e] : e) + 1;
            if (cx) fprintf(f, "%lld %lld %.17g %.17g\n", i, j, v[2 * e], v[2 * e + 1]);
            else fprintf(f, "%lld %lld %.17g\n", i, j, v[e]);
        }
    }
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        fprintf(stderr, "canopy-solve: error writing %s\n", path);
        return 1;
    }
    return 0;
}

static void add(cli_selinv_result *res, canopy_solver *s)
{
    canopy_stats S;
    canopy_get_stats(s, &S);
    res->time += S.time_selinv;
    res->flops += S.flops_selinv;
    res->entries += S.selinv_entries;
    res->gflops = res->time > 0 ? res->flops / res->time * 1e-9 : 0;
}

canopy_status cli_selinv_run(const cli_selinv *c, canopy_solver *s, canopy_int n, int cx, int rank, const char *name,
                             cli_selinv_result *res)
{
    memset(res, 0, sizeof *res);
    canopy_status st = CANOPY_SUCCESS;
    int vsz = cx ? 2 : 1;
    if (c->entries) {
        canopy_int *rows = NULL, *cols = NULL, ne = 0;
        char msg[600];
        int bad = rank == 0 && read_pairs(c->entries, n, &rows, &cols, &ne, msg, sizeof msg);
        if (bad) fprintf(stderr, "canopy-solve: %s: %s\n", name, msg);
        double *v = rank == 0 && !bad ? malloc(((size_t)ne * vsz + 1) * sizeof *v) : NULL;
        /* a bad list becomes a refused request, so that every rank returns the same error */
        canopy_selinv_request rq = {.nentries = bad ? -1 : ne, .rows = rows, .cols = cols, .values = v};
        st = canopy_selinv(s, CANOPY_SELINV_ENTRIES, &rq);
        add(res, s);
        res->perturbed = rq.perturbed_pivots;
        if (st >= 0 && rank == 0 && c->out && !c->what && write_mm(c->out, n, cx, ne, rows, cols, NULL, v)) st = CANOPY_ERR_IO;
        free(rows);
        free(cols);
        free(v);
        if (st < 0) return st;
    }
    if (c->what == 1) {
        double *d = rank == 0 ? malloc(((size_t)n * vsz + 1) * sizeof *d) : NULL;
        canopy_selinv_request rq = {.diag = d};
        st = canopy_selinv(s, CANOPY_SELINV_DIAG, &rq);
        add(res, s);
        res->perturbed = rq.perturbed_pivots;
        if (st >= 0 && rank == 0 && c->out && write_mm(c->out, n, cx, n, NULL, NULL, NULL, d)) st = CANOPY_ERR_IO;
        free(d);
    } else if (c->what == 2) {
        canopy_selinv_request rq = {0};
        st = canopy_selinv(s, CANOPY_SELINV_PATTERN, &rq);
        add(res, s);
        res->perturbed = rq.perturbed_pivots;
        if (st >= 0 && rank == 0 && c->out &&
            write_mm(c->out, n, cx, (int64_t)rq.pattern.colptr[n], NULL, NULL, &rq.pattern, NULL))
            st = CANOPY_ERR_IO;
        canopy_csc_free(&rq.pattern);
    }
    return st;
}
