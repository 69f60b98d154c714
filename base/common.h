/*
 * Shared internals: index type, error records, checked allocation, timers.
 * Every module reports failures through a canopy_err so the API can hand back one status and one
 * readable message. Nothing here calls MPI or pthreads.
 */
#ifndef CANOPY_COMMON_H
#define CANOPY_COMMON_H

#include "base/config.h"
#include <stddef.h>
#include <stdint.h>
#include <inttypes.h>
#include <stdbool.h>
#include "canopy.h"

typedef canopy_int cint;
#if CANOPY_INT64
#define CINT_MAX INT64_MAX
#define CINT_FMT PRId64
#else
#define CINT_MAX INT32_MAX
#define CINT_FMT PRId32
#endif

/** The status and message of the first failure met by a phase. */
typedef struct canopy_err {
    canopy_status status;
    char msg[512];
} canopy_err;

#if defined(__GNUC__)
#define CANOPY_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CANOPY_PRINTF(a, b)
#endif

/** Record an error (the first one wins) and return its status. A NULL @p err is allowed. */
canopy_status canopy_err_set(canopy_err *err, canopy_status status, const char *fmt, ...) CANOPY_PRINTF(3, 4);
void canopy_err_clear(canopy_err *err);

/**
 * Checked allocation of n elements of size sz: returns NULL and records CANOPY_ERR_TOO_LARGE when
 * n * sz overflows, CANOPY_ERR_NOMEM when malloc fails. @p what names the array in the message.
 */
void *canopy_alloc(size_t n, size_t sz, const char *what, canopy_err *err);
/** Same, zero-filled. */
void *canopy_calloc(size_t n, size_t sz, const char *what, canopy_err *err);
/** Checked realloc; on failure the old block is left alone and NULL returned. */
void *canopy_realloc(void *p, size_t n, size_t sz, const char *what, canopy_err *err);
/** Give back the end of @p p beyond @p n elements of size sz: the block (moved or not), or @p p
 * itself when the system keeps it. Never fails and takes no part in fault injection: a shrink
 * that cannot happen changes nothing. */
void *canopy_shrink(void *p, size_t n, size_t sz);

/**
 * Fault injection for tests: after @p count more successful allocations, the next one fails
 * (-1 disables). Not exported from the shared library; used by the unit tests on the static one.
 */
void canopy_alloc_fail_after(long count);
/** What is left of the countdown: >= 0 when the planned failure has not happened (yet), -1 after it. */
long canopy_alloc_fail_pending(void);
/**
 * Fault injection by name: the allocation labelled @p what (canopy_alloc's @p what, compared as a
 * string; a literal that outlives the test) after @p skip others of that label fails; NULL
 * disables. For one array allocated deep inside a run (a fan-in buffer), whatever the
 * allocations around it. canopy_alloc_fail_named_pending() says whether it has not happened yet.
 */
void canopy_alloc_fail_named(const char *what, long skip);
bool canopy_alloc_fail_named_pending(void);

/** Bytes currently allocated through canopy_alloc/calloc/realloc and the peak since reset. */
size_t canopy_mem_current(void);
size_t canopy_mem_peak(void);
void canopy_mem_reset_peak(void);
/** Raise the peak to @p bytes if it is lower (a phase's own peak measured after a reset put back). */
void canopy_mem_raise_peak(size_t bytes);
void canopy_free(void *p);
/**
 * Account @p delta bytes obtained (> 0) or given back (< 0) outside canopy_alloc, e.g. pages
 * mapped by numa_alloc_pages, in the same current/peak counters. A positive @p delta takes part
 * in fault injection (canopy_alloc_fail_after): false means "fail this allocation", and nothing
 * is accounted; otherwise true.
 */
bool canopy_mem_add(int64_t delta);

/** Wall-clock seconds (monotonic). */
double canopy_wtime(void);

/** a*b overflow-checked for sizes; returns false on overflow. */
static inline bool canopy_mul_ok(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a) return false;
    *out = a * b;
    return true;
}

#define CANOPY_MIN(a, b) ((a) < (b) ? (a) : (b))
#define CANOPY_MAX(a, b) ((a) > (b) ? (a) : (b))

#endif
