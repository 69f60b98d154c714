# CANOPY_CHECK_FUZZ: the libFuzzer targets of the matrix readers (tests/fuzz), built by
# "make fuzz" and run by "make fuzz-run", never by "make", "make check" or "make distcheck".
# They need a compiler that links -fsanitize=fuzzer (clang with its runtime: the Debian packages
# clang and libclang-rt-dev); FUZZ_CC names it (default: clang). The readers include <mpi.h>
# (through canopy.h), so the targets are compiled by the MPI wrapper told to run FUZZ_CC
# (OMPI_CC for Open MPI, MPICH_CC for MPICH). Without such a compiler "make fuzz" says so.
AC_DEFUN([CANOPY_CHECK_FUZZ], [
  AC_REQUIRE([CANOPY_PROG_MPICC])
  AC_ARG_VAR([FUZZ_CC], [C compiler with libFuzzer for "make fuzz" (default: clang)])
  AC_ARG_VAR([FUZZ_SANITIZE], [instrumentation of the fuzz targets (default: -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined)])
  AS_IF([test -z "$FUZZ_CC"], [FUZZ_CC=clang])
  AS_IF([test -z "$FUZZ_SANITIZE"], [FUZZ_SANITIZE="-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined"])
  AC_MSG_CHECKING([whether $FUZZ_CC links libFuzzer targets through $MPICC])
  canopy_have_fuzz=no
  cat > conftest_fuzz.c <<_CANOPY_EOF
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { (void)data; return size == sizeof(MPI_Comm) ? 0 : 0; }
_CANOPY_EOF
  AS_IF([OMPI_CC="$FUZZ_CC" MPICH_CC="$FUZZ_CC" $MPICC $FUZZ_SANITIZE conftest_fuzz.c -o conftest_fuzz$EXEEXT \
           >&AS_MESSAGE_LOG_FD 2>&1], [canopy_have_fuzz=yes])
  rm -f conftest_fuzz.c conftest_fuzz$EXEEXT
  AC_MSG_RESULT([$canopy_have_fuzz])
  AC_SUBST([FUZZ_CC])
  AC_SUBST([FUZZ_SANITIZE])
  AM_CONDITIONAL([HAVE_FUZZ], [test "$canopy_have_fuzz" = yes])
])
