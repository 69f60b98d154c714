/*
 * Line reader over plain or gzip-compressed files (zlib reads both), with line numbers for error
 * messages: the matrix readers (src/io/) and the trace reader (sched/trace.c) share it.
 */
#ifndef CANOPY_LINES_H
#define CANOPY_LINES_H

#include "base/common.h"

typedef struct lines_reader lines_reader;

canopy_status lines_open(const char *path, lines_reader **r, canopy_err *err);
/** Next line without its newline; NULL at end of file (or on error: see io_error). */
const char *lines_next(lines_reader *r, canopy_err *err);
long lines_number(const lines_reader *r);
const char *lines_path(const lines_reader *r);
void lines_close(lines_reader *r);

#endif
