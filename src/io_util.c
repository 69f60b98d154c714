/* Placeholder: to be written (owner noted in the commit). */
#include "common.h"
#include "io_util.h"
canopy_status io_open(const char *path, io_reader **r, canopy_err *err)
{ (void)path; (void)r; return canopy_err_set(err, CANOPY_ERR_UNSUPPORTED, "not written yet"); }
const char *io_next_line(io_reader *r, canopy_err *err) { (void)r; (void)err; return NULL; }
long io_line_number(const io_reader *r) { (void)r; return 0; }
const char *io_path(const io_reader *r) { (void)r; return ""; }
void io_close(io_reader *r) { (void)r; }
CANOPY_EXPORT canopy_status canopy_read_matrix(const char *path, canopy_csc *A, char *msg, size_t msglen)
{ (void)path; (void)A; (void)msg; (void)msglen; return CANOPY_ERR_UNSUPPORTED; }
