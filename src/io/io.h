/*
 * The matrix file readers' own interface: the readers of each format (read_mm.c, read_hb.c) and
 * the triplet-to-CSC builder they share (csc_build.c). Their line reader is base/lines.h.
 */
#ifndef CANOPY_IO_H
#define CANOPY_IO_H

#include "base/common.h"

/**
 * Triplets -> sorted CSC, shared by the readers: two stable counting sorts. Takes ownership of
 * row, col and val (vsz doubles per entry, val NULL for a pattern). A duplicate makes it return
 * CANOPY_ERR_MATRIX without a message, with dup[0] < dup[1] the entry numbers (file order) of the
 * first duplicate whose entries both lie below @p limit, and dup[2], dup[3] its row and column.
 */
canopy_status io_build_csc(cint n, int64_t nz, cint *row, cint *col, double *val, int vsz, int64_t limit,
                           canopy_csc *A, int64_t dup[4], canopy_err *err);

/** Readers (read_mm.c, read_hb.c): produce a 0-based CSC as described for canopy_read_matrix. */
canopy_status io_read_mm(const char *path, canopy_csc *A, canopy_err *err);
canopy_status io_read_mm_part(const char *path, int part, int nparts, canopy_csc *A, canopy_err *err);
canopy_status io_read_hb(const char *path, canopy_csc *A, canopy_err *err);

#endif
