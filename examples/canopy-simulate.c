/*
 * canopy-simulate: what Canopy would do on P nodes x T cores, without factorizing. It runs the
 * real analysis and the real plan for that layout (src/predict/predict.h) on this machine and prints the
 * predicted factorization and solve, efficiency, where the threads idle, memory and messages per
 * rank. Uses the internals: linked to the convenience library.
 */
#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "canopy.h"
#include "api/api.h"
#include "comm/pingpong.h"
#include "predict/predict.h"

typedef struct cli {
    canopy_options opts;
    predict_opts po;
    const char *file;
    long lap[3];
    int have_lap, helm, stencil, json, kind_override, top2d;
    double core_gflops, load_gemm, load_scatter;
} cli;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: canopy-simulate --ranks P --threads T [options] (FILE.mtx[.gz] | FILE.rb | --laplacian NXxNYxNZ |\n"
            "                       --helmholtz N)\n"
            "Runs Canopy's analysis and its plan for P ranks (one a node, or --ranks-per-node) x T threads and\n"
            "prints what the plan's simulation predicts; nothing is factorized. The ordering runs here, on this\n"
            "machine's cores.\n\n"
            "virtual machine:\n"
            "  --ranks P                 ranks (default 1), on nodes of --ranks-per-node each\n"
            "  --ranks-per-node N        ranks sharing one node (default 1): the kernels run as slowly as with\n"
            "                            N x T busy cores (a layout measured on one machine: N = P)\n"
            "  --threads T               worker threads per rank (default 1)\n"
            "  --latency S               seconds per message between nodes (default 1.5e-6)\n"
            "  --bandwidth B             bytes per second between nodes (default 12e9)\n"
            "  --core-gflops G           the cores' DGEMM rate: this machine's calibrated model scaled to G\n"
            "  --cost-cache FILE         a cost model file (as written by calibration, on any machine) read as it\n"
            "                            is instead of this machine's; never recalibrated or rewritten\n"
            "  --load-gemm X             a dense kernel's slowdown when all T cores compute (default: the one\n"
            "                            measured here, held beyond this machine's cores; 1.8 on 16 Sapphire Rapids)\n"
            "  --load-scatter X          the same for the memory-bound assembly and solve\n"
            "input:\n"
            "  --laplacian NX[xNY[xNZ]]  Laplacian (7-point in 3D; --stencil 27)  --helmholtz N  --stencil 5|7|27\n"
            "  --kind spd|symmetric|hermitian|general\n"
            "output:\n"
            "  --nrhs K                  right-hand sides of the predicted solve (default 1)\n"
            "  --json                    one JSON object on stdout\n"
            "  --trace FILE              the simulated factorization as a trace (canopy-trace draws it)\n"
            "  --top2d off|on|square|flat|tall  the shared top's 2D tiles over 2D grids of their ranks (sched/grid.h);\n"
            "                            on = the shape whose simulation is shortest (default off); flat is what\n"
            "                            the option top2d=flat executes, square and tall are predicted only\n"
            "analysis options as canopy-solve: --split, --2d-levels, --ordering-threads, --factorization,\n"
            "  --tree, --amalgamation, --scaling, --ordering, --verbose, ...; --mapping memory maps the tree onto\n"
            "  the ranks by factor entries, and with --memory-limit B the default (auto) does when the flops\n"
            "  mapping's heaviest rank would exceed B and is lighter so\n");
}

static int parse_dims(const char *s, long *d, int maxd)
{
    int k = 0;
    const char *p = s;
    while (k < maxd) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (errno || end == p || v < 1 || (sizeof(canopy_int) < sizeof(long) && v > (long)INT32_MAX)) return -1;
        d[k++] = v;
        if (*end == '\0') return k;
        if (*end != 'x' && *end != 'X') return -1;
        p = end + 1;
    }
    return -1;
}

static int parse_double(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end != '\0' || !(v >= lo && v <= hi)) return 1;
    *out = v;
    return 0;
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
    double v;
    if (parse_double(s, lo, hi, &v) || v != floor(v)) return 1;
    *out = (int)v;
    return 0;
}

/* 0 run, 1 done (help), 2 usage error */
static int parse_args(int argc, char **argv, cli *c)
{
    char msg[512];
    canopy_options_default(&c->opts);
    c->po = (predict_opts){.ranks = 1, .threads = 1, .ranks_per_node = 1, .latency = COMM_FIXED_LATENCY, .bandwidth = COMM_FIXED_BANDWIDTH, .nrhs = 1};
    c->kind_override = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 1;
        }
        if (!strcmp(a, "--version")) {
            printf("canopy-simulate %s\n", CANOPY_VERSION_STRING);
            return 1;
        }
        if (!strcmp(a, "--json")) {
            c->json = 1;
            continue;
        }
        if (strncmp(a, "--", 2) != 0) {
            if (c->file) {
                fprintf(stderr, "canopy-simulate: more than one input file given\n");
                return 2;
            }
            c->file = a;
            continue;
        }
        if (v == NULL) {
            fprintf(stderr, "canopy-simulate: option %s needs a value\n", a);
            return 2;
        }
        const char *name = a + 2;
        int bad = 0;
        if (!strcmp(name, "ranks")) bad = parse_int(v, 1, 1 << 20, &c->po.ranks);
        else if (!strcmp(name, "threads")) bad = parse_int(v, 1, 4096, &c->po.threads);
        else if (!strcmp(name, "ranks-per-node")) bad = parse_int(v, 1, 1 << 20, &c->po.ranks_per_node);
        else if (!strcmp(name, "latency")) bad = parse_double(v, 0, 1, &c->po.latency);
        else if (!strcmp(name, "bandwidth")) bad = parse_double(v, 1e3, 1e15, &c->po.bandwidth);
        else if (!strcmp(name, "core-gflops")) bad = parse_double(v, 1e-3, 1e6, &c->core_gflops);
        else if (!strcmp(name, "load-gemm")) bad = parse_double(v, 1, 100, &c->load_gemm);
        else if (!strcmp(name, "load-scatter")) bad = parse_double(v, 1, 100, &c->load_scatter);
        else if (!strcmp(name, "nrhs")) bad = parse_int(v, 1, 100000, &c->po.nrhs);
        else if (!strcmp(name, "trace")) c->po.trace = v;
        else if (!strcmp(name, "top2d")) {
            static const char *const shapes[] = {"off", "square", "flat", "tall", "on", "auto"};
            int found = -2;
            for (int q = 0; q < 6; q++)
                if (!strcmp(v, shapes[q])) found = q < 4 ? q : -1;
            bad = found == -2;
            c->top2d = found;
        }
        else if (!strcmp(name, "stencil"))
            bad = parse_int(v, 5, 27, &c->stencil) || (c->stencil != 5 && c->stencil != 7 && c->stencil != 27);
        else if (!strcmp(name, "laplacian")) {
            long d[3] = {1, 1, 1};
            int k = parse_dims(v, d, 3);
            bad = k < 1;
            if (k == 1) d[1] = d[2] = d[0];
            if (k == 2) d[2] = 1;
            memcpy(c->lap, d, sizeof d);
            c->have_lap = 1;
        } else if (!strcmp(name, "helmholtz")) {
            bad = parse_int(v, 2, 1 << 30, &c->helm);
        } else if (!strcmp(name, "kind")) {
            if (!strcmp(v, "spd")) c->kind_override = CANOPY_KIND_SPD;
            else if (!strcmp(v, "symmetric")) c->kind_override = CANOPY_KIND_SYMMETRIC;
            else if (!strcmp(v, "general")) c->kind_override = CANOPY_KIND_GENERAL;
            else if (!strcmp(v, "hermitian")) c->kind_override = CANOPY_KIND_HERMITIAN;
            else bad = 1;
        } else if (canopy_options_set(&c->opts, name, v, msg, sizeof msg) != CANOPY_SUCCESS) {
            fprintf(stderr, "canopy-simulate: %s\n", msg);
            return 2;
        }
        if (bad) {
            fprintf(stderr, "canopy-simulate: invalid value '%s' for %s\n", v, a);
            return 2;
        }
        i++;
    }
    if (!!c->file + c->have_lap + !!c->helm != 1) {
        fprintf(stderr, "canopy-simulate: give one input: a file, --laplacian or --helmholtz (--help)\n");
        return 2;
    }
    if (c->po.ranks_per_node > c->po.ranks) {
        fprintf(stderr, "canopy-simulate: --ranks-per-node %d is more than the %d ranks\n", c->po.ranks_per_node,
                c->po.ranks);
        return 2;
    }
    if ((int64_t)c->po.ranks * c->po.threads > (1 << 20)) {
        fprintf(stderr, "canopy-simulate: %d x %d threads: at most 2^20 in all\n", c->po.ranks, c->po.threads);
        return 2;
    }
    if (c->opts.ordering == CANOPY_ORDER_USER) {
        fprintf(stderr, "canopy-simulate: --ordering user needs a permutation: use the API\n");
        return 2;
    }
    if (c->opts.ordering == CANOPY_ORDER_PTSCOTCH && c->po.ranks > 1) {
        /* PT-SCOTCH's ordering depends on the number of processes that compute it */
        fprintf(stderr, "canopy-simulate: --ordering ptscotch on %d ranks cannot be reproduced on this one process "
                        "(PT-SCOTCH's ordering depends on its rank count): use --ordering scotch\n", c->po.ranks);
        return 2;
    }
    return 0;
}

static int load(const cli *c, canopy_csc *A, char *name, size_t nlen)
{
    char msg[1800] = "";
    canopy_status st;
    memset(A, 0, sizeof *A);
    if (c->file) {
        st = canopy_read_matrix(c->file, A, msg, sizeof msg);
        snprintf(name, nlen, "%s", c->file);
        if (st == CANOPY_SUCCESS && c->kind_override >= 0) {
            if (c->kind_override != CANOPY_KIND_GENERAL && A->kind == CANOPY_KIND_GENERAL) A->triangle = CANOPY_TRIANGLE_BOTH;
            if (c->kind_override == CANOPY_KIND_GENERAL && A->kind != CANOPY_KIND_GENERAL &&
                A->triangle != CANOPY_TRIANGLE_BOTH) {
                snprintf(msg, sizeof msg, "--kind general: a symmetric file stores one triangle; use --factorization lu");
                st = CANOPY_ERR_ARGUMENT;
            } else {
                A->kind = (canopy_matrix_kind)c->kind_override;
            }
        }
    } else if (c->have_lap) {
        int stencil = c->stencil ? c->stencil : (c->lap[2] == 1 ? 5 : 7);
        st = canopy_generate_laplacian((canopy_int)c->lap[0], (canopy_int)c->lap[1], (canopy_int)c->lap[2], stencil, A);
        snprintf(name, nlen, "laplacian %ldx%ldx%ld (%d-point)", c->lap[0], c->lap[1], c->lap[2], stencil);
    } else {
        st = canopy_generate_helmholtz((canopy_int)c->helm, (canopy_int)c->helm, A);
        snprintf(name, nlen, "helmholtz %dx%d", c->helm, c->helm);
    }
    if (st < 0 && msg[0] == '\0') snprintf(msg, sizeof msg, "%s: %s", name, canopy_strerror(st));
    if (st == CANOPY_SUCCESS && A->arith == CANOPY_PATTERN) {
        snprintf(msg, sizeof msg, "%s: pattern-only matrix: Canopy needs values to choose its factorization", name);
        st = CANOPY_ERR_MATRIX;
    }
    if (st < 0) fprintf(stderr, "canopy-simulate: %s\n", msg);
    return st < 0;
}

/* The cost model of the virtual cores: this machine's, or the file's as it is (the solver would
 * recalibrate a file made on another machine and write over it: here it is the machine simulated),
 * scaled, loaded as asked. */
static int set_cost(canopy_solver *s, const cli *c)
{
    if (cost_cache_is_file(s->opts.cost_cache)) {
        sched_cost_model fm;
        memset(&fm, 0, sizeof fm);
        if (cost_model_read(&fm, s->opts.cost_cache, &s->err) != CANOPY_SUCCESS) return 1;
        runtime_set_cost(&s->rt, &fm);
    }
    if (runtime_cost(&s->rt, &s->opts, &s->err) != CANOPY_SUCCESS) return 1;
    sched_cost_model m = s->rt.cost;
    if (c->core_gflops > 0) {
        double f = c->core_gflops * 1e9 / m.peak[COST_GEMM];
        for (int k = 0; k < COST_NKERNELS; k++)
            if (k != COST_SCATTER) m.peak[k] *= f;
        char src[sizeof m.source];
        int len = snprintf(src, sizeof src, "%.200s, scaled to %.4g GFlop/s", s->rt.cost.source, c->core_gflops);
        if (len > 0) memcpy(m.source, src, sizeof m.source);
    }
    if (c->load_gemm > 0 || c->load_scatter > 0) {
        if (c->load_gemm > 0) m.load_gemm = c->load_gemm;
        if (c->load_scatter > 0) m.load_scatter = c->load_scatter;
        m.load_threads = c->po.threads * c->po.ranks_per_node; /* a node's cores */
    }
    runtime_set_cost(&s->rt, &m);
    return 0;
}

static void json_num(const char *key, double v, int last)
{
    if (isfinite(v)) printf("\"%s\": %.6g%s", key, v, last ? "" : ", ");
    else printf("\"%s\": null%s", key, last ? "" : ", ");
}

static void json_spread(const char *key, const predict_spread *p)
{
    printf("\"%s\": {", key);
    json_num("min", p->min, 0);
    json_num("max", p->max, 0);
    json_num("median", p->median, 0);
    json_num("stddev", p->stddev, 0);
    json_num("total", p->total, 1);
    printf("}, ");
}

static void print_json(const char *name, const canopy_solver *s, const predict_report *r, const predict_opts *po)
{
    const canopy_stats *st = &s->stats;
    const sched_cost_model *m = &s->rt.cost;
    printf("{\"matrix\": \"");
    for (const char *p = name; *p; p++) {
        if (*p == '"' || *p == '\\') printf("\\%c", *p);
        else if ((unsigned char)*p >= 0x20) putchar(*p);
    }
    printf("\", \"ranks\": %d, \"threads\": %d, \"ranks_per_node\": %d, ", r->ranks, r->threads,
           po->ranks_per_node > 1 ? po->ranks_per_node : 1);
    json_num("latency", po->latency, 0);
    json_num("bandwidth", po->bandwidth, 0);
    json_num("core_gflops", m->peak[COST_GEMM] * 1e-9, 0);
    json_num("load_gemm", m->load_gemm, 0);
    json_num("load_scatter", m->load_scatter, 0);
    printf("\"n\": %lld, \"nnz_factor\": %lld, ", (long long)st->n, (long long)st->nnz_factor);
    json_num("flops", st->flops, 0);
    printf("\"factorization\": \"%s\", \"ncblk\": %lld, \"nblok\": %lld, \"tasks\": %lld, \"split_width\": %d, \"twod_levels\": %d, "
           "\"twod_cblks\": %lld, ",
           canopy_factorization_name(st->factorization), (long long)st->ncblk, (long long)st->nblok, (long long)r->tasks,
           r->split_width, r->twod_levels, (long long)r->twod_cblks);
    printf("\"mapping\": \"%s\", ", r->mapping == 2 ? "memory" : "flops");
    if (r->root_columns > 0) printf("\"root_grid\": [%d, %d, %lld], ", r->root_pr, r->root_pc, (long long)r->root_columns);
    else printf("\"root_grid\": null, ");
    json_num("time_root", r->root_time, 0);
    json_num("time_order", st->time_order, 0);
    json_num("time_symbolic", st->time_symbolic, 0);
    json_num("time_analyze", st->time_analyze, 0);
    json_num("time_plan", r->time_plan, 0);
    json_num("time_factorize", r->time_factorize, 0);
    json_num("time_1x1", r->time_1x1, 0);
    json_num("speedup", r->speedup, 0);
    json_num("efficiency", r->efficiency, 0);
    json_num("efficiency_loaded", r->efficiency_loaded, 0);
    json_num("critical_path", r->critical_path, 0);
    json_num("work", r->work, 0);
    json_num("gflops", r->time_factorize > 0 ? st->flops / r->time_factorize * 1e-9 : 0, 0);
    json_num("time_solve", r->time_solve, 0);
    printf("\"nrhs\": %d, \"levels\": [", po->nrhs);
    for (int l = 0; l < r->nlevels; l++) {
        const predict_level *L = &r->levels[l];
        double tot = L->busy + L->idle;
        printf("%s{\"depth\": %d, \"snodes\": %d, \"threads_min\": %d, \"threads_max\": %d, \"tasks\": %lld, ",
               l ? ", " : "", l, L->snodes, L->threads_min, L->threads_max, (long long)L->tasks);
        json_num("busy", L->busy, 0);
        json_num("idle", L->idle, 0);
        json_num("idle_fraction", tot > 0 ? L->idle / tot : 0, 1);
        printf("}");
    }
    printf("], ");
    json_spread("factor_bytes", &r->factor_bytes);
    json_spread("fanin_bytes", &r->fanin_bytes);
    json_spread("memory_bytes", &r->memory_bytes);
    json_num("heavy_rank", r->heavy_rank, 0);
    json_num("heavy_factor_bytes", r->heavy_factor, 0);
    json_num("heavy_fanin_bytes", r->heavy_fanin, 0);
    json_num("heavy_work_bytes", r->heavy_work, 0);
    json_num("plan_bytes", r->plan_bytes, 0);
    json_num("plan_peak_bytes", r->plan_peak_bytes, 0);
    json_num("analysis_bytes", r->analysis_bytes, 0);
    json_spread("msgs", &r->msgs);
    json_spread("bytes", &r->bytes);
    printf("\"update_msgs\": %lld, \"update_bytes\": %lld, ", (long long)r->update_msgs, (long long)r->update_bytes);
    json_spread("solve_msgs", &r->solve_msgs);
    json_spread("solve_bytes", &r->solve_bytes);
    json_spread("selinv_msgs", &r->selinv_msgs);
    json_spread("selinv_bytes", &r->selinv_bytes);
    json_num("solve_rhs_bytes", r->solve_rhs_bytes, 0);
    json_num("selinv_flops", r->selinv.flops, 0);
    json_num("selinv_top_share", r->selinv.top_share, 0);
    printf("\"selinv_top_cblks\": %lld, ", (long long)r->selinv.top_cblks);
    json_num("selinv_serial_share", r->selinv.serial_share, 0);
    json_num("selinv_task_serial_share", r->selinv.task_serial_share, 0);
    printf("\"top2d_shape\": %d, \"top2d_cblks\": %lld, \"top2d_shared\": %lld, \"top2d_grids\": %d, \"top2d_root_grid\": [%d, %d], "
           "\"top2d_diag_msgs\": %lld, \"top2d_trsm_msgs\": %lld, \"top2d_fanin_msgs\": %lld, ",
           r->top2d_shape, (long long)r->top2d_cblks, (long long)r->top2d_shared, r->top2d_grids, r->top2d_root_pr, r->top2d_root_pc,
           (long long)r->top2d_diag_msgs, (long long)r->top2d_trsm_msgs, (long long)r->top2d_fanin_msgs);
    json_spread("top2d_factor_bytes", &r->top2d_factor_bytes);
    json_num("top2d_bcast_bytes", r->top2d_bcast_bytes, 0);
    json_num("top2d_fanin_bytes", r->top2d_fanin_bytes, 0);
    printf("\"top2d_shadow\": \"%s\", ", r->top2d_shadow == 2 ? "lean" : r->top2d_shadow ? "on" : "off");
    json_num("net_sent_max", r->net_sent_max, 0);
    json_num("net_recv_max", r->net_recv_max, 0);
    json_num("net_bound", r->net_bound, 1);
    printf("}\n");
}

static void print_spread(const char *what, const predict_spread *p, double scale, const char *unit)
{
    printf("  %-28s min %10.4g  median %10.4g  max %10.4g  std-dev %10.4g  total %10.4g %s\n", what, p->min * scale,
           p->median * scale, p->max * scale, p->stddev * scale, p->total * scale, unit);
}

static void print_text(const char *name, const canopy_solver *s, const predict_report *r, const predict_opts *po)
{
    const canopy_stats *st = &s->stats;
    const sched_cost_model *m = &s->rt.cost;
    int rpn = po->ranks_per_node > 1 ? po->ranks_per_node : 1;
    if (rpn > 1)
        printf("%s on %d ranks x %d thread%s, %d ranks a node (simulated; nothing factorized)\n", name, r->ranks,
               r->threads, r->threads > 1 ? "s" : "", rpn);
    else
        printf("%s on %d node%s x %d thread%s (simulated; nothing factorized)\n", name, r->ranks,
               r->ranks > 1 ? "s" : "", r->threads, r->threads > 1 ? "s" : "");
    printf("  network: latency %.3g s, %.3g GB/s; cores: DGEMM %.4g GFlop/s (%s), under load x%.3g (GEMM) x%.3g (scatter)"
           " from %d busy threads\n",
           po->latency, po->bandwidth * 1e-9, m->peak[COST_GEMM] * 1e-9, m->source, m->load_gemm, m->load_scatter,
           m->load_threads);
    printf("  n = %lld, nnz(L) = %lld, flops = %.4g, %s, column blocks = %lld (bloks %lld), tasks = %lld, split %d, "
           "2D levels %d (%lld column blocks)\n",
           (long long)st->n, (long long)st->nnz_factor, st->flops, canopy_factorization_name(st->factorization),
           (long long)st->ncblk, (long long)st->nblok, (long long)r->tasks, r->split_width, r->twod_levels, (long long)r->twod_cblks);
    printf("  analysis here: %.2f s (ordering %.2f, symbolic %.2f), plan %.2f s\n", st->time_analyze, st->time_order,
           st->time_symbolic, r->time_plan);
    printf("factorization: %.4g s predicted (%.4g GFlop/s); 1 x 1: %.4g s; speedup %.4g, efficiency %.1f%%\n",
           r->time_factorize, r->time_factorize > 0 ? st->flops / r->time_factorize * 1e-9 : 0, r->time_1x1, r->speedup,
           100 * r->efficiency);
    printf("  critical path %.4g s (%.1f%% of the prediction); work %.4g thread-s under load: the plan keeps the\n"
           "  threads %.1f%% busy\n", r->critical_path, r->time_factorize > 0 ? 100 * r->critical_path / r->time_factorize : 0,
           r->work, 100 * r->efficiency_loaded);
    if (r->top2d_shape) printf("  (top2d: the critical path includes the tiles' messages)\n");
    if (r->net_bound > 0)
        printf("  network: the busiest node sends %.4g GB and receives %.4g GB (fan-in%s): at least %.4g s on\n"
               "  the wire%s\n", r->net_sent_max * 1e-9, r->net_recv_max * 1e-9, r->top2d_shape ? ", the top's broadcasts" : "",
               r->net_bound, r->net_bound > r->time_factorize
                   ? ", more than the prediction: the simulation charges each message on its own, without contention"
                   : "");
    printf("  idle per level of the thread tree (0 = all threads; a thread's idle time counts at the level of its\n"
           "  next task, its idle time after its last task at level 0):\n");
    printf("    %5s %7s %15s %9s %12s %12s %7s\n", "level", "Snodes", "threads each", "tasks", "busy (t-s)",
           "idle (t-s)", "idle");
    for (int l = 0; l < r->nlevels; l++) {
        const predict_level *L = &r->levels[l];
        double tot = L->busy + L->idle;
        char th[32];
        if (L->threads_min == L->threads_max) snprintf(th, sizeof th, "%d", L->threads_min);
        else snprintf(th, sizeof th, "%d-%d", L->threads_min, L->threads_max);
        printf("    %5d %7d %15s %9lld %12.4g %12.4g %6.1f%%\n", l, L->snodes, th, (long long)L->tasks, L->busy, L->idle,
               tot > 0 ? 100 * L->idle / tot : 0);
    }
    if (r->top2d_shape) {
        static const char *const shapes[] = {"off", "square", "flat", "tall"};
        printf("top2d (%s): %lld of %lld shared column blocks "
               "tiled over %d grids (%s; the widest %d x %d)%s\n",
               r->top2d_shape == 2 ? "flat: what top2d=flat executes" : "a MODEL: the factorization does not execute this shape",
               (long long)r->top2d_cblks, (long long)r->top2d_shared, r->top2d_grids, shapes[r->top2d_shape],
               r->top2d_root_pr, r->top2d_root_pc,
               r->top2d_shadow == 2 ? "; shadows, lean" : r->top2d_shadow ? "; shadows" : "");
        printf("  broadcasts: %lld diagonal + %lld tile messages, %.4g GB; tile fan-ins: %lld messages, %.4g GB\n",
               (long long)r->top2d_diag_msgs, (long long)r->top2d_trsm_msgs, r->top2d_bcast_bytes * 1e-9,
               (long long)r->top2d_fanin_msgs, r->top2d_fanin_bytes * 1e-9);
        print_spread("factor held (tiles)", &r->top2d_factor_bytes, 1e-9, "GB");
        printf("  heaviest rank %.4g GB against an even share %.4g GB (x%.3g)\n", r->top2d_factor_bytes.max * 1e-9,
               r->top2d_factor_bytes.total / r->ranks * 1e-9,
               r->top2d_factor_bytes.total > 0 ? r->top2d_factor_bytes.max * r->ranks / r->top2d_factor_bytes.total : 0);
    }
    if (r->root_columns > 0)
        printf("root on a %d x %d grid of ranks (option root-grid): %lld columns, %.4g s of the factorization\n", r->root_pr,
               r->root_pc, (long long)r->root_columns, r->root_time);
    printf("solve (%d right-hand side%s): %.4g s predicted\n", po->nrhs, po->nrhs > 1 ? "s" : "", r->time_solve);
    printf("per rank:\n");
    print_spread("factor", &r->factor_bytes, 1e-9, "GB");
    print_spread("fan-in buffers", &r->fanin_bytes, 1e-9, "GB");
    print_spread("memory (peak, as checked)", &r->memory_bytes, 1e-9, "GB");
    if (r->memory_bytes.max > 0)
        printf("  the heaviest, rank %d: %.4g GB = factor %.4g + fan-in buffers %.4g + update buffers %.4g\n"
               "    + the rest (A's entries, the structure, the root's grid step) %.4g\n",
               r->heavy_rank, r->memory_bytes.max * 1e-9, r->heavy_factor * 1e-9, r->heavy_fanin * 1e-9,
               r->heavy_work * 1e-9, (r->memory_bytes.max - r->heavy_factor - r->heavy_fanin - r->heavy_work) * 1e-9);
    if (r->plan_bytes > 0)
        printf("  during the analysis every rank holds the plan of all ranks' tasks, %.4g GB (%.4g GB at most while\n"
               "    it plans), beside the structure: %.4g GB at least on every rank (freed once its local plan is\n"
               "    built: not in the peak above)%s\n",
               r->plan_bytes * 1e-9, r->plan_peak_bytes * 1e-9, r->analysis_bytes * 1e-9,
               r->analysis_bytes > r->memory_bytes.max ? ",\n    more than the factorization's heaviest: the analysis is every node's peak"
                                                        : "");
    if (r->mapping == 2) printf("  (the tree mapped onto the ranks by factor entries: option mapping)\n");
    print_spread("fan-in messages sent", &r->msgs, 1, "");
    print_spread("fan-in bytes sent", &r->bytes, 1e-9, "GB");
    printf("  (one message per remote update instead: %lld messages, %.4g GB)\n", (long long)r->update_msgs,
           r->update_bytes * 1e-9);
    print_spread("solve messages sent", &r->solve_msgs, 1, "");
    print_spread("solve bytes sent (trees)", &r->solve_bytes, 1e-9, "GB");
    printf("  right-hand side broadcast and solution gather: %.4g GB\n", r->solve_rhs_bytes * 1e-9);
    print_spread("selected inversion messages sent", &r->selinv_msgs, 1, "");
    print_spread("selected inversion bytes sent (panel broadcasts)", &r->selinv_bytes, 1e-9, "GB");
    /* one rank's threads: Amdahl's law over what no thread count shortens */
    const numeric_selinv_profile *v = &r->selinv;
    double T = r->threads, now = 1 / (v->serial_share + (1 - v->serial_share) / T);
    double tasks = v->task_serial_share > 0 ? fmin(T, 1 / v->task_serial_share) : T;
    printf("selected inversion (one rank): %.4g GFlop; the top of the tree %lld column blocks, %.1f%% of the flops, "
           "in pieces on every thread; unshortened by threads %.2f%% (%.1f%% if the top ran as tasks): speedup at "
           "most %.1f on %d threads (%.1f as tasks)\n",
           v->flops * 1e-9, (long long)v->top_cblks, 100 * v->top_share, 100 * v->serial_share,
           100 * v->task_serial_share, now, r->threads, tasks);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    cli c;
    memset(&c, 0, sizeof c);
    int code = parse_args(argc, argv, &c);
    if (code) {
        MPI_Finalize();
        return code == 1 ? 0 : 2;
    }
    canopy_csc A;
    char name[1100];
    if (load(&c, &A, name, sizeof name)) {
        MPI_Finalize();
        return 1;
    }
    canopy_options o = c.opts;
    o.bind = CANOPY_BIND_NONE; /* nothing runs here but the ordering */
    canopy_solver *s = NULL;
    canopy_status st = canopy_create(MPI_COMM_SELF, &o, &s);
    if (st < 0) {
        fprintf(stderr, "canopy-simulate: cannot create a solver: %s\n", canopy_last_error(NULL));
        canopy_csc_free(&A);
        MPI_Finalize();
        return 1;
    }
    predict_report r;
    memset(&r, 0, sizeof r);
    st = canopy_set_matrix(s, &A);
    canopy_csc_free(&A);
    s->rt.top2d = c.top2d; /* a prediction only: plans for a virtual machine are never run */
    if (st >= 0) st = set_cost(s, &c) ? s->err.status : CANOPY_SUCCESS;
    if (st >= 0)
        st = api_analyze_virtual(s, c.po.ranks, c.po.threads, c.po.ranks_per_node, c.po.latency, 1.0 / c.po.bandwidth);
    if (st >= 0) st = predict_layout(s, &c.po, &r);
    int rc = 0;
    if (st < 0) {
        fprintf(stderr, "canopy-simulate: %s: %s\n", name, canopy_last_error(s));
        rc = 1;
    } else if (c.json) {
        print_json(name, s, &r, &c.po);
    } else {
        print_text(name, s, &r, &c.po);
    }
    predict_report_free(&r);
    canopy_destroy(&s);
    MPI_Finalize();
    return rc;
}
