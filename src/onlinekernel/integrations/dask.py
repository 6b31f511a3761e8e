"""Dask collections in the estimators: a data-parallel batch fit, partial_fit by partitions, predict.

Imported only when an estimator is given a dask collection, so the core
works without dask installed (``pip install onlinekernel[dask]`` adds it).

* ``fit`` with a :class:`distributed.Client` active trains data-parallel:
  every row partition of ``X`` (with its targets and weights) stays on the
  worker that holds it, together with its features, which the worker
  regenerates from the model's ``(seed, block)`` (:class:`_Partition`).
  The batch solvers run unchanged on the client against a
  :class:`DistributedProblem`, which has the interface of
  :class:`~onlinekernel.solvers.Problem`: its row-wise quantities (the raw
  outputs ``U = Phi C + b`` and the directions' outputs) are
  :class:`RowArray` handles, kept as the coefficients that make them and
  computed on the workers when read, and what travels per step is
  coefficient-sized: the ``M x K`` coefficients or direction out to every
  partition, and back its ``M x K`` gradient or Hessian-product sum (plus
  ``K`` intercept terms and a scalar), or once per fit its ``M x M`` block
  of ``Phi^T D Phi`` (``cholesky``; for Nystrom features ``B^T D B``,
  finished on the client where the whole sum's rounding allows, as
  :meth:`~onlinekernel.solvers.FeatureOperator.gram` does, so that no
  partition whitens its rows).  ``max_memory`` and the memory rule
  of ``solver="auto"`` apply to one partition.  Partition results are summed on the client in partition
  order, so a fit is deterministic, and equals the single-machine fit up to
  the order of those sums.  Without a client the collections are computed
  into memory and fit as numpy arrays.
* ``partial_fit`` takes the partitions in order, one ``partial_fit`` each
  (as dask-ml's ``Incremental`` does), in one transactional call.
* ``predict``, ``decision_function`` and ``predict_proba`` map over the row
  partitions and return a dask array.

The sampled preconditioner of ``newton-cg`` needs features of rows drawn
from all partitions, so a distributed fit runs plain conjugate gradients
(``precondition=True`` is refused); ``dual-cd``, ``svrg``, ``sarah`` and
the stochastic solver (``solver="sgd"``) step through rows one batch after
another and do not distribute: ``fit`` names them and suggests a batch
solver or ``partial_fit``.
"""
import functools
import numbers

import numpy as np

from onlinekernel.solvers import FeatureOperator, Problem
from onlinekernel.solvers.features import factored_gram, factored_gram_may_reach, gram_spread
from onlinekernel.solvers.problem import constant_terms, weighted_hessian_product

__all__ = ["is_dask_collection", "DistributedProblem", "RowArray", "fit", "partial_fit",
           "map_rows"]

#: The solvers a distributed fit runs (the others need rows in sequence).
DISTRIBUTED_SOLVERS = ("cholesky", "newton-cg", "lbfgs")


def is_dask_collection(x):
    """Whether ``x`` is a dask collection (array, dataframe, series), without importing dask.

    Examples
    --------
    >>> is_dask_collection(np.ones(3))
    False
    """
    return hasattr(type(x), "__dask_graph__") and callable(getattr(x, "__dask_graph__", None))


def _get_client():
    """The active :class:`distributed.Client`, or None (also without distributed installed)."""
    try:
        from distributed import get_client
    except ImportError:
        return None
    try:
        return get_client()
    except ValueError:  # no client
        return None


# --------------------------------------------------------------------------- #
# what runs on the workers
# --------------------------------------------------------------------------- #
class _Partition:
    """One row partition on its worker: rows, encoded targets, weights and features.

    The features are a local :class:`FeatureOperator` on the partition's
    rows, regenerated from ``(seed, block)`` (and kept when they fit
    ``max_bytes``).  Built once per fit; the tasks below only read it.
    """

    def __init__(self, X, y, w, encode, weight_total, fmap, seed, n_blocks, max_bytes, dtype,
                 loss, tol=None):
        self.op = FeatureOperator(fmap, seed, n_blocks, np.ascontiguousarray(X), max_bytes,
                                  n_jobs=1, dtype=dtype, tol=tol)
        self.Y = np.ascontiguousarray(encode(np.asarray(y)), dtype=np.float64)
        self.w = np.asarray(w, dtype=np.float64) / weight_total
        self.loss = loss


def _raw(part, C, b):
    return part.op.matvec(C) + b


def _value(part, U):
    return float(part.w @ part.loss.loss(part.Y, U))


def _gradient(part, U):
    G = part.loss.gradient(part.Y, U) * part.w[:, None]
    return part.op.rmatvec(G), G.sum(axis=0)


def _hessian(part, U, VC, vb):
    hC, hb, _ = weighted_hessian_product(part.op, part.loss, part.Y, part.w, U, VC, vb)
    return hC, hb


def _constant_terms(part, b):
    return constant_terms(part.loss, part.Y, part.w, b)


def _sub_problem(part, fit_intercept, K):
    """The partition's rows as a :class:`Problem` (its sums are the partition's terms)."""
    sub = Problem.__new__(Problem)
    sub.features, sub.loss, sub.Y, sub.w = part.op, part.loss, part.Y, part.w
    sub.K, sub.fit_intercept = K, fit_intercept
    return sub


def _normal_equations(part, fit_intercept, K):
    """This partition's terms of :meth:`Problem.normal_equations`, from whitened rows."""
    return _sub_problem(part, fit_intercept, K).normal_equations()


def _curvature_total(part, K):
    """The sum of this partition's curvature weights (``tr(B^T D B)``'s prediction needs it)."""
    return float(_sub_problem(part, False, K).curvature_weights()[0].sum())


def _factored_normal_terms(part, fit_intercept, K):
    """This partition's normal-equation terms over a factored map's ``B``, and its spread.

    ``B^T D B``, ``B^T d`` and ``B^T G0`` (:meth:`FeatureOperator.gram_terms`)
    in place of ``Phi``'s, then the rows' :func:`gram_spread`: the client
    adds them up and finishes them (:func:`factored_gram`).
    """
    spread = []

    def gram(d, G):
        G = np.asarray(G, dtype=part.op.dtype)
        spread.append(gram_spread(d, G))
        return part.op.gram_terms(d, G, factored=True)

    return _sub_problem(part, fit_intercept, K).normal_terms(gram) + (spread[0],)


def _close(part):
    part.op.close()


# --------------------------------------------------------------------------- #
# the client side
# --------------------------------------------------------------------------- #
def _nbytes(value):
    """Bytes of the arrays and numbers in ``value`` (what a task's argument or result carries)."""
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, (tuple, list)):
        return sum(_nbytes(v) for v in value)
    if isinstance(value, (numbers.Number, np.generic)):
        return 8
    return 0


class RowArray:
    """Raw outputs ``Phi C + b`` (``n x K``) of a distributed problem, kept on the workers.

    Held as the coefficients ``(C, b)`` that make them: what a solver does
    with raw outputs (``U + t * dU``, ``np.zeros_like(U)``, ``pU += a * V``)
    is linear, so it is done on ``(C, b)`` on the client, with no task and
    no pass over the features.  The first read (:meth:`values`) computes
    the outputs on every partition, one task each, and they stay there for
    the later reads; they never come to the client.

    Examples
    --------
    >>> U = RowArray(None, np.ones((3, 1)), np.zeros(1))
    >>> V = U + 0.5 * U + np.ones(1)   # no task: the coefficients combine
    >>> V.C.ravel().tolist(), V.b.tolist()
    ([1.5, 1.5, 1.5], [1.0])
    >>> np.zeros_like(V).C.any()
    np.False_
    """

    __array_ufunc__ = None  # ndarray + RowArray defers to RowArray.__radd__

    def __init__(self, problem, C, b):
        self.problem = problem
        self.C = np.asarray(C, dtype=np.float64)
        self.b = np.asarray(b, dtype=np.float64)
        self._parts = None

    def __mul__(self, a):
        if not isinstance(a, numbers.Real):
            return NotImplemented
        return RowArray(self.problem, a * self.C, a * self.b)

    __rmul__ = __mul__

    def __add__(self, other):
        if isinstance(other, RowArray):
            return RowArray(self.problem, self.C + other.C, self.b + other.b)
        if isinstance(other, (numbers.Real, np.ndarray)):  # a constant per output
            return RowArray(self.problem, self.C, self.b + other)
        return NotImplemented

    __radd__ = __add__

    def __array_function__(self, func, types, args, kwargs):
        if func is np.zeros_like:
            return RowArray(self.problem, np.zeros_like(self.C), np.zeros_like(self.b))
        return NotImplemented

    def values(self):
        """The outputs' partitions on the workers (futures), computed on the first call."""
        if self._parts is None:
            self._parts = self.problem._each(_raw, self.C, self.b)
        return self._parts


class DistributedProblem(Problem):
    """:class:`~onlinekernel.solvers.Problem` with its rows partitioned over dask workers.

    Parameters
    ----------
    client : distributed.Client
    parts : list of (X, y, w) futures
        The row partitions, in order: inputs (in the model's precision),
        labels or targets as given, non-negative weights.
    encode : callable
        Labels or targets of a partition -> the loss's ``(rows, K)`` targets
        (runs on the workers; must pickle).
    n_rows : int
    weight_total : float
        The sum of the weights (each partition normalises by it).
    fmap, seed, n_blocks : the model's features (``M = n_blocks * F``).
    loss, alpha, fit_intercept, n_outputs : as :class:`Problem`'s.
    max_bytes : int
        The feature memory of one partition: each keeps its features when
        they fit (else regenerates them on every product).
    dtype : the features' precision.
    tol : float, optional
        The solver's tolerance (:class:`FeatureOperator`'s ``tol``).

    Attributes
    ----------
    traffic : dict
        ``{"sent": bytes, "received": bytes, "tasks": int}``: the bytes of
        the arrays in the submitted tasks' arguments and in the results
        gathered to the client, counted since construction.
    """

    samples_rows = False

    def __init__(self, client, parts, encode, n_rows, weight_total, fmap, seed, n_blocks, loss,
                 alpha, fit_intercept, n_outputs, max_bytes, dtype, tol=None):
        self.client = client
        self.loss = loss
        self.K = int(n_outputs)
        self.M = int(n_blocks) * fmap.n_components
        self.lam = float(alpha) * self.M
        self.fit_intercept = bool(fit_intercept)
        self.traffic = {"sent": 0, "received": 0, "tasks": 0}
        # the map's factor, to finish the partitions' sums over B; the precision
        # asked for (a partition keeping B in float64 instead rounds less)
        factor = getattr(fmap, "linear_factor", None)
        self._factor = factor(int(seed), int(n_blocks)) if factor is not None else None
        self._dtype = np.dtype(dtype)
        from distributed import wait
        wait([f for part in parts for f in part])
        who = client.who_has([f for part in parts for f in part])
        workers = sorted(client.scheduler_info()["workers"])
        self._workers = []
        for i, (X, _, _) in enumerate(parts):
            held = who.get(X.key) or ()
            self._workers.append(held[0] if held else workers[i % len(workers)])
        self._parts = [
            self._submit(i, _Partition, X, y, w, encode, float(weight_total), fmap, int(seed),
                         int(n_blocks), int(max_bytes), dtype, loss, tol)
            for i, (X, y, w) in enumerate(parts)]
        self.features = _Features(self, (int(n_rows), self.M))

    # tasks: pinned to the partition's worker, so rows and features never move
    def _submit(self, i, fn, *args):
        self.traffic["tasks"] += 1
        self.traffic["sent"] += sum(_nbytes(a) for a in args)
        return self.client.submit(fn, *args, workers=[self._workers[i]],
                                  allow_other_workers=False, pure=False)

    def _gather(self, futures):
        results = self.client.gather(futures)
        self.traffic["received"] += sum(_nbytes(r) for r in results)
        return results

    def _each(self, fn, *args, rows=()):
        """Submit ``fn(partition, *row_args, *args)`` on every partition (futures)."""
        return [self._submit(i, fn, part, *(r[i] for r in rows), *args)
                for i, part in enumerate(self._parts)]

    @staticmethod
    def _sum(results):
        """Partition results added in partition order (deterministic)."""
        return functools.reduce(lambda a, b: tuple(x + y for x, y in zip(a, b)), results)

    def raw(self, C, b):
        return RowArray(self, np.array(C, dtype=np.float64), np.array(b, dtype=np.float64))

    def value(self, C, U):
        risk = sum(self._gather(self._each(_value, rows=(U.values(),))))
        return risk + 0.5 * self.lam * float(np.einsum("ij,ij->", C, C))

    def gradient(self, C, U):
        gC, gb = self._sum(self._gather(self._each(_gradient, rows=(U.values(),))))
        return gC + self.lam * C, (gb if self.fit_intercept else np.zeros(self.K))

    def hessian_product(self, U, VC, vb, outputs=False):
        V = self.raw(VC, vb if self.fit_intercept else np.zeros(self.K))
        hC, hb = self._sum(self._gather(self._each(_hessian, V.C, V.b, rows=(U.values(),))))
        hC = hC + self.lam * VC
        hb = hb if self.fit_intercept else np.zeros(self.K)
        return (hC, hb, V) if outputs else (hC, hb)

    def constant_terms(self, b):
        value, grad, hess = self._sum(self._gather(
            self._each(_constant_terms, np.asarray(b, dtype=np.float64))))
        return float(value), grad, hess

    def curvature_weights(self):
        # the per-row curvatures live on the workers; the solvers that need them
        # (Cholesky's n < M path) only run on kept features, which this never has
        raise ValueError("a distributed problem keeps its rows on the workers and gives "
                         "only sums over them: normal_equations, not per-row curvatures")

    def normal_equations(self, tol=None):
        # a factored map's partitions add up B's terms, finished on the client where
        # the whole matrix's rounding reaches tol (FeatureOperator.gram's rule; its
        # check holds the sum against the penalty, not a partition's term); each
        # partition whitens its own rows otherwise
        factor = self._factor
        if tol is not None and factor is not None and not self.keep_normal_equations:
            weight = sum(self._gather(self._each(_curvature_total, self.K)))
            if factored_gram_may_reach(factor, self._dtype, weight, self.lam, tol):
                A, s, h, PtG, gb, risk0, spread = self._sum(self._gather(
                    self._each(_factored_normal_terms, self.fit_intercept, self.K)))
                done = factored_gram(factor, self._dtype, A, s, PtG, spread, self.lam, tol)
                if done is not None:
                    A, s, gC = done
                    return A, s, (float(h) if self.fit_intercept else 0.0), gC, gb, \
                        float(risk0)
        A, s, h, gC, gb, risk0 = self._sum(self._gather(
            self._each(_normal_equations, self.fit_intercept, self.K)))
        return A, s, (float(h) if self.fit_intercept else 0.0), gC, gb, float(risk0)

    def close(self):
        """Release the partitions on the workers."""
        if self._parts:
            self.client.gather(self._each(_close))
            self._parts = []


class _Features:
    """The ``features`` of a distributed problem as the solvers read them.

    Its shape, ``cached = False`` (no row-level access) and ``matvec``,
    whose ``Phi C`` is a :class:`RowArray` on the workers.
    """
    cached = False

    def __init__(self, problem, shape):
        self.problem = problem
        self.shape = shape

    def matvec(self, C):
        return self.problem.raw(C, np.zeros(self.problem.K))


# --------------------------------------------------------------------------- #
# estimators
# --------------------------------------------------------------------------- #
def _as_array(x, name, ndim):
    """A dask collection (or None) as a dask array with known chunk sizes."""
    import dask.array as da
    import dask.dataframe as dd
    if x is None:
        return None
    if isinstance(x, (dd.DataFrame, dd.Series)):
        x = x.to_dask_array(lengths=True)
    elif not isinstance(x, da.Array):
        if is_dask_collection(x):
            raise TypeError(f"{name} is a {type(x).__name__}: give a dask array or dataframe")
        x = da.from_array(np.asarray(x))
    if x.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {x.shape}")
    if any(np.isnan(c) for c in x.chunks[0]):
        x = x.compute_chunk_sizes()
    return x


def _target_scaling(y, w, total):
    """``(mean, scale)`` of real targets weighted by ``w``, as ``_standardize_targets`` has them."""
    import dask
    mean = float(dask.compute((w * y).sum())[0]) / total
    std = float(np.sqrt(float(dask.compute((w * (y - mean) ** 2).sum())[0]) / total))
    scale = std if std > 0 and np.isfinite(std) else max(abs(mean), 1.0)
    if not (np.isfinite(mean) and np.isfinite(scale)):
        raise ValueError(f"the targets overflow: their mean or standard deviation is not "
                         f"finite (mean {mean}, std {std})")
    return mean, scale


def _standardised(encode, mean, scale, y):
    return (encode(y) - mean) / scale


def fit(est, X, y, sample_weight=None):
    """``est.fit(X, y, sample_weight)`` for dask collections (see the module docstring)."""
    import dask
    import dask.array as da
    client = _get_client()
    if client is None:  # no cluster: in memory, as numpy
        X, y, sample_weight = dask.compute(X, y, sample_weight)
        return est._fit(X, y, sample_weight)
    est._validate_params()
    if not hasattr(est, "_dask_targets"):
        raise TypeError(f"{type(est).__name__} does not fit dask collections on a cluster "
                        f"(DSGClassifier and DSGRegressor do); compute them first, or train "
                        f"by partial_fit")
    if est.solver == "sgd":
        raise ValueError("solver='sgd' steps through mini-batches in sequence and does not run "
                         "distributed: choose a batch solver (" + ", ".join(DISTRIBUTED_SOLVERS)
                         + ") or call partial_fit, which takes the partitions in order")
    warm = est.warm_start and hasattr(est, "_coef")
    dt = est._model_dtype()
    X = _as_array(X, "X", 2)
    y = _as_array(y, "y", 1)
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows, y has {y.shape[0]}")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"X has shape {X.shape}: there is nothing to fit")
    if X.dtype.kind not in "biuf":
        raise ValueError(f"X must be numeric, got dtype {X.dtype}")
    if warm and X.shape[1] != est.n_features_in_:
        raise ValueError(f"X has {X.shape[1]} features, but {type(est).__name__} is "
                         f"expecting {est.n_features_in_} features as input")
    X = X.astype(dt).rechunk({1: -1})
    y = y.rechunk((X.chunks[0],))
    w = (da.ones(X.shape[0], chunks=(X.chunks[0],)) if sample_weight is None
         else _as_array(sample_weight, "sample_weight", 1).astype(np.float64)
         .rechunk((X.chunks[0],)))
    scaling = est._input_scaling()
    if scaling is not None:
        if X.shape[1] != scaling[0].shape[0]:
            raise ValueError(f"X has {X.shape[1]} features, input_scaling has "
                             f"{scaling[0].shape[0]} columns")
        X = ((X - scaling[0]) / scaling[1]).astype(dt)
    X, y, w = client.persist([X, y, w])
    finite, w_ok, total, kept = dask.compute(da.isfinite(X).all(),
                                             (da.isfinite(w) & (w >= 0)).all(), w.sum(),
                                             (w > 0).sum())
    if not finite:
        raise ValueError("Input X contains NaN or infinity")
    if not w_ok:
        raise ValueError("sample_weight must be finite and non-negative")
    if not kept:
        raise ValueError("sample_weight is zero for every row: there is nothing to fit")
    loss, encode, K = est._dask_targets(y, fitting=not warm)
    with est._training(None if warm else est._new_state(X, K, loss, w)) as state:
        if getattr(est, "normalize_y", False) and (not warm or "_y_scale" in state):
            if not warm:
                state["_y_mean"], state["_y_scale"] = _target_scaling(y, w, float(total))
            encode = functools.partial(_standardised, encode, state["_y_mean"], state["_y_scale"])
        est._record_penalty(state)  # alpha="auto" runs no path here: its fallback
        rows = max(X.chunks[0])  # what one worker holds: the memory rule is per partition
        solver = est._resolve_solver(state, rows, K)
        if solver not in DISTRIBUTED_SOLVERS:
            raise ValueError(f"solver {solver!r} (from solver={est.solver!r}) does not run "
                             f"distributed; a fit on a dask cluster runs "
                             f"{', '.join(DISTRIBUTED_SOLVERS)} (set solver), or call partial_fit")
        from onlinekernel.losses.base import as_cy_loss
        from onlinekernel.solvers import feature_dtype, rounding_gain, solver_memory
        nb = est._budget_blocks(K)
        fmap = state["feature_map_"]
        M = nb * fmap.n_components
        # a partition's features may take what the solver's other arrays leave
        room = est.max_memory - solver_memory(solver, rows, M, K, 0)
        gain = rounding_gain(fmap, state["seed_"], nb, est.tol)
        parts = [tuple(client.compute(list(p))) for p in zip(
            X.to_delayed().ravel(), y.to_delayed().ravel(), w.to_delayed().ravel())]
        problem = DistributedProblem(client, parts, encode, X.shape[0], float(total), fmap,
                                     state["seed_"], nb, as_cy_loss(est._train_loss(state)),
                                     est._penalty(state), est._fits_intercept(), K, max(room, 0),
                                     feature_dtype(solver, dt, est.tol, gain), est.tol)
        try:
            est._solve_batch(state, solver, problem, int(kept))
        finally:
            problem.close()
        state["solver_"] = solver
        est._stage(n_features_in_=X.shape[1])
        est.__dict__.pop("feature_names_in_", None)
    return est


def _partitions(X, y, sample_weight):
    """``(X, y, sample_weight)`` partition by partition, in order, as numpy."""
    import dask
    X = _as_array(X, "X", 2).rechunk({1: -1})
    y = _as_array(y, "y", 1).rechunk((X.chunks[0],))
    w = (None if sample_weight is None else
         _as_array(sample_weight, "sample_weight", 1).rechunk((X.chunks[0],)))
    xs, ys = X.to_delayed().ravel(), y.to_delayed().ravel()
    ws = [None] * len(xs) if w is None else w.to_delayed().ravel()
    for xi, yi, wi in zip(xs, ys, ws):
        yield dask.compute(xi, yi, wi)


def partial_fit(est, X, y, sample_weight=None, **kwargs):
    """``est.partial_fit`` on each partition in order (the caller makes it one transaction)."""
    for Xi, yi, wi in _partitions(X, y, sample_weight):
        if Xi.shape[0]:
            est._partial_fit(Xi, yi, wi, **kwargs)
    return est


def unique_labels(y):
    """The sorted labels of a dask collection ``y``, found on the workers."""
    import dask.array as da
    return da.unique(_as_array(y, "y", 1)).compute()


def _apply(est, name, block):
    return getattr(est, name)(block)


def map_rows(est, name, X):
    """``est.<name>(X)`` partition by partition, as a dask array."""
    X = _as_array(X, "X", 2).rechunk({1: -1})
    # the output's trailing shape and dtype, from one row of zeros (no data read)
    probe = np.asarray(getattr(est, name)(np.zeros((1, X.shape[1]))))
    method = functools.partial(_apply, est, name)
    if probe.ndim == 1:
        return X.map_blocks(method, drop_axis=1, dtype=probe.dtype,
                            meta=np.empty((0,), dtype=probe.dtype))
    return X.map_blocks(method, chunks=(X.chunks[0], probe.shape[1:]), dtype=probe.dtype,
                        meta=np.empty((0, 0), dtype=probe.dtype))
