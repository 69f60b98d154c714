/*
 * Options: defaults, parsing by name, CANOPY_* environment overlay, validation.
 * Names use '-' (CLI spelling); '_' is accepted too, and the environment variable of option
 * "comm-threads" is CANOPY_COMM_THREADS.
 */
#include "api/options.h"
#include "order/order.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const options_names[] = {
    "threads", "bind", "numa", "scheduler", "comm-threads", "tree", "factorization", "ordering",
    "scaling", "pivot-threshold", "amalgamation", "amalgamation-fill", "split", "refine",
    "refine-tolerance", "verbose", "trace", "cost-cache", "memory-check", "memory-limit", "comm-heatmap",
    "ordering-threads", "2d-levels", "selinv-memory", "strict", "mapping", "root-grid", "fanin-cuts", "update-buffer",
    "top2d", "top2d-shadow", NULL};

CANOPY_EXPORT void canopy_options_default(canopy_options *o)
{
    if (o == NULL) return;
    memset(o, 0, sizeof *o);
    o->threads = 0;
    o->bind = CANOPY_BIND_CORE;
    o->numa = CANOPY_NUMA_LOCAL;
    o->scheduler = CANOPY_SCHED_DYNAMIC; /* wins on every bench matrix (bench/README.md) */
    o->comm_threads = 1;
    o->tree = CANOPY_TREE_SHIFTED;
    o->factorization = CANOPY_FACT_AUTO;
    o->ordering = CANOPY_ORDER_AUTO;
    o->scaling = CANOPY_SCALING_AUTO;
    o->pivot_threshold = 1.4901161193847656e-08; /* sqrt(eps), relative to ||A||_inf of the scaled matrix */
    o->amalgamation = 1;
    o->amalgamation_fill = 0.12;
    o->split_size = -1; /* auto: see CANOPY_AUTO_SPLIT */
    o->refine_max_iter = 100;
    o->refine_tolerance = 1e-14;
    o->verbose = 0;
    o->memory_check = 1;
    o->memory_limit = 0;
    o->twod_levels = -1; /* auto: the plan's simulation chooses */
}

static int set_msg(char *msg, size_t len, const char *fmt, const char *a, const char *b) CANOPY_PRINTF(3, 0);
static int set_msg(char *msg, size_t len, const char *fmt, const char *a, const char *b)
{
    if (msg && len) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        snprintf(msg, len, fmt, a, b);
#pragma GCC diagnostic pop
    }
    return CANOPY_ERR_ARGUMENT;
}

/* Match value against a '|'-separated list; returns the index or -1. */
static int pick(const char *value, const char *choices)
{
    int idx = 0;
    size_t vl = strlen(value);
    for (const char *c = choices; *c; idx++) {
        const char *e = strchr(c, '|');
        size_t l = e ? (size_t)(e - c) : strlen(c);
        size_t i = 0;
        while (i < l && tolower((unsigned char)c[i]) == tolower((unsigned char)value[i])) i++;
        if (l == vl && i == l) return idx;
        if (!e) break;
        c = e + 1;
    }
    return -1;
}

static bool parse_int(const char *v, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end != '\0' || x < lo || x > hi) return false;
    *out = (int)x;
    return true;
}

static bool parse_double(const char *v, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end != '\0' || !isfinite(x) || x < lo || x > hi) return false;
    *out = x;
    return true;
}

/* "0,2,4-7": digits, commas and ranges only */
static bool valid_core_list(const char *v)
{
    if (*v == '\0') return false;
    for (const char *p = v; *p;) {
        if (!isdigit((unsigned char)*p)) return false;
        long a = strtol(p, (char **)&p, 10);
        if (*p == '-') {
            p++;
            if (!isdigit((unsigned char)*p)) return false;
            long b = strtol(p, (char **)&p, 10);
            if (b < a) return false;
        }
        if (*p == ',') {
            p++;
            if (*p == '\0') return false;
        } else if (*p != '\0') return false;
    }
    return true;
}

CANOPY_EXPORT canopy_status canopy_options_set(canopy_options *o, const char *name, const char *value,
                                               char *msg, size_t len)
{
    if (o == NULL || name == NULL || value == NULL)
        return set_msg(msg, len, "%s%s", "canopy_options_set: NULL argument", "");
    char key[64];
    size_t kl = strlen(name);
    if (kl >= sizeof key) return set_msg(msg, len, "unknown option '%s'%s", name, "");
    for (size_t i = 0; i <= kl; i++) key[i] = name[i] == '_' ? '-' : (char)tolower((unsigned char)name[i]);
    int iv;
    double dv;
    int k;
#define BAD(choices) return set_msg(msg, len, "option %s: invalid value '%s' (expected " choices ")", key, value)
    if (!strcmp(key, "threads")) {
        if (!parse_int(value, 0, 4096, &iv)) BAD("0 (all usable cores) or a thread count up to 4096");
        o->threads = iv;
    } else if (!strcmp(key, "bind")) {
        if ((k = pick(value, "none|core")) >= 0) {
            o->bind = k == 0 ? CANOPY_BIND_NONE : CANOPY_BIND_CORE;
        } else if (valid_core_list(value) && strlen(value) < sizeof o->bind_list) {
            o->bind = CANOPY_BIND_LIST;
            snprintf(o->bind_list, sizeof o->bind_list, "%s", value);
        } else BAD("none, core or a core list like 0,2,4-7");
    } else if (!strcmp(key, "numa")) {
        if ((k = pick(value, "local|global|interleave")) < 0) BAD("local, global or interleave");
        o->numa = (canopy_numa)k;
    } else if (!strcmp(key, "scheduler")) {
        if ((k = pick(value, "static|dynamic")) < 0) BAD("static or dynamic");
        o->scheduler = (canopy_scheduler)k;
    } else if (!strcmp(key, "comm-threads")) {
        if (!parse_int(value, 0, 2, &iv)) BAD("0, 1 or 2");
        o->comm_threads = iv;
    } else if (!strcmp(key, "tree")) {
        if ((k = pick(value, "flat|binary|shifted")) < 0) BAD("flat, binary or shifted");
        o->tree = (canopy_tree)k;
    } else if (!strcmp(key, "factorization")) {
        if ((k = pick(value, "auto|llt|ldlt|lu")) < 0) BAD("auto, llt, ldlt or lu");
        o->factorization = (canopy_factorization)k;
    } else if (!strcmp(key, "ordering")) {
        if ((k = pick(value, "scotch|natural|user|ptscotch|auto")) < 0) BAD("scotch, natural, user, ptscotch or auto");
        if (k == CANOPY_ORDER_PTSCOTCH && !order_have_ptscotch())
            return set_msg(msg, len, "option ordering=%s: %s", value, ORDER_NO_PTSCOTCH);
        o->ordering = (canopy_ordering)k;
    } else if (!strcmp(key, "scaling")) {
        if ((k = pick(value, "auto|none|equilibrate|matching")) < 0) BAD("auto, none, equilibrate or matching");
        o->scaling = (canopy_scaling)k;
    } else if (!strcmp(key, "pivot-threshold")) {
        if (!parse_double(value, 1e-300, 1.0, &dv)) BAD("a number in (0, 1]");
        o->pivot_threshold = dv;
    } else if (!strcmp(key, "amalgamation")) {
        if (!parse_int(value, 0, 1, &iv)) BAD("0 or 1");
        o->amalgamation = iv;
    } else if (!strcmp(key, "amalgamation-fill")) {
        if (!parse_double(value, 0.0, 10.0, &dv)) BAD("a fraction between 0 and 10");
        o->amalgamation_fill = dv;
    } else if (!strcmp(key, "ordering-threads")) {
        if (!parse_int(value, 0, 4096, &iv)) BAD("0 (the rank's worker threads) or a thread count up to 4096");
        o->ordering_threads = iv;
    } else if (!strcmp(key, "2d-levels")) {
        if (!strcmp(value, "auto")) iv = -1;
        else if (!parse_int(value, 0, 64, &iv)) BAD("auto, 0 (no 2D tasks) or a level count up to 64");
        o->twod_levels = iv;
    } else if (!strcmp(key, "split")) {
        if (!strcmp(value, "auto")) iv = -1;
        else if (!parse_int(value, 0, 1 << 20, &iv)) BAD("auto, 0 (no splitting) or a column count");
        o->split_size = iv;
    } else if (!strcmp(key, "refine")) {
        if (!parse_int(value, 0, 1000, &iv)) BAD("a step count between 0 and 1000");
        o->refine_max_iter = iv;
    } else if (!strcmp(key, "refine-tolerance")) {
        if (!parse_double(value, 0.0, 1.0, &dv)) BAD("a number in [0, 1]");
        o->refine_tolerance = dv;
    } else if (!strcmp(key, "verbose")) {
        if (!parse_int(value, 0, 3, &iv)) BAD("0, 1, 2 or 3");
        o->verbose = iv;
    } else if (!strcmp(key, "cost-cache")) {
        if (strlen(value) >= sizeof o->cost_cache) BAD("a path shorter than 1024 characters, 'fixed' or 'none'");
        snprintf(o->cost_cache, sizeof o->cost_cache, "%s", value);
    } else if (!strcmp(key, "memory-check")) {
        if ((k = pick(value, "off|on|0|1")) < 0) BAD("on or off");
        o->memory_check = k == 1 || k == 3;
    } else if (!strcmp(key, "memory-limit")) {
        if (!parse_double(value, 0.0, 1e18, &dv)) BAD("bytes per rank (0 = available memory / ranks on the node)");
        o->memory_limit = dv;
    } else if (!strcmp(key, "mapping")) {
        if ((k = pick(value, "auto|flops|memory")) < 0) BAD("auto, flops or memory");
        o->mapping = k;
    } else if (!strcmp(key, "fanin-cuts")) {
        if ((k = pick(value, "auto|off|on")) < 0) BAD("auto, off or on");
        o->fanin_cuts = k;
    } else if (!strcmp(key, "update-buffer")) {
        if ((k = pick(value, "auto|off")) >= 0) o->update_buffer = k == 0 ? 0 : -1;
        else if (parse_double(value, 1.0, 9e15, &dv)) o->update_buffer = floor(dv);
        else BAD("auto, off or entries (a worker's update buffer at most)");
    } else if (!strcmp(key, "top2d")) {
        if ((k = pick(value, "off|flat|auto")) < 0) BAD("off, flat or auto");
        o->top2d = k;
    } else if (!strcmp(key, "top2d-shadow")) {
        if ((k = pick(value, "auto|lean|off")) < 0) BAD("auto, lean or off");
        o->top2d_shadow = k;
    } else if (!strcmp(key, "root-grid")) {
        if ((k = pick(value, "off|on|auto")) < 0) BAD("off, on or auto");
        o->root_grid = k;
    } else if (!strcmp(key, "selinv-memory")) {
        if ((k = pick(value, "inplace|separate")) < 0) BAD("inplace or separate");
        o->selinv_memory = (canopy_selinv_memory)k;
    } else if (!strcmp(key, "strict")) {
        if ((k = pick(value, "off|on|0|1")) < 0) BAD("on or off");
        o->strict = k == 1 || k == 3;
    } else if (!strcmp(key, "comm-heatmap")) {
        if (strlen(value) >= sizeof o->comm_heatmap) BAD("a path shorter than 1024 characters");
        snprintf(o->comm_heatmap, sizeof o->comm_heatmap, "%s", value);
    } else if (!strcmp(key, "trace")) {
        if (strlen(value) >= sizeof o->trace_file) BAD("a path shorter than 1024 characters");
        snprintf(o->trace_file, sizeof o->trace_file, "%s", value);
    } else {
        return set_msg(msg, len, "unknown option '%s'%s", name, "");
    }
#undef BAD
    return CANOPY_SUCCESS;
}

CANOPY_EXPORT canopy_status canopy_options_from_env(canopy_options *o, char *msg, size_t len)
{
    if (o == NULL) return set_msg(msg, len, "%s%s", "canopy_options_from_env: NULL options", "");
    for (int i = 0; options_names[i]; i++) {
        char var[80] = "CANOPY_";
        size_t p = strlen(var);
        for (const char *c = options_names[i]; *c && p + 1 < sizeof var; c++)
            var[p++] = *c == '-' ? '_' : (char)toupper((unsigned char)*c);
        var[p] = '\0';
        const char *v = getenv(var);
        if (v == NULL) continue;
        canopy_status s = canopy_options_set(o, options_names[i], v, msg, len);
        if (s != CANOPY_SUCCESS) {
            if (msg && len) {
                char tmp[512];
                snprintf(tmp, sizeof tmp, "%s", msg);
                snprintf(msg, len, "environment %s: %s", var, tmp);
            }
            return s;
        }
    }
    return CANOPY_SUCCESS;
}

canopy_status options_validate(const canopy_options *o, canopy_err *err)
{
    if (o->threads < 0 || o->threads > 4096)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "options: threads = %d is out of range 0..4096", o->threads);
    if (o->twod_levels < -1 || o->twod_levels > 64)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "options: twod_levels = %d (-1 = auto, 0 = none, up to 64)",
                              o->twod_levels);
    if (o->ordering_threads < 0 || o->ordering_threads > 4096)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "options: ordering_threads = %d is out of range 0..4096",
                              o->ordering_threads);
    if ((unsigned)o->bind > CANOPY_BIND_LIST || (unsigned)o->numa > CANOPY_NUMA_INTERLEAVE ||
        (unsigned)o->scheduler > CANOPY_SCHED_DYNAMIC || (unsigned)o->tree > CANOPY_TREE_SHIFTED ||
        (unsigned)o->factorization > CANOPY_FACT_LU || (unsigned)o->ordering > CANOPY_ORDER_AUTO ||
        (unsigned)o->scaling > CANOPY_SCALING_MATCHING || (unsigned)o->selinv_memory > CANOPY_SELINV_SEPARATE ||
        (unsigned)o->mapping > 2 || (unsigned)o->root_grid > 2 || (unsigned)o->fanin_cuts > 2 ||
        (unsigned)o->top2d > 2 || (unsigned)o->top2d_shadow > 2)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "options: an enumerated option holds an unknown value");
    if (o->ordering == CANOPY_ORDER_PTSCOTCH && !order_have_ptscotch())
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "options: ordering = ptscotch: %s", ORDER_NO_PTSCOTCH);
    if (o->comm_threads < 0 || o->comm_threads > 2)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "options: comm_threads = %d (expected 0, 1 or 2)", o->comm_threads);
    if (o->bind == CANOPY_BIND_LIST && (memchr(o->bind_list, '\0', sizeof o->bind_list) == NULL || !valid_core_list(o->bind_list)))
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "options: bind list is not a core list like 0,2,4-7");
    if (!(o->pivot_threshold > 0 && o->pivot_threshold <= 1))
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "options: pivot_threshold = %g is not in (0, 1]", o->pivot_threshold);
    if (o->amalgamation != 0 && o->amalgamation != 1)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "options: amalgamation = %d (expected 0 or 1)", o->amalgamation);
    if (!(o->amalgamation_fill >= 0 && o->amalgamation_fill <= 10))
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "options: amalgamation_fill = %g is not in [0, 10]", o->amalgamation_fill);
    if (o->split_size < -1)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "options: split_size = %d (-1 = auto, 0 = none, or a width)",
                              o->split_size);
    if (o->refine_max_iter < 0 || !(o->refine_tolerance >= 0 && o->refine_tolerance <= 1))
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "options: refinement steps must be >= 0 and tolerance in [0, 1]");
    if (o->verbose < 0 || o->verbose > 3)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "options: verbose = %d is not in 0..3", o->verbose);
    if (o->memory_check != 0 && o->memory_check != 1)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "options: memory_check = %d (expected 0 or 1)", o->memory_check);
    if (!(o->memory_limit >= 0 && o->memory_limit <= 1e18))
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "options: memory_limit = %g bytes is not in [0, 1e18]", o->memory_limit);
    if (!(o->update_buffer == -1 || o->update_buffer == 0 ||
          (o->update_buffer >= 1 && o->update_buffer <= 9e15 && floor(o->update_buffer) == o->update_buffer)))
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT,
                              "options: update_buffer = %g (0 = auto, -1 = off, or a whole number of entries >= 1)",
                              o->update_buffer);
    if (o->strict != 0 && o->strict != 1)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "options: strict = %d (expected 0 or 1)", o->strict);
    if (memchr(o->comm_heatmap, '\0', sizeof o->comm_heatmap) == NULL)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "options: comm_heatmap is not NUL-terminated");
    if (memchr(o->trace_file, '\0', sizeof o->trace_file) == NULL)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "options: trace_file is not NUL-terminated");
    return CANOPY_SUCCESS;
}

CANOPY_EXPORT const char *canopy_factorization_name(canopy_factorization f)
{
    switch (f) {
    case CANOPY_FACT_AUTO: return "auto";
    case CANOPY_FACT_LLT: return "llt";
    case CANOPY_FACT_LDLT: return "ldlt";
    case CANOPY_FACT_LU: return "lu";
    }
    return "unknown";
}
