"""Build step of the Canopy Python package: find the installed libcanopy through pkg-config and
record where it is (canopy/_config.py), so that `import canopy` loads exactly that library.

CANOPY_LIBRARY=/path/to/libcanopy.so overrides the lookup (at build time and at import time)."""
import os
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py


def find_library():
    lib = os.environ.get("CANOPY_LIBRARY")
    if lib:
        return lib
    try:
        # --define-prefix: the prefix the .pc file sits under (an install moved or staged elsewhere)
        libdir = subprocess.run(["pkg-config", "--define-prefix", "--variable=libdir", "canopy"], check=True, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, universal_newlines=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit("canopy: pkg-config does not find canopy.pc (%s): install Canopy (make install) and set "
                         "PKG_CONFIG_PATH=<prefix>/lib/pkgconfig, or set CANOPY_LIBRARY=/path/to/libcanopy.so" % e)
    for name in ("libcanopy.so", "libcanopy.dylib"):
        path = os.path.join(libdir, name)
        if os.path.exists(path):
            return path
    raise SystemExit("canopy: no shared libcanopy in %s (configure Canopy with shared libraries)" % libdir)


class BuildPy(build_py):
    def run(self):
        super().run()
        out = os.path.join(self.build_lib, "canopy", "_config.py")
        with open(out, "w") as f:
            f.write("# written by setup.py: the libcanopy this package was installed against\n")
            f.write("LIBRARY = %r\n" % find_library())


setup(cmdclass={"build_py": BuildPy})
