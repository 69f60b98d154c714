/*
 * Execution traces of the threaded scheduler: the file format, its writer (called by the phase
 * driver after a traced run) and its reader (used by the canopy-trace tool and the tests).
 * This file owns the format only; drawing charts and summaries for people is the tool's job
 * (examples/canopy-trace.c), and recording the events is the engine's (sched/engine.h).
 *
 * FORMAT, version 1 ("canopy-trace 1"): line-oriented text, fields separated by blanks (spaces or
 * tabs), one record per line. Blank lines and lines whose first non-blank character is '#' are
 * comments and may appear anywhere. Times are seconds (decimal, '.' as the decimal point), finite,
 * 0 <= t <= SCHED_TRACE_MAX_SECONDS (so that sums and microsecond conversions stay finite).
 *
 *   canopy-trace 1                                      first non-comment line, exactly once
 *   phase NAME threads T tasks N scheduler S wall W predicted P
 *   thread t core C node D                              T lines, t = 0, 1, ..., T-1 in order
 *   task THREAD START END ID KIND CBLK LEVEL VICTIM COST  N lines
 *   phase ...                                           further phases follow the same way
 *
 * phase:  NAME and S are tokens of 1..63 printable non-blank ASCII characters (the factorization is
 *         "factorize", the solves "forward"/"backward"/"solve"..., S is "static" or "dynamic" for the
 *         engine, but any token is accepted); 1 <= T <= SCHED_TRACE_MAX_THREADS; N >= 0 task lines
 *         follow the thread lines; W is the measured wall time of the phase (every task ends at or
 *         before W); P the makespan predicted by the simulation (0 when not simulated).
 * thread: C is the OS index of the worker's core (-1 when unbound), D its NUMA node (>= 0).
 * task:   THREAD in [0, T) ran the task from START to END (0 <= START <= END <= W, seconds since the
 *         phase started); ID >= 0 is the task number in the graph, unique within the phase; KIND is
 *         panel, update, subtree, forward or backward (enum sched_task_kind); CBLK >= -1; LEVEL >= 0
 *         is the depth of the task's Snode (0 = root); VICTIM is the thread whose queue the task was
 *         stolen from, or -1 when the thread took it from its own queues (a steal is "cross-node"
 *         when the victim's node differs from the thief's); COST >= 0 the predicted seconds.
 *         Task lines are sorted by THREAD, then START, and tasks of one thread do not overlap
 *         (START >= END of the previous task of that thread).
 *
 * A reader rejects anything else (unknown record, missing or extra field, count mismatch, value out
 * of range, unsorted tasks, another version) with "file:line: reason". The reader also takes
 * gzip-compressed traces. Versions: a reader of version v reads files of version v only; a change
 * in any record's fields bumps the version.
 */
#ifndef CANOPY_SCHED_TRACE_H
#define CANOPY_SCHED_TRACE_H

#include "base/common.h"
#include "dag.h"
#include "engine.h"

#define SCHED_TRACE_VERSION 1
/** Most threads a trace may declare: a garbage count must not make the reader allocate gigabytes. */
#define SCHED_TRACE_MAX_THREADS 65536
/** Longest phase or scheduler name, without its terminating NUL. */
#define SCHED_TRACE_NAME_MAX 63
/** Largest time, duration or cost a trace may hold: about 31 years. */
#define SCHED_TRACE_MAX_SECONDS 1e9

/**
 * Write one phase of a traced run to @p path.
 * @param[in] path       file to write
 * @param[in] append     0: create or truncate the file and write the header; 1: add the phase at the
 *                       end (the header is written if the file is missing or empty; a nonempty file
 *                       that does not start with the header is refused, CANOPY_ERR_FORMAT)
 * @param[in] phase      phase name, @p scheduler scheduler name: tokens as in the format above
 * @param[in] dag        the graph that ran (kind, cblk, level, cost and predicted_time come from it;
 *                       cost may be NULL; costs and the prediction outside [0, SCHED_TRACE_MAX_SECONDS]
 *                       are written as 0, they are estimates)
 * @param[in] events     dag->ntasks records as sched_execute fills them, in any order; a record with
 *                       task < 0 stands for a task that did not run and is skipped
 * @param[in] nthreads   worker threads of the run (>= 1)
 * @param[in] thread_core_os  [nthreads] OS core index of each worker, or NULL (written as -1)
 * @param[in] thread_node     [nthreads] NUMA node of each worker, or NULL (written as 0)
 * @param[in] wall       measured seconds of the phase; raised to the last task's end if smaller
 * @return CANOPY_SUCCESS; CANOPY_ERR_ARGUMENT for inconsistent records (thread or victim out of
 *         range, task recorded twice, overlapping tasks on one thread, negative or non-finite time);
 *         CANOPY_ERR_IO when the file cannot be written; CANOPY_ERR_NOMEM.
 */
canopy_status sched_trace_write(const char *path, int append, const char *phase, const char *scheduler,
                                const sched_dag *dag, const sched_event *events, int nthreads,
                                const int *thread_core_os, const int *thread_node, double wall,
                                canopy_err *err);

/** One task line. */
typedef struct sched_trace_task {
    int thread;
    int id;
    int kind;       /**< enum sched_task_kind */
    int cblk;
    int level;
    int victim;     /**< -1: not stolen */
    double start, end, cost;
} sched_trace_task;

/** One phase. */
typedef struct sched_trace_phase {
    char name[SCHED_TRACE_NAME_MAX + 1];
    char scheduler[SCHED_TRACE_NAME_MAX + 1];
    int nthreads;
    int ntasks;
    double wall;
    double predicted;
    int *core_os;             /**< [nthreads] */
    int *node;                /**< [nthreads] */
    sched_trace_task *tasks;  /**< [ntasks] sorted by thread, then start */
    int *thread_ptr;          /**< [nthreads + 1]: thread t ran tasks[thread_ptr[t] .. thread_ptr[t+1]) */
    int max_level;            /**< largest LEVEL of the phase (-1 without tasks) */
} sched_trace_phase;

typedef struct sched_trace_file {
    int version;
    int nphases;
    sched_trace_phase *phases;
} sched_trace_file;

/**
 * Read a trace file (plain or gzip).
 * @param[out] out  the file's phases, to release with sched_trace_file_free
 * @return CANOPY_SUCCESS; CANOPY_ERR_IO (cannot open or read); CANOPY_ERR_FORMAT with
 *         "path:line: reason" for any departure from the format; CANOPY_ERR_NOMEM.
 */
canopy_status sched_trace_read(const char *path, sched_trace_file **out, canopy_err *err);

/** Release what sched_trace_read returned. NULL is allowed. */
void sched_trace_file_free(sched_trace_file *f);

/** Name of a task kind in the format ("panel", ...), NULL for a value outside the enum. */
const char *sched_trace_kind_name(int kind);

/** What one thread (or all of them) did during a phase. */
typedef struct sched_trace_stats {
    double busy;             /**< seconds inside tasks */
    double idle;             /**< wall - busy (summed over threads for the total) */
    double cost;             /**< predicted seconds of the tasks it ran */
    int64_t tasks;
    int64_t steals;          /**< tasks taken from another thread's queue */
    int64_t cross_node;      /**< steals whose victim sits on another NUMA node */
} sched_trace_stats;

/**
 * Per-thread and total statistics of a phase read by sched_trace_read.
 * @param[out] per_thread [p->nthreads] entries, or NULL
 * @param[out] total      sums over the threads, or NULL
 */
void sched_trace_phase_stats(const sched_trace_phase *p, sched_trace_stats *per_thread, sched_trace_stats *total);

#endif
