"""Solvers: what turns a loss, a feature map and data into coefficients.

* The stochastic solver (doubly stochastic gradients, ``solver="sgd"``) is
  the compiled loop of :mod:`onlinekernel._solver`: one bounded-cost step per
  mini-batch, for ``partial_fit`` and for ``fit`` when no batch solver
  applies.
* The batch solvers here minimise the same regularised risk on a fixed set
  of random features to a stopping tolerance (:mod:`._problem`):

  - ``"cholesky"``: losses of ``curvature="constant"`` (the squared loss);
    ``M^2`` memory, the features streamed;
  - ``"newton-cg"``: ``"smooth"`` losses (logistic, multinomial, squared
    hinge, Huber); ``n M`` memory, or the features regenerated each pass;
  - ``"lbfgs"``: ``"smooth"`` losses, from ``loss`` and ``gradient`` only;
  - ``"dual-cd"``: ``"piecewise_linear"`` losses (hinge, quantile,
    epsilon-insensitive); ``n M`` memory.

Each solver sees the loss through the loss protocol and the features through
:class:`FeatureOperator`; none knows a particular loss or map.  A new solver
is a module here with a ``solve_*(problem, tol, max_iter, coef, intercept)``
function returning a :class:`Solution`, added to :data:`BATCH_SOLVERS`.
"""
from onlinekernel.solvers._features import FeatureOperator
from onlinekernel.solvers._problem import Problem, Solution
from onlinekernel.solvers.dual_cd import solve_dual_cd
from onlinekernel.solvers.newton import solve_cholesky, solve_lbfgs, solve_newton_cg

__all__ = ["FeatureOperator", "Problem", "Solution", "SOLVERS", "BATCH_SOLVERS",
           "choose_solver", "solver_memory", "solve_cholesky", "solve_newton_cg",
           "solve_lbfgs", "solve_dual_cd"]


#: Batch solvers by name, with the curvatures each converges for.
BATCH_SOLVERS = {
    "cholesky": (solve_cholesky, ("constant",)),
    "newton-cg": (solve_newton_cg, ("constant", "smooth")),
    "lbfgs": (solve_lbfgs, ("constant", "smooth")),
    "dual-cd": (solve_dual_cd, ("piecewise_linear",)),
}
#: Every value of an estimator's ``solver`` parameter.
SOLVERS = ("auto", "sgd") + tuple(BATCH_SOLVERS)


def solver_memory(solver, n, M, K, itemsize):
    """Bytes a batch solver needs beyond the data: what ``max_memory`` caps.

    ``cholesky`` keeps two ``M x M`` float64 matrices and streams the
    features; the iterative solvers keep the ``n x M`` feature matrix (else
    they would regenerate it on every pass).
    """
    if solver == "cholesky":
        return 2 * 8 * M * M + 8 * (n * K + M * K)
    return itemsize * n * M + 8 * (3 * n * K + 4 * M * K)


def choose_solver(loss, n, M, K, itemsize, max_memory):
    """The solver ``solver="auto"`` runs: the fastest that converges and fits.

    By the loss's ``curvature``: ``"constant"`` -> ``"cholesky"``,
    ``"smooth"`` -> ``"newton-cg"``, ``"piecewise_linear"`` -> ``"dual-cd"``
    (when the loss has ``dual_form``), each only when
    :func:`solver_memory` is within ``max_memory``; otherwise, and for
    losses that declare no curvature, ``"sgd"``.

    Examples
    --------
    >>> from onlinekernel import get_loss
    >>> choose_solver(get_loss("squared"), 10_000, 4096, 1, 8, 2 ** 30)
    'cholesky'
    >>> choose_solver(get_loss("logistic"), 10_000, 4096, 1, 8, 2 ** 30)
    'newton-cg'
    >>> choose_solver(get_loss("logistic"), 10 ** 6, 4096, 1, 8, 2 ** 30)
    'sgd'
    """
    curvature = getattr(loss, "curvature", None)
    if curvature == "constant":
        order = ("cholesky", "newton-cg")
    elif curvature == "smooth":
        order = ("newton-cg",)
    elif curvature == "piecewise_linear" and hasattr(loss, "dual_form"):
        order = ("dual-cd",)
    else:
        order = ()
    for name in order:
        if solver_memory(name, n, M, K, itemsize) <= max_memory:
            return name
    return "sgd"
