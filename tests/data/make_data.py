#!/usr/bin/env python3
"""Regenerate the small hand-made test matrices of tests/data (valid and malformed).

The files are committed; this script only documents how they were made. Fixed-width
Harwell-Boeing records are easier to get right from code than by hand. Run from tests/data.
"""
import gzip


def write(name, text, crlf=False):
    if crlf:
        text = text.replace("\n", "\r\n")
    with open(name, "w", newline="") as f:
        f.write(text)


def gz(name, text):
    with open(name, "wb") as f:
        f.write(gzip.compress(text.encode(), mtime=0))


# ---- Matrix Market ----------------------------------------------------------------------------
# G: 4x4 general; S: 4x4 symmetric (lower); H: 3x3 complex hermitian (lower); Z: 3x3 skew.
G = "4 4 9\n4 4 7\n1 1 4\n4 1 0.5\n2 1 -1\n3 2 -2\n2 2 5\n3 3 6\n1 3 1.5\n2 4 -0.25\n"
write("mm_real_general.mtx",
      "%%MatrixMarket matrix coordinate real general\n% a comment\n%\n\n" + G.replace("3 3 6\n", "3 3 6\n\n% comment inside the data\n"))
write("mm_crlf_upper.mtx", "%%MATRIXMARKET Matrix Coordinate REAL General\n% crlf line ends\n" + G, crlf=True)
write("mm_integer_symmetric.mtx",
      "%%MatrixMarket matrix coordinate integer symmetric\n4 4 8\n1 1 4\n2 1 -1\n4 1 1\n2 2 5\n3 2 -2\n3 3 6\n4 3 2\n4 4 7\n")
write("mm_pattern_upper.mtx",
      "%%MatrixMarket matrix coordinate pattern symmetric\n4 4 6\n1 1\n1 2\n2 2\n2 4\n3 3\n4 4\n")
write("mm_complex_hermitian.mtx",
      "%%MatrixMarket matrix coordinate complex hermitian\n3 3 5\n1 1 2 0\n2 1 1 1\n2 2 3 0\n3 2 0 -2\n3 3 4 0\n")
write("mm_skew.mtx", "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 3\n2 1 1\n3 1 2\n3 2 3\n")
gz("mm_complex_general.mtx.gz",
   "%%MatrixMarket matrix coordinate complex general\n2 2 3\n1 1 1.0 -1.0\n2 2 2e0 0.5\n1 2 -3 4\n")
write("mm_sniffed_noext", "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n2 2 2\n")
write("mm_array.mtx", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n")

# malformed: (file, expected status, expected line) listed in tests/test_io.c
write("bad_empty.mtx", "")
write("bad_banner.mtx", "%%MatrixMarkt matrix coordinate real general\n2 2 1\n1 1 1\n")
write("bad_field.mtx", "%%MatrixMarket matrix coordinate quaternion general\n2 2 1\n1 1 1\n")
write("bad_sizeline.mtx", "%%MatrixMarket matrix coordinate real general\n% c\n2 2\n1 1 1\n")
write("bad_truncated.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 5\n1 1 1\n2 2 2\n3 3 3\n")
write("bad_huge_size.mtx", "%%MatrixMarket matrix coordinate real general\n2000000000 2000000000 1\n1 1 1.0\n")
write("bad_extra.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 1\n2 2 2\n3 3 3\n1 2 4\n")
write("bad_range.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 1\n4 2 2\n3 3 3\n")
write("bad_zero_index.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 1\n2 0 2\n3 3 3\n")
write("bad_nonsquare.mtx", "%%MatrixMarket matrix coordinate real general\n3 4 1\n1 1 1\n")
write("bad_nan.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 1\n2 2 nan\n3 3 3\n")
write("bad_inf.mtx", "%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n1 1 1\n2 2 2\n3 3 -Inf\n")
write("bad_overflow.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n2 2 1e999\n")
write("bad_duplicate.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 4\n1 1 1\n3 2 2\n3 3 3\n3 2 4\n")
write("bad_bothtri.mtx", "%%MatrixMarket matrix coordinate real symmetric\n3 3 4\n1 1 1\n2 1 2\n3 3 3\n2 3 4\n")
write("bad_number.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1.0\n2 2 2.0x\n")
write("bad_complex_missing.mtx", "%%MatrixMarket matrix coordinate complex general\n2 2 2\n1 1 1.0 2.0\n2 2 2.0\n")
full = "%%MatrixMarket matrix coordinate real general\n" + "50 50 50\n" + "".join(f"{i} {i} {i}.0\n" for i in range(1, 51))
data = gzip.compress(full.encode(), mtime=0)
with open("bad_truncated.mtx.gz", "wb") as f:
    f.write(data[: len(data) // 2])


# ---- Harwell-Boeing ---------------------------------------------------------------------------
def ints_lines(vals, per, width):
    return ["".join(f"{v:>{width}d}" for v in vals[k:k + per]) for k in range(0, len(vals), per)]


def str_lines(fields, per, sep=""):
    return [sep + sep.join(fields[k:k + per]) for k in range(0, len(fields), per)]


def hb(name, typ, n, ptr, ind, vals, ptrfmt, indfmt, valfmt, pper, pw, iper, iw, vper, vsep="", key="KEY",
       title="test matrix", rhs=False, rb=False, override=None, ncol=None):
    pl = ints_lines(ptr, pper, pw)
    il = ints_lines(ind, iper, iw)
    vl = str_lines(vals, vper, vsep) if vals else []
    rl = ["  1.0  2.0"] if rhs else []
    cnt = [len(pl) + len(il) + len(vl) + len(rl), len(pl), len(il), len(vl)]
    if not rb:
        cnt.append(len(rl))
    if override:
        cnt = override(cnt)
    lines = [f"{title:<72}{key:<8}", "".join(f"{c:>14d}" for c in cnt),
             f"{typ:<3}{'':11}{n:>14d}{(ncol or n):>14d}{len(ind):>14d}{0:>14d}",
             f"{ptrfmt:<16}{indfmt:<16}{valfmt:<20}{(valfmt if rhs else ''):<20}"]
    if rhs:
        lines.append(f"{'F':<3}{'':11}{1:>14d}{0:>14d}")
    write(name, "\n".join(lines + pl + il + vl + rl) + "\n")


# G as HB, rows of column 1 deliberately unsorted (4, 1, 2); values (4D10.3) touching, with a
# lower-case d and the exponent-letter-free form "0.5000+00".
Gptr = [1, 4, 6, 8, 10]
Gind = [4, 1, 2, 2, 3, 1, 3, 2, 4]
Gval = [" 0.5000+00", " 0.400d+01", "-0.100D+01", " 0.500E+01", "-0.200E+01", " 0.150E+01", " 0.600E+01",
        "-0.250E+00", " 0.700E+01"]
hb("hb_real_unsym.rua", "RUA", 4, Gptr, Gind, Gval, "(8I5)", "(4I5)", "(4D10.3)", 8, 5, 4, 5, 4, rhs=True)
hb("hb_real_unsym.rb", "rua", 4, Gptr, Gind, Gval, "(8I5)", "(4I5)", "(4D10.3)", 8, 5, 4, 5, 4, rb=True)
hb("hb_sniffed_noext", "RUA", 4, Gptr, Gind, Gval, "(8I5)", "(4I5)", "(4D10.3)", 8, 5, 4, 5, 4)
# S lower, (1P,3D16.8) values with exponents (scale factor has no effect then)
Sptr = [1, 4, 6, 8, 9]
Sind = [1, 2, 4, 2, 3, 3, 4, 4]
Sv = [4, -1, 0.5, 5, -2, 6, 1.5, 7]
hb("hb_real_sym.rsa", "RSA", 4, Sptr, Sind, [f"{v:16.8E}".replace("E", "D") for v in Sv],
   "(10I3)", "(26I3)", "(1P,3D16.8)", 10, 3, 26, 3, 3)
hb("hb_pattern_sym.psa", "PSA", 4, Sptr, Sind, None, "(10I3)", "(26I3)", "", 10, 3, 26, 3, 1)
# complex general: the G pattern (sorted), value k = (k, -k) in a (3(1X,E12.5)) repeat group
Gs_ind = [1, 2, 4, 2, 3, 1, 3, 2, 4]
cv = []
for k in range(1, 10):
    cv += [f"{k:12.5E}", f"{-k:12.5E}"]
hb("hb_complex_unsym.cua", "CUA", 4, Gptr, Gs_ind, cv, "(5I4)", "(5I4)", "(3(1X,E12.5))", 5, 4, 5, 4, 3, vsep=" ")
# H hermitian lower
hv = [2, 0, 1, 1, 3, 0, 0, -2, 4, 0]
hb("hb_complex_herm.cha", "CHA", 3, [1, 3, 5, 6], [1, 2, 2, 3, 3], [f"{v:20.12E}" for v in hv],
   "(4I5)", "(5I5)", "(4E20.12)", 4, 5, 5, 5, 4)
# Z skew lower
hb("hb_skew.rza", "RZA", 3, [1, 3, 4, 4], [2, 3, 3], [f"{v:15.8E}" for v in [1, 2, 3]],
   "(4I5)", "(5I5)", "(5E15.8)", 4, 5, 5, 5, 5)
# Fortran corner cases: implied decimal point and 1P on a field without exponent
hb("hb_fortran.rua", "RUA", 3, [1, 2, 3, 4], [1, 2, 3], ["  1.500E+00", "       2500", "  3.000-001"],
   "(4I5)", "(5I5)", "(1P,3(1X,E11.3))", 4, 5, 5, 5, 3, vsep=" ")

# malformed HB
hb("bad_hb_elemental.rua", "RUE", 4, Gptr, Gind, Gval, "(8I5)", "(4I5)", "(4D10.3)", 8, 5, 4, 5, 4)
hb("bad_hb_rect.rua", "RRA", 4, Gptr, Gind, Gval, "(8I5)", "(4I5)", "(4D10.3)", 8, 5, 4, 5, 4, ncol=5)
hb("bad_hb_notsquare.rua", "RUA", 5, Gptr, Gind, Gval, "(8I5)", "(4I5)", "(4D10.3)", 8, 5, 4, 5, 4, ncol=4)
hb("bad_hb_format.rua", "RUA", 4, Gptr, Gind, Gval, "(8I5)", "(4Q5)", "(4D10.3)", 8, 5, 4, 5, 4)
hb("bad_hb_counts.rua", "RUA", 4, Gptr, Gind, Gval, "(8I5)", "(4I5)", "(4D10.3)", 8, 5, 4, 5, 4,
   override=lambda c: [c[0] + 1, c[1], c[2] + 1, c[3], c[4]])
hb("bad_hb_total.rua", "RUA", 4, Gptr, Gind, Gval, "(8I5)", "(4I5)", "(4D10.3)", 8, 5, 4, 5, 4,
   override=lambda c: [c[0] + 7, c[1], c[2], c[3], c[4]])
bad = list(Gval)
bad[5] = " 0.15XE+01"
hb("bad_hb_number.rua", "RUA", 4, Gptr, Gind, bad, "(8I5)", "(4I5)", "(4D10.3)", 8, 5, 4, 5, 4)
nanv = list(Gval)
nanv[6] = "       NaN"
hb("bad_hb_nan.rua", "RUA", 4, Gptr, Gind, nanv, "(8I5)", "(4I5)", "(4D10.3)", 8, 5, 4, 5, 4)
infv = list(Gval)
infv[0] = "  Infinity"
hb("bad_hb_inf.rua", "RUA", 4, Gptr, Gind, infv, "(8I5)", "(4I5)", "(4D10.3)", 8, 5, 4, 5, 4)
hb("bad_hb_range.rua", "RUA", 4, Gptr, [4, 1, 2, 2, 3, 1, 9, 2, 4], Gval, "(8I5)", "(4I5)", "(4D10.3)", 8, 5, 4, 5, 4)
hb("bad_hb_duplicate.rua", "RUA", 4, Gptr, [4, 1, 2, 2, 3, 1, 3, 2, 2], Gval, "(8I5)", "(4I5)", "(4D10.3)", 8, 5, 4, 5, 4)
hb("bad_hb_bothtri.rsa", "RSA", 4, Sptr, [1, 2, 4, 2, 3, 3, 4, 3], [f"{v:16.8E}" for v in Sv],
   "(10I3)", "(26I3)", "(3E16.8)", 10, 3, 26, 3, 3)
hb("bad_hb_pointers.rua", "RUA", 4, [1, 4, 3, 8, 10], Gind, Gval, "(8I5)", "(4I5)", "(4D10.3)", 8, 5, 4, 5, 4)
hb("bad_hb_truncated.rua", "RUA", 4, Gptr, Gind, Gval, "(8I5)", "(4I5)", "(4D10.3)", 8, 5, 4, 5, 4)
with open("bad_hb_truncated.rua") as f:
    lines = f.read().split("\n")
write("bad_hb_truncated.rua", "\n".join(lines[:-3]) + "\n")  # drop the last two value lines
write("bad_hb_header.rua", "title only\n")

# hostile headers (found by fuzzing the reader):
# - line counts beyond the header's I14 fields: strtoll saturated at INT64_MAX and the sum of the
#   counts overflowed (a first line empty, then the counts);
# - a header announcing n = 2^31-2 and 2^30-1 entries over a few bytes of data: the pointer and
#   index arrays (24 GiB) were reserved before any data was read; also compressed, whose size says
#   nothing about what it holds;
# - a size beyond the I14 fields on line 3.
write("bad_hb_count_overflow.rua", "\n1 11111111111111111111 5 0")
hn, hnz = 2**31 - 2, 2**30 - 1
hcnt = [-(-(hn + 1) // 8), -(-hnz // 8), -(-hnz // 4)]
huge = "\n".join([f"{'hostile header: order 2^31-2, one line of data':<72}{'HUGE':<8}",
                  "".join(f"{c:>14d}" for c in [sum(hcnt)] + hcnt + [0]),
                  f"{'RSA':<3}{'':11}{hn:>14d}{hn:>14d}{hnz:>14d}{0:>14d}",
                  f"{'(8I10)':<16}{'(8I10)':<16}{'(4E20.12)':<20}",
                  "".join(f"{p:>10d}" for p in range(1, 9))]) + "\n"
write("bad_hb_huge_order.rsa", huge)
gz("bad_hb_huge_order.rsa.gz", huge)
write("bad_hb_size_range.rua", f"{'test matrix':<72}{'KEY':<8}\n" + "".join(f"{c:>14d}" for c in [3, 1, 1, 1, 0]) + "\n"
      + f"RUA{'':11}{4:>14d}{4:>14d} 123456789012345{0:>14d}\n")
