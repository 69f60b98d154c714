/*
 * Error records, checked and accounted allocation, timers (see common.h).
 * Allocation carries a 16-byte header with the block size so that current and peak memory can be
 * reported per process without asking the allocator; counters are atomic because worker threads
 * allocate their own column blocks.
 */
#include "base/common.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

canopy_status canopy_err_set(canopy_err *err, canopy_status status, const char *fmt, ...)
{
    if (err == NULL || err->status != CANOPY_SUCCESS) return err ? err->status : status;
    err->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return status;
}

void canopy_err_clear(canopy_err *err)
{
    if (err == NULL) return;
    err->status = CANOPY_SUCCESS;
    err->msg[0] = '\0';
}

#define HEADER 16
static atomic_size_t mem_current;
static atomic_size_t mem_peak;
static atomic_long fail_countdown = -1;

void canopy_alloc_fail_after(long count) { atomic_store(&fail_countdown, count); }
long canopy_alloc_fail_pending(void) { return atomic_load(&fail_countdown); }
size_t canopy_mem_current(void) { return atomic_load(&mem_current); }
size_t canopy_mem_peak(void) { return atomic_load(&mem_peak); }
void canopy_mem_reset_peak(void) { atomic_store(&mem_peak, atomic_load(&mem_current)); }

void canopy_mem_raise_peak(size_t bytes)
{
    size_t peak = atomic_load(&mem_peak);
    while (bytes > peak && !atomic_compare_exchange_weak(&mem_peak, &peak, bytes)) {
    }
}

static _Atomic(const char *) fail_name;
static atomic_long fail_name_skip;

void canopy_alloc_fail_named(const char *what, long skip)
{
    atomic_store(&fail_name_skip, skip);
    atomic_store(&fail_name, what);
}

bool canopy_alloc_fail_named_pending(void) { return atomic_load(&fail_name) != NULL; }

/* the named failure: one atomic load when none is planned */
static bool injected_named(const char *what)
{
    const char *name = atomic_load_explicit(&fail_name, memory_order_relaxed);
    if (name == NULL || what == NULL || strcmp(name, what) != 0) return false;
    if (atomic_fetch_sub(&fail_name_skip, 1) != 0) return false;
    atomic_store(&fail_name, NULL);
    return true;
}

static bool injected_failure(void)
{
    long c = atomic_load(&fail_countdown);
    while (c >= 0) {
        if (atomic_compare_exchange_weak(&fail_countdown, &c, c - 1)) return c == 0;
    }
    return false;
}

static void account(size_t add, size_t sub)
{
    size_t now = atomic_fetch_add(&mem_current, add) + add;
    atomic_fetch_sub(&mem_current, sub);
    now -= sub;
    size_t peak = atomic_load(&mem_peak);
    while (now > peak && !atomic_compare_exchange_weak(&mem_peak, &peak, now)) {
    }
}

static void *raw_alloc(size_t n, size_t sz, bool zero, const char *what, canopy_err *err)
{
    size_t bytes;
    if (!canopy_mul_ok(n, sz, &bytes) || bytes > SIZE_MAX - HEADER) {
        canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "problem too large: %s needs %zu x %zu bytes", what, n, sz);
        return NULL;
    }
    unsigned char *p = NULL;
    if (!injected_failure() && !injected_named(what)) p = zero ? calloc(1, bytes + HEADER) : malloc(bytes + HEADER);
    if (p == NULL) {
        canopy_err_set(err, CANOPY_ERR_NOMEM, "out of memory allocating %s (%zu bytes)", what, bytes);
        return NULL;
    }
    memcpy(p, &bytes, sizeof bytes);
    account(bytes, 0);
    return p + HEADER;
}

void *canopy_alloc(size_t n, size_t sz, const char *what, canopy_err *err)
{
    return raw_alloc(n, sz, false, what, err);
}

void *canopy_calloc(size_t n, size_t sz, const char *what, canopy_err *err)
{
    return raw_alloc(n, sz, true, what, err);
}

void *canopy_realloc(void *p, size_t n, size_t sz, const char *what, canopy_err *err)
{
    if (p == NULL) return canopy_alloc(n, sz, what, err);
    size_t bytes, old;
    if (!canopy_mul_ok(n, sz, &bytes) || bytes > SIZE_MAX - HEADER) {
        canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "problem too large: %s needs %zu x %zu bytes", what, n, sz);
        return NULL;
    }
    unsigned char *base = (unsigned char *)p - HEADER;
    memcpy(&old, base, sizeof old);
    unsigned char *q = NULL;
    if (!injected_failure() && !injected_named(what)) q = realloc(base, bytes + HEADER);
    if (q == NULL) {
        canopy_err_set(err, CANOPY_ERR_NOMEM, "out of memory growing %s to %zu bytes", what, bytes);
        return NULL;
    }
    memcpy(q, &bytes, sizeof bytes);
    account(bytes, old);
    return q + HEADER;
}

void *canopy_shrink(void *p, size_t n, size_t sz)
{
    size_t bytes, old;
    if (p == NULL || !canopy_mul_ok(n, sz, &bytes) || bytes > SIZE_MAX - HEADER) return p;
    unsigned char *base = (unsigned char *)p - HEADER;
    memcpy(&old, base, sizeof old);
    if (bytes >= old) return p;
    unsigned char *q = realloc(base, bytes + HEADER);
    if (q == NULL) return p;
    memcpy(q, &bytes, sizeof bytes);
    account(0, old - bytes);
    return q + HEADER;
}

bool canopy_mem_add(int64_t delta)
{
    if (delta > 0) {
        if (injected_failure()) return false;
        account((size_t)delta, 0);
    } else if (delta < 0) {
        atomic_fetch_sub(&mem_current, (size_t)(-(delta + 1)) + 1); /* -(INT64_MIN) would overflow */
    }
    return true;
}

void canopy_free(void *p)
{
    if (p == NULL) return;
    unsigned char *base = (unsigned char *)p - HEADER;
    size_t bytes;
    memcpy(&bytes, base, sizeof bytes);
    atomic_fetch_sub(&mem_current, bytes);
    free(base);
}

double canopy_wtime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
