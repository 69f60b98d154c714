/*
 * Gantt charts of one trace phase for canopy-trace (see papers/numa-scheduler-pastix.txt, Figure 6):
 * one row per thread, time on x, each task a rectangle coloured by its tree level, idle time
 * black, stolen tasks marked by a strip along the top of their row (white: victim on the same NUMA
 * node, red: on another node).
 * The SVG and the PNG are drawn from the same list of rectangles.
 */
#ifndef CANOPY_TRACE_RENDER_H
#define CANOPY_TRACE_RENDER_H

#include "base/common.h"
#include "sched/trace.h"

#define SCHED_TRACE_RENDER_MIN_WIDTH 640
#define SCHED_TRACE_RENDER_MAX_WIDTH 16384

/** Write phase @p p as an SVG image @p width pixels wide. */
canopy_status sched_trace_render_svg(const sched_trace_phase *p, int width, const char *path, canopy_err *err);

/** Same chart as an 8-bit RGB PNG (own encoder over zlib). */
canopy_status sched_trace_render_png(const sched_trace_phase *p, int width, const char *path, canopy_err *err);

#endif
