/* Errors, checked allocation (overflow, injected failures, accounting) and option parsing. */
#include "testutil.h"
#include "api/options.h"

START_TEST(alloc_overflow_and_injection)
{
    canopy_err err = {0};
    size_t before = canopy_mem_current();
    void *p = canopy_alloc(SIZE_MAX / 2, 4, "huge", &err);
    ck_assert_ptr_null(p);
    ck_assert_int_eq(err.status, CANOPY_ERR_TOO_LARGE);
    ck_assert(strstr(err.msg, "huge") != NULL);
    canopy_err_clear(&err);
    canopy_alloc_fail_after(1);
    void *a = canopy_alloc(10, 8, "first", &err);
    void *b = canopy_alloc(10, 8, "second", &err);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_null(b);
    ck_assert_int_eq(err.status, CANOPY_ERR_NOMEM);
    void *c = canopy_alloc(10, 8, "third", NULL); /* injection is one-shot */
    ck_assert_ptr_nonnull(c);
    ck_assert_uint_eq(canopy_mem_current(), before + 160);
    c = canopy_realloc(c, 100, 8, "grown", &err);
    ck_assert_uint_eq(canopy_mem_current(), before + 880);
    canopy_free(a);
    canopy_free(c);
    ck_assert_uint_eq(canopy_mem_current(), before);
    ck_assert_uint_ge(canopy_mem_peak(), before + 880);
}
END_TEST

/* canopy_shrink: gives bytes back, keeps the contents, never fails, draws no injected failure. */
START_TEST(shrink_keeps_and_gives_back)
{
    canopy_err err = {0};
    size_t before = canopy_mem_current();
    int *p = canopy_alloc(1000, sizeof(int), "to shrink", &err);
    ck_assert_ptr_nonnull(p);
    for (int i = 0; i < 1000; i++) p[i] = 3 * i;
    ck_assert_uint_eq(canopy_mem_current(), before + 1000 * sizeof(int));
    canopy_alloc_fail_after(0); /* the next allocation would fail: a shrink is none */
    p = canopy_shrink(p, 10, sizeof(int));
    ck_assert_int_eq(canopy_alloc_fail_pending(), 0);
    canopy_alloc_fail_after(-1);
    ck_assert_ptr_nonnull(p);
    for (int i = 0; i < 10; i++) ck_assert_int_eq(p[i], 3 * i);
    ck_assert_uint_eq(canopy_mem_current(), before + 10 * sizeof(int));
    ck_assert_ptr_eq(canopy_shrink(p, 20, sizeof(int)), p); /* larger: unchanged */
    ck_assert_ptr_eq(canopy_shrink(p, SIZE_MAX, 4), p);     /* overflow: unchanged */
    ck_assert_ptr_null(canopy_shrink(NULL, 1, 4));
    canopy_free(p);
    ck_assert_uint_eq(canopy_mem_current(), before);
}
END_TEST

START_TEST(first_error_wins)
{
    canopy_err err = {0};
    ck_assert_int_eq(canopy_err_set(&err, CANOPY_ERR_MATRIX, "column %d", 3), CANOPY_ERR_MATRIX);
    ck_assert_int_eq(canopy_err_set(&err, CANOPY_ERR_NOMEM, "later"), CANOPY_ERR_MATRIX);
    ck_assert_str_eq(err.msg, "column 3");
}
END_TEST

START_TEST(options_by_name)
{
    canopy_options o;
    canopy_options_default(&o);
    char msg[256];
    ck_assert_int_eq(canopy_options_set(&o, "threads", "8", msg, sizeof msg), CANOPY_SUCCESS);
    ck_assert_int_eq(o.threads, 8);
    ck_assert_int_eq(canopy_options_set(&o, "comm_threads", "2", msg, sizeof msg), CANOPY_SUCCESS);
    ck_assert_int_eq(canopy_options_set(&o, "ordering-threads", "3", msg, sizeof msg), CANOPY_SUCCESS);
    ck_assert_int_eq(o.ordering_threads, 3);
    ck_assert_int_eq(canopy_options_set(&o, "ordering_threads", "-1", msg, sizeof msg), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(o.ordering_threads, 3);
    ck_assert_int_eq(o.comm_threads, 2);
    ck_assert_int_eq(canopy_options_set(&o, "bind", "0,2,4-7", msg, sizeof msg), CANOPY_SUCCESS);
    ck_assert_int_eq(o.bind, CANOPY_BIND_LIST);
    ck_assert_str_eq(o.bind_list, "0,2,4-7");
    ck_assert_int_eq(canopy_options_set(&o, "bind", "7-4", msg, sizeof msg), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(canopy_options_set(&o, "factorization", "LDLT", msg, sizeof msg), CANOPY_SUCCESS);
    ck_assert_int_eq(o.factorization, CANOPY_FACT_LDLT);
    ck_assert_int_eq(canopy_options_set(&o, "numa", "remote", msg, sizeof msg), CANOPY_ERR_ARGUMENT);
    ck_assert(strstr(msg, "local") != NULL);
    ck_assert_int_eq(canopy_options_set(&o, "pivot-threshold", "0", msg, sizeof msg), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(canopy_options_set(&o, "no-such-option", "1", msg, sizeof msg), CANOPY_ERR_ARGUMENT);
    ck_assert(strstr(msg, "no-such-option") != NULL);
    canopy_err err = {0};
    ck_assert_int_eq(options_validate(&o, &err), CANOPY_SUCCESS);
    o.comm_threads = 5;
    ck_assert_int_eq(options_validate(&o, &err), CANOPY_ERR_ARGUMENT);
    /* update-buffer: auto (0), off (-1) or entries */
    o.comm_threads = 1;
    ck_assert_int_eq(canopy_options_set(&o, "update-buffer", "off", msg, sizeof msg), CANOPY_SUCCESS);
    ck_assert(o.update_buffer == -1);
    ck_assert_int_eq(canopy_options_set(&o, "update-buffer", "4096", msg, sizeof msg), CANOPY_SUCCESS);
    ck_assert(o.update_buffer == 4096);
    ck_assert_int_eq(options_validate(&o, &err), CANOPY_SUCCESS);
    ck_assert_int_eq(canopy_options_set(&o, "update-buffer", "auto", msg, sizeof msg), CANOPY_SUCCESS);
    ck_assert(o.update_buffer == 0);
    ck_assert_int_eq(canopy_options_set(&o, "update-buffer", "0", msg, sizeof msg), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(canopy_options_set(&o, "update-buffer", "-8", msg, sizeof msg), CANOPY_ERR_ARGUMENT);
    ck_assert(strstr(msg, "entries") != NULL);
    o.update_buffer = -3;
    ck_assert_int_eq(options_validate(&o, &err), CANOPY_ERR_ARGUMENT);
    o.update_buffer = 0.5; /* through the API: neither auto nor a whole number */
    ck_assert_int_eq(options_validate(&o, &err), CANOPY_ERR_ARGUMENT);
    o.update_buffer = 1000.5;
    ck_assert_int_eq(options_validate(&o, &err), CANOPY_ERR_ARGUMENT);
    o.update_buffer = 0;
    ck_assert_int_eq(canopy_options_set(&o, "top2d", "flat", msg, sizeof msg), CANOPY_SUCCESS);
    ck_assert_int_eq(o.top2d, 1);
    ck_assert_int_eq(canopy_options_set(&o, "top2d", "square", msg, sizeof msg), CANOPY_ERR_ARGUMENT);
    ck_assert(strstr(msg, "off, flat or auto") != NULL);
    o.top2d = 3; /* through the API */
    ck_assert_int_eq(options_validate(&o, &err), CANOPY_ERR_ARGUMENT);
    o.top2d = 0;
    ck_assert_int_eq(canopy_options_set(&o, "top2d-shadow", "off", msg, sizeof msg), CANOPY_SUCCESS);
    ck_assert_int_eq(o.top2d_shadow, 2);
    ck_assert_int_eq(canopy_options_set(&o, "top2d-shadow", "lean", msg, sizeof msg), CANOPY_SUCCESS);
    ck_assert_int_eq(o.top2d_shadow, 1);
    ck_assert_int_eq(canopy_options_set(&o, "top2d-shadow", "on", msg, sizeof msg), CANOPY_ERR_ARGUMENT);
    ck_assert(strstr(msg, "auto, lean or off") != NULL);
    o.top2d_shadow = 3; /* through the API */
    ck_assert_int_eq(options_validate(&o, &err), CANOPY_ERR_ARGUMENT);
    o.top2d_shadow = 0;
    /* every documented name parses with some value */
    for (int i = 0; options_names[i]; i++) {
        const char *v = !strcmp(options_names[i], "bind") ? "core" : !strcmp(options_names[i], "numa") ? "local"
                      : !strcmp(options_names[i], "scheduler") ? "static" : !strcmp(options_names[i], "tree") ? "flat"
                      : !strcmp(options_names[i], "factorization") ? "lu" : !strcmp(options_names[i], "ordering") ? "natural"
                      : !strcmp(options_names[i], "scaling") ? "none" : !strcmp(options_names[i], "trace") ? "t.json"
                      : !strcmp(options_names[i], "selinv-memory") ? "separate"
                      : !strcmp(options_names[i], "mapping") ? "memory" : !strcmp(options_names[i], "top2d") ? "flat"
                      : !strcmp(options_names[i], "root-grid") || !strcmp(options_names[i], "fanin-cuts")
                        ? "on" : !strcmp(options_names[i], "top2d-shadow") ? "lean"
                      : !strcmp(options_names[i], "pivot-threshold") || !strcmp(options_names[i], "refine-tolerance")
                        || !strcmp(options_names[i], "amalgamation-fill") ? "0.5" : "1";
        ck_assert_msg(canopy_options_set(&o, options_names[i], v, msg, sizeof msg) == CANOPY_SUCCESS, "%s: %s",
                      options_names[i], msg);
    }
}
END_TEST

START_TEST(environment_overlay)
{
    canopy_options o;
    canopy_options_default(&o);
    char msg[256];
    setenv("CANOPY_THREADS", "3", 1);
    setenv("CANOPY_COMM_THREADS", "0", 1);
    setenv("CANOPY_SCHEDULER", "dynamic", 1);
    ck_assert_int_eq(canopy_options_from_env(&o, msg, sizeof msg), CANOPY_SUCCESS);
    ck_assert_int_eq(o.threads, 3);
    ck_assert_int_eq(o.comm_threads, 0);
    ck_assert_int_eq(o.scheduler, CANOPY_SCHED_DYNAMIC);
    setenv("CANOPY_TREE", "oak", 1);
    ck_assert_int_eq(canopy_options_from_env(&o, msg, sizeof msg), CANOPY_ERR_ARGUMENT);
    ck_assert(strstr(msg, "CANOPY_TREE") != NULL);
    unsetenv("CANOPY_THREADS");
    unsetenv("CANOPY_COMM_THREADS");
    unsetenv("CANOPY_SCHEDULER");
    unsetenv("CANOPY_TREE");
}
END_TEST

START_TEST(status_texts)
{
    for (int c = CANOPY_ERR_INTERNAL; c <= CANOPY_WARN_NOT_CONVERGED; c++) {
        const char *t = canopy_strerror((canopy_status)c);
        ck_assert_ptr_nonnull(t);
        ck_assert_str_ne(t, "unknown status code");
    }
    ck_assert_str_eq(canopy_strerror((canopy_status)-99), "unknown status code");
    ck_assert_str_eq(canopy_factorization_name(CANOPY_FACT_LDLT), "ldlt");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("common");
    TCase *tc = tcase_create("common");
    tcase_add_test(tc, alloc_overflow_and_injection);
    tcase_add_test(tc, shrink_keeps_and_gives_back);
    tcase_add_test(tc, first_error_wins);
    tcase_add_test(tc, options_by_name);
    tcase_add_test(tc, environment_overlay);
    tcase_add_test(tc, status_texts);
    suite_add_tcase(s, tc);
    return testutil_run(s);
}
