"""Solvers: what turns a loss, a feature map and data into coefficients.

* The stochastic solver (doubly stochastic gradients, ``solver="sgd"``) is
  the compiled loop of :mod:`onlinekernel.solvers.dsg`: one bounded-cost step per
  mini-batch, for ``partial_fit`` and for ``fit`` when no batch solver
  applies.
* The batch solvers here minimise the same regularised risk on a fixed set
  of random features to a stopping tolerance (:mod:`._problem`):

  - ``"cholesky"``: losses of ``curvature="constant"`` (the squared loss);
    ``M^2`` memory, the features streamed;
  - ``"newton-cg"``: ``"smooth"`` losses (logistic, multinomial, squared
    hinge, Huber), and quadratic ones with many rows and features; ``n M``
    memory, or the features regenerated each pass; its conjugate gradients
    are preconditioned by a Cholesky factor of the Hessian on sampled rows
    (FALKON's preconditioner on random features);
  - ``"lbfgs"``: ``"smooth"`` losses, from ``loss`` and ``gradient`` only;
  - ``"dual-cd"``: ``"piecewise_linear"`` losses (hinge, quantile,
    epsilon-insensitive); ``n M`` memory;
  - ``"svrg"`` and ``"sarah"``: ``"smooth"`` and quadratic losses, by
    variance-reduced stochastic gradients on mini-batches of rows (epochs
    of one full gradient and ``n / batch`` inner steps, the step from the
    loss's curvature bound, in centred coordinates when the intercept is
    fitted; :mod:`.variance_reduced`); ``n M`` memory, or
    the rows regenerated; chosen by name only (``"auto"`` keeps
    ``"newton-cg"`` for these losses).
  - ``"wrks"``: weighted random kitchen sinks (Rahimi & Recht 2008), the
    risk minimised with the coefficients in an L-infinity or L2 ball, by
    accelerated projected gradient (:mod:`.wrks`); ``"constant"`` and
    ``"smooth"`` losses; ``n M`` memory.  Not among an estimator's
    ``solver`` choices (it needs a ``constraint`` and a ``radius``): the
    :class:`~onlinekernel.WeightedKitchenSinksRegressor` and
    :class:`~onlinekernel.WeightedKitchenSinksClassifier` run it.

Each solver sees the loss through the loss protocol and the features through
:class:`FeatureOperator`; none knows a particular loss or map.  A new solver
is a module here with a ``solve_*(problem, tol, max_iter, coef, intercept,
callback)`` function returning a :class:`Solution`, added to
:data:`BATCH_SOLVERS`; it calls ``callback(n_iter, **values)`` (when given)
after each iteration with what measures its progress (the objective, the
relative gradient norm or duality gap), which is how an estimator's
``verbose`` reports a fit, and prints nothing itself.
"""
import numpy as np

from onlinekernel.solvers.features import (
    FLOAT32_TOL, FeatureOperator, float32_reaches, rounding_gain)
from onlinekernel.solvers.problem import Problem, Solution
from onlinekernel.solvers.dual_cd import solve_dual_cd
from onlinekernel.solvers.newton import (
    _preconditioning_pays, solve_cholesky, solve_lbfgs, solve_newton_cg)
from onlinekernel.solvers.variance_reduced import smoothness_bound, solve_sarah, solve_svrg
from onlinekernel.solvers.wrks import solve_wrks

__all__ = ["FeatureOperator", "Problem", "Solution", "SOLVERS", "BATCH_SOLVERS",
           "choose_solver", "solver_memory", "feature_dtype", "feature_room", "solve_cholesky",
           "solve_newton_cg", "solve_lbfgs", "solve_dual_cd", "solve_svrg", "solve_sarah",
           "smoothness_bound", "solve_wrks", "FLOAT32_TOL", "float32_reaches", "rounding_gain"]


#: Batch solvers by name, with the curvatures each converges for.
BATCH_SOLVERS = {
    "cholesky": (solve_cholesky, ("constant",)),
    "newton-cg": (solve_newton_cg, ("constant", "smooth")),
    "lbfgs": (solve_lbfgs, ("constant", "smooth")),
    "dual-cd": (solve_dual_cd, ("piecewise_linear",)),
    "svrg": (solve_svrg, ("constant", "smooth")),
    "sarah": (solve_sarah, ("constant", "smooth")),
    "wrks": (solve_wrks, ("constant", "smooth")),
}
#: Rows per feature from which ``"auto"`` solves a quadratic loss by
#: preconditioned conjugate gradients rather than the normal equations
#: (measured: cadata 4 rows per feature 1.4x, protein 9 rows 1.6x, kin40k 8
#: rows 2.5x faster; cpusmall at 1.6 rows 1.2x slower).
PCG_ROWS_PER_FEATURE = 3
#: ... and from this many features: a product with the features costs
#: ``n M`` per output column and CG takes tens of them, the normal equations
#: cost ``n M^2`` once for every column.  Below it the normal equations are
#: faster (measured with one syrk of the kept features, rows >= 3 M, one and
#: two threads: 2,048 features 1.1-2.0x on covtype_binary_sub20k, cadata,
#: protein and letter, and even with covtype_binary's 50,000 and 100,000 rows;
#: at 4,096 features the two within 5 % up to 36,000 rows, conjugate
#: gradients 1.8x faster at 100,000).
PCG_MIN_FEATURES = 4096
#: ... or this many, for a map whose features are a linear factor of simpler
#: ones (Nystrom: ``Phi = B T``): the normal equations whiten every row (``n
#: M^2`` more), conjugate gradients only ``M x K`` sides (2,048 landmarks:
#: kin40k 1.16x, fashion_mnist 1.36x faster by conjugate gradients).
PCG_MIN_FEATURES_FACTORED = 2048
#: ... and from this many features per output column (letter's 26 columns:
#: CG 1.5x slower at 2,048 features, 1.3x faster at 4,096).
PCG_FEATURES_PER_OUTPUT = 128
#: Every value of an estimator's ``solver`` parameter (``"wrks"`` is run by
#: the weighted-kitchen-sinks estimators, which fix it).
SOLVERS = ("auto", "sgd") + tuple(s for s in BATCH_SOLVERS if s != "wrks")


def feature_dtype(solver, model_dtype, tol, gain=1.0):
    """The precision a batch solver keeps the features in.

    The iterative solvers (``newton-cg``, ``lbfgs``, and ``dual-cd``,
    whose epoch reads every row for a dot product and an update) read the
    whole feature matrix at least once per iteration, so their time is the
    memory's: float32 features halve it (measured on ijcnn1, 50k rows x
    4,096 features: 1.8x per product; default ``dual-cd`` fits on 4,000 rows
    of cpusmall, a9a and ijcnn1: 1.32-1.36x, the same models to a test row)
    and the float32 map kernels generate them 2-3x faster.  Their rounding
    bounds the gradient's (or the duality gap's) accuracy, so a float64
    model keeps float64 features when ``tol`` asks for more than
    :data:`FLOAT32_TOL` (``tol=None``, all iterations: the model's own
    precision).  The exact solvers keep the model's precision.  A factored
    map's float32 ``B`` must reach ``tol`` with its rounding amplified by
    the factor: ``gain``, the map's :func:`rounding_gain` (1 for other
    maps), the same rule :class:`FeatureOperator` applies, so that what
    :func:`solver_memory` counts is what the operator keeps.

    Examples
    --------
    >>> feature_dtype("newton-cg", np.float64, 1e-4)
    dtype('float32')
    >>> feature_dtype("newton-cg", np.float64, 1e-8)
    dtype('float64')
    >>> feature_dtype("dual-cd", np.float64, 1e-4)
    dtype('float32')
    >>> feature_dtype("cholesky", np.float64, 1e-4)
    dtype('float64')
    >>> feature_dtype("newton-cg", np.float64, 1e-4, gain=1e5)  # an ill-conditioned factor
    dtype('float64')
    """
    model_dtype = np.dtype(model_dtype)
    if solver in ("newton-cg", "lbfgs", "dual-cd") and float32_reaches(tol, gain):
        return np.dtype(np.float32)
    return model_dtype


def solver_memory(solver, n, M, K, itemsize):
    """Bytes a batch solver needs beyond the data: what ``max_memory`` caps.

    ``cholesky`` keeps two ``M x M`` float64 matrices and streams the
    features; the iterative solvers keep the ``n x M`` feature matrix (else
    they would regenerate it on every pass), ``newton-cg`` with ``n >= M``
    also its preconditioner's matrices.  With ``itemsize=0``, what it needs
    beyond the feature matrix: the room left of ``max_memory`` is what the
    feature matrix may then take (:func:`feature_room`).

    Examples
    --------
    >>> need, beyond = (solver_memory("newton-cg", 10_000, 512, 1, size) for size in (4, 0))
    >>> need - beyond  # 10,000 x 512 float32 features
    20480000
    """
    if solver == "cholesky":
        return 2 * 8 * M * M + 8 * (n * K + M * K)
    need = itemsize * n * M + 8 * (3 * n * K + 4 * M * K)
    if solver == "newton-cg" and n >= M:  # (an upper bound: "auto" may not build it)
        # the preconditioner: two M x M float64 matrices and 2M sampled rows in float32
        need += 24 * M * M
    return need


def feature_room(solver, n, M, room):
    """Bytes of the ``n x M`` feature matrix a batch solver's operator may keep, of ``room``.

    ``cholesky`` on at least as many rows as features reads the rows once,
    for the normal equations, and nothing reads them after the solve: none
    are kept, the rows are generated batch by batch (a kept matrix is fresh
    memory to fault in: pendigits, 512 features, 30 MB of the fit's 80 ms
    took 35 ms more in a new process).  Every other solver may keep them
    within ``room`` (``cholesky``'s ``n x n`` system indexes them).

    Examples
    --------
    >>> feature_room("cholesky", 10_000, 512, 2 ** 30), feature_room("cholesky", 100, 512, 7)
    (0, 7)
    >>> feature_room("newton-cg", 10_000, 512, 2 ** 30)
    1073741824
    """
    return 0 if solver == "cholesky" and n >= M else room


def choose_solver(loss, n, M, K, itemsize, max_memory, tol=None, factored=False, gain=1.0):
    """The solver ``solver="auto"`` runs: the fastest that converges and fits.

    By the loss's ``curvature``: ``"constant"`` -> ``"newton-cg"`` when there
    are at least :data:`PCG_ROWS_PER_FEATURE` rows per feature, at least
    :data:`PCG_MIN_FEATURES` features (:data:`PCG_MIN_FEATURES_FACTORED` for
    a ``factored`` map, one with a ``linear_factor``) and
    :data:`PCG_FEATURES_PER_OUTPUT` per output column, and enough rows for
    its preconditioner
    (:func:`solve_newton_cg`; one conjugate-gradient solve, preconditioned
    by a sampled Cholesky factor:
    ``O(n M)`` per iteration against the ``O(n M^2)`` of forming the normal
    equations), else ``"cholesky"``; ``"smooth"`` -> ``"newton-cg"``;
    ``"piecewise_linear"`` -> ``"dual-cd"`` (when the loss has
    ``dual_form``); each only when :func:`solver_memory` is within
    ``max_memory`` (``itemsize`` is the model's; with ``tol``, the features'
    precision is :func:`feature_dtype`'s, of a factored map's rounding
    ``gain``), the next in line otherwise, and
    ``"sgd"`` when none fits or the loss declares no curvature.

    Examples
    --------
    >>> from onlinekernel import get_loss
    >>> choose_solver(get_loss("squared"), 10_000, 4096, 1, 8, 2 ** 30)
    'cholesky'
    >>> choose_solver(get_loss("squared"), 100_000, 4096, 1, 8, 2 ** 32)
    'newton-cg'
    >>> choose_solver(get_loss("squared"), 100_000, 2048, 1, 8, 2 ** 32)
    'cholesky'
    >>> choose_solver(get_loss("squared"), 100_000, 2048, 1, 8, 2 ** 32, factored=True)
    'newton-cg'
    >>> choose_solver(get_loss("logistic"), 10_000, 4096, 1, 8, 2 ** 30)
    'newton-cg'
    >>> choose_solver(get_loss("logistic"), 10 ** 6, 4096, 1, 8, 2 ** 30)
    'sgd'
    >>> choose_solver(get_loss("logistic"), 200_000, 4096, 1, 8, 2 ** 32, tol=1e-4)
    'newton-cg'
    """
    curvature = getattr(loss, "curvature", None)
    if curvature == "constant":
        many_rows = n >= PCG_ROWS_PER_FEATURE * M and _preconditioning_pays(n, M)
        least = PCG_MIN_FEATURES_FACTORED if factored else PCG_MIN_FEATURES
        pcg = many_rows and M >= max(least, PCG_FEATURES_PER_OUTPUT * K)
        order = ("newton-cg", "cholesky") if pcg else ("cholesky", "newton-cg")
    elif curvature == "smooth":
        order = ("newton-cg",)
    elif curvature == "piecewise_linear" and hasattr(loss, "dual_form"):
        order = ("dual-cd",)
    else:
        order = ()
    for name in order:
        size = feature_dtype(name, _DTYPE_OF_SIZE[itemsize], tol, gain).itemsize
        if solver_memory(name, n, M, K, size) <= max_memory:
            return name
    return "sgd"


_DTYPE_OF_SIZE = {4: np.dtype(np.float32), 8: np.dtype(np.float64)}
