/*
 * canopy-numaprobe: measure the NUMA effects of this machine on BLAS calls, as in
 * papers/numa-scheduler-pastix.txt §3.1-3.2 (the measurement itself lives in numa/probe.c).
 * Prints both experiments as tables; --svg / --png write the heat map of the pair experiment.
 * First it says which BLAS runs and how fast its DGEMM is on one core (the cost model's figure),
 * with the library's warning on stderr when the BLAS wastes this CPU.
 */
#include "base/config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/common.h"
#include "numa/topology.h"
#include "numa/probe.h"
#include "sched/cost.h"
#include "numeric/numeric.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: canopy-numaprobe [--quick] [--reps N] [--svg FILE] [--png FILE]\n"
            "Measures, on this machine, how much slower daxpy and dgemm run on data placed on another\n"
            "NUMA node: (1) one thread alone on each usable core, data first touched on each usable node;\n"
            "(2) every usable core busy, data on the first core's node, local, or the opposite thread's.\n"
            "Times are normalized to the local case. Run it with the binding the solver gets (e.g. under\n"
            "mpirun); it takes seconds on a small machine and minutes on a large one.\n"
            "  --quick      tiny operands, one sweep (checks the tool; numbers meaningless)\n"
            "  --reps N     timed sweeps over the operands per measurement (default 3)\n"
            "  --svg FILE   heat map of experiment (1) as SVG\n"
            "  --png FILE   the same heat map as PNG (left daxpy, right dgemm; rows nodes, columns cores)\n"
            "  --help       this text\n"
            "A topology from HWLOC_SYNTHETIC or HWLOC_XMLFILE is refused: it is not this machine.\n"
            "The first line names the BLAS and its DGEMM rate on one core as the solver's cost model measures\n"
            "it (calibration or cache, CANOPY_COST_CACHE; --quick: by its kernels alone, nothing timed).\n");
}

/* The BLAS as the solver's cost model sees it; a warning, if any, is on stderr (once). */
static void print_blas(int quick)
{
    canopy_options o;
    char msg[256];
    canopy_options_default(&o);
    (void)canopy_options_from_env(&o, msg, sizeof msg);
    sched_cost_model m;
    canopy_err err = {0};
    if (cost_model_load(&m, quick ? "fixed" : o.cost_cache, &numeric_cost_kernels, &err) != CANOPY_SUCCESS) return;
    printf("BLAS: %s", m.key_blas);
    if (m.gemm_gflops > 0) printf(", DGEMM %.1f GFlop/s on one core", m.gemm_gflops);
    if (m.gemm_expected > 0) printf(" (the CPU's vector units: about %.0f)", m.gemm_expected);
    printf("%s\n", m.blas_warning[0] ? ": far too slow, see the warning" : "");
    if (m.note[0]) printf("cost model: %s\n", m.note);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    numa_probe_opts o = {0, 0};
    const char *svg = NULL, *png = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--quick")) {
            o.quick = 1;
        } else if ((!strcmp(a, "--reps") || !strcmp(a, "--svg") || !strcmp(a, "--png")) && i + 1 >= argc) {
            fprintf(stderr, "canopy-numaprobe: %s needs a value\n", a);
            return 2;
        } else if (!strcmp(a, "--reps")) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*argv[i] == '\0' || *end != '\0' || v < 1 || v > 1000000) {
                fprintf(stderr, "canopy-numaprobe: --reps '%s': expected a count from 1 to 1000000\n", argv[i]);
                return 2;
            }
            o.reps = (int)v;
        } else if (!strcmp(a, "--svg")) {
            svg = argv[++i];
        } else if (!strcmp(a, "--png")) {
            png = argv[++i];
        } else {
            fprintf(stderr, "canopy-numaprobe: unknown argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    print_blas(o.quick);
    canopy_err err = {0};
    numa_topo *t = NULL;
    numa_probe r;
    if (numa_topo_load(&t, &err) != CANOPY_SUCCESS || numa_probe_run(t, &o, &r, &err) != CANOPY_SUCCESS) {
        fprintf(stderr, "canopy-numaprobe: %s\n", err.msg);
        numa_topo_free(t);
        return 1;
    }
    canopy_status st = numa_probe_print(&r, stdout, &err);
    if (st == CANOPY_SUCCESS && svg) st = numa_probe_write_svg(&r, svg, &err);
    if (st == CANOPY_SUCCESS && png) st = numa_probe_write_png(&r, png, &err);
    if (st != CANOPY_SUCCESS) fprintf(stderr, "canopy-numaprobe: %s\n", err.msg);
    numa_probe_free(&r);
    numa_topo_free(t);
    return st == CANOPY_SUCCESS ? 0 : 1;
}
