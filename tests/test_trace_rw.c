/*
 * Trace files (sched/trace.h): what the writer writes the reader reads back, phases append, bad
 * events and bad files are refused with a message, and every allocation failure is survived
 * without a leak. The canopy-trace tool itself is tested by tests/test_trace.sh.
 */
#include "testutil.h"
#include "sched/trace.h"

#include <unistd.h>

#define RW_PATH "test_trace_rw.tmp"

/* 5 tasks on 3 threads, threads 0-1 on node 0 and thread 2 on node 1. */
static int k_kind[5] = {SCHED_TASK_PANEL, SCHED_TASK_UPDATE, SCHED_TASK_SUBTREE, SCHED_TASK_FORWARD,
                        SCHED_TASK_BACKWARD};
static int k_cblk[5] = {10, 11, 12, 13, 14};
static int k_level[5] = {0, 1, 2, 1, 0};
static double k_cost[5] = {0.1, 0.125, 0.375, 0.0625, 0.25};
static const int k_core[3] = {4, 5, 6};
static const int k_node[3] = {0, 0, 1};

static sched_dag small_dag(void)
{
    sched_dag d = {0};
    d.nthreads = 3;
    d.ntasks = 5;
    d.kind = k_kind;
    d.cblk = k_cblk;
    d.level = k_level;
    d.cost = k_cost;
    d.predicted_time = 0.5;
    return d;
}

/* In completion order, not in file order: the writer sorts. */
static void small_events(sched_event ev[5])
{
    ev[0] = (sched_event){.task = 3, .thread = 2, .victim = 0, .start = 0.2, .end = 0.3};
    ev[1] = (sched_event){.task = 0, .thread = 0, .victim = -1, .start = 0.0, .end = 0.1};
    ev[2] = (sched_event){.task = 1, .thread = 0, .victim = 1, .start = 0.1, .end = 0.25};
    ev[3] = (sched_event){.task = 2, .thread = 1, .victim = -1, .start = 0.0, .end = 0.4};
    ev[4] = (sched_event){.task = 4, .thread = 2, .victim = -1, .start = 0.0, .end = 0.15};
}

static void write_text(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    ck_assert_ptr_nonnull(fp);
    fputs(text, fp);
    ck_assert_int_eq(fclose(fp), 0);
}

START_TEST(write_then_read)
{
    sched_dag d = small_dag();
    sched_event ev[5];
    small_events(ev);
    canopy_err err = {0};
    /* a wall smaller than the last end (another clock reading) is raised to it */
    ck_assert_int_eq(sched_trace_write(RW_PATH, 0, "factorize", "dynamic", &d, ev, 3, k_core, k_node, 0.35, &err),
                     CANOPY_SUCCESS);
    sched_event ev2[5];
    small_events(ev2);
    ev2[1].task = -1; /* a task that did not run is left out */
    d.predicted_time = 0;
    ck_assert_int_eq(sched_trace_write(RW_PATH, 1, "solve", "static", &d, ev2, 3, NULL, NULL, 1.5, &err),
                     CANOPY_SUCCESS);
    sched_trace_file *f = NULL;
    ck_assert_int_eq(sched_trace_read(RW_PATH, &f, &err), CANOPY_SUCCESS);
    ck_assert_int_eq(f->version, SCHED_TRACE_VERSION);
    ck_assert_int_eq(f->nphases, 2);

    const sched_trace_phase *p = &f->phases[0];
    ck_assert_str_eq(p->name, "factorize");
    ck_assert_str_eq(p->scheduler, "dynamic");
    ck_assert_int_eq(p->nthreads, 3);
    ck_assert_int_eq(p->ntasks, 5);
    ck_assert_double_eq_tol(p->wall, 0.4, 1e-12);
    ck_assert_double_eq_tol(p->predicted, 0.5, 1e-12);
    ck_assert_int_eq(p->max_level, 2);
    for (int t = 0; t < 3; t++) {
        ck_assert_int_eq(p->core_os[t], k_core[t]);
        ck_assert_int_eq(p->node[t], k_node[t]);
    }
    /* sorted by thread, then start */
    static const int order[5] = {0, 1, 2, 4, 3};
    static const int ptr[4] = {0, 2, 3, 5};
    for (int t = 0; t <= 3; t++) ck_assert_int_eq(p->thread_ptr[t], ptr[t]);
    for (int k = 0; k < 5; k++) {
        const sched_trace_task *x = &p->tasks[k];
        int id = order[k];
        ck_assert_int_eq(x->id, id);
        const sched_event *e = NULL;
        for (int i = 0; i < 5; i++)
            if (ev[i].task == id) e = &ev[i];
        ck_assert_ptr_nonnull(e);
        ck_assert_int_eq(x->thread, e->thread);
        ck_assert_int_eq(x->victim, e->victim);
        ck_assert_int_eq(x->kind, k_kind[id]);
        ck_assert_int_eq(x->cblk, k_cblk[id]);
        ck_assert_int_eq(x->level, k_level[id]);
        ck_assert_double_eq_tol(x->start, e->start, 1e-9);
        ck_assert_double_eq_tol(x->end, e->end, 1e-9);
        ck_assert_double_eq_tol(x->cost, k_cost[id], 1e-9);
    }
    sched_trace_stats st[3], tot;
    sched_trace_phase_stats(p, st, &tot);
    ck_assert_double_eq_tol(st[0].busy, 0.25, 1e-9);
    ck_assert_double_eq_tol(st[0].idle, 0.15, 1e-9);
    ck_assert_int_eq(st[0].steals, 1);
    ck_assert_int_eq(st[0].cross_node, 0);   /* victim 1 shares node 0 */
    ck_assert_int_eq(st[2].steals, 1);
    ck_assert_int_eq(st[2].cross_node, 1);   /* victim 0 is on node 0, thief on node 1 */
    ck_assert_int_eq(tot.tasks, 5);
    ck_assert_int_eq(tot.steals, 2);
    ck_assert_double_eq_tol(tot.busy, 0.9, 1e-9);
    ck_assert_double_eq_tol(tot.cost, 0.9125, 1e-9);

    p = &f->phases[1];
    ck_assert_str_eq(p->name, "solve");
    ck_assert_int_eq(p->ntasks, 4);
    ck_assert_double_eq_tol(p->wall, 1.5, 1e-12);
    ck_assert_double_eq(p->predicted, 0);
    ck_assert_int_eq(p->core_os[1], -1);
    ck_assert_int_eq(p->node[2], 0);
    sched_trace_phase_stats(p, NULL, &tot);
    ck_assert_int_eq(tot.cross_node, 0);     /* all on node 0 without a node table */
    sched_trace_file_free(f);
    unlink(RW_PATH);
}
END_TEST

START_TEST(writer_refuses_bad_events)
{
    sched_dag d = small_dag();
    sched_event ev[5];
    canopy_err err;
    struct {
        int i;
        sched_event e;
        const char *why;
    } bad[] = {
        {0, {.task = 0, .thread = 2, .victim = -1, .start = 0.2, .end = 0.3}, "recorded twice"},
        {0, {.task = 3, .thread = 2, .victim = -1, .start = 0.1, .end = 0.3}, "overlap"},
        {0, {.task = 3, .thread = 2, .victim = 2, .start = 0.2, .end = 0.3}, "victim"},
        {0, {.task = 3, .thread = 3, .victim = -1, .start = 0.2, .end = 0.3}, "thread out of range"},
        {0, {.task = 7, .thread = 2, .victim = -1, .start = 0.2, .end = 0.3}, "task number"},
        {0, {.task = 3, .thread = 2, .victim = -1, .start = 0.3, .end = 0.2}, "bad times"},
        {0, {.task = 3, .thread = 2, .victim = -1, .start = -0.1, .end = 0.2}, "bad times"},
        {0, {.task = 3, .thread = 2, .victim = -1, .start = 0.2, .end = NAN}, "bad times"},
    };
    unlink(RW_PATH);
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
        small_events(ev);
        ev[bad[b].i] = bad[b].e;
        canopy_err_clear(&err);
        ck_assert_int_eq(sched_trace_write(RW_PATH, 0, "f", "s", &d, ev, 3, NULL, NULL, 1, &err), CANOPY_ERR_ARGUMENT);
        ck_assert_msg(strstr(err.msg, bad[b].why) != NULL, "case %zu: %s", b, err.msg);
        ck_assert_int_ne(access(RW_PATH, F_OK), 0); /* nothing written */
    }
    small_events(ev);
    canopy_err_clear(&err);
    ck_assert_int_eq(sched_trace_write(RW_PATH, 0, "two words", "s", &d, ev, 3, NULL, NULL, 1, &err),
                     CANOPY_ERR_ARGUMENT);
    canopy_err_clear(&err);
    ck_assert_int_eq(sched_trace_write(RW_PATH, 0, "f", "", &d, ev, 3, NULL, NULL, 1, &err), CANOPY_ERR_ARGUMENT);
    canopy_err_clear(&err);
    ck_assert_int_eq(sched_trace_write(RW_PATH, 0, "f", "s", &d, ev, 0, NULL, NULL, 1, &err), CANOPY_ERR_ARGUMENT);
    canopy_err_clear(&err);
    ck_assert_int_eq(sched_trace_write(RW_PATH, 0, "f", "s", &d, ev, 3, NULL, NULL, INFINITY, &err),
                     CANOPY_ERR_ARGUMENT);
    k_kind[2] = 9;
    canopy_err_clear(&err);
    ck_assert_int_eq(sched_trace_write(RW_PATH, 0, "f", "s", &d, ev, 3, NULL, NULL, 1, &err), CANOPY_ERR_ARGUMENT);
    k_kind[2] = SCHED_TASK_SUBTREE;
    ck_assert_int_ne(access(RW_PATH, F_OK), 0);

    /* appending to something that is not a trace would make it unreadable */
    write_text(RW_PATH, "%%MatrixMarket matrix coordinate real general\n");
    canopy_err_clear(&err);
    ck_assert_int_eq(sched_trace_write(RW_PATH, 1, "f", "s", &d, ev, 3, NULL, NULL, 1, &err), CANOPY_ERR_FORMAT);
    write_text(RW_PATH, "# comment\n\ncanopy-trace 1\n");
    canopy_err_clear(&err);
    ck_assert_int_eq(sched_trace_write(RW_PATH, 1, "f", "s", &d, ev, 3, NULL, NULL, 1, &err), CANOPY_SUCCESS);
    unlink(RW_PATH);
    canopy_err_clear(&err);
    ck_assert_int_eq(sched_trace_write("no-such-dir/x/trace.txt", 0, "f", "s", &d, ev, 3, NULL, NULL, 1, &err),
                     CANOPY_ERR_IO);
    if (access("/dev/full", W_OK) == 0) {
        canopy_err_clear(&err);
        ck_assert_int_eq(sched_trace_write("/dev/full", 0, "f", "s", &d, ev, 3, NULL, NULL, 1, &err), CANOPY_ERR_IO);
    }
}
END_TEST

START_TEST(reader_messages)
{
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"", "empty file"},
        {"# only a comment\n", "empty file"},
        {"canopy-trace 2\n", ":1: trace format version 2 is not supported"},
        {"canopy-trace 1\n", ":1: no phase"},
        {"canopy-trace 1\nphase f threads 1 tasks 0 scheduler s wall 1\n", ":2: phase line: 'predicted' missing"},
        {"canopy-trace 1\nphase f threads 1 tasks 1 scheduler s wall 1 predicted 0\nthread 0 core 0 node 0\n",
         ":3: end of file: phase 'f' (line 2) declares 1 tasks, found 0"},
        {"canopy-trace 1\nphase f threads 1 tasks 1 scheduler s wall 1 predicted 0\nthread 0 core 0 node 0\n"
         "task 0 0.5 0.25 0 panel 0 0 -1 0\n", ":4: task ends"},
        {"canopy-trace 1\nphase f threads 2 tasks 2 scheduler s wall 1 predicted 0\nthread 0 core 0 node 0\n"
         "thread 1 core 0 node 0\n\ttask 0 0 0.5 3 panel 0 0 -1 0\n# x\ntask 1 0 0.5 3 panel 0 0 -1 0\n",
         ":7: task id 3 already used on line 5"},
        {"canopy-trace 1\nphase f threads 1 tasks 0 scheduler s wall 1 predicted 0\nthread 0 core 0 node 0 extra\n",
         ":3: thread line: unexpected 'extra'"},
        {"canopy-trace 1\nphase f threads 1 tasks 0 scheduler s wall nan predicted 0\n", ":2: wall nan"},
        {"canopy-trace 1\nphase f threads 1 tasks 0 scheduler s wall 1 predicted 0\nthread 0 core 0 node 0\nx\n",
         ":4: expected a 'phase' line, found 'x'"},
    };
    canopy_err err;
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
        write_text(RW_PATH, bad[b].text);
        sched_trace_file *f = (sched_trace_file *)&err; /* must be reset to NULL */
        canopy_err_clear(&err);
        ck_assert_int_eq(sched_trace_read(RW_PATH, &f, &err), CANOPY_ERR_FORMAT);
        ck_assert_ptr_null(f);
        ck_assert_msg(strncmp(err.msg, RW_PATH, strlen(RW_PATH)) == 0 && strstr(err.msg, bad[b].want) != NULL,
                      "case %zu: %s", b, err.msg);
    }
    unlink(RW_PATH);
    canopy_err_clear(&err);
    sched_trace_file *f = NULL;
    ck_assert_int_eq(sched_trace_read("no-such-trace.txt", &f, &err), CANOPY_ERR_IO);
    ck_assert_ptr_null(f);
}
END_TEST

/* Every allocation of the writer and of the reader fails once in turn: no crash, no leak. */
START_TEST(allocation_failures)
{
    sched_dag d = small_dag();
    sched_event ev[5];
    small_events(ev);
    size_t base = canopy_mem_current();
    canopy_status st = CANOPY_ERR_NOMEM;
    canopy_err err;
    for (long k = 0; st != CANOPY_SUCCESS && k < 100; k++) {
        canopy_err_clear(&err);
        canopy_alloc_fail_after(k);
        st = sched_trace_write(RW_PATH, 0, "f", "s", &d, ev, 3, NULL, NULL, 1, &err);
        canopy_alloc_fail_after(-1);
        ck_assert(st == CANOPY_SUCCESS || st == CANOPY_ERR_NOMEM);
        ck_assert_uint_eq(canopy_mem_current(), base);
    }
    ck_assert_int_eq(st, CANOPY_SUCCESS);
    st = CANOPY_ERR_NOMEM;
    long k = 0;
    for (; st != CANOPY_SUCCESS && k < 100; k++) {
        sched_trace_file *f = NULL;
        canopy_err_clear(&err);
        canopy_alloc_fail_after(k);
        st = sched_trace_read(RW_PATH, &f, &err);
        canopy_alloc_fail_after(-1);
        ck_assert_msg(st == CANOPY_SUCCESS || st == CANOPY_ERR_NOMEM, "%d %s", st, err.msg);
        sched_trace_file_free(f);
        ck_assert_uint_eq(canopy_mem_current(), base);
    }
    ck_assert_int_eq(st, CANOPY_SUCCESS);
    ck_assert_int_gt(k, 3);
    unlink(RW_PATH);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("trace");
    TCase *tc = tcase_create("trace");
    tcase_add_test(tc, write_then_read);
    tcase_add_test(tc, writer_refuses_bad_events);
    tcase_add_test(tc, reader_messages);
    tcase_add_test(tc, allocation_failures);
    suite_add_tcase(s, tc);
    return testutil_run(s);
}
