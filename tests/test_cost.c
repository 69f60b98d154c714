/*
 * Kernel cost model (sched/cost.c): the fixed model is sane and monotone, the cache file round-trips
 * exactly, damaged or missing caches are remade, an unwritable cache is no error, calibration gives
 * positive finite parameters; a cache made for another CPU, BLAS or core count, or one a quick GEMM
 * finds 3x off, is recalibrated and rewritten; the BLAS check (sched/blascheck.c) warns of kernels
 * older than the CPU and of a slow unknown BLAS, once per process. No assertion depends on timing:
 * the measured DGEMM rates are injected (CANOPY_TEST_GEMM_GFLOPS) and the machines made up.
 */
#include "testutil.h"
#include "sched/cost.h"
#include "numeric/numeric.h"
#include "sched/blascheck.h"

#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const keys[COST_NKERNELS] = {"gemm", "trsm", "potrf", "getrf", "sytrf", "scatter"};

/* A fresh private directory under TMPDIR (or /tmp). */
static void temp_dir(char *buf, size_t len)
{
    const char *base = getenv("TMPDIR");
    snprintf(buf, len, "%s/canopy-cost-XXXXXX", base && *base ? base : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(buf));
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Remove a directory made by temp_dir and everything in it. */
static void rm_tree(const char *dir)
{
    ck_assert_int_eq(nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static void assert_sane(const sched_cost_model *m)
{
    for (int k = 0; k < COST_NKERNELS; k++) {
        ck_assert_msg(isfinite(m->peak[k]) && m->peak[k] > 0, "peak %s = %g", keys[k], m->peak[k]);
        ck_assert_msg(isfinite(m->d_half[k]) && m->d_half[k] >= 0, "d_half %s = %g", keys[k], m->d_half[k]);
    }
    ck_assert(isfinite(m->latency) && m->latency >= 0);
    /* every formula positive and finite on a typical call */
    ck_assert(cost_gemm(m, 300, 64, 64) > 0 && isfinite(cost_gemm(m, 300, 64, 64)));
    ck_assert(cost_trsm(m, 300, 64) > 0 && isfinite(cost_trsm(m, 300, 64)));
    ck_assert(cost_potrf(m, 64) > 0 && cost_getrf(m, 64) > 0 && cost_sytrf(m, 64) > 0);
    ck_assert(cost_scatter(m, 1000) > 0 && isfinite(cost_scatter(m, 1000)));
}

/* CANOPY_TEST_GEMM_GFLOPS: the DGEMM rate every measurement "finds" (0: the real ones). */
static void inject_rate(double gflops)
{
    char v[64];
    snprintf(v, sizeof v, "%.17g", gflops);
    if (gflops > 0) setenv("CANOPY_TEST_GEMM_GFLOPS", v, 1);
    else unsetenv("CANOPY_TEST_GEMM_GFLOPS");
}

static int same_values(const sched_cost_model *a, const sched_cost_model *b)
{
    return !memcmp(a->peak, b->peak, sizeof a->peak) && !memcmp(a->d_half, b->d_half, sizeof a->d_half) &&
           a->latency == b->latency && a->calibrated == b->calibrated && a->load_threads == b->load_threads &&
           a->load_gemm == b->load_gemm && a->load_scatter == b->load_scatter;
}

/* The loaded view: rates divided by the slowdown interpolated over the busy threads, held beyond
 * the measured count, applied once; the fixed model and one busy thread change nothing. */
START_TEST(under_load)
{
    sched_cost_model f, m, x;
    cost_model_fixed(&f);
    ck_assert_int_eq(f.load_threads, 1);
    m = f;
    cost_model_under_load(&m, 64);
    ck_assert(same_values(&m, &f));
    f.load_threads = 16;
    f.load_gemm = 1.8;
    f.load_scatter = 2.5;
    m = f;
    cost_model_under_load(&m, 1);
    ck_assert(same_values(&m, &f));
    for (int busy = 2; busy <= 40; busy += 3) {
        m = f;
        cost_model_under_load(&m, busy);
        double x01 = (double)((busy < 16 ? busy : 16) - 1) / 15.0;
        double g = 1 + 0.8 * x01, sc = 1 + 1.5 * x01;
        ck_assert(fabs(m.peak[COST_GEMM] * g / f.peak[COST_GEMM] - 1) < 1e-12);
        ck_assert(fabs(m.peak[COST_POTRF] * g / f.peak[COST_POTRF] - 1) < 1e-12);
        ck_assert(fabs(m.peak[COST_SCATTER] * sc / f.peak[COST_SCATTER] - 1) < 1e-12);
        ck_assert(cost_gemm(&m, 300, 64, 64) >= cost_gemm(&f, 300, 64, 64));
        x = m;
        cost_model_under_load(&x, busy); /* applied already: nothing more */
        ck_assert(same_values(&x, &m));
    }
    cost_model_under_load(NULL, 4);
}
END_TEST

START_TEST(fixed_is_sane_and_monotone)
{
    sched_cost_model m;
    cost_model_fixed(&m);
    assert_sane(&m);
    ck_assert_int_eq(m.calibrated, 0);
    ck_assert_str_eq(m.source, "fixed");
    /* a zero size costs nothing */
    ck_assert(cost_gemm(&m, 0, 5, 5) == 0 && cost_gemm(&m, 5, 0, 5) == 0 && cost_gemm(&m, 5, 5, 0) == 0);
    ck_assert(cost_trsm(&m, 0, 5) == 0 && cost_trsm(&m, 5, 0) == 0);
    ck_assert(cost_potrf(&m, 0) == 0 && cost_getrf(&m, 0) == 0 && cost_sytrf(&m, 0) == 0 && cost_scatter(&m, 0) == 0);
    /* nondecreasing in every size, never faster than the peak */
    static const double sz[] = {1, 2, 3, 7, 16, 31, 64, 100, 192, 256, 500, 1000, 4096};
    int ns = (int)(sizeof sz / sizeof sz[0]);
    for (int a = 0; a < ns; a++)
        for (int b = 0; b < ns; b++)
            for (int c = 0; c + 1 < ns; c++) {
                ck_assert(cost_gemm(&m, sz[c], sz[a], sz[b]) < cost_gemm(&m, sz[c + 1], sz[a], sz[b]));
                ck_assert(cost_gemm(&m, sz[a], sz[c], sz[b]) < cost_gemm(&m, sz[a], sz[c + 1], sz[b]));
                ck_assert(cost_gemm(&m, sz[a], sz[b], sz[c]) < cost_gemm(&m, sz[a], sz[b], sz[c + 1]));
                double f = 2 * sz[a] * sz[b] * sz[c];
                ck_assert(f / (cost_gemm(&m, sz[a], sz[b], sz[c]) - m.latency) <= m.peak[COST_GEMM] * (1 + 1e-12));
            }
    for (int a = 0; a < ns; a++)
        for (int c = 0; c + 1 < ns; c++) {
            ck_assert(cost_trsm(&m, sz[c], sz[a]) < cost_trsm(&m, sz[c + 1], sz[a]));
            ck_assert(cost_trsm(&m, sz[a], sz[c]) < cost_trsm(&m, sz[a], sz[c + 1]));
        }
    for (int c = 0; c + 1 < ns; c++) {
        ck_assert(cost_potrf(&m, sz[c]) < cost_potrf(&m, sz[c + 1]));
        ck_assert(cost_getrf(&m, sz[c]) < cost_getrf(&m, sz[c + 1]));
        ck_assert(cost_sytrf(&m, sz[c]) < cost_sytrf(&m, sz[c + 1]));
        ck_assert(cost_scatter(&m, sz[c]) < cost_scatter(&m, sz[c + 1]));
        /* the rate rises with the size: the same flops in bigger calls are cheaper */
        ck_assert(cost_gemm(&m, 64, 64, sz[c + 1]) / sz[c + 1] <= cost_gemm(&m, 64, 64, sz[c]) / sz[c]);
    }
    sched_cost_model l;
    canopy_err err = {0};
    ck_assert_int_eq(cost_model_load(&l, "fixed", &numeric_cost_kernels, &err), CANOPY_SUCCESS);
    ck_assert(same_values(&l, &m));
    ck_assert_int_eq(cost_model_load(NULL, "fixed", &numeric_cost_kernels, &err), CANOPY_ERR_ARGUMENT);
}
END_TEST

START_TEST(write_read_round_trip)
{
    char dir[512], path[700];
    temp_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/sub/dir/model.txt", dir); /* directories are created */
    sched_cost_model m, r;
    cost_model_fixed(&m);
    /* values that %.6g would not round-trip */
    for (int k = 0; k < COST_NKERNELS; k++) {
        m.peak[k] = (1.0 + k) / 3.0 * 1e10 + 1.0 / 7.0;
        m.d_half[k] = k == COST_SCATTER ? 0 : M_PI * (k + 1) + 1e-9;
    }
    m.latency = 1.0 / 3.0 * 1e-7;
    m.calibrated = 1;
    cost_model_stamp(&m); /* made on this machine */
    m.gemm_gflops = 1.0 / 3.0 * 100;
    canopy_err err = {0};
    ck_assert_msg(cost_model_write(&m, path, &err) == CANOPY_SUCCESS, "%s", err.msg);
    memset(&r, 0, sizeof r);
    ck_assert_msg(cost_model_read(&r, path, &err) == CANOPY_SUCCESS, "%s", err.msg);
    ck_assert(same_values(&m, &r));
    ck_assert_str_eq(r.source, path);
    ck_assert_str_eq(r.key_cpu, m.key_cpu);
    ck_assert_str_eq(r.key_blas, m.key_blas);
    ck_assert_int_eq(r.key_threads, m.key_threads);
    ck_assert(r.gemm_gflops == m.gemm_gflops);
    /* no temporary file left next to it */
    char tmp[800];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    ck_assert_int_ne(access(tmp, F_OK), 0);
    /* load reads the cache as it is (no calibration) when the quick GEMM agrees with it */
    sched_cost_model l;
    inject_rate(cost_model_check_rate(&m));
    ck_assert_int_eq(cost_model_load(&l, path, &numeric_cost_kernels, &err), CANOPY_SUCCESS);
    inject_rate(0);
    ck_assert(same_values(&m, &l));
    ck_assert_str_eq(l.source, path);
    ck_assert_str_eq(l.note, "");
    /* comments, blank lines, any key order are accepted */
    FILE *f = fopen(path, "a");
    fputs("\n# trailing comment\n   \n", f);
    fclose(f);
    ck_assert_int_eq(cost_model_read(&r, path, &err), CANOPY_SUCCESS);
    ck_assert(same_values(&m, &r));
    remove(path);
    rm_tree(dir);
}
END_TEST

START_TEST(damaged_caches_are_refused)
{
    char dir[512], path[700];
    temp_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/model.txt", dir);
    sched_cost_model good;
    cost_model_fixed(&good);
    canopy_err err = {0};
    ck_assert_int_eq(cost_model_write(&good, path, &err), CANOPY_SUCCESS);
    FILE *f = fopen(path, "r");
    char full[4096];
    size_t len = fread(full, 1, sizeof full - 1, f);
    fclose(f);
    full[len] = '\0';
    char text[4200];
    sched_cost_model m0;
    const char *bad[] = {
        "",                                         /* empty: incomplete */
        "hello world\n",                            /* unknown key */
        "format 1\n",                               /* incomplete */
        "@@@\n",                                    /* unknown key, no value */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_text(path, bad[i]);
        sched_cost_model m = good;
        m.latency = 42;
        canopy_err_clear(&err);
        ck_assert_int_eq(cost_model_read(&m, path, &err), CANOPY_ERR_FORMAT);
        ck_assert(m.latency == 42); /* untouched on failure */
    }
    /* one good file with one line damaged in different ways */
    const char *subst[][2] = {
        {"\npeak_gemm ", "\npeak_gemm inf\npeak_gemm_x "}, {"\npeak_trsm ", "\npeak_trsm nan\n#"},
        {"\nlatency ", "\nlatency -1\n#"}, {"\npeak_potrf ", "\npeak_potrf 0\n#"},
        {"\nd_half_gemm ", "\nd_half_gemm 1e999\n#"}, {"\nformat 3", "\nformat 1"},
        {"\nkey_threads ", "\nkey_threads 1.5\n#"}, {"\nkey_threads ", "\nkey_threads -1\n#"},
        {"\ngemm_gflops ", "\ngemm_gflops -1\n#"}, {"\nkey_cpu ", "\nkey_cpu \n#"}, {"\nkey_blas ", "\n#key_blas "},
        {"\nload_threads ", "\nload_threads 1.5\n#"}, {"\nload_gemm ", "\nload_gemm 0.5\n#"},
        {"\nload_scatter ", "\nload_scatter 99\n#"}, {"\nload_threads ", "\nload_threads 0\n#"},
        {"\npeak_getrf ", "\npeak_getrf 3.5x\n#"}, {"\nd_half_sytrf ", "\nd_half_sytrf -2\n#"},
        {"\npeak_scatter ", "\npeak_scatter\n#"}, {"\npeak_sytrf ", "\npeak_sytrf 1 2\n#"},
        {"\nd_half_potrf ", "\nd_half_potrf_extra 1\n#"},
    };
    for (size_t i = 0; i < sizeof subst / sizeof subst[0]; i++) {
        const char *at = strstr(full, subst[i][0]);
        ck_assert_ptr_nonnull(at);
        snprintf(text, sizeof text, "%.*s%s%s", (int)(at - full), full, subst[i][1], at + strlen(subst[i][0]));
        write_text(path, text);
        sched_cost_model m = good;
        canopy_err_clear(&err);
        ck_assert_msg(cost_model_read(&m, path, &err) == CANOPY_ERR_FORMAT, "case %zu accepted:\n%s", i, text);
        ck_assert(same_values(&m, &good));
    }
    /* a cache of format 2 (keyed by host only, before this machine's key was stored) is refused */
    const char *at = strstr(full, "\nformat 3");
    ck_assert_ptr_nonnull(at);
    snprintf(text, sizeof text, "%.*s\nformat 2%s", (int)(at - full), full, at + strlen("\nformat 3"));
    write_text(path, text);
    canopy_err_clear(&err);
    ck_assert_int_eq(cost_model_read(&m0, path, &err), CANOPY_ERR_FORMAT);
    ck_assert_msg(strstr(err.msg, "format 2, expected 3") != NULL, "%s", err.msg);
    /* missing file, bad arguments */
    canopy_err_clear(&err);
    snprintf(text, sizeof text, "%s/absent.txt", dir);
    sched_cost_model m;
    ck_assert_int_eq(cost_model_read(&m, text, &err), CANOPY_ERR_IO);
    ck_assert_int_eq(cost_model_read(&m, NULL, NULL), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(cost_model_write(&m, "", NULL), CANOPY_ERR_ARGUMENT);
    remove(path);
    rm_tree(dir);
}
END_TEST

/* One calibration serves several checks (each takes a few tenths of a second). */
START_TEST(garbled_cache_is_recalibrated_and_rewritten)
{
    char dir[512], path[700];
    temp_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/model.txt", dir);
    write_text(path, "peak_gemm nan\nthis is not a cost model\n");
    sched_cost_model m, r;
    canopy_err err = {0};
    ck_assert_int_eq(cost_model_load(&m, path, &numeric_cost_kernels, &err), CANOPY_SUCCESS);
    ck_assert_int_eq(err.status, CANOPY_SUCCESS);
    assert_sane(&m);
    ck_assert_int_eq(m.calibrated, 1);
    ck_assert_str_eq(m.source, "calibrated");
    /* the loaded slowdowns: measured on every usable core (one core: none) */
    ck_assert(m.load_threads >= 1 && m.load_gemm >= 1 && m.load_gemm <= 16 && m.load_scatter >= 1 &&
              m.load_scatter <= 16);
    printf("under load (%d threads): gemm x%.2f, scatter x%.2f\n", m.load_threads, m.load_gemm, m.load_scatter);
    /* the cache now holds exactly what was measured */
    ck_assert_int_eq(cost_model_read(&r, path, &err), CANOPY_SUCCESS);
    ck_assert(same_values(&m, &r));
    printf("calibrated: latency %.3g s; peak/d_half gemm %.3g/%.3g trsm %.3g/%.3g potrf %.3g/%.3g getrf %.3g/%.3g "
           "sytrf %.3g/%.3g scatter %.3g entries/s\n",
           m.latency, m.peak[0], m.d_half[0], m.peak[1], m.d_half[1], m.peak[2], m.d_half[2], m.peak[3],
           m.d_half[3], m.peak[4], m.d_half[4], m.peak[5]);
    remove(path);
    rm_tree(dir);
}
END_TEST

START_TEST(unwritable_cache_keeps_model_in_memory)
{
    char dir[512], path[700], blocker[700];
    temp_dir(dir, sizeof dir);
    /* the cache's directory would have to be created inside a regular file: impossible, even as root */
    snprintf(blocker, sizeof blocker, "%s/file", dir);
    write_text(blocker, "x\n");
    snprintf(path, sizeof path, "%s/file/model.txt", dir);
    sched_cost_model m;
    canopy_err err = {0};
    ck_assert_int_ne(cost_model_write(&m, path, &err), CANOPY_SUCCESS);
    canopy_err_clear(&err);
    ck_assert_int_eq(cost_model_load(&m, path, &numeric_cost_kernels, &err), CANOPY_SUCCESS);
    ck_assert_int_eq(err.status, CANOPY_SUCCESS);
    assert_sane(&m);
    ck_assert_int_eq(m.calibrated, 1);
    remove(blocker);
    rm_tree(dir);
}
END_TEST

START_TEST(default_path_and_calibration)
{
    char dir[512], want[800], got[1200];
    temp_dir(dir, sizeof dir);
    char *old_xdg = getenv("XDG_CACHE_HOME") ? strdup(getenv("XDG_CACHE_HOME")) : NULL;
    char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    setenv("XDG_CACHE_HOME", dir, 1);
    ck_assert_int_eq(cost_model_default_path(got, sizeof got), 0);
    snprintf(want, sizeof want, "%s/canopy/cost-model-", dir);
    ck_assert_msg(strncmp(got, want, strlen(want)) == 0, "%s", got);
    ck_assert(strstr(got, ".txt") != NULL);
    for (const char *p = got + strlen(want); *p; p++) ck_assert(*p != '/');
    ck_assert_int_eq(cost_model_default_path(got, 8), -1); /* too small a buffer */
    /* first load calibrates and writes the cache, the second reads it */
    sched_cost_model a, b;
    canopy_err err = {0};
    ck_assert_int_eq(cost_model_load(&a, "", &numeric_cost_kernels, &err), CANOPY_SUCCESS);
    assert_sane(&a);
    ck_assert_int_eq(a.calibrated, 1);
    ck_assert_int_eq(cost_model_default_path(got, sizeof got), 0);
    ck_assert_int_eq(access(got, R_OK), 0);
    inject_rate(cost_model_check_rate(&a)); /* the quick GEMM agrees */
    ck_assert_int_eq(cost_model_load(&b, "", &numeric_cost_kernels, &err), CANOPY_SUCCESS);
    inject_rate(0);
    ck_assert(same_values(&a, &b));
    ck_assert_str_eq(b.source, got);
    remove(got);
    /* a relative XDG_CACHE_HOME is ignored (XDG spec): HOME/.cache */
    setenv("XDG_CACHE_HOME", "relative/dir", 1);
    setenv("HOME", dir, 1);
    ck_assert_int_eq(cost_model_default_path(got, sizeof got), 0);
    snprintf(want, sizeof want, "%s/.cache/canopy/cost-model-", dir);
    ck_assert_msg(strncmp(got, want, strlen(want)) == 0, "%s", got);
    /* neither: no cache, "none" calibrates without a file */
    unsetenv("XDG_CACHE_HOME");
    unsetenv("HOME");
    ck_assert_int_eq(cost_model_default_path(got, sizeof got), -1);
    ck_assert_int_eq(cost_model_load(&a, "none", &numeric_cost_kernels, &err), CANOPY_SUCCESS);
    assert_sane(&a);
    ck_assert_int_eq(a.calibrated, 1);
    /* direct calibration */
    ck_assert_int_eq(cost_model_calibrate(&b, &numeric_cost_kernels, &err), CANOPY_SUCCESS);
    assert_sane(&b);
    ck_assert_int_eq(cost_model_calibrate(NULL, &numeric_cost_kernels, &err), CANOPY_ERR_ARGUMENT);
    if (old_xdg) setenv("XDG_CACHE_HOME", old_xdg, 1);
    if (old_home) setenv("HOME", old_home, 1);
    free(old_xdg);
    free(old_home);
    rm_tree(dir);
}
END_TEST

START_TEST(calibration_survives_allocation_failure)
{
    /* a failed calibration inside load falls back to the fixed model, with no error */
    sched_cost_model m;
    canopy_err err = {0};
    size_t before = canopy_mem_current();
    canopy_alloc_fail_after(0);
    ck_assert_int_eq(cost_model_load(&m, "none", &numeric_cost_kernels, &err), CANOPY_SUCCESS);
    canopy_alloc_fail_after(-1);
    ck_assert_int_eq(m.calibrated, 0);
    ck_assert_str_eq(m.source, "fixed");
    canopy_alloc_fail_after(3);
    ck_assert_int_eq(cost_model_calibrate(&m, &numeric_cost_kernels, &err), CANOPY_ERR_NOMEM);
    canopy_alloc_fail_after(-1);
    ck_assert_uint_eq(canopy_mem_current(), before);
}
END_TEST


/* ---- the machine's key and the quick check ------------------------------------------------ */

/* A cache written for this machine but for @p edit (applied to a copy of a model stamped here)
 * is recalibrated and rewritten with this machine's key; the note names the difference. */
static void check_stale_key(const char *dir, const char *label, void (*edit)(sched_cost_model *), const char *in_note)
{
    char path[700];
    snprintf(path, sizeof path, "%s/%s.txt", dir, label);
    sched_cost_model m, l, r, here;
    cost_model_fixed(&m);
    m.calibrated = 1;
    cost_model_stamp(&m);
    here = m;
    edit(&m);
    canopy_err err = {0};
    ck_assert_int_eq(cost_model_write(&m, path, &err), CANOPY_SUCCESS);
    /* the quick GEMM would agree: only the key decides */
    inject_rate(cost_model_check_rate(&m));
    ck_assert_int_eq(cost_model_load(&l, path, &numeric_cost_kernels, &err), CANOPY_SUCCESS);
    inject_rate(0);
    ck_assert_int_eq(err.status, CANOPY_SUCCESS);
    ck_assert_msg(!strcmp(l.source, "calibrated"), "%s: cache of another machine used (%s)", label, l.source);
    ck_assert_msg(strstr(l.note, in_note) != NULL && strstr(l.note, "recalibrated") != NULL, "%s: note '%s'", label, l.note);
    assert_sane(&l);
    /* rewritten: this machine's key and the new values */
    ck_assert_int_eq(cost_model_read(&r, path, &err), CANOPY_SUCCESS);
    ck_assert_str_eq(r.key_cpu, here.key_cpu);
    ck_assert_str_eq(r.key_blas, here.key_blas);
    ck_assert_int_eq(r.key_threads, here.key_threads);
    ck_assert(same_values(&l, &r));
    ck_assert(r.peak[COST_GEMM] != m.peak[COST_GEMM]);
    remove(path);
}

static void other_blas(sched_cost_model *m) { snprintf(m->key_blas, sizeof m->key_blas, "OpenBLAS 0.3.21 Prescott-of-yore"); }
static void other_cpu(sched_cost_model *m) { snprintf(m->key_cpu, sizeof m->key_cpu, "GenuineIntel 6 207 Xeon-of-yore"); }
static void other_threads(sched_cost_model *m) { m->key_threads += 7; }

START_TEST(cache_of_another_machine_is_remade)
{
    char dir[512];
    temp_dir(dir, sizeof dir);
    check_stale_key(dir, "blas", other_blas, "Prescott-of-yore");
    check_stale_key(dir, "cpu", other_cpu, "Xeon-of-yore");
    check_stale_key(dir, "threads", other_threads, "cores");
    rm_tree(dir);
}
END_TEST

/* Same key, but the quick GEMM runs at a third (or three times) of what the cache predicts: the
 * BLAS changed under the same name (or the cache was made on a busy machine): recalibrated and
 * rewritten; within 30% it is used as it is. The measured rates are injected. */
START_TEST(cache_off_by_3x_is_remade)
{
    char dir[512], path[700];
    temp_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/model.txt", dir);
    sched_cost_model m, l, r;
    cost_model_fixed(&m);
    m.calibrated = 1;
    cost_model_stamp(&m);
    canopy_err err = {0};
    double predicted = cost_model_check_rate(&m);
    ck_assert(predicted > 0 && isfinite(predicted));
    const double factors[] = {1.25, 0.8, 1.0 / 3, 3};
    for (size_t i = 0; i < sizeof factors / sizeof *factors; i++) {
        ck_assert_int_eq(cost_model_write(&m, path, &err), CANOPY_SUCCESS);
        inject_rate(predicted * factors[i]);
        ck_assert_int_eq(cost_model_load(&l, path, &numeric_cost_kernels, &err), CANOPY_SUCCESS);
        inject_rate(0);
        ck_assert_int_eq(cost_model_read(&r, path, &err), CANOPY_SUCCESS);
        ck_assert(fabs(l.gemm_gflops - predicted * factors[i]) <= 1e-12 * predicted);
        if (factors[i] > 0.77 && factors[i] < 1.3) {
            ck_assert_str_eq(l.source, path); /* used, file untouched */
            ck_assert(same_values(&l, &m) && same_values(&r, &m));
            ck_assert_str_eq(l.note, "");
        } else {
            ck_assert_msg(!strcmp(l.source, "calibrated"), "rate x%g: cache used", factors[i]);
            ck_assert_msg(strstr(l.note, "cache predicts DGEMM at") != NULL, "%s", l.note);
            ck_assert(same_values(&l, &r) && !same_values(&r, &m));
            ck_assert_str_eq(r.key_blas, m.key_blas);
            /* the calibration's own rate is the injected one, and so in the file */
            ck_assert(fabs(r.gemm_gflops - predicted * factors[i]) <= 1e-12 * predicted);
        }
    }
    remove(path);
    rm_tree(dir);
}
END_TEST

/* ---- the BLAS check ---------------------------------------------------------------------- */

/* The machine of the report: Intel model 207 (AVX-512), Debian's OpenBLAS 0.3.21 which does not
 * know it and runs its Prescott kernels. */
static const char *const cpuinfo_207 =
    "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 207\n"
    "model name\t: INTEL(R) XEON(R) PLATINUM 8592+\nstepping\t: 2\ncpu MHz\t\t: 1900.000\n"
    "flags\t\t: fpu vme sse sse2 ssse3 fma sse4_1 sse4_2 avx f16c avx2 avx512f avx512dq avx512cd avx512bw avx512vl amx_tile\n"
    "\nprocessor\t: 1\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\nflags\t\t: sse2\n";

static void openblas(blascheck_machine *mc, const char *core)
{
    snprintf(mc->library, sizeof mc->library, "OpenBLAS");
    snprintf(mc->version, sizeof mc->version, "0.3.21");
    snprintf(mc->core, sizeof mc->core, "%s", core);
    mc->dynamic_arch = 1;
    mc->coretype_env[0] = '\0';
}

START_TEST(blas_verdict)
{
    char dir[512], path[700], msg[400], key[200];
    temp_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/cpuinfo", dir);
    write_text(path, cpuinfo_207);
    blascheck_machine mc;
    memset(&mc, 0, sizeof mc);
    ck_assert_int_eq(blascheck_read_cpuinfo(path, &mc), 0);
    ck_assert_str_eq(mc.vendor, "GenuineIntel");
    ck_assert_int_eq(mc.family, 6);
    ck_assert_int_eq(mc.model, 207); /* the first processor's, not the second's */
    ck_assert_int_eq(mc.isa, BLASCHECK_ISA_AVX512);
    ck_assert(fabs(mc.ghz - 1.9) < 1e-12);
    blascheck_cpu_key(&mc, key, sizeof key);
    ck_assert_str_eq(key, "GenuineIntel 6 207 INTEL(R) XEON(R) PLATINUM 8592+");
    double expected = blascheck_expected_gflops(&mc);
    ck_assert(fabs(expected - 32 * 1.9) < 1e-9); /* 2 AVX-512 FMA units at the base clock */

    /* Prescott kernels: 16 GFlop/s measured (the report's figure), and unmeasured (cost-cache=fixed) */
    openblas(&mc, "Prescott");
    blascheck_blas_key(&mc, key, sizeof key);
    ck_assert_str_eq(key, "OpenBLAS 0.3.21 Prescott");
    ck_assert_int_eq(blascheck_verdict(&mc, 16, msg, sizeof msg), 1);
    printf("warning: %s\n", msg);
    ck_assert_msg(strstr(msg, "OpenBLAS 0.3.21 runs its Prescott kernels (SSE2) on this AVX-512 CPU") && strstr(msg, "16.0 GFlop/s") &&
                  strstr(msg, "set OPENBLAS_CORETYPE=SkylakeX (or Haswell)") && strstr(msg, "about 4x or more"), "%s", msg);
    ck_assert_int_eq(blascheck_verdict(&mc, 0, msg, sizeof msg), 1);
    ck_assert_msg(strstr(msg, "OPENBLAS_CORETYPE=SkylakeX") && !strstr(msg, "GFlop/s"), "%s", msg);
    ck_assert_int_eq(blascheck_verdict(&mc, 16, NULL, 0), 1);
    /* asked for by the user; a build without DYNAMIC_ARCH cannot be told */
    snprintf(mc.coretype_env, sizeof mc.coretype_env, "Prescott");
    ck_assert_int_eq(blascheck_verdict(&mc, 16, msg, sizeof msg), 1);
    ck_assert_msg(strstr(msg, "OPENBLAS_CORETYPE=Prescott asks for them"), "%s", msg);
    openblas(&mc, "Nehalem");
    mc.dynamic_arch = 0;
    ck_assert_int_eq(blascheck_verdict(&mc, 20, msg, sizeof msg), 1);
    ck_assert_msg(strstr(msg, "built for Nehalem alone") && strstr(msg, "DYNAMIC_ARCH=1"), "%s", msg);
    /* kernels for the CPU: no warning, unless far too slow (then the core, not the BLAS, is at fault) */
    openblas(&mc, "SkylakeX");
    ck_assert_int_eq(blascheck_verdict(&mc, 86, msg, sizeof msg), 0);
    ck_assert_str_eq(msg, "");
    ck_assert_int_eq(blascheck_verdict(&mc, 0.31 * expected, msg, sizeof msg), 0);
    ck_assert_int_eq(blascheck_verdict(&mc, 3, msg, sizeof msg), 1);
    ck_assert_msg(strstr(msg, "(SkylakeX kernels) is slow") && strstr(msg, "3.0 GFlop/s") && strstr(msg, "more threads"), "%s", msg);
    openblas(&mc, "sapphirerapids"); /* any case */
    ck_assert_int_eq(blascheck_verdict(&mc, 0, msg, sizeof msg), 0);
    /* AVX2 kernels on AVX-512: only when slow (under 30% of the estimate) */
    openblas(&mc, "Haswell");
    ck_assert_int_eq(blascheck_verdict(&mc, 50, msg, sizeof msg), 0);
    ck_assert_int_eq(blascheck_verdict(&mc, 0, msg, sizeof msg), 0);
    ck_assert_int_eq(blascheck_verdict(&mc, 0.25 * expected, msg, sizeof msg), 1);
    ck_assert_msg(strstr(msg, "Haswell kernels (AVX2)") && strstr(msg, "SkylakeX"), "%s", msg);
    /* a library that does not say what it runs: its rate alone */
    memset(mc.library, 0, sizeof mc.library);
    memset(mc.core, 0, sizeof mc.core);
    snprintf(mc.file, sizeof mc.file, "/usr/lib/x86_64-linux-gnu/blas/libblas.so.3");
    blascheck_blas_key(&mc, key, sizeof key);
    ck_assert_str_eq(key, "unknown /usr/lib/x86_64-linux-gnu/blas/libblas.so.3");
    ck_assert_int_eq(blascheck_verdict(&mc, 2.5, msg, sizeof msg), 1);
    ck_assert_msg(strstr(msg, "libblas.so.3) is slow") && strstr(msg, "link an optimized BLAS") && strstr(msg, "2.5 GFlop/s"), "%s", msg);
    ck_assert_int_eq(blascheck_verdict(&mc, 0.31 * expected, msg, sizeof msg), 0);
    ck_assert_int_eq(blascheck_verdict(&mc, 0, msg, sizeof msg), 0); /* nothing measured: nothing known */
    /* no clock known: no estimate, so only the kernels' names can tell */
    mc.ghz = 0;
    ck_assert(blascheck_expected_gflops(&mc) == 0);
    ck_assert_int_eq(blascheck_verdict(&mc, 0.5, msg, sizeof msg), 0);
    openblas(&mc, "Prescott");
    ck_assert_int_eq(blascheck_verdict(&mc, 0.5, msg, sizeof msg), 1);

    /* an AVX2 AMD CPU: Zen kernels are right, Prescott ones are not and the fix names Zen */
    write_text(path, "vendor_id : AuthenticAMD\ncpu family : 25\nmodel : 33\nmodel name : AMD Ryzen 9 5950X 16-Core Processor\n"
                     "cpu MHz : 3400.000\nflags : sse sse2 avx fma avx2\n");
    ck_assert_int_eq(blascheck_read_cpuinfo(path, &mc), 0);
    ck_assert_int_eq(mc.isa, BLASCHECK_ISA_AVX2);
    ck_assert(fabs(blascheck_expected_gflops(&mc) - 16 * 3.4) < 1e-9);
    openblas(&mc, "Zen");
    ck_assert_int_eq(blascheck_verdict(&mc, 40, msg, sizeof msg), 0);
    ck_assert_int_eq(blascheck_verdict(&mc, 0, msg, sizeof msg), 0);
    openblas(&mc, "Prescott");
    ck_assert_int_eq(blascheck_verdict(&mc, 10, msg, sizeof msg), 1);
    ck_assert_msg(strstr(msg, "OPENBLAS_CORETYPE=Zen") && strstr(msg, "AVX2 CPU"), "%s", msg);
    /* the nominal clock in the name wins over "cpu MHz" (today's frequency); an AVX CPU */
    write_text(path, "vendor_id : GenuineIntel\ncpu family : 6\nmodel : 45\nmodel name : Intel(R) Xeon(R) CPU E5-2670 0 @ 2.60GHz\n"
                     "cpu MHz : 1200.000\nflags : sse2 avx\n");
    ck_assert_int_eq(blascheck_read_cpuinfo(path, &mc), 0);
    ck_assert_int_eq(mc.isa, BLASCHECK_ISA_AVX);
    ck_assert(fabs(mc.ghz - 2.6) < 1e-12);
    openblas(&mc, "Sandybridge");
    ck_assert_int_eq(blascheck_verdict(&mc, 15, msg, sizeof msg), 0);
    openblas(&mc, "Core2");
    ck_assert_int_eq(blascheck_verdict(&mc, 8, msg, sizeof msg), 1);
    ck_assert_msg(strstr(msg, "OPENBLAS_CORETYPE=Sandybridge"), "%s", msg);
    /* a CPU without the flags we know (another architecture): no verdict from names */
    write_text(path, "processor : 0\nCPU implementer : 0x41\nCPU part : 0xd0c\n");
    ck_assert_int_eq(blascheck_read_cpuinfo(path, &mc), 0);
    ck_assert_int_eq(mc.isa, BLASCHECK_ISA_UNKNOWN);
    ck_assert_int_eq(mc.model, 0xd0c);
    blascheck_cpu_key(&mc, key, sizeof key);
    ck_assert_str_eq(key, "implementer-0x41 -1 3340");
    openblas(&mc, "neoversen1");
    ck_assert_int_eq(blascheck_verdict(&mc, 1, msg, sizeof msg), 0); /* nor from rates: no clock, no estimate */
    /* no file: everything unknown */
    snprintf(path, sizeof path, "%s/absent", dir);
    ck_assert_int_eq(blascheck_read_cpuinfo(path, &mc), -1);
    ck_assert_int_eq(mc.isa, BLASCHECK_ISA_UNKNOWN);
    ck_assert_int_eq(mc.family, -1);
    /* the kernels' instruction sets */
    ck_assert_int_eq(blascheck_core_isa("Prescott"), BLASCHECK_ISA_SSE2);
    ck_assert_int_eq(blascheck_core_isa("COOPERLAKE"), BLASCHECK_ISA_AVX512);
    ck_assert_int_eq(blascheck_core_isa("Zen"), BLASCHECK_ISA_AVX2);
    ck_assert_int_eq(blascheck_core_isa("Piledriver"), BLASCHECK_ISA_AVX);
    ck_assert_int_eq(blascheck_core_isa("armv8"), BLASCHECK_ISA_UNKNOWN);
    ck_assert_int_eq(blascheck_core_isa(NULL), BLASCHECK_ISA_UNKNOWN);
    rm_tree(dir);
}
END_TEST

/* The warning is printed once per process, whatever the message: later calls say nothing. */
START_TEST(blas_warning_once)
{
    char dir[512], path[700];
    temp_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/stderr", dir);
    fflush(stderr);
    int saved = dup(2);
    ck_assert(saved >= 0);
    ck_assert_ptr_nonnull(freopen(path, "w", stderr));
    int first = blascheck_warn_once("first slow BLAS");
    int second = blascheck_warn_once("second slow BLAS");
    int empty = blascheck_warn_once("");
    fflush(stderr);
    ck_assert(dup2(saved, 2) == 2);
    close(saved);
    ck_assert_int_eq(second, 0);
    ck_assert_int_eq(empty, 0);
    FILE *f = fopen(path, "r");
    char text[512] = "";
    size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[len] = '\0';
    /* the first call prints unless a load earlier in this process did already */
    if (first) ck_assert_str_eq(text, "canopy: warning: first slow BLAS\n");
    else ck_assert_str_eq(text, "");
    remove(path);
    rm_tree(dir);
}
END_TEST

/* cost_model_load judges this machine's BLAS with the measured rate (injected: a slow one) and
 * hands the verdict to the statistics; cost-cache=fixed judges by the kernels alone. */
START_TEST(load_judges_the_blas)
{
    blascheck_machine mc;
    blascheck_identify(&mc);
    char want[400];
    sched_cost_model m;
    canopy_err err = {0};
    ck_assert_int_eq(cost_model_load(&m, "fixed", &numeric_cost_kernels, &err), CANOPY_SUCCESS);
    blascheck_verdict(&mc, 0, want, sizeof want);
    ck_assert_str_eq(m.blas_warning, want);
    ck_assert(m.gemm_gflops == 0);
    ck_assert(m.gemm_expected == blascheck_expected_gflops(&mc));
    printf("this machine: %s; %s; expected %.1f GFlop/s; %s\n", m.key_cpu, m.key_blas, m.gemm_expected,
           m.blas_warning[0] ? m.blas_warning : "no warning");
    /* a slow measured rate: a tenth of what the vector units give (or 1 GFlop/s when unknown) */
    double slow = m.gemm_expected > 0 ? m.gemm_expected / 10 : 1;
    inject_rate(slow);
    ck_assert_int_eq(cost_model_load(&m, "none", &numeric_cost_kernels, &err), CANOPY_SUCCESS);
    inject_rate(0);
    ck_assert(m.gemm_gflops == slow);
    blascheck_verdict(&mc, slow, want, sizeof want);
    ck_assert_str_eq(m.blas_warning, want);
    canopy_stats st;
    memset(&st, 0, sizeof st);
    cost_model_report(&m, &st);
    ck_assert(st.blas_gflops == slow && st.blas_gflops_expected == m.gemm_expected);
    ck_assert_int_eq(st.blas_warning, want[0] != '\0');
    ck_assert_str_eq(st.blas_message, want);
    ck_assert_str_eq(st.blas_name, m.key_blas);
    ck_assert(strlen(st.blas_name) > 0);
    cost_model_report(NULL, &st);
    cost_model_report(&m, NULL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cost");
    TCase *tc = tcase_create("cost");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, under_load);
    tcase_add_test(tc, fixed_is_sane_and_monotone);
    tcase_add_test(tc, write_read_round_trip);
    tcase_add_test(tc, damaged_caches_are_refused);
    tcase_add_test(tc, garbled_cache_is_recalibrated_and_rewritten);
    tcase_add_test(tc, unwritable_cache_keeps_model_in_memory);
    tcase_add_test(tc, default_path_and_calibration);
    tcase_add_test(tc, calibration_survives_allocation_failure);
    tcase_add_test(tc, cache_of_another_machine_is_remade);
    tcase_add_test(tc, cache_off_by_3x_is_remade);
    tcase_add_test(tc, blas_verdict);
    tcase_add_test(tc, blas_warning_once);
    tcase_add_test(tc, load_judges_the_blas);
    suite_add_tcase(s, tc);
    return testutil_run(s);
}
