#!/bin/sh
# Bootstrap a git checkout: generates configure and the Makefile.in files.
set -e
cd "$(dirname "$0")"
autoreconf -fi
