"""Build of the compiled modules (extension list, cythonize, compiler flags).

Flags are portable: -O3 for any x86-64 or other target, with wide vector
paths chosen at run time inside okcore.h.  -ffp-contract=off keeps the
seeded feature generation bit for bit identical across machines.  The C headers
(``src/onlinekernel/core/src``) are found through ``src/onlinekernel/core`` on the
include path.
A machine-specific build is opt-in: ONLINEKERNEL_NATIVE=1 adds -march=native (opt-in).
"""
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

# Every .pyx under src/onlinekernel/ is a compiled module of the same dotted name:
# a new loss, map or solver needs no entry here.
MODULES = {".".join(p.relative_to("src").with_suffix("").parts): str(p)
           for p in sorted(Path("src/onlinekernel").rglob("*.pyx"))}

if sys.platform == "win32":
    compile_args = ["/O2", "/fp:precise"]
else:
    compile_args = ["-O3", "-ffp-contract=off", "-fno-math-errno"]
    if os.environ.get("ONLINEKERNEL_NATIVE", "") == "1":
        compile_args.append("-march=native")  # opt-in only (ONLINEKERNEL_NATIVE=1)



def openmp_flags():
    """``-fopenmp`` when the C compiler supports it (else the loops run on one thread).

    ``ONLINEKERNEL_OPENMP=0`` turns it off.
    """
    if sys.platform == "win32":
        return ["/openmp"], []
    if os.environ.get("ONLINEKERNEL_OPENMP", "") == "0":
        return [], []
    import sysconfig
    cc = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "omp.c")
        with open(src, "w") as f:
            f.write("#include <omp.h>\nint main(void){return omp_get_max_threads() < 1;}\n")
        try:
            ok = subprocess.run(cc + ["-fopenmp", src, "-o", os.path.join(tmp, "omp")],
                                capture_output=True).returncode == 0
        except OSError:
            ok = False
    return (["-fopenmp"], ["-fopenmp"]) if ok else ([], [])


omp_compile, omp_link = openmp_flags()
extensions = [
    Extension(name, [src], include_dirs=[np.get_include(), "src/onlinekernel/core"],
              define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
              extra_compile_args=compile_args + omp_compile, extra_link_args=omp_link)
    for name, src in MODULES.items()
]

setup(ext_modules=cythonize(extensions, include_path=["src"],
                            compiler_directives={"language_level": 3}))
