/*
 * libFuzzer target of the matrix readers: the input becomes a file whose name picks the reader
 * (FUZZ_SUFFIX: ".mtx", ".mtx.gz", ".rua", ".rsa.gz"), read whole with canopy_read_matrix and in
 * parts with canopy_read_matrix_part. Built by "make fuzz" (see tests/fuzz/run.sh), one binary per
 * suffix, under -fsanitize=fuzzer,address,undefined.
 *
 * With FUZZ_GZIP the input is the file's decompressed content (compressed here), so the parser
 * sees the mutations; an input that already starts with the gzip magic is written as it is, which
 * reaches zlib's handling of broken streams.
 *
 * Beyond the sanitizers, the target aborts when
 *  - a whole read succeeds but returns a malformed CSC (pointers, ranges, sorted unique rows);
 *  - the parts disagree with the whole: after a successful whole read every part must succeed and
 *    the parts' entries add up to the whole's; after a failure other than CANOPY_ERR_MATRIX (a
 *    duplicate may span two parts) every part must fail with the same status;
 *  - a failure has no message, or a format / matrix error does not start with the file name;
 *  - memory accounted by canopy_alloc is left behind, or a read of an uncompressed input (or one
 *    compressed here) allocates more than FUZZ_BYTES_PER_BYTE per byte of the file plus a fixed
 *    allowance: a header must not make the reader reserve what the data do not hold.
 */
#include "base/common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#ifndef FUZZ_SUFFIX
#define FUZZ_SUFFIX ".mtx"
#endif
#ifndef FUZZ_GZIP
#define FUZZ_GZIP 0
#endif

/* The line buffer (256 KiB, doubled for a longer line), formats and first array chunks. */
#define FUZZ_FIXED_BYTES ((size_t)4 << 20)
/* Entries, pointers, sort arrays and the n-sized arrays, per byte of data (a pattern entry
 * "1 1" or a one-column integer field is a few bytes, and skew matrices are expanded). */
#define FUZZ_BYTES_PER_BYTE 256

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[4096], path[4200];

static void cleanup(void)
{
    if (path[0]) remove(path);
    if (dir[0]) rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/canopy-fuzz-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL) {
        perror("fuzz_read: mkdtemp");
        abort();
    }
    snprintf(path, sizeof path, "%s/input%s", dir, FUZZ_SUFFIX);
    atexit(cleanup);
    return 0;
}

static void fail(const char *what, canopy_status st, const char *msg)
{
    fprintf(stderr, "fuzz_read (%s): %s (status %d: %s)\n", FUZZ_SUFFIX, what, (int)st, msg);
    abort();
}

/* Write the input; returns the number of bytes the reader will see when known, else 0. */
static size_t write_input(const uint8_t *data, size_t size)
{
    bool raw = !FUZZ_GZIP || (size >= 2 && data[0] == 0x1f && data[1] == 0x8b);
    if (raw) {
        FILE *f = fopen(path, "wb");
        if (f == NULL || fwrite(data, 1, size, f) != size || fclose(f) != 0) {
            perror("fuzz_read: write");
            abort();
        }
        return FUZZ_GZIP ? 0 : size;
    }
    gzFile g = gzopen(path, "wb1");
    if (g == NULL || (size > 0 && gzwrite(g, data, (unsigned)size) != (int)size) || gzclose(g) != Z_OK) {
        fprintf(stderr, "fuzz_read: cannot write %s\n", path);
        abort();
    }
    return size;
}

static void check_csc(const canopy_csc *A, const char *msg)
{
    if (A->n < 1 || A->colptr == NULL || A->rowind == NULL || A->base != 0 || A->colptr[0] != 0)
        fail("malformed result", CANOPY_SUCCESS, msg);
    if ((A->arith == CANOPY_PATTERN) != (A->values == NULL)) fail("values do not match the arithmetic", CANOPY_SUCCESS, msg);
    for (cint j = 0; j < A->n; j++) {
        if (A->colptr[j + 1] < A->colptr[j]) fail("column pointers decrease", CANOPY_SUCCESS, msg);
        for (cint p = A->colptr[j]; p < A->colptr[j + 1]; p++) {
            if (A->rowind[p] < 0 || A->rowind[p] >= A->n) fail("row index out of range", CANOPY_SUCCESS, msg);
            if (p > A->colptr[j] && A->rowind[p] <= A->rowind[p - 1]) fail("rows not sorted and unique", CANOPY_SUCCESS, msg);
        }
    }
}

static void check_failure(canopy_status st, const char *msg)
{
    if (msg[0] == '\0') fail("failure without a message", st, msg);
    if ((st == CANOPY_ERR_FORMAT || st == CANOPY_ERR_MATRIX || st == CANOPY_ERR_SINGULAR || st == CANOPY_ERR_UNSUPPORTED) &&
        strncmp(msg, path, strlen(path)) != 0)
        fail("message does not start with the file name", st, msg);
}

static void check_memory(size_t mem0, size_t seen, const char *what, canopy_status st, const char *msg)
{
    if (canopy_mem_current() != mem0) fail("accounted memory left behind", st, msg);
    if (seen > 0 && canopy_mem_peak() - mem0 > FUZZ_FIXED_BYTES + (size_t)FUZZ_BYTES_PER_BYTE * seen) {
        char m[700];
        snprintf(m, sizeof m, "%s allocated %zu bytes for a %zu-byte file: %s", what, canopy_mem_peak() - mem0, seen, msg);
        fail("allocation beyond what the file holds", st, m);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t seen = write_input(data, size);
    size_t mem0 = canopy_mem_current();
    char msg[512];
    canopy_csc A;

    canopy_mem_reset_peak();
    canopy_status whole = canopy_read_matrix(path, &A, msg, sizeof msg);
    int64_t nnz = 0;
    canopy_arith arith = CANOPY_REAL;
    if (whole == CANOPY_SUCCESS) {
        check_csc(&A, msg);
        nnz = A.colptr[A.n];
        arith = A.arith;
        canopy_csc_free(&A);
    } else {
        if (A.colptr != NULL || A.rowind != NULL || A.values != NULL) fail("arrays left after a failure", whole, msg);
        check_failure(whole, msg);
    }
    check_memory(mem0, seen, "the whole read", whole, msg);

    /* 2 to 4 parts, every one of them: the parts of a file are read by different ranks */
    int nparts = 2 + (int)(size % 3);
    int64_t sum = 0;
    for (int part = 0; part < nparts; part++) {
        canopy_mem_reset_peak();
        canopy_status st = canopy_read_matrix_part(path, part, nparts, &A, msg, sizeof msg);
        if (whole == CANOPY_SUCCESS) {
            if (st != CANOPY_SUCCESS) fail("a part fails where the whole file reads", st, msg);
            if (A.arith != arith) fail("a part's arithmetic differs from the whole's", st, msg);
        } else if (whole == CANOPY_ERR_MATRIX) {
            if (st != CANOPY_SUCCESS && st != CANOPY_ERR_MATRIX) fail("a part fails differently from the whole", st, msg);
        } else if (st != whole) {
            fail("a part fails differently from the whole", st, msg);
        }
        if (st == CANOPY_SUCCESS) {
            if (A.colptr == NULL || A.rowind == NULL || A.base != 0) fail("malformed part", st, msg);
            sum += A.colptr[A.n] - A.colptr[0];
            canopy_csc_free(&A);
        } else {
            check_failure(st, msg);
        }
        check_memory(mem0, seen, "a part", st, msg);
    }
    if (whole == CANOPY_SUCCESS && sum != nnz) fail("the parts' entries do not add up to the whole's", whole, msg);
    return 0;
}
