/*
 * Line reader over plain or gzip-compressed files (zlib reads both), with line numbers for
 * error messages, shared by the Matrix Market and Harwell-Boeing readers.
 */
#ifndef CANOPY_IO_UTIL_H
#define CANOPY_IO_UTIL_H

#include "common.h"

typedef struct io_reader io_reader;

canopy_status io_open(const char *path, io_reader **r, canopy_err *err);
/** Next line without its newline; NULL at end of file (or on error: see io_error). */
const char *io_next_line(io_reader *r, canopy_err *err);
long io_line_number(const io_reader *r);
const char *io_path(const io_reader *r);
void io_close(io_reader *r);

/**
 * Triplets -> sorted CSC, shared by the readers: two stable counting sorts. Takes ownership of
 * row, col and val (vsz doubles per entry, val NULL for a pattern). A duplicate makes it return
 * CANOPY_ERR_MATRIX without a message, with dup[0] < dup[1] the entry numbers (file order) of the
 * first duplicate whose entries both lie below @p limit, and dup[2], dup[3] its row and column.
 */
canopy_status io_build_csc(cint n, int64_t nz, cint *row, cint *col, double *val, int vsz, int64_t limit,
                           canopy_csc *A, int64_t dup[4], canopy_err *err);

/** Readers (io_mm.c, io_hb.c): produce a 0-based CSC as described for canopy_read_matrix. */
canopy_status io_read_mm(const char *path, canopy_csc *A, canopy_err *err);
canopy_status io_read_mm_part(const char *path, int part, int nparts, canopy_csc *A, canopy_err *err);
canopy_status io_read_hb(const char *path, canopy_csc *A, canopy_err *err);

#endif
