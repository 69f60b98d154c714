/*
 * Kernel cost model (sched/cost.c): the fixed model is sane and monotone, the cache file round-trips
 * exactly, damaged or missing caches are remade, an unwritable cache is no error, calibration gives
 * positive finite parameters. No assertion depends on timing.
 */
#include "testutil.h"
#include "sched/cost.h"
#include "numeric/numeric.h"

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
    canopy_err err = {0};
    ck_assert_msg(cost_model_write(&m, path, &err) == CANOPY_SUCCESS, "%s", err.msg);
    memset(&r, 0, sizeof r);
    ck_assert_msg(cost_model_read(&r, path, &err) == CANOPY_SUCCESS, "%s", err.msg);
    ck_assert(same_values(&m, &r));
    ck_assert_str_eq(r.source, path);
    /* no temporary file left next to it */
    char tmp[800];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    ck_assert_int_ne(access(tmp, F_OK), 0);
    /* load reads the cache as it is (no calibration) */
    sched_cost_model l;
    ck_assert_int_eq(cost_model_load(&l, path, &numeric_cost_kernels, &err), CANOPY_SUCCESS);
    ck_assert(same_values(&m, &l));
    ck_assert_str_eq(l.source, path);
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
        {"\nd_half_gemm ", "\nd_half_gemm 1e999\n#"}, {"\nformat 2", "\nformat 1"},
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
    ck_assert_int_eq(cost_model_load(&b, "", &numeric_cost_kernels, &err), CANOPY_SUCCESS);
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
    suite_add_tcase(s, tc);
    return testutil_run(s);
}
