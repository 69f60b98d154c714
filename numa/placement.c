/*
 * Memory placement (see placement.h): page-granular mappings left untouched so that the first
 * writer places them, interleaving over the usable nodes, and the report of where pages really
 * are. Owns no policy: the solver decides who touches what first.
 */
#include "placement.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <hwloc.h>
#include <numa.h>
#include <numaif.h>

static size_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

/* Whole pages holding @p bytes (at least one page, so that 0 bytes is a valid mapping too). */
static bool page_round(size_t bytes, size_t *len)
{
    size_t pg = page_size();
    if (bytes == 0) bytes = 1;
    if (bytes > SIZE_MAX - (pg - 1)) return false;
    *len = (bytes + pg - 1) / pg * pg;
    return *len <= (size_t)INT64_MAX;
}

/*
 * Large mappings start on a huge-page boundary and ask for transparent huge pages (the kernel's
 * "madvise" mode grants them only on request): the first factorization then takes one fault per
 * 2 MiB instead of 512, and the kernel zeroes whole huge pages. First touch still places them, at
 * huge-page granularity: a thread's subtrees are contiguous in the factor, so few pages are
 * shared. The kernel may refuse (THP "never", no huge page free): then these are ordinary pages.
 */
#define HUGE_PAGE ((size_t)2 << 20)

static void *map_pages(size_t len)
{
    int prot = PROT_READ | PROT_WRITE, flags = MAP_PRIVATE | MAP_ANONYMOUS;
#ifdef MADV_HUGEPAGE
    if (len >= 2 * HUGE_PAGE && len <= SIZE_MAX - HUGE_PAGE) {
        char *raw = mmap(NULL, len + HUGE_PAGE, prot, flags, -1, 0);
        if (raw == MAP_FAILED) return MAP_FAILED;
        size_t head = (HUGE_PAGE - (uintptr_t)raw % HUGE_PAGE) % HUGE_PAGE;
        if (head > 0) munmap(raw, head);
        if (HUGE_PAGE - head > 0) munmap(raw + head + len, HUGE_PAGE - head);
        (void)madvise(raw + head, len, MADV_HUGEPAGE); /* a request: refused is fine */
        return raw + head;
    }
#endif
    return mmap(NULL, len, prot, flags, -1, 0);
}

void *numa_alloc_pages(size_t bytes, const char *what, canopy_err *err)
{
    if (what == NULL) what = "pages";
    size_t len;
    if (!page_round(bytes, &len)) {
        canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "problem too large: %s needs %zu bytes", what, bytes);
        return NULL;
    }
    void *p = map_pages(len);
    if (p == MAP_FAILED) {
        int e = errno;
        canopy_err_set(err, CANOPY_ERR_NOMEM, "out of memory mapping %s (%zu bytes): %s", what, len, strerror(e));
        return NULL;
    }
    if (!canopy_mem_add((int64_t)len)) {
        munmap(p, len);
        canopy_err_set(err, CANOPY_ERR_NOMEM, "out of memory mapping %s (%zu bytes)", what, len);
        return NULL;
    }
    return p;
}

void numa_free_pages(void *p, size_t bytes)
{
    size_t len;
    if (p == NULL || !page_round(bytes, &len)) return;
    if (munmap(p, len) == 0) canopy_mem_add(-(int64_t)len);
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* older headers; an older kernel answers EINVAL */
#endif

void numa_populate(void *p, size_t bytes)
{
    if (p == NULL || bytes == 0) return;
    uintptr_t pg = page_size(), a = (uintptr_t)p / pg * pg, b = (uintptr_t)p + bytes;
    b = (b + pg - 1) / pg * pg;
    if (madvise((void *)a, b - a, MADV_POPULATE_WRITE) == 0) return;
    unsigned char *c = p; /* first byte of each page inside the range */
    for (size_t i = 0; i < bytes; i = (((uintptr_t)c + i) / pg + 1) * pg - (uintptr_t)c) c[i] = 0;
}

canopy_status numa_interleave(const numa_topo *t, void *p, size_t bytes, canopy_err *err)
{
    if (t == NULL) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "numa_interleave: NULL topology");
    if (bytes == 0) return CANOPY_SUCCESS;
    if (p == NULL) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "numa_interleave: NULL area of %zu bytes", bytes);
    if ((uintptr_t)p % page_size() != 0)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "numa_interleave: area %p is not page-aligned (allocate it with numa_alloc_pages)", p);
    int nn = numa_topo_nodes(t);
    if (numa_topo_dry_run(t) || nn <= 1) return CANOPY_SUCCESS;
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (set == NULL) return canopy_err_set(err, CANOPY_ERR_NOMEM, "hwloc: out of memory for a nodeset");
    for (int n = 0; n < nn; n++) hwloc_bitmap_set(set, (unsigned)numa_topo_node_os(t, n));
    canopy_status st = CANOPY_SUCCESS;
    if (hwloc_set_area_membind(numa_topo_hwloc(t), p, bytes, set, HWLOC_MEMBIND_INTERLEAVE, HWLOC_MEMBIND_BYNODESET) != 0) {
        int e = errno;
        char nodes[128];
        hwloc_bitmap_list_snprintf(nodes, sizeof nodes, set);
        st = canopy_err_set(err, CANOPY_ERR_UNSUPPORTED, "cannot interleave %zu bytes over NUMA nodes %s: %s", bytes, nodes, strerror(e));
    }
    hwloc_bitmap_free(set);
    return st;
}

/* Pages queried per move_pages call (the arrays live on the stack). */
#define LOCATE_CHUNK 256

canopy_status numa_locate(const numa_topo *t, const void *p, size_t bytes, size_t max_pages,
                          int64_t *bytes_per_node, int64_t *unknown, canopy_err *err)
{
    if (t == NULL || bytes_per_node == NULL || unknown == NULL)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "numa_locate: NULL argument");
    if (bytes > 0 && p == NULL) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "numa_locate: NULL area of %zu bytes", bytes);
    uintptr_t start = (uintptr_t)p, pg = page_size();
    if (bytes > (size_t)INT64_MAX || bytes > UINTPTR_MAX - start)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "numa_locate: area of %zu bytes at %p overflows the address space", bytes, p);
    int nn = numa_topo_nodes(t);
    for (int n = 0; n < nn; n++) bytes_per_node[n] = 0;
    *unknown = 0;
    if (bytes == 0) return CANOPY_SUCCESS;
    if (numa_topo_dry_run(t)) { /* another machine's topology: this one's pages say nothing */
        *unknown = (int64_t)bytes;
        return CANOPY_SUCCESS;
    }
    uintptr_t first = start / pg * pg;
    size_t npages = (size_t)((start + bytes - 1) / pg - first / pg) + 1;
    size_t nsample = max_pages == 0 || max_pages > npages ? npages : max_pages;
    if (nsample > UINT32_MAX) nsample = UINT32_MAX; /* keeps the scaling products below 2^64 */
    size_t *count = canopy_calloc((size_t)nn + 1, sizeof *count, "page location counts", err); /* [nn]: unknown */
    if (count == NULL) return err ? err->status : CANOPY_ERR_NOMEM;
    /* without NUMA support in the kernel (or with get_mempolicy forbidden) nothing can be known */
    int have_numa = numa_available() >= 0;
    size_t q = npages / nsample, r = npages % nsample;
    void *pages[LOCATE_CHUNK];
    int status[LOCATE_CHUNK];
    for (size_t i = 0; i < nsample; i += LOCATE_CHUNK) {
        size_t m = CANOPY_MIN((size_t)LOCATE_CHUNK, nsample - i);
        for (size_t k = 0; k < m; k++) {
            size_t s = i + k, idx = s * q + s * r / nsample; /* evenly spread, first page included */
            pages[k] = (void *)(first + idx * pg);
            status[k] = -ENOENT;
        }
        /* nodes = NULL only queries: status[k] is the node of page k, or -errno (-ENOENT: not
         * touched yet) */
        if (!have_numa || numa_move_pages(0, (unsigned long)m, pages, NULL, status, 0) != 0)
            for (size_t k = 0; k < m; k++) status[k] = -1;
        for (size_t k = 0; k < m; k++) {
            int n = status[k] >= 0 ? numa_topo_node_index(t, status[k]) : -1;
            count[n < 0 ? nn : n]++;
        }
    }
    /* scale the sampled pages to the bytes asked; the rounding leftover goes to the bucket with
     * the most pages so that the buckets add up to @p bytes exactly */
    size_t bq = bytes / nsample, br = bytes % nsample, sum = 0;
    int biggest = 0;
    for (int b = 0; b <= nn; b++) {
        size_t v = bq * count[b] + br * count[b] / nsample;
        if (b < nn) bytes_per_node[b] = (int64_t)v;
        else *unknown = (int64_t)v;
        sum += v;
        if (count[b] > count[biggest]) biggest = b;
    }
    if (biggest < nn) bytes_per_node[biggest] += (int64_t)(bytes - sum);
    else *unknown += (int64_t)(bytes - sum);
    canopy_free(count);
    return CANOPY_SUCCESS;
}
