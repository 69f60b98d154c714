#!/bin/sh
# Install into a scratch DESTDIR and build examples/simple.c against the INSTALLED library through
# pkg-config (the README's link line, nothing added: the example's fmax needs the -lm the .pc
# file gives), then run it on 1 and 2 ranks: the .pc file and the installed headers must be enough.
set -e
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "${top_srcdir:-.}/tests/scratch_install.sh"
scratch_install "$tmp" "$tmp/install.log" || { cat "$tmp/install.log"; exit 1; }
prefix=$(sed -n 's/^prefix=//p' "${top_builddir:-.}/canopy.pc")
root="$tmp$prefix"
pcdir=$(dirname "$(find "$root" -name canopy.pc | head -n 1)")
[ -n "$pcdir" ] || { echo "canopy.pc was not installed"; exit 1; }
flags=$(PKG_CONFIG_PATH="$pcdir" pkg-config --define-variable=prefix="$root" --cflags --libs canopy)
echo "pkg-config canopy: $flags"
libdir=$(PKG_CONFIG_PATH="$pcdir" pkg-config --define-variable=prefix="$root" --variable=libdir canopy)
# shellcheck disable=SC2086
${CC:-mpicc} -std=c11 -Wall -Wextra -Werror -o "$tmp/simple" "${top_srcdir:-.}/examples/simple.c" $flags -Wl,-rpath,"$libdir"
"$tmp/simple"
${MPIEXEC:-mpiexec} -n 2 "$tmp/simple"
[ -x "$root/bin/canopy-solve" ] || { echo "canopy-solve was not installed"; exit 1; }
echo "installed library, header, pkg-config file and canopy-solve work"
