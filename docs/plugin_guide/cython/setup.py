"""Build of the compiled plugin module (the metadata is in pyproject.toml)."""
import os
import sys

import onlinekernel
from Cython.Build import cythonize
from setuptools import Extension, setup

# Where the installed onlinekernel is: Cython reads its .pxd declarations
# from the directory above the package, and the C compiler needs the
# directory of its core (the random streams are inline C in
# onlinekernel/core/src/okcore.h).
package_dir = os.path.dirname(onlinekernel.__file__)
# No fused multiply-add contraction: the block parameters stay bit for bit
# the same on every machine, like onlinekernel's own.
flags = ["/O2", "/fp:precise"] if sys.platform == "win32" else ["-O3", "-ffp-contract=off"]

setup(ext_modules=cythonize(
    [Extension("okguide_cython._plugin", ["okguide_cython/_plugin.pyx"],
               include_dirs=[os.path.join(package_dir, "core")], extra_compile_args=flags)],
    include_path=[os.path.dirname(package_dir)],
    compiler_directives={"language_level": 3}))
