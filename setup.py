"""Build of the compiled modules (extension list, cythonize, compiler flags).

Flags are portable: -O3 for any x86-64 or other target, with wide vector
paths chosen at run time inside okcore.h.  -ffp-contract=off keeps the
seeded feature generation bit for bit identical across machines.
A machine-specific build is opt-in: ONLINEKERNEL_NATIVE=1 adds -march=native (opt-in).
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

MODULES = {
    "onlinekernel._random": "onlinekernel/_random.pyx",
    "onlinekernel._loss": "onlinekernel/_loss.pyx",
    "onlinekernel._featuremap": "onlinekernel/_featuremap.pyx",
    "onlinekernel._solver": "onlinekernel/_solver.pyx",
    "onlinekernel._reuse": "onlinekernel/_reuse.pyx",
    "onlinekernel._operator": "onlinekernel/_operator.pyx",
    "onlinekernel._shrinking": "onlinekernel/_shrinking.pyx",
    "onlinekernel.solvers._dual_cd": "onlinekernel/solvers/_dual_cd.pyx",
    "onlinekernel_plugins._losses": "plugins/_losses.pyx",
    "onlinekernel_plugins._novelty": "plugins/_novelty.pyx",
    "onlinekernel_plugins._quantile": "plugins/_quantile.pyx",
    "onlinekernel_plugins._density_ratio": "plugins/_density_ratio.pyx",
    "onlinekernel_plugins._gp_variance": "plugins/_gp_variance.pyx",
    "onlinekernel_plugins._gaussian": "plugins/_gaussian.pyx",
    "onlinekernel_plugins._laplacian": "plugins/_laplacian.pyx",
    "onlinekernel_plugins._matern": "plugins/_matern.pyx",
    "onlinekernel_plugins._arccos": "plugins/_arccos.pyx",
    "onlinekernel_plugins._poly_sketch": "plugins/_poly_sketch.pyx",
    "onlinekernel_plugins._iln": "plugins/_iln.pyx",
    "onlinekernel_plugins._orf": "plugins/_orf.pyx",
    "onlinekernel_plugins._nystrom": "plugins/_nystrom.pyx",
    "onlinekernel_plugins._structured": "plugins/_structured.pyx",
}

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
    Extension(name, [src], include_dirs=[np.get_include(), "onlinekernel"],
              define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
              extra_compile_args=compile_args + omp_compile, extra_link_args=omp_link)
    for name, src in MODULES.items()
]

setup(ext_modules=cythonize(extensions, include_path=["."],
                            compiler_directives={"language_level": 3}))
