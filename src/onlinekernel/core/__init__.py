"""The compiled core every other package builds on.

* :mod:`~onlinekernel.core.streams` -- the seeded random streams (Philox) and
  the cosine tiles that regenerate feature blocks from ``(seed, block)``;
  their C lives in ``src/okcore.h``.
* ``linalg.pxd`` -- the BLAS and small dense kernels the compiled loops call
  (``src/oklinalg.h``, ``src/okfwht.h``).
* :mod:`~onlinekernel.core.params` -- what losses, maps and operator
  objectives share as scikit-learn parameter objects.
* :mod:`~onlinekernel.core.curvature` -- the second-order side of the loss
  protocol, used by the batch solvers.
* :mod:`~onlinekernel.core.cholesky` -- Cholesky factors of large symmetric
  matrices in place, with a growing jitter (Nystrom's landmarks, the
  preconditioner of the batch solvers).
* :mod:`~onlinekernel.core.splits` and :mod:`~onlinekernel.core.progress` --
  seeded held-out splits and the ``verbose`` progress lines.

Nothing here imports another package of onlinekernel.
"""
