/*
 * Memory placement: page-granular allocation left untouched (so that the first touch by the
 * owning worker decides the NUMA node), interleaving, and the report of where pages really are.
 */
#ifndef CANOPY_PLACEMENT_H
#define CANOPY_PLACEMENT_H

#include "base/common.h"
#include "topology.h"

/**
 * Anonymous pages, not touched (mmap): the first writer places each page. Counted in Canopy's
 * memory accounting (whole pages; 0 bytes maps one page) and subject to canopy_alloc_fail_after.
 * Returns NULL with CANOPY_ERR_NOMEM / TOO_LARGE in @p err on failure.
 */
void *numa_alloc_pages(size_t bytes, const char *what, canopy_err *err);
/** Unmap what numa_alloc_pages returned; @p bytes as given to it. NULL is ignored. */
void numa_free_pages(void *p, size_t bytes);

/**
 * Fault in the pages under [p, p + bytes) for writing, now, on the calling thread's node: one
 * system call instead of a trap per page (MADV_POPULATE_WRITE, Linux 5.14), which on huge-page
 * mappings is also several times faster than faulting by touch. Contents are unchanged, so pages
 * shared with a neighbouring range are safe. Where the kernel refuses, falls back to writing a
 * zero to each page inside the range: only for memory still as numa_alloc_pages returned it.
 */
void numa_populate(void *p, size_t bytes);

/** Interleave the pages of [p, p + bytes) over the usable NUMA nodes (before first touch). No-op
 * with one node or in a dry run. */
canopy_status numa_interleave(const numa_topo *t, void *p, size_t bytes, canopy_err *err);

/**
 * Where the pages of [p, p + bytes) are (move_pages(2) queries): bytes_per_node[numa_topo_nodes(t)]
 * receives the bytes found on each usable node; *unknown the bytes whose node could not be found
 * (not yet touched, dry run, the kernel does not say, or a node without usable cores). Samples at
 * most @p max_pages pages (0 = all) spread evenly over the range, scaled so that the buckets add
 * up to @p bytes exactly.
 */
canopy_status numa_locate(const numa_topo *t, const void *p, size_t bytes, size_t max_pages,
                          int64_t *bytes_per_node, int64_t *unknown, canopy_err *err);

#endif
