/*
 * The CPU and the BLAS of this process (see blascheck.h): identification for the cost model's
 * cache key, and the judgement of the BLAS against the CPU's instruction set. The BLAS is asked
 * through its own introspection calls, found with dlsym in the library that holds cblas_dgemm
 * (linked directly, or behind Debian's libblas.so.3 alternative, or loaded by Python without
 * RTLD_GLOBAL: the handle of that very library finds them in every case).
 */
#include "base/config.h"
#include "blascheck.h"

#include <ctype.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cblas.h>
/* glibc has dladdr (libdl before 2.34; configure adds -ldl then): the test serves a build whose
 * config.h predates the dladdr check (a new file compiled before config.h is remade) */
#if defined(HAVE_DLFCN_H) && (defined(HAVE_DLADDR) || defined(__GLIBC__))
#include <dlfcn.h>
#define BLASCHECK_DL 1
#endif

/* copy with truncation; whitespace runs become one space, ends trimmed (the keys are one line) */
static void blascheck_copy(char *dst, size_t len, const char *src)
{
    size_t n = 0;
    int space = 0;
    if (len == 0) return;
    for (const char *p = src ? src : ""; *p && n + 1 < len; p++) {
        if (isspace((unsigned char)*p)) {
            space = n > 0;
            continue;
        }
        if (space && n + 2 < len) dst[n++] = ' ';
        space = 0;
        dst[n++] = *p;
    }
    dst[n] = '\0';
}

/* the value of a "key<tab>: value" cpuinfo line, or NULL */
static const char *blascheck_field(const char *line, const char *key)
{
    size_t k = strlen(key);
    if (strncmp(line, key, k) != 0) return NULL;
    const char *p = line + k;
    while (*p == ' ' || *p == '\t') p++;
    if (*p != ':') return NULL;
    p++;
    while (*p == ' ' || *p == '\t') p++;
    return p;
}

static int blascheck_has_flag(const char *flags, const char *flag)
{
    size_t k = strlen(flag);
    for (const char *p = flags; (p = strstr(p, flag)) != NULL; p += k)
        if ((p == flags || p[-1] == ' ' || p[-1] == '\t') && (p[k] == ' ' || p[k] == '\n' || p[k] == '\0'))
            return 1;
    return 0;
}

int blascheck_read_cpuinfo(const char *path, blascheck_machine *mc)
{
    mc->vendor[0] = mc->cpu_name[0] = '\0';
    mc->family = mc->model = -1;
    mc->isa = BLASCHECK_ISA_UNKNOWN;
    mc->ghz = 0;
    FILE *f = path ? fopen(path, "r") : NULL;
    if (f == NULL) return -1;
    /* the flags line of an AVX-512 server is about 1.5 kB */
    char line[8192];
    double mhz = 0;
    while (fgets(line, sizeof line, f)) {
        const char *v;
        if (line[0] == '\n') break; /* the first processor describes them all */
        if ((v = blascheck_field(line, "vendor_id")) != NULL) blascheck_copy(mc->vendor, sizeof mc->vendor, v);
        else if ((v = blascheck_field(line, "CPU implementer")) != NULL && !mc->vendor[0]) {
            char s[16];
            blascheck_copy(s, sizeof s, v);
            snprintf(mc->vendor, sizeof mc->vendor, "implementer-%s", s);
        } else if ((v = blascheck_field(line, "cpu family")) != NULL) mc->family = atoi(v);
        else if ((v = blascheck_field(line, "model")) != NULL) mc->model = atoi(v);
        else if ((v = blascheck_field(line, "CPU part")) != NULL) mc->model = (int)strtol(v, NULL, 0);
        else if ((v = blascheck_field(line, "model name")) != NULL) blascheck_copy(mc->cpu_name, sizeof mc->cpu_name, v);
        else if ((v = blascheck_field(line, "cpu MHz")) != NULL) mhz = atof(v);
        else if ((v = blascheck_field(line, "flags")) != NULL) {
            mc->isa = blascheck_has_flag(v, "avx512f")                                   ? BLASCHECK_ISA_AVX512
                      : blascheck_has_flag(v, "avx2") && blascheck_has_flag(v, "fma")    ? BLASCHECK_ISA_AVX2
                      : blascheck_has_flag(v, "avx")                                     ? BLASCHECK_ISA_AVX
                      : blascheck_has_flag(v, "sse2")                                    ? BLASCHECK_ISA_SSE2
                                                                                         : BLASCHECK_ISA_UNKNOWN;
        }
    }
    fclose(f);
    /* "Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz": the nominal clock, not today's frequency */
    const char *at = strstr(mc->cpu_name, "@ ");
    double named = at ? atof(at + 2) : 0;
    if (at && strstr(at, "GHz") && named > 0.2 && named < 10) mc->ghz = named;
    else if (mhz > 200 && mhz < 10000) mc->ghz = mhz / 1000;
    return 0;
}

/* A C function pointer and an object pointer, for dladdr, without a cast ISO C forbids. */
typedef void (*blascheck_fn)(void);

#ifdef BLASCHECK_DL
static void *blascheck_sym(void *lib, const char *name)
{
    void *p = lib ? dlsym(lib, name) : NULL;
    return p ? p : dlsym(RTLD_DEFAULT, name);
}
#endif

static void blascheck_blas(blascheck_machine *mc)
{
    mc->library[0] = mc->version[0] = mc->core[0] = mc->file[0] = '\0';
    mc->dynamic_arch = 0;
    const char *env = getenv("OPENBLAS_CORETYPE");
    blascheck_copy(mc->coretype_env, sizeof mc->coretype_env, env);
#ifdef BLASCHECK_DL
    union {
        blascheck_fn fn;
        void *obj;
    } dgemm;
    dgemm.fn = (blascheck_fn)cblas_dgemm;
    Dl_info info;
    void *lib = NULL;
    if (dladdr(dgemm.obj, &info) != 0 && info.dli_fname) {
        blascheck_copy(mc->file, sizeof mc->file, info.dli_fname);
        /* the library is loaded already: RTLD_NOLOAD only hands out a handle to it */
        lib = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    }
    union {
        void *obj;
        char *(*str)(void);
        const char *(*cstr)(void);
        int (*id)(void);
        const char *(*name_of)(int);
        void (*mkl)(char *, int);
    } f;
    if ((f.obj = blascheck_sym(lib, "openblas_get_config")) != NULL) {
        const char *cfg = f.str();
        snprintf(mc->library, sizeof mc->library, "OpenBLAS");
        /* "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY Cooperlake MAX_THREADS=64" */
        if (cfg && !strncmp(cfg, "OpenBLAS ", 9)) {
            size_t n = strcspn(cfg + 9, " ");
            snprintf(mc->version, sizeof mc->version, "%.*s", (int)(n < 31 ? n : 31), cfg + 9);
        }
        mc->dynamic_arch = cfg && strstr(cfg, "DYNAMIC_ARCH") != NULL;
        if ((f.obj = blascheck_sym(lib, "openblas_get_corename")) != NULL) blascheck_copy(mc->core, sizeof mc->core, f.str());
    } else if ((f.obj = blascheck_sym(lib, "bli_info_get_version_str")) != NULL) {
        snprintf(mc->library, sizeof mc->library, "BLIS");
        blascheck_copy(mc->version, sizeof mc->version, f.cstr());
        void *q = blascheck_sym(lib, "bli_arch_query_id"), *s = blascheck_sym(lib, "bli_arch_string");
        if (q && s) {
            f.obj = q;
            int arch = f.id();
            f.obj = s;
            blascheck_copy(mc->core, sizeof mc->core, f.name_of(arch));
        }
    } else if ((f.obj = blascheck_sym(lib, "MKL_Get_Version_String")) != NULL) {
        char v[200] = "";
        f.mkl(v, (int)sizeof v - 1);
        snprintf(mc->library, sizeof mc->library, "MKL");
        blascheck_copy(mc->version, sizeof mc->version, v);
    }
    if (lib) dlclose(lib);
#endif
}

void blascheck_identify(blascheck_machine *mc)
{
    memset(mc, 0, sizeof *mc);
    (void)blascheck_read_cpuinfo("/proc/cpuinfo", mc);
    /* intel_pstate publishes the base clock; the name and "cpu MHz" are the fallbacks */
    FILE *f = fopen("/sys/devices/system/cpu/cpu0/cpufreq/base_frequency", "r");
    if (f) {
        double khz = 0;
        if (fscanf(f, "%lf", &khz) == 1 && khz > 2e5 && khz < 1e7) mc->ghz = khz / 1e6;
        fclose(f);
    }
    blascheck_blas(mc);
}

void blascheck_cpu_key(const blascheck_machine *mc, char *buf, size_t len)
{
    char s[200];
    snprintf(s, sizeof s, "%s %d %d %s", mc->vendor[0] ? mc->vendor : "unknown", mc->family, mc->model, mc->cpu_name);
    blascheck_copy(buf, len, s);
}

void blascheck_blas_key(const blascheck_machine *mc, char *buf, size_t len)
{
    char s[300];
    if (mc->library[0]) snprintf(s, sizeof s, "%s %s %s", mc->library, mc->version, mc->core);
    else snprintf(s, sizeof s, "unknown %s", mc->file[0] ? mc->file : "-");
    blascheck_copy(buf, len, s);
}

int blascheck_core_isa(const char *core)
{
    static const char *const avx512[] = {"skylakex", "cooperlake", "sapphirerapids"};
    static const char *const avx2[] = {"haswell", "zen"};
    static const char *const avx[] = {"sandybridge", "bulldozer", "piledriver", "steamroller", "excavator"};
    static const char *const sse[] = {"katmai", "coppermine", "northwood", "prescott", "banias", "atom", "core2",
                                      "penryn", "dunnington", "nehalem", "athlon", "opteron", "opteron_sse3",
                                      "barcelona", "nano", "bobcat"};
    if (core == NULL) return BLASCHECK_ISA_UNKNOWN;
    char c[32];
    size_t n = 0;
    for (; core[n] && n + 1 < sizeof c; n++) c[n] = (char)tolower((unsigned char)core[n]);
    c[n] = '\0';
    for (size_t i = 0; i < sizeof avx512 / sizeof *avx512; i++)
        if (!strcmp(c, avx512[i])) return BLASCHECK_ISA_AVX512;
    for (size_t i = 0; i < sizeof avx2 / sizeof *avx2; i++)
        if (!strcmp(c, avx2[i])) return BLASCHECK_ISA_AVX2;
    for (size_t i = 0; i < sizeof avx / sizeof *avx; i++)
        if (!strcmp(c, avx[i])) return BLASCHECK_ISA_AVX;
    for (size_t i = 0; i < sizeof sse / sizeof *sse; i++)
        if (!strcmp(c, sse[i])) return BLASCHECK_ISA_SSE2;
    return BLASCHECK_ISA_UNKNOWN;
}

double blascheck_expected_gflops(const blascheck_machine *mc)
{
    /* double-precision flops per cycle of one core: FMA units x vector width x 2. The low end of
     * each family (one AVX-512 FMA unit on small Xeons, AMD's double-pumped AVX-512, Zen 1's
     * 128-bit units), so that the estimate errs low and the warning stays quiet on doubt. */
    int amd = !strcmp(mc->vendor, "AuthenticAMD"), intel = !strcmp(mc->vendor, "GenuineIntel");
    double fpc = 0;
    switch (mc->isa) {
    case BLASCHECK_ISA_AVX512: fpc = intel ? 32 : 16; break;
    case BLASCHECK_ISA_AVX2: fpc = amd && (mc->family < 0x17 || (mc->family == 0x17 && mc->model < 0x30)) ? 8 : 16; break;
    case BLASCHECK_ISA_AVX: fpc = 8; break;
    case BLASCHECK_ISA_SSE2: fpc = 4; break;
    default: fpc = 0;
    }
    return mc->ghz > 0 ? fpc * mc->ghz : 0;
}

static const char *blascheck_isa_name(int isa)
{
    switch (isa) {
    case BLASCHECK_ISA_AVX512: return "AVX-512";
    case BLASCHECK_ISA_AVX2: return "AVX2";
    case BLASCHECK_ISA_AVX: return "AVX";
    case BLASCHECK_ISA_SSE2: return "SSE2";
    default: return "?";
    }
}

/* The OPENBLAS_CORETYPE that fits the CPU. */
static const char *blascheck_fitting_core(const blascheck_machine *mc)
{
    switch (mc->isa) {
    case BLASCHECK_ISA_AVX512: return "SkylakeX (or Haswell)";
    case BLASCHECK_ISA_AVX2: return !strcmp(mc->vendor, "AuthenticAMD") ? "Zen" : "Haswell";
    default: return "Sandybridge";
    }
}

int blascheck_verdict(const blascheck_machine *mc, double measured, char *msg, size_t len)
{
    if (msg && len) msg[0] = '\0';
    double expected = blascheck_expected_gflops(mc);
    int slow = measured > 0 && expected > 0 && measured < 0.3 * expected;
    int core_isa = !strcmp(mc->library, "OpenBLAS") ? blascheck_core_isa(mc->core) : BLASCHECK_ISA_UNKNOWN;
    /* older kernels: SSE or AVX ones on an AVX2 CPU lose 2x or more whatever the measurement says;
     * AVX2 kernels on AVX-512 lose little on some CPUs (AMD), so only a slow measurement counts */
    int old_core = core_isa != BLASCHECK_ISA_UNKNOWN && core_isa < mc->isa && (core_isa < BLASCHECK_ISA_AVX2 || slow);
    if (!old_core && !slow) return 0;
    if (msg == NULL || len == 0) return 1;
    char cpu[160] = "", rate[160] = "", gain[48] = "";
    if (mc->cpu_name[0] && mc->ghz > 0) snprintf(cpu, sizeof cpu, " (%s, %.1f GHz)", mc->cpu_name, mc->ghz);
    else if (mc->cpu_name[0]) snprintf(cpu, sizeof cpu, " (%s)", mc->cpu_name);
    if (measured > 0 && expected > 0)
        snprintf(rate, sizeof rate, ": DGEMM at %.1f GFlop/s on one core against about %.0f that its vector units give",
                 measured, expected);
    else if (measured > 0)
        snprintf(rate, sizeof rate, ": DGEMM at %.1f GFlop/s on one core", measured);
    /* the estimate errs low (base clock, fewest FMA units of the family): "or more" */
    if (measured > 0 && expected > 1.5 * measured)
        snprintf(gain, sizeof gain, " for about %.0fx or more", expected / measured);
    if (old_core) {
        char fix[200];
        if (!mc->dynamic_arch)
            snprintf(fix, sizeof fix, "this OpenBLAS is built for %s alone (no DYNAMIC_ARCH): install one built for "
                     "this CPU (DYNAMIC_ARCH=1, or TARGET=%s)%s", mc->core, blascheck_fitting_core(mc), gain);
        else if (mc->coretype_env[0])
            snprintf(fix, sizeof fix, "OPENBLAS_CORETYPE=%s asks for them: set OPENBLAS_CORETYPE=%s%s", mc->coretype_env,
                     blascheck_fitting_core(mc), gain);
        else
            snprintf(fix, sizeof fix, "it does not know this CPU; set OPENBLAS_CORETYPE=%s%s, or use an OpenBLAS "
                     "newer than %s", blascheck_fitting_core(mc), gain, mc->version[0] ? mc->version : "this one");
        snprintf(msg, len, "OpenBLAS %s runs its %s kernels (%s) on this %s CPU%s%s; %s", mc->version, mc->core,
                 blascheck_isa_name(core_isa), blascheck_isa_name(mc->isa), cpu, rate, fix);
    } else if (core_isa != BLASCHECK_ISA_UNKNOWN) {
        /* the right kernels, and still slow: nothing to change in the BLAS */
        snprintf(msg, len, "OpenBLAS %s (%s kernels) is slow on this %s CPU%s%s; the kernels suit the CPU, so its "
                 "core was busy with other work or throttled: more threads or processes than cores?", mc->version,
                 mc->core, blascheck_isa_name(mc->isa), cpu, rate);
    } else {
        char what[240];
        if (mc->library[0]) snprintf(what, sizeof what, "%s %s%s%s", mc->library, mc->version, mc->core[0] ? " " : "", mc->core);
        else snprintf(what, sizeof what, "the BLAS (%s)", mc->file[0] ? mc->file : "unknown library");
        snprintf(msg, len, "%s is slow on this %s CPU%s%s; link an optimized BLAS%s (OpenBLAS, BLIS, MKL; on Debian "
                 "'update-alternatives --config libblas.so.3-*' picks the one behind libblas.so.3)", what,
                 blascheck_isa_name(mc->isa), cpu, rate, gain);
    }
    return 1;
}

int blascheck_warn_once(const char *msg)
{
    static atomic_int said = 0;
    if (msg == NULL || msg[0] == '\0' || atomic_exchange(&said, 1)) return 0;
    fprintf(stderr, "canopy: warning: %s\n", msg);
    return 1;
}
