"""Machinery shared by the DSG estimators: parameters, state, fit and partial_fit.

The learned state of a model is its configuration, a 64-bit seed, the
coefficient matrix ``_coef`` (one row per random feature, one column per
output) with its global ``_scale``, the intercept, the running averages of
both when ``average`` is on, and the step counters.  A training call
resolves its parameters once into a :class:`TrainConfig`; the compiled
steps update a :class:`~onlinekernel.solvers.dsg.ModelState` made from (and
written back to) these attributes by ``model_state`` and
``publish_model_state``.  Every update is transactional
(``BaseDSG._training``): inputs are validated first and training runs on a
copy of the state that replaces the old one only on success, so a failed
call leaves the model exactly as it was.  The settings an estimator's
constructor may not take (reuse, forgetting, ...) are resolved in one place,
``BaseDSG._setting``.
"""
import collections
import copy
import dataclasses
import functools
import inspect
import math
import numbers
import operator
import os
import sys
import threading
import typing
import warnings
import weakref

import numpy as np
import scipy.sparse as sp
from joblib import effective_n_jobs
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from onlinekernel import registry
from onlinekernel.io import modelfile
from onlinekernel.integrations import dask as _dask
from onlinekernel.featuremaps.base import CyFeatureMap, as_cy_feature_map
from onlinekernel.losses.base import CyLoss, as_cy_loss
from onlinekernel.core.progress import Progress, check_verbose
from onlinekernel.core.streams import words
from onlinekernel.core.threads import train_lock
from onlinekernel.solvers.reuse import MODES as _REUSE_MODES, Reuse
from onlinekernel.solvers.schedules import SCHEDULES, step_sizes
from onlinekernel.core.splits import content_split
from onlinekernel.estimators import _docs
from onlinekernel.estimators._constraints import Bool, Int, Options, Real
from onlinekernel.estimators._constraints import check_int as _check_int
from onlinekernel.estimators._constraints import check_real as _check_real
from onlinekernel.solvers.dsg import BlockSource, ModelState, StepPlan, block_features, \
    predict_raw, train_steps
from onlinekernel.featuremaps import MAX_BLOCK_SIZE, FeatureMap
from onlinekernel.losses import Loss
from onlinekernel.solvers import (
    BATCH_SOLVERS, SOLVERS, FeatureOperator, Problem, choose_solver, feature_dtype, feature_room,
    rounding_gain, solver_memory)
from onlinekernel.solvers.features import as_rows
from onlinekernel.solvers.eigenpro import EigenPro, Iterate, max_curvature

# Blocks of the seed's stream space reserved for shuffling (far above any
# feature block a model can reach), and the stream that splits off the
# early-stopping validation rows next to them.
_SHUFFLE_BLOCK = 1 << 62
_SPLIT_BLOCK = _SHUFFLE_BLOCK - 1
# The ridge of precondition=True, relative to the features' unit second moment
# (measured on ijcnn1, letter and covtype; see the DSGClassifier docstring).
_DEFAULT_RIDGE = 1.0
# alpha="auto": the penalties tried, strongest first so each solve starts
# from the last (they do not scale with the number of rows: a weight of w
# must stay w copies of the row); and the penalty where no path runs (SGD,
# partial_fit, Dask, too few rows to hold some out).
_ALPHA_PATH = 10.0 ** -np.arange(2.0, 11.0)
_ALPHA_PATH_PATIENCE = 1  # penalties tried past the best before the path stops
_ALPHA_PATH_TOL = 1e-3  # the loosest tol of the path's solves
# Rows the path trains on at most: beyond, a content-chosen subsample, whose
# penalty is carried to all rows as an SVM's C is (alpha times n is kept).
_ALPHA_PATH_ROWS = 10_000
_AUTO_ALPHA = 1e-6
# gamma="auto": multiples of the "scale" bandwidth tried (see _gamma_path), on
# a small model of this many blocks, trained on at most this many rows and
# scored on at most this many of a quarter held out.  Measured with
# benchmarks/quality.py (full training sets): cpusmall picks 0.25x (RMSE
# 3.59 -> 3.03), protein 4x (4.48 -> 4.19), energy_heating 0.0625x.
_GAMMA_PATH = 2.0 ** np.arange(-4.0, 5.0)
_GAMMA_PATH_BLOCKS = 4
_GAMMA_PATH_ROWS = 4_000
_GAMMA_PATH_VALIDATION = 2_000
_GAMMA_PATH_HELD_OUT = 0.25
# at most, on sets of half of _GAMMA_PATH_ROWS or fewer rows (concrete, 824
# rows: one split picks 1x "scale", RMSE 5.17; two, three or four pick 0.5x,
# 5.11; each split adds the path's cost again)
_GAMMA_PATH_SPLITS = 2
_PRECONDITIONS = ("auto", "eigenpro")
# EigenPro (precondition="eigenpro"): the directions corrected and the rows
# the spectrum is estimated from (Ma & Belkin's defaults: k = 160, s = 2000 or so);
# the rows are drawn by the seed from a Philox block of their own
_EIGENPRO_K = 160
_EIGENPRO_ROWS = 2000
_EIGENPRO_BLOCK = _SPLIT_BLOCK - 1
# average="polynomial": polynomial-decay averaging (Shamir & Zhang 2013), the
# n-th averaged iterate weighted (1 + eta) / (n + eta): after t steps, step s
# weighs about (s / t)^eta, so the early, large ones fade as the run goes on
# (their eta = 3; eta = 10 did as well, measured by one pass of partial_fit)
POLYNOMIAL_DECAY = 3.0
# State that only some models have (target scaling, EigenPro's preconditioner):
# copied when present, never replaced by arrays (they do not change once set)
_OPTIONAL_STATE = ("_y_mean", "_y_scale", "_eig_vectors", "_eig_values", "_eig_step",
                   "_eig_level", "_clock_start")
# What a drift reaction does to the model (see ``BaseDSG.react_to_drift``)
DRIFT_REACTIONS = ("reset_step", "shrink", "regrow")
# The factor of drift_reaction="shrink" (measured in benchmarks/drift.py)
_DRIFT_SHRINK = 0.5
# Parameters that shape the features or the targets: a model keeps those it
# was built with, and continuing it (partial_fit, fit with warm_start) after
# set_params changed one raises rather than ignoring the change.
# (dtype is not one: a changed dtype converts the fitted model; nor is the
# one-class nu, which applies from the next step.)
_BUILD_PARAMS = ("loss", "loss_params", "kernel", "kernel_params", "gamma", "degree", "coef0",
                 "block_size", "normalize_y", "quantiles", "input_scaling", "activation",
                 "bias")
# Fitted attributes that make up the learned state.
_STATE = ("_coef", "_scale", "_intercept", "n_blocks_", "t_", "samples_seen_", "n_epochs_seen_",
          "_coef_avg", "_intercept_avg", "n_averaged_")
_AVERAGES = ("_coef_avg", "_intercept_avg")


_DTYPES = {"float64": np.dtype(np.float64), "float32": np.dtype(np.float32)}


def check_dtype(value):
    """The numpy dtype of a ``dtype`` parameter: "float32" or "float64" (or their numpy types)."""
    if type(value) is str and value in _DTYPES:  # the usual spelling: a look-up (every call)
        return _DTYPES[value]
    try:
        dt = np.dtype(value)
    except TypeError:
        dt = None
    if dt is None or value is None or isinstance(value, bool) or dt not in _DTYPES.values():
        raise ValueError(f"dtype must be 'float32' or 'float64', got {value!r}")
    return dt


def check_n_jobs(value):
    """Number of threads of an ``n_jobs`` parameter (None: 1; -1: every core).

    The one place ``n_jobs`` is checked and resolved; the compiled loops take
    the resolved count.  Negative values count back from joblib's number of
    usable cores (-2: all but one), as scikit-learn does.
    """
    if value is not None and (not isinstance(value, numbers.Integral) or isinstance(value, bool)
                              or value == 0):
        raise ValueError(f"n_jobs must be None or a non-zero integer (-1: all cores), "
                         f"got {value!r}")
    if value is None:  # 1 even inside a joblib backend context, as before
        return 1
    return max(1, effective_n_jobs(int(value)))


def seed_of(random_state):
    """The model's 64-bit seed ``seed_``, drawn from a ``random_state`` parameter.

    Two 32-bit draws of scikit-learn's ``check_random_state``: an integer
    gives the same seed on every machine, ``None`` a fresh one.

    >>> seed_of(0) == seed_of(0)
    True
    """
    hi, lo = check_random_state(random_state).randint(0, 2 ** 32, size=2, dtype=np.uint64)
    return int((int(hi) << 32) | int(lo))


def scale_gamma(X, sample_weight=None):
    """``gamma="scale"``: ``1 / (d Var X)``, the variance of X's entries (weighted
    rows; 1.0 for constant X), as scikit-learn's SVC.

    >>> scale_gamma(np.array([[0.0, 2.0], [2.0, 0.0]]))
    0.5
    """
    var = _entry_variance(X, sample_weight)
    if not np.isfinite(var):
        raise ValueError(f"gamma='scale' needs the variance of X, which overflows "
                         f"(|X| up to {float(abs(X).max()):.3g}): standardise "
                         f"the inputs or give gamma as a number")
    return 1.0 / (X.shape[1] * var) if var > 0 else 1.0


def check_sample_weight(sample_weight, X):
    """``sample_weight`` as a float64 weight per row of ``X`` (ones when None).

    The one check of the weights: scikit-learn's (length, NaN, infinity,
    sign), with a negative weight reported in this package's words.
    """
    try:
        return _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
    except ValueError as exc:
        if "Negative values" in str(exc):
            raise ValueError("sample_weight must be finite and non-negative") from None
        raise


def real_targets(estimator, y, fitting, classes=None):
    """``(loss, Y, 1)`` for real targets: a model's ``_prepare_targets`` (see ``BaseDSG``).

    The loss is resolved when a new model is fitted, else the fitted one;
    ``Y`` is ``y`` as a float64 column.
    """
    loss = estimator._resolve_base_loss() if fitting else estimator.loss_
    try:
        y = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"y must be numeric for {type(estimator).__name__}: {exc}") from None
    return loss, np.ascontiguousarray(y[:, None]), 1


def model_outputs(state, X, n_jobs=None, intercept=True, keep=None):
    """Raw outputs ``f(X)`` of the model held in ``state`` (a fitted estimator's dict).

    Uses the averaged coefficients when averaging is on; ``X`` is converted to
    the model's precision.  ``intercept=False`` leaves the intercept out.
    ``keep``: where :func:`~onlinekernel.solvers.dsg.predict_raw` writes the
    rows' features (see :func:`_keepable`).
    """
    if state["n_averaged_"]:
        coef, scale, b = state["_coef_avg"], 1.0, state["_intercept_avg"]
    else:
        coef, scale, b = state["_coef"], state["_scale"], state["_intercept"]
    if not intercept:
        b = np.zeros_like(b)
    X = as_rows(X, coef.dtype)
    factor = _linear_factor(state)
    if factor is not None:
        out = _factored_outputs(factor, X, coef, scale, b)
    else:
        out = predict_raw(state["_blocks"], X, coef, state["n_blocks_"], scale, b,
                          check_n_jobs(n_jobs), keep=keep)
    bad = ~np.isfinite(out).all(axis=1)
    if bad.any():
        # finite inputs whose features overflow (1e200 in an arc-cosine map, say)
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"row {i} of X gives a non-finite output (its largest |value| is "
                         f"{float(abs(X[i]).max()) if X.shape[1] else 0.0:.3g}): the "
                         f"{_map_name(state['feature_map_'])} features overflow on it; "
                         f"bring the inputs to the scale the model was trained on")
    return out


# The last one-row prediction of each estimator, with the row's features: a
# stream predicts each row and then learns it (test-then-train), and the
# training step starts from the same outputs and features (``_shared_half``).
# Kept outside the instance, like ``_validated``: never pickled or cloned.
_last_row = weakref.WeakKeyDictionary()
_RowHalf = collections.namedtuple("_RowHalf", "coef intercept scale n_blocks row outputs features")


# One row's weight and order, read-only: a one-row partial_fit's (numpy's ones and
# arange cost more than the rest of the call's bookkeeping).
_ONE_WEIGHT = np.ones(1)
_ONE_ORDER = np.zeros(1, dtype=np.int64)
_ONE_WEIGHT.flags.writeable = _ONE_ORDER.flags.writeable = False


def _unit_rows(n):
    """Unit weights and the identity order of ``n`` rows (shared read-only arrays for one)."""
    if n == 1:
        return _ONE_WEIGHT, _ONE_ORDER
    return np.ones(n), np.arange(n, dtype=np.int64)


def _keepable(state, X):
    """Room for the features of the one row ``X`` when a training step could take them, or None.

    A step starts from a prediction's outputs and features when both are the
    same computation (:func:`~onlinekernel.solvers.dsg.train_steps`): one dense
    row, a float64 model predicting with its iterate (not an average) through
    its blocks (not a map's linear factor).
    """
    if (X.shape[0] != 1 or type(X) is not np.ndarray or state["_coef"].dtype != np.float64
            or state["n_averaged_"]
            or getattr(state["feature_map_"], "linear_factor", None) is not None
            or state["feature_map_"].one_hot):  # (its bins cost less than the dense copy)
        return None
    return np.empty((state["n_blocks_"], 1, state["feature_map_"].n_components))


def _remember_row(estimator, state, X, out, keep):
    """Keep the one-row prediction ``out`` (raw, the model's units) for ``_shared_half``."""
    _last_row[estimator] = _RowHalf(state["_coef"], state["_intercept"], state["_scale"],
                                    state["n_blocks_"], X, out, keep)


def _shared_half(estimator, X):
    """``(outputs, features)`` of the one row ``X`` if it was just predicted by the model as it is.

    The model is the published one, unchanged since that prediction: every
    training call publishes new coefficient arrays, so the arrays' identity
    (with the scale and the blocks) says it.  None otherwise.
    """
    memo = _last_row.pop(estimator, None)
    st = estimator.__dict__
    if (memo is None or X.shape[0] != 1 or memo.coef is not st.get("_coef")
            or memo.intercept is not st.get("_intercept") or memo.scale != st.get("_scale")
            or memo.n_blocks != st.get("n_blocks_") or memo.row.shape != X.shape
            or memo.row.tobytes() != X.tobytes()):
        return None
    return memo.outputs, memo.features


#: Bytes of one row tile of a factored map's ``B`` in :func:`_factored_outputs`.
_FACTOR_TILE_BYTES = 1 << 25


def _linear_factor(state):
    """The map's linear factor of the model's blocks (``Phi = B T``), or None."""
    factor = getattr(state["feature_map_"], "linear_factor", None)
    return None if factor is None else factor(state["seed_"], state["n_blocks_"])


def _factored_outputs(factor, X, coef, scale, b):
    """``b + scale * B (T coef)`` by row tiles, for a map with a linear factor.

    The coefficients are carried through ``T`` once, so a row costs
    ``O(m (d + K))`` -- its ``m`` base-kernel values and one product --
    where forming its features ``B T`` block by block costs ``O(M^2)``
    (Nystrom with 4,096 landmarks predicting ijcnn1's 91,701 test rows: 50 s;
    on 10,000 of them 8.9x faster this way).  ``B`` is in the model's
    precision, as in training (a float32 model's kernel values are float32),
    and ``B (T coef)`` is summed in float64.  Rows are computed in tiles of
    :data:`_FACTOR_TILE_BYTES` of ``B``, each by BLAS, so a row's last bits
    may depend on the rows it is predicted with (as they did through the
    blocks' ``B T``).
    """
    v = factor.apply(coef)
    out = np.empty((X.shape[0], v.shape[1]))
    step = max(1, _FACTOR_TILE_BYTES // (8 * max(int(factor.width), 1)))
    for s in range(0, X.shape[0], step):
        out[s:s + step] = np.asarray(factor.base(X[s:s + step], coef.dtype),
                                     dtype=np.float64) @ v
    return b + scale * out


def _map_name(fmap):
    return getattr(fmap, "name", None) or type(fmap).__name__


def _check_forgetting(name, f):
    if not (isinstance(f, numbers.Real) and not isinstance(f, bool) and 0.0 <= f < 1.0):
        raise ValueError(f"{name} must be a number in [0, 1) (the fraction of the "
                         f"coefficients forgotten per row), got {f!r}")


def _check_fraction(name, value):
    _check_real(name, value, 0.0, strict=True)
    if not value < 1.0:
        raise ValueError(f"{name} must be in (0, 1), got {value!r}")


def _check_dict(name, value):
    if value is not None and not isinstance(value, dict):
        raise ValueError(f"{name} must be a dict or None, got {type(value).__name__}")


def _check_average(name, value):
    if isinstance(value, str):
        if value != "polynomial":
            raise ValueError(f"{name} must be a bool, a step count or 'polynomial', "
                             f"got {value!r}")
    elif not isinstance(value, (bool, np.bool_)):
        _check_int(name, value, 0)


def _check_schedule(name, sched):
    if not (isinstance(sched, (tuple, list)) and len(sched) == 2
            and all(isinstance(v, numbers.Integral) and not isinstance(v, bool)
                    for v in sched) and sched[0] >= 1 and sched[1] >= 0):
        raise ValueError(f"{name} must be a pair (G, U) of integers, G >= 1 new-block "
                         f"steps then U >= 0 reuse steps, got {sched!r}")


def _check_precondition(name, pre):
    if not (isinstance(pre, (bool, np.bool_)) or (isinstance(pre, str) and pre in _PRECONDITIONS)
            or (isinstance(pre, numbers.Real) and np.isfinite(pre) and pre > 0)):
        raise ValueError(f"{name} must be 'auto', 'eigenpro', True, False or a "
                         f"ridge > 0, got {pre!r}")


def _check_random_state(name, rs):
    if not (rs is None or isinstance(rs, np.random.RandomState)
            or (isinstance(rs, numbers.Integral) and 0 <= rs < 2 ** 32)):
        raise ValueError(f"{name} must be None, an integer in [0, 2**32) or a "
                         f"numpy RandomState, got {rs!r}")


def input_scaling_pair(given):
    """An ``input_scaling`` parameter as float64 ``(mean, scale)`` arrays, or None."""
    if given is None:
        return None
    try:
        mean, scale = (np.asarray(v, dtype=np.float64) for v in given)
    except (TypeError, ValueError):
        raise ValueError(f"input_scaling must be None or a pair (mean, scale) of "
                         f"per-column numbers, got {given!r}") from None
    if not (mean.ndim == scale.ndim == 1 and mean.shape == scale.shape and mean.size
            and np.isfinite(mean).all() and np.isfinite(scale).all()
            and (scale > 0).all()):
        raise ValueError("input_scaling must be a pair (mean, scale) of equal-length "
                         "1-d arrays of finite numbers, scale > 0")
    return mean, scale


def plain_rows(X, state, n_features, dtype):
    """``X`` as rows for a fitted model when it is a plain numpy input, or None.

    Streaming services train and predict one row at a time, where
    scikit-learn's input validation costs far more than the arithmetic.  A
    2-d float ndarray of ``n_features`` columns with finite values, for a
    model (its attributes ``state``) fitted without feature names, is
    checked here directly with the outcome of ``validate_data`` (converted to
    ``dtype``, C-contiguous); anything else -- and any input that fails a
    check -- returns None and takes the full validation, which names the
    problem.

    Examples
    --------
    >>> plain_rows(np.ones((1, 2), np.float32), {}, 2, np.float64).dtype
    dtype('float64')
    >>> plain_rows(np.array([[1.0, np.nan]]), {}, 2, np.float64) is None
    True
    >>> plain_rows([[1.0, 2.0]], {}, 2, np.float64) is None  # a list: full validation
    True
    """
    if type(X) is not np.ndarray or "feature_names_in_" in state:
        return None
    if X.ndim != 2 or X.shape[0] < 1 or X.dtype.kind != "f" or X.shape[1] != n_features:
        return None
    X = np.ascontiguousarray(X, dtype=dtype)
    return X if np.isfinite(X).all() else None


def _same(a, b):
    if a is b:
        return True
    if isinstance(a, (tuple, list)) and type(a) is type(b):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
                and np.array_equal(a, b))
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:
        return False


@dataclasses.dataclass(frozen=True)
class Stopping:
    """When ``fit`` stops its SGD epochs (see ``BaseDSG._fit_sgd``)."""
    max_iter: int
    tol: float = None
    n_iter_no_change: int = 5
    early_stopping: bool = False
    validation_fraction: float = 0.1


class TrainConfig(typing.NamedTuple):
    """How a training call steps, resolved once from the estimator's parameters.

    Built by ``BaseDSG._train_config`` at the start of the steps of a call;
    the code below it reads this, never the parameters again, so an
    estimator that trains differently (fixed features: their own batch size
    and budget, constant steps) builds a different configuration.  A named
    tuple (immutable) rather than a frozen dataclass: it is built at every
    ``partial_fit``, where a frozen dataclass's construction costs 7 times more.
    """
    batch_size: int
    max_blocks: int = None  # the feature budget in blocks (None: unbounded)
    learning_rate: str = "inverse"
    eta0: float = 1.0
    t0: float = 1.0
    eta_min: float = 0.0
    forgetting: float = 0.0
    fit_intercept: bool = True
    average_start: int = -1  # first averaged step minus one (-1: no averaging)
    average_decay: float = 0.0  # polynomial-decay averaging's eta (0: the plain mean)
    n_jobs: int = 1  # threads, resolved
    reuse: str = "all"
    reuse_schedule: tuple = (1, 0)
    ridge: float = 0.0  # the preconditioning ridge (0: none)
    projection: bool = False
    eigenpro: bool = False


def model_state(state):
    """The :class:`ModelState` of the learned arrays in ``state`` (the arrays themselves)."""
    return ModelState(state["_blocks"], state["_coef"], state["_intercept"], state["_scale"],
                      state["_coef_avg"], state["_intercept_avg"], state["n_blocks_"],
                      state["t_"], state["n_averaged_"])


def publish_model_state(model, state):
    """Write ``model`` (a :class:`ModelState`) back into ``state`` under the fitted names."""
    state["_coef"], state["_coef_avg"] = model.coef, model.coef_avg
    state["_intercept"], state["_intercept_avg"] = model.intercept, model.intercept_avg
    state["_scale"] = float(model.scale)
    state["n_blocks_"] = int(model.n_blocks)
    state["t_"] = int(model.t)
    state["n_averaged_"] = int(model.n_averaged)


def _weighted_sum(w, v):
    """``sum_i w_i v_i`` (over axis 0) in numpy's summation order, the same on every CPU.

    Not ``w @ v``: BLAS's dot sums in an order that depends on the CPU, and
    these sums decide a seeded model's training (target scaling, stopping).
    """
    return np.sum(w * v if v.ndim == 1 else w[:, None] * v, axis=0)


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _warn_caller(message, category):
    """Warn, attributing the warning to the first caller outside onlinekernel."""
    level, frame = 2, sys._getframe(1)  # 2: the caller of this function
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        level, frame = level + 1, frame.f_back
    warnings.warn(message, category, stacklevel=level)


def _entry_variance(X, sample_weight=None):
    """The variance of X's entries (zeros of a sparse X included), rows weighted.

    A weight counts as repeated rows; this is what ``gamma="scale"`` divides by.
    """
    n, d = X.shape
    if n * d == 0:
        return 0.0
    if _dask.is_dask_collection(X):  # summed where the rows are, in two passes
        import dask
        w = 1.0 if sample_weight is None else sample_weight[:, None]
        total = float(d * (X.shape[0] if sample_weight is None else
                           dask.compute(sample_weight.sum())[0]))
        mean = float(dask.compute((w * X).sum())[0]) / total
        return float(dask.compute((w * (X - mean) ** 2).sum())[0]) / total
    if not sp.issparse(X):
        if sample_weight is None:
            return float(X.var())
        w = np.repeat(sample_weight, d)
        mean = np.average(X.ravel(), weights=w)
        return float(np.average((X.ravel() - mean) ** 2, weights=w))
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    total = d * w.sum()
    data = X.data.astype(np.float64)
    mean = float(w @ np.asarray(X.sum(axis=1), dtype=np.float64).ravel()) / total
    rows = np.repeat(np.arange(n), np.diff(X.indptr))
    # E[(x - mean)^2] over every entry: the stored ones, and the zeros at mean^2
    stored = float(np.sum(w[rows] * (data - mean) ** 2))
    zeros = (total - float(w[rows].sum())) * mean ** 2
    return (stored + zeros) / total


def _check_cache(src, n_blocks, cache_bytes):
    """Warn when the block cache cannot hold the model's blocks (they are then regenerated)."""
    if n_blocks <= src.cache_slots or not src.param_size:
        return
    need = n_blocks * src.param_size * (4 if src.single else 8)
    _warn_caller(f"the block cache (cache_bytes={cache_bytes:,d}) holds {src.cache_slots} of "
                 f"the model's {n_blocks} feature blocks; the others are regenerated at every "
                 f"use, which can make training several times slower (MNIST, 128 float32 "
                 f"blocks: 5.5x). Set cache_bytes to at least {need:,d} to keep them all",
                 UserWarning)


def _loss_name(loss):
    return repr(getattr(loss, "name", None) or type(loss).__name__)


def _constant_minimiser(loss, Y, w, n_outputs):
    """Per output, the constant raw value ``b`` minimising ``sum_i w_i loss(y_i, b)``.

    Bisection on the weighted gradient sum, which is non-decreasing in ``b``
    for a convex loss (the mean for the squared loss, the weighted quantile
    for the pinball loss); the targets' range brackets it.
    """
    lo = np.full(n_outputs, float(Y.min()) - 1.0)
    hi = np.full(n_outputs, float(Y.max()) + 1.0)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        g = _weighted_sum(w, loss.gradient(Y, np.broadcast_to(mid, (Y.shape[0], n_outputs)).copy()))
        # rounding of a zero sum (a flat stretch of the pinball loss) must not
        # decide the side: one rule whatever the summation order
        below = g < -1e-12
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return 0.5 * (lo + hi)


_validated = weakref.WeakKeyDictionary()
_param_names = {}
_param_getters = {}
_fixed_settings = {}
_PLAIN = (str, int, float, bool, type(None), np.float64, np.int64)


def _plain(value):
    """Whether ``value`` cannot change in place: a number, a string, None or a tuple of them."""
    t = type(value)
    return t in _PLAIN or (t is tuple and all(_plain(v) for v in value))


def _param_values(estimator):
    """The estimator's parameter values, in the order of its parameter names (a tuple)."""
    cls = type(estimator)
    get = _param_getters.get(cls)
    if get is None:
        names = cls._get_param_names()
        get = _param_getters[cls] = (operator.attrgetter(*names) if len(names) > 1
                                     else lambda est: (getattr(est, names[0]),))
    return get(estimator)


def _params_key(values):
    """The parameter types (tuples: their items' types too) and ``values``
    (:func:`_param_values`).

    Two keys are equal only for equal values of the same types (``1``,
    ``1.0`` and ``True`` differ), which for plain values (see ``_plain``)
    means the same parameters.
    """
    types = tuple(map(type, values))
    if tuple in types:
        types += tuple(tuple(map(type, v)) for v in values if type(v) is tuple)
    return types, values  # types first: equal types before values are compared


def _param_defaults(cls):
    """The constructor's default of each parameter of ``cls`` (those that have one)."""
    sig = inspect.signature(cls.__init__)
    return {name: p.default for name, p in sig.parameters.items()
            if name != "self" and p.default is not inspect.Parameter.empty
            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}


def dask_rows(method):
    """Let a prediction method take a dask collection: mapped over its row partitions.

    The result is a dask array with the collection's row chunks (see
    :mod:`onlinekernel.integrations.dask`); other inputs go to ``method`` as they are.
    """
    @functools.wraps(method)
    def wrapper(self, X):
        if _dask.is_dask_collection(X):
            return _dask.map_rows(self, method.__name__, X)
        return method(self, X)
    return wrapper


class _Transaction:
    """The context manager of ``BaseDSG._training`` (see there).

    A class rather than a generator: a one-row ``partial_fit`` opens two of
    them, and a generator's context manager costs a few microseconds more
    each.
    """

    __slots__ = ("est", "state", "publish", "lock", "saved")

    def __init__(self, est, state, publish):
        self.est, self.state, self.publish = est, state, publish

    def __enter__(self):
        est = self.est
        self.lock = lock = train_lock(est)
        lock.acquire()
        self.saved = saved = dict(est.__dict__)
        if not self.publish:
            return None
        try:
            if self.state is None:
                self.state = est._state_copy()
        except BaseException:
            object.__setattr__(est, "__dict__", saved)
            lock.release()
            raise
        return self.state

    def __exit__(self, exc_type, exc, tb):
        est = self.est
        try:
            if exc_type is None:
                if self.publish:
                    est._commit(self.state, self.saved)
                return False
            object.__setattr__(est, "__dict__", self.saved)
            return False
        except BaseException:  # the commit refused the state
            object.__setattr__(est, "__dict__", self.saved)
            raise
        finally:
            self.lock.release()


def transactional(method):
    """Run a public training method as one transaction (``BaseDSG._training``).

    The method's input validation, which sets attributes (``n_features_in_``)
    before the new state exists, runs inside the transaction: a failure puts
    them back too.
    """
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with self._training(publish=False):
            return method(self, *args, **kwargs)
    return wrapper


class BaseDSG(BaseEstimator):
    """Doubly stochastic gradient training of a random-feature kernel machine.

    Subclasses define how targets are encoded (``_prepare_targets``), which
    losses they accept and how raw outputs become predictions.
    """

    # Fitted attributes beyond the common state (the _STATE tuple, loss_,
    # feature_map_, classes_, ...) that a subclass keeps: model files store
    # them (JSON-able values or numeric arrays) and refuse to save others.
    _extra_state = ()

    # The algorithm's value of each setting its constructor does not take (see
    # ``_setting``): the plain budget update, no step floor, no forgetting, no
    # preconditioning or projection.  A subclass that fixes more settings
    # (constant steps, say) extends the dict; a parameter of the constructor
    # always wins over an entry here.
    _FIXED_SETTINGS = {"reuse": "all", "reuse_schedule": (1, 0), "eta_min": 0.0,
                       "forgetting": 0.0, "precondition": False, "projection": False}

    # What each parameter accepts on its own (see _constraints), checked by
    # _validate_params for the parameters of the constructor; subclasses
    # extend the dict.  Rules that depend on the class or on several
    # parameters are in _check_combinations.
    _parameter_constraints = {
        "batch_size": Int(1),
        "block_size": Int(1, high=MAX_BLOCK_SIZE),
        "max_blocks": Int(1, none=True),
        "n_components": Int(1, none=True),
        "max_model_bytes": Int(1, none=True),
        "eta0": Real(0.0, strict=True),
        "t0": Real(0.0, strict=True),
        "eta_min": Real(0.0),
        "forgetting": _check_forgetting,
        "max_memory": Int(0),
        "max_iter": Int(1),
        "tol": Real(0.0, none=True),
        "n_iter_no_change": Int(1),
        "early_stopping": Bool(),
        "validation_fraction": _check_fraction,
        "cache_bytes": Int(0),
        "dtype": lambda name, value: check_dtype(value),
        "n_jobs": lambda name, value: check_n_jobs(value),
        "degree": Int(0),
        "coef0": Real(-np.inf),
        "learning_rate": Options(SCHEDULES, quote=False),
        "kernel_params": _check_dict,
        "loss_params": _check_dict,
        "input_scaling": lambda name, value: input_scaling_pair(value),
        "fit_intercept": Bool(),
        "shuffle": Bool(),
        "warm_start": Bool(),
        "verbose": lambda name, value: check_verbose(value),
        "average": _check_average,
        "reuse": Options(_REUSE_MODES),
        "reuse_schedule": _check_schedule,
        "precondition": _check_precondition,
        "projection": Bool(),
        "random_state": _check_random_state,
    }
    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        modelfile.register_estimator(cls)  # model files may hold it

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # CSR rows go to the maps' sparse products
        return tags

    @classmethod
    def _get_param_names(cls):
        # scikit-learn reads the constructor's signature at every call (get_params,
        # clone, and here every training call): once per class is enough
        names = _param_names.get(cls)
        if names is None:
            names = _param_names[cls] = tuple(super()._get_param_names())
        return list(names)

    @classmethod
    def _fixed_settings(cls):
        """``_FIXED_SETTINGS`` without the parameters the constructor takes (once per class)."""
        fixed = _fixed_settings.get(cls)
        if fixed is None:
            names = set(cls._get_param_names())
            fixed = _fixed_settings[cls] = {k: v for k, v in cls._FIXED_SETTINGS.items()
                                            if k not in names}
        return fixed

    def _setting(self, name):
        """The setting ``name`` of this estimator: the one place it is resolved.

        The parameter when the constructor takes it, else the algorithm's
        fixed value (``_FIXED_SETTINGS``).  The shared training code reads
        the settings of ``_FIXED_SETTINGS`` through here, never as attributes.
        """
        fixed = self._fixed_settings()
        return fixed[name] if name in fixed else getattr(self, name)

    def _settings(self):
        """The settings the shared rules check and the steps run with, resolved.

        ``batch_size`` and ``max_blocks`` (the budget in blocks, None:
        unbounded) as the shared rules read them, and every setting of
        ``_FIXED_SETTINGS`` (see ``_setting``).  Estimators whose sizes are
        resolved per model (the fixed-feature ones) give theirs here.
        """
        settings = {name: self._setting(name) for name in self._FIXED_SETTINGS}
        settings["batch_size"] = self.batch_size
        settings["max_blocks"] = self._budget_blocks()
        return settings

    def _store_params(self, params):
        """Keep the constructor's arguments as given (scikit-learn's convention).

        Each public estimator's ``__init__`` declares its parameters and
        defaults and calls ``self._store_params(locals())`` first thing.
        What an estimator derives instead of taking as a parameter (the loss
        of the quantile or novelty models, say) it returns from ``_loss_spec``,
        ``_penalty`` or ``_fits_intercept``; training reads those methods.
        """
        for name, value in params.items():
            if name != "self":
                setattr(self, name, value)

    # ------------------------------------------------------------------ #
    # parameters
    # ------------------------------------------------------------------ #
    def _check_params(self):
        """``_validate_params``, skipped when the parameters are those it last accepted.

        A stream calls ``partial_fit`` once a row, and validating some 35
        unchanged parameters (registry look-ups included) costs more than a
        one-row step.  The memo holds only plain values (see ``_plain``):
        parameters holding a dict, an array or an object are checked at every
        call.  It lives outside the instance (never pickled or cloned).
        Returns the :class:`TrainConfig` of the checked parameters, which
        depends on them alone and is memoised with them.
        """
        values = _param_values(self)
        memo = _validated.get(self)
        # untouched parameters are the very objects memoised (plain values: immutable)
        if memo is not None and all(map(operator.is_, values, memo[0][1])):
            return memo[1]
        key = _params_key(values)
        if memo is not None and memo[0] == key:
            return memo[1]
        self._validate_params()
        config = self._build_train_config()
        if all(map(_plain, key[1])):
            _validated[self] = (key, config)
        return config

    def check_params(self):
        """Check the parameters now, as every training call does first; return ``self``.

        For a caller that builds a model long before its first training
        call (the command line, the River adapter) and wants a bad name or
        value to fail at once rather than after reading the data.

        Raises
        ------
        ValueError or TypeError
            Naming the parameter and what it accepts.
        """
        self._validate_params()
        return self

    def _validate_params(self):
        """Check every parameter: each on its own (``_parameter_constraints``), then together.

        The one place parameters are checked; training calls run it through
        ``_check_params``, which skips it while the parameters are unchanged
        (a stream's ``partial_fit`` calls).
        """
        constraints = self._parameter_constraints
        for name in self._get_param_names():
            check = constraints.get(name)
            if check is not None:
                check(name, getattr(self, name))
        self._check_combinations()

    def _check_combinations(self):
        """The rules that depend on the class or tie parameters together."""
        self._validate_penalty()
        if "max_memory" in self._get_param_names():  # the estimators with batch solvers
            Options(self._solvers)("solver", self.solver)
        settings = self._settings()
        if settings["forgetting"] and settings["precondition"] == "eigenpro":
            raise ValueError("forgetting cannot be combined with precondition='eigenpro': "
                             "EigenPro's steps on the full budget follow their own step size")
        if self._gamma_is_auto():
            if not self._has_alpha_path():
                raise ValueError(f"gamma='auto' chooses the bandwidth on a path of the batch "
                                 f"solvers, which {type(self).__name__} does not run: give "
                                 f"gamma a number > 0 or one of {list(self._gamma_rules)}")
        elif not (isinstance(self.gamma, str) and self.gamma in self._gamma_rules):
            _check_real("gamma", self.gamma, 0.0, strict=True)
        self._loss_params()
        self._check_reuse(settings)
        # partial_fit on a fitted model keeps its loss_ and feature_map_, but
        # must still reject a bad loss or kernel: check them unless they are
        # the ones the model was built from (the registry lookup is slow
        # compared with a one-row step).
        built = getattr(self, "_built_from", None)
        if not isinstance(built, dict) or not all(_same(built[k], getattr(self, k))
                                    for k in ("loss", "kernel") if k in built):
            self._check_names()

    def _check_reuse(self, settings):
        """What a full budget does: the modes that combine, and the float32 rule.

        ``settings`` are the values checked (see ``_settings``).  The float32
        rule is checked here only; the compiled steps keep an assertion on the
        buffers they are given.
        """
        sched, pre = settings["reuse_schedule"], settings["precondition"]
        reuse, projection = settings["reuse"], settings["projection"]
        ridge = self._ridge(settings)
        if pre == "eigenpro" and not (settings["max_blocks"] is not None and reuse == "all"
                                      and tuple(sched) == (1, 0) and not projection):
            raise ValueError("precondition='eigenpro' needs a finite max_blocks (or "
                             "n_components, or max_model_bytes), reuse='all', "
                             "reuse_schedule=(1, 0) and projection=False: it steps on the "
                             "full, fixed set of features")
        if ridge and reuse == "check":
            raise ValueError("precondition cannot be combined with reuse='check': CDSG's safe "
                             "step (eq. 9) is derived for the plain DSG direction")
        if projection and not (self._alpha_is_auto() or getattr(self, "alpha", 0.0) > 0):
            raise ValueError("projection=True needs alpha > 0: the ball has radius "
                             "1 / sqrt(alpha)")
        plain = reuse == "all" and tuple(sched) == (1, 0) and not projection
        if self._model_dtype() != np.float64 and not (
                plain and (not ridge or settings["batch_size"] <= self.block_size)):
            raise ValueError("in float32 models only reuse='all' runs, preconditioned on "
                             "batches no larger than block_size; reuse modes, reuse_schedule "
                             "and projection need dtype='float64'")

    def _budget_blocks(self, n_outputs=1):
        """The feature budget in blocks (None: unbounded) of a model of ``n_outputs`` columns.

        ``n_components`` rounded up to whole blocks of ``block_size`` when
        given (it then takes the place of ``max_blocks``), else ``max_blocks``;
        and at most the blocks whose coefficients fit in ``max_model_bytes``
        (see ``_block_bytes``), the memory cap of a growing model.
        """
        blocks = (self.max_blocks if self.n_components is None
                  else -(-self.n_components // self.block_size))
        cap = getattr(self, "max_model_bytes", None)
        if cap is None:
            return blocks
        per_block = self._block_bytes(n_outputs)
        if cap < per_block:
            raise ValueError(f"max_model_bytes={cap} holds no block: one block of "
                             f"block_size={self.block_size} features takes {per_block} bytes "
                             f"for {n_outputs} output{'s' if n_outputs > 1 else ''} in "
                             f"{self._model_dtype().name}")
        return cap // per_block if blocks is None else min(blocks, cap // per_block)

    def _block_bytes(self, n_outputs):
        """Bytes of the learned state one block adds to a model of ``n_outputs`` columns.

        Its coefficients and their running average (held whether or not
        ``average`` is on); the block's random parameters are kept in the
        block cache, which ``cache_bytes`` bounds.
        """
        return 2 * self.block_size * n_outputs * self._model_dtype().itemsize

    def _budget_text(self, n_outputs=1):
        """The parameters setting the budget (of ``n_outputs`` columns), for messages."""
        cap = getattr(self, "max_model_bytes", None)
        if self.n_components is None and cap is None:
            return f"max_blocks={self.max_blocks}"
        text = (f"max_blocks={self.max_blocks}" if self.n_components is None else
                f"n_components={self.n_components}")
        if cap is not None:
            text += f", max_model_bytes={cap}"
        return (f"{text} ({self._budget_blocks(n_outputs)} blocks of "
                f"block_size={self.block_size})")

    def _ridge(self, settings):
        """The preconditioning ridge (0: none) of ``settings`` (see ``_settings``)."""
        pre = settings["precondition"]
        if isinstance(pre, str):  # "auto" (and "eigenpro"'s growth steps): wherever it runs
            single = self._model_dtype() != np.float64
            if settings["reuse"] == "check" or (single
                                                and settings["batch_size"] > self.block_size):
                return 0.0
            if self._kernel_is_one_hot():
                # a one-hot block's features are its bins: the solve would
                # run on dense rows of block_size (tens of thousands) values
                return 0.0
            return _DEFAULT_RIDGE
        if isinstance(pre, (bool, np.bool_)):
            return _DEFAULT_RIDGE if pre else 0.0
        return float(pre)

    def _kernel_is_one_hot(self):
        """Whether the ``kernel`` parameter is a one-hot map (random binning), by its attribute."""
        kernel = self.kernel
        if isinstance(kernel, str):
            if kernel not in registry.available_feature_maps():
                return False  # (an unknown name is refused where the map is made)
            try:
                kernel = registry.get_feature_map(
                    kernel, **(getattr(self, "kernel_params", None) or {}))
            except (TypeError, ValueError):
                # a map that needs parameters the estimator resolves at fit
                # (gamma, say): made with them there, and refused there if wrong
                return False
        return bool(getattr(kernel, "one_hot", False))

    def _schedule(self):
        """The step-size schedule's parameters (``step_sizes``'s name, eta0, t0)."""
        return {"learning_rate": self._setting("learning_rate"), "eta0": self.eta0,
                "t0": self._setting("t0")}

    def _train_config(self, state, checked=None):
        """The :class:`TrainConfig` of this call's steps on ``state``, from the settings.

        It depends on the checked parameters alone: ``checked``, what this
        call's ``_check_params`` returned, else theirs now.
        """
        config = self._check_params() if checked is None else checked
        if getattr(self, "max_model_bytes", None) is not None and state["_n_outputs"] > 1:
            # the byte cap's blocks depend on the model's outputs, which the
            # parameters alone (and so the memoised configuration) do not know
            config = config._replace(max_blocks=self._budget_blocks(state["_n_outputs"]))
        return config

    def _build_train_config(self):
        """The :class:`TrainConfig` of the parameters, from the settings (checked first)."""
        s = self._settings()
        return TrainConfig(
            batch_size=s["batch_size"], max_blocks=s["max_blocks"], **self._schedule(),
            eta_min=s["eta_min"], forgetting=s["forgetting"],
            fit_intercept=self._fits_intercept(), average_start=self._average_start(),
            average_decay=self._average_decay(), n_jobs=check_n_jobs(self.n_jobs),
            reuse=s["reuse"],
            reuse_schedule=tuple(int(v) for v in s["reuse_schedule"]), ridge=self._ridge(s),
            projection=bool(s["projection"]), eigenpro=s["precondition"] == "eigenpro")

    @staticmethod
    def _reuse_options(state, config, alpha):
        """The solver's Reuse for these steps, or None for the plain budget update."""
        G, U = config.reuse_schedule
        ridge = config.ridge
        radius = 1.0 / np.sqrt(alpha) if config.projection else 0.0
        if config.reuse == "all" and (G, U) == (1, 0) and not ridge and not radius:
            return None
        norm2 = 0.0
        if radius:  # |f|^2 / M, tracked by the steps from here
            rows = state["n_blocks_"] * state["feature_map_"].n_components
            c = state["_coef"][:rows]
            norm2 = float(state["_scale"]) ** 2 * float(np.einsum("ij,ij->", c, c))
        return Reuse(config.reuse, G, U, ridge, radius, state["seed_"], norm2)

    def _loss_spec(self):
        """The loss this estimator trains, as given: the ``loss`` parameter (a name or an object).

        Estimators without a ``loss`` parameter say here which loss they train.
        """
        return self.loss

    def _fits_intercept(self):
        """Whether training learns the intercept: the ``fit_intercept`` parameter.

        Estimators without a ``fit_intercept`` parameter say here what they do.
        """
        return bool(self.fit_intercept)

    def _loss_params(self):
        """``loss_params`` as a dict ({} for the estimators without one)."""
        params = getattr(self, "loss_params", None)
        if params is None:
            return {}
        loss = self._loss_spec()
        if not isinstance(params, dict):
            raise ValueError(f"loss_params must be a dict or None, got {type(params).__name__}")
        if not isinstance(loss, str) and params:
            raise ValueError(f"loss_params applies to a loss given by name; the loss object "
                             f"{loss!r} carries its own parameters (set them with "
                             f"set_params(loss__name=value))")
        return params

    def _input_scaling(self, given=None):
        """``input_scaling`` (or ``given``) as float64 ``(mean, scale)`` arrays, or None."""
        if given is None:
            given = getattr(self, "input_scaling", None)
        return input_scaling_pair(given)

    def _scale_inputs(self, X, given=None):
        """``(X - mean) / scale`` with ``input_scaling`` (or ``given``); X as is without one.

        Sparse X is scaled, never centred (that would make it dense): its
        scaling must have a zero mean, as scikit-learn's
        ``StandardScaler(with_mean=False)`` gives.
        """
        scaling = self._input_scaling(given)
        if scaling is None:
            return X
        mean, scale = scaling
        if X.shape[1] != mean.shape[0]:
            raise ValueError(f"X has {X.shape[1]} features, input_scaling has "
                             f"{mean.shape[0]} columns")
        if sp.issparse(X):
            if np.any(mean != 0):
                raise ValueError("input_scaling with a nonzero mean would make sparse X "
                                 "dense; give a zero mean (scaling only, as "
                                 "StandardScaler(with_mean=False) fits) or dense X")
            X = X.copy()
            X.data = (X.data / scale[X.indices]).astype(X.dtype)  # as the dense rows' bits
            return X
        return np.ascontiguousarray((X - mean) / scale, dtype=X.dtype)

    def _check_names(self):
        loss = self._loss_spec()
        if isinstance(loss, str):
            # raises, listing the registered losses or the loss's parameters
            registry.get_loss(loss, **self._loss_params())
        elif not isinstance(loss, (CyLoss, Loss)):
            raise TypeError(f"loss must be a registered name, a compiled CyLoss or an "
                            f"onlinekernel.Loss instance, got {type(loss).__name__}")
        if isinstance(self.kernel, str):
            if self.kernel not in registry.available_feature_maps():
                registry.get_feature_map(self.kernel)  # raises the listing error
        elif not isinstance(self.kernel, (CyFeatureMap, FeatureMap)):
            raise TypeError(f"kernel must be a registered name, a compiled CyFeatureMap or an "
                            f"onlinekernel.FeatureMap instance, got {type(self.kernel).__name__}")

    def _resolve_base_loss(self):
        spec = self._loss_spec()
        if isinstance(spec, str):
            loss = registry.get_loss(spec, **self._loss_params())
            if not isinstance(loss, (CyLoss, Loss)):
                # e.g. an operator objective (matrix-valued coefficients, such
                # as gp_variance): registered with the losses, trained elsewhere
                raise ValueError(f"loss {spec!r} ({type(loss).__name__}) is not a "
                                 f"per-sample loss (CyLoss or onlinekernel.Loss) that "
                                 f"{type(self).__name__} can train")
            return loss
        return copy.deepcopy(spec)

    def _validate_penalty(self):
        """Check the penalty parameter ``alpha`` (estimators without one override this)."""
        if self._alpha_is_auto():
            if not self._has_alpha_path():
                raise ValueError(f"alpha='auto' chooses the penalty on a regularisation path "
                                 f"of the batch solvers, which {type(self).__name__} does not "
                                 f"run: give alpha a number >= 0")
            return
        _check_real("alpha", self.alpha, 0.0)
        if self._setting("learning_rate") == "pegasos" and self.alpha <= 0:
            raise ValueError("learning_rate='pegasos' needs alpha > 0")

    def _map_params(self, accepted):
        """The map's parameters given beyond gamma, degree and coef0: ``kernel_params``.

        ``accepted`` names the parameters the map takes.
        """
        return self.kernel_params or {}

    def _model_dtype(self):
        """Precision of the model's features and coefficients (the ``dtype`` parameter)."""
        return check_dtype(self.dtype)

    # The names gamma may take besides a number; a subclass listing more
    # rules than "scale" resolves them in ``_gamma_rule(X, sample_weight)``.
    _gamma_rules = ("scale",)

    def _make_feature_map(self, X, sample_weight=None, gamma=None):
        """The feature map for this fit, bound to X's dimension, and the gamma used.

        ``gamma="scale"`` uses the variance of X's entries, weighted by
        ``sample_weight`` when given (so that a weight is a repeated row);
        ``"auto"`` starts there (``_gamma_path`` moves it).  A number
        ``gamma`` given here takes the place of the parameter.
        """
        d = X.shape[1]
        if isinstance(self.kernel, (CyFeatureMap, FeatureMap)):
            fmap = as_cy_feature_map(copy.deepcopy(self.kernel))
            return fmap.bind(d), getattr(fmap, "gamma", None)
        if not isinstance(self.kernel, str):
            raise TypeError(f"kernel must be a registered name, a compiled CyFeatureMap or an "
                            f"onlinekernel.FeatureMap instance, got {type(self.kernel).__name__}")
        accepted = registry.available_feature_maps()
        if self.kernel not in accepted:
            registry.get_feature_map(self.kernel)  # raises the listing error
        accepted = accepted[self.kernel]["parameters"]
        params = {"n_components": self.block_size}
        if "gamma" in accepted:
            if gamma is not None:
                gamma = float(gamma)
            elif isinstance(self.gamma, str) and self.gamma not in ("scale", "auto"):
                gamma = self._gamma_rule(X, sample_weight)  # a subclass's own rule
            elif isinstance(self.gamma, str):
                gamma = scale_gamma(X, sample_weight)
            else:
                gamma = float(self.gamma)
            params["gamma"] = gamma
        if "degree" in accepted:
            params["degree"] = self.degree
        if "coef0" in accepted:
            params["coef0"] = self.coef0
        params.update(self._map_params(accepted))
        fmap = as_cy_feature_map(registry.get_feature_map(self.kernel, **params))
        return fmap.bind(d), params.get("gamma", gamma)

    # ------------------------------------------------------------------ #
    # state
    # ------------------------------------------------------------------ #
    def _new_state(self, X, n_outputs, loss, sample_weight=None):
        fmap, gamma = self._make_feature_map(X, sample_weight)
        seed = seed_of(self.random_state)
        if getattr(fmap, "needs_fit", False):
            # a map fitted on data (Nystrom's landmarks): once, for the whole
            # budget, so that every block the model will have is defined now
            blocks = self._budget_blocks(n_outputs)
            if blocks is None:
                raise ValueError(f"kernel {_map_name(fmap)!r} chooses its features from the "
                                 f"training rows and needs a finite feature budget: set "
                                 f"max_blocks, n_components or max_model_bytes")
            fmap.fit(X, seed, blocks)
        dt = self._model_dtype()
        state = {
            "loss_": loss, "feature_map_": fmap, "gamma_": gamma, "seed_": seed,
            "n_features_in_": X.shape[1], "_n_outputs": n_outputs,
            "_coef": np.zeros((0, n_outputs), dtype=dt), "_scale": 1.0,
            "_intercept": np.zeros(n_outputs), "n_blocks_": 0, "t_": 0, "samples_seen_": 0,
            "n_epochs_seen_": 0,
            "_coef_avg": np.zeros((0, n_outputs), dtype=dt),
            "_intercept_avg": np.zeros(n_outputs),
            "n_averaged_": 0,
            "_blocks": BlockSource(fmap, seed, self.cache_bytes, dtype=dt),
            "_built_from": self._build_params(),
        }
        max_blocks = self._budget_blocks(n_outputs)
        if isinstance(max_blocks, numbers.Integral):
            _check_cache(state["_blocks"], max_blocks, self.cache_bytes)
        return state

    def _build_params(self):
        """The parameters a new model is built with (see ``_BUILD_PARAMS``), as copies."""
        names = set(self._get_param_names())
        return {k: copy.deepcopy(getattr(self, k)) for k in _BUILD_PARAMS if k in names}

    def _check_unchanged(self):
        """Refuse to continue the fitted model after a parameter it was built with changed."""
        built = self.__dict__.get("_built_from")
        if not isinstance(built, dict):  # a model pickled before it was recorded
            return
        changed = [k for k, v in built.items() if not _same(v, getattr(self, k))]
        if changed:
            self._check_names()  # an invalid new value is reported as such
            now = ", ".join(f"{k}={getattr(self, k)!r}" for k in changed)
            was = ", ".join(f"{k}={built[k]!r}" for k in changed)
            raise ValueError(f"{now} differ{'s' if len(changed) == 1 else ''} from the fitted "
                             f"model's {was}: partial_fit (and fit with warm_start) continues "
                             f"the model, whose features and targets were built with them. "
                             f"Call fit to train a new model with the new values, or set "
                             f"them back")

    def _state_copy(self):
        """The fitted state to continue from (copies of its arrays)."""
        self._check_unchanged()
        state = {k: getattr(self, k) for k in ("loss_", "feature_map_", "gamma_", "seed_",
                                                "n_features_in_", "_n_outputs", "_blocks")}
        for k in _OPTIONAL_STATE:
            if k in self.__dict__:
                state[k] = getattr(self, k)
        # the running means are written in place only while averaging is on;
        # until then the step shares the published arrays (never written)
        shared = () if self._average_start() >= 0 or self.n_averaged_ else _AVERAGES
        for k in _STATE:
            v = getattr(self, k)
            state[k] = v.copy() if isinstance(v, np.ndarray) and k not in shared else v
        dt = self._model_dtype()
        if state["_coef"].dtype != dt:
            # dtype was changed since the model was built: it continues in the
            # new precision (the same features, the coefficients converted)
            state["_coef"] = state["_coef"].astype(dt)
            state["_coef_avg"] = state["_coef_avg"].astype(dt)
            state["_blocks"] = BlockSource(state["feature_map_"], state["seed_"],
                                           self.cache_bytes, dtype=dt)
        return state

    @staticmethod
    def _ensure_capacity(state, n_steps, max_blocks):
        F = state["feature_map_"].n_components
        nb = state["n_blocks_"] + n_steps
        if max_blocks is not None:
            nb = min(nb, max_blocks)
        rows = nb * F
        for key in ("_coef", "_coef_avg"):
            coef = state[key]
            if coef.shape[0] < rows:
                grown = np.zeros((max(rows, min(2 * coef.shape[0], rows + 64 * F)),
                                  coef.shape[1]), dtype=coef.dtype)
                grown[:coef.shape[0]] = coef
                state[key] = grown

    def _check_trainable(self, state, config):
        """Refuse to train a model whose blocks exceed a lowered budget.

        (The solver itself checks array shapes, so a crafted model file cannot
        make it read or write out of bounds.)
        """
        budget = config.max_blocks
        if budget is not None and state["n_blocks_"] > budget:
            raise ValueError(f"the model has {state['n_blocks_']} blocks, more than "
                             f"{self._budget_text(state['_n_outputs'])}: the budget cannot "
                             f"shrink below the blocks a model already has")

    def _penalty(self, state):
        """The penalty of the coefficients for the steps on ``state`` (``alpha``).

        Estimators whose penalty follows the data seen override this (the GP
        regressor: ``noise_variance / n``).
        """
        if self._alpha_is_auto():
            return float(state.get("alpha_", _AUTO_ALPHA))
        return float(self.alpha)

    def _alpha_is_auto(self):
        alpha = getattr(self, "alpha", None)
        return isinstance(alpha, str) and alpha == "auto"

    def _gamma_is_auto(self):
        gamma = getattr(self, "gamma", None)
        return isinstance(gamma, str) and gamma == "auto"

    def _has_alpha_path(self):
        """Whether ``fit`` can choose ``alpha`` (estimators with a ``solver`` and an ``alpha``)."""
        names = self._get_param_names()
        return "solver" in names and "alpha" in names

    def _record_penalty(self, state):
        """Store the penalty the model trains with as ``alpha_`` (path estimators)."""
        if self._has_alpha_path():
            state["alpha_"] = self._penalty(state)

    def _run_epoch(self, state, config, X, Y, sw, order, first=None):
        """Train ``state`` on the rows ``order`` of ``(X, Y)`` as ``config`` says.

        ``first``: the first step's outputs and features, already computed
        (see ``_shared_half``), for the doubly stochastic steps.
        """
        if config.eigenpro:
            # doubly stochastic steps until the budget is full, then EigenPro's
            grow = max(0, config.max_blocks - state["n_blocks_"]) * config.batch_size
            if grow:
                self._dsg_steps(state, config, X, Y, sw, order[:grow], first)
            if order.shape[0] > grow:
                self._eigenpro_steps(state, config, X, Y, sw, order[grow:])
            return
        self._dsg_steps(state, config, X, Y, sw, order, first)

    def _eigenpro_steps(self, state, config, X, Y, sw, order):
        """EigenPro steps on the full budget (see :mod:`onlinekernel.solvers.eigenpro`).

        The preconditioner is estimated once, from up to ``_EIGENPRO_ROWS``
        rows of the first call that reaches this point with more than
        ``2 * _EIGENPRO_K`` rows (a smaller call meanwhile takes the
        doubly stochastic steps).
        """
        loss = as_cy_loss(self._train_loss(state))
        if getattr(loss, "intercept_rule", "constant_feature") != "constant_feature":
            raise ValueError(f"precondition='eigenpro' needs a loss whose intercept is a "
                             f"constant feature; {_loss_name(loss)} has intercept_rule="
                             f"{loss.intercept_rule!r}")
        X = as_rows(X, state["_coef"].dtype)
        if "_eig_vectors" not in state:
            rows = np.sort(order[np.argsort(words(state["seed_"], _EIGENPRO_BLOCK, 0,
                                                  order.shape[0]),
                                            kind="stable")[:_EIGENPRO_ROWS]])
            if rows.shape[0] <= 2 * _EIGENPRO_K:
                self._dsg_steps(state, config, X, Y, sw, order)
                return
            Phi = block_features(state["_blocks"], X[rows], state["n_blocks_"], config.n_jobs)
            U = model_outputs(state, X[rows], config.n_jobs)
            pre = EigenPro.estimate(Phi, _EIGENPRO_K, max_curvature(loss, Y[rows], U),
                                    config.batch_size)
            state["_eig_vectors"], state["_eig_values"] = pre.vectors, pre.values
            state["_eig_step"], state["_eig_level"] = pre.step, pre.level
        pre = EigenPro(state["_eig_vectors"], state["_eig_values"], state["_eig_step"],
                       state["_eig_level"])
        M = state["n_blocks_"] * state["feature_map_"].n_components
        it = Iterate(coef=float(state["_scale"]) * state["_coef"][:M],
                     intercept=state["_intercept"].copy(),
                     coef_avg=state["_coef_avg"][:M].copy(),
                     intercept_avg=state["_intercept_avg"].copy(), t=state["t_"],
                     n_averaged=state["n_averaged_"], average_start=config.average_start,
                     average_decay=config.average_decay)
        pre.steps(state["_blocks"], loss, X, Y, sw, order, config.batch_size,
                  self._penalty(state), config.fit_intercept, it, config.n_jobs)
        state["_coef"] = np.ascontiguousarray(it.coef)
        state["_coef_avg"] = it.coef_avg
        state["_scale"] = 1.0
        state["_intercept"], state["_intercept_avg"] = it.intercept, it.intercept_avg
        state["t_"], state["n_averaged_"] = it.t, it.n_averaged
        state["samples_seen_"] += order.shape[0]

    def _dsg_steps(self, state, config, X, Y, sw, order, first=None):
        """Doubly stochastic steps on the rows ``order``: one compiled call (``train_steps``).

        ``first``: ``(outputs, features)`` of the first step's rows on the
        model as it is (``train_steps``' shortcut), or None.
        """
        alpha = self._penalty(state)
        loss = as_cy_loss(self._train_loss(state))
        self._check_trainable(state, config)
        B = config.batch_size
        n = order.shape[0]
        n_steps = -(-n // B)
        self._ensure_capacity(state, n_steps, config.max_blocks)
        rows = np.full(n_steps, B, dtype=np.int64)
        rows[-1] = n - B * (n_steps - 1)
        # the schedule's clock starts at the last drift reaction (see react_to_drift)
        clock = max(0, state["samples_seen_"] - state.get("_clock_start", 0))
        steps = step_sizes(config.learning_rate, clock, rows, B, eta0=config.eta0,
                           t0=config.t0, alpha=alpha, eta_min=config.eta_min)
        # forgetting is per row, whatever the batches: a row's step fades by
        # (1 - forgetting) for each row learned after it
        decay = ((1.0 - config.forgetting) ** rows.astype(np.float64)
                 if config.forgetting else None)
        state["samples_seen_"] += n
        max_blocks = config.max_blocks
        plan = StepPlan(B, steps, alpha, 2 ** 63 - 1 if max_blocks is None else max_blocks,
                        config.fit_intercept, avg_start=config.average_start,
                        avg_decay=config.average_decay,
                        n_jobs=config.n_jobs, reuse=self._reuse_options(state, config, alpha),
                        decay=decay)
        model = model_state(state)
        train_steps(model, loss, as_rows(X, state["_coef"].dtype), Y, sw, order, plan,
                    *(first or ()))
        publish_model_state(model, state)

    @transactional
    def react_to_drift(self, reaction):
        """React to a detected concept drift: one of ``DRIFT_REACTIONS``, in one step.

        ``"reset_step"`` restarts the step schedule's clock, so that the next
        steps are as large as the first ones (``eta0``) and decay again from
        there; the coefficients stay.  ``"shrink"`` does the same and
        halves the coefficients (the old concept's function loses half its
        weight at once).  ``"regrow"`` drops every block of features and
        restarts the clock: the model keeps its intercept and grows its
        blocks again from the next step, as a new model would (the same
        random features, from the seed).  Averaging, when on, restarts from
        the next step.  Like any training call it is transactional and
        publishes the new state in one step.

        Examples
        --------
        >>> import numpy as np
        >>> from onlinekernel import DSGClassifier
        >>> X = np.random.default_rng(0).normal(size=(64, 2))
        >>> clf = DSGClassifier(random_state=0).partial_fit(X, X[:, 0] > 0, classes=[0, 1])
        >>> clf.n_blocks_
        2
        >>> clf.react_to_drift("regrow").n_blocks_
        0
        """
        if reaction not in DRIFT_REACTIONS:
            raise ValueError(f"unknown drift_reaction {reaction!r}; choose one of "
                             f"{', '.join(map(repr, DRIFT_REACTIONS))}")
        check_is_fitted(self, "_coef")
        with self._training() as state:
            state["_clock_start"] = state["samples_seen_"]
            if reaction == "shrink":
                state["_scale"] = state["_scale"] * _DRIFT_SHRINK
            elif reaction == "regrow":
                state["_coef"][:] = 0.0
                state["_scale"] = 1.0
                state["n_blocks_"] = 0
            if state["n_averaged_"]:
                # restart the average: its next step takes the iterate as it is
                state["_coef_avg"][:] = 0.0
                state["_intercept_avg"] = state["_intercept"].copy()
                state["n_averaged_"] = 0
        return self

    def _average_start(self):
        """First step whose iterate is averaged, minus one (-1: no averaging)."""
        if self.average is False:
            return -1
        return 0 if self.average is True or self.average == "polynomial" else int(self.average)

    def _average_decay(self):
        """``eta`` of the average's weights ``(1 + eta) / (n + eta)`` (0: the plain mean)."""
        return POLYNOMIAL_DECAY if self.average == "polynomial" else 0.0

    def _shuffled(self, seed, epoch, n):
        if not self.shuffle:
            return np.arange(n, dtype=np.int64)
        # Philox words as sort keys: the same order under any numpy version.
        keys = words(seed, _SHUFFLE_BLOCK + epoch, 0, n)
        return np.argsort(keys, kind="stable").astype(np.int64)

    def _stage(self, **attrs):
        """Fitted attributes decided during a training call, published with its state.

        (``classes_``: a concurrent ``predict`` must never see new labels with
        the old coefficients.)
        """
        self.__dict__.setdefault("_staged", {}).update(attrs)

    def _staged_or_fitted(self, name):
        """The value ``_stage`` set during this call, else the fitted attribute."""
        return self.__dict__.get("_staged", {}).get(name, self.__dict__.get(name))

    def _training(self, state=None, *, publish=True):
        """The transaction of a training call: the one place it is made.

        * Lock: training calls of one estimator are serialised (``train_lock``,
          reentrant, so a transaction may open inside another).
        * Snapshot: the attribute dictionary is copied on entry (a shallow
          copy) and put back in one assignment on any exception, so a failed
          call leaves the estimator exactly as it was.
        * Commit: with ``publish`` (the default) the block trains the state it
          is given -- ``state`` (a new model's), else a copy of the fitted
          one (``_state_copy``) -- and on success that state is published
          (``_commit``: refused if non-finite) in one ``dict.update``, so a
          ``predict`` running in another thread (which reads one snapshot of
          the dictionary) sees either the model before or the model after.
          ``publish=False`` gives None: the scope of a public method
          (``transactional``), whose training opens its own ``_training``.
        """
        return _Transaction(self, state, publish)

    def _commit(self, state, published):
        """Publish the new state; refuse it if training left non-finite numbers in it.

        Called by ``_training`` only, with the ``published`` state it started
        from: an array published there already is not checked again.
        """
        state = {**state, **self.__dict__.pop("_staged", {})}
        for key, value in state.items():
            if (isinstance(value, np.ndarray) and value.dtype.kind == "f"
                    and value is not published.get(key) and not np.isfinite(value).all()):
                self._refuse_non_finite(key, state)
        if not np.isfinite(state.get("_scale", 1.0)):
            self._refuse_non_finite("_scale", state)
        self.__dict__.update(state)  # one step: readers see all of it or none

    @staticmethod
    def _refuse_non_finite(key, state):
        raise FloatingPointError(
            f"training left non-finite values in {key} (an input row or a target too large "
            f"for the {_map_name(state.get('feature_map_'))} features, or steps that "
            f"diverge: lower eta0); the model is unchanged")

    # ------------------------------------------------------------------ #
    # public API
    # ------------------------------------------------------------------ #
    def _fit(self, X, y, sample_weight):
        if any(map(_dask.is_dask_collection, (X, y, sample_weight))):
            return _dask.fit(self, X, y, sample_weight)
        self._validate_params()
        # warm_start continues the fitted model: its features, classes and
        # loss stay, so X must have the same columns (and y known labels).
        warm = self.warm_start and hasattr(self, "_coef")
        X, y = validate_data(self, X, y, dtype=self._model_dtype(), order="C",
                             accept_sparse="csr", y_numeric=self._y_numeric, reset=not warm)
        sw = check_sample_weight(sample_weight, X)
        keep = self._kept_rows(sw)  # a zero weight means the sample is not there at all
        if not keep.all():
            X, y, sw = X[keep], y[keep], sw[keep]
        X = self._scale_inputs(X)
        loss, Y, n_outputs = self._prepare_targets(y, fitting=not warm)
        sw = np.ascontiguousarray(sw)
        # warm: the fitted model; else gamma="scale" from the weighted
        # variance (a weight is repeated rows)
        with self._training(None if warm else self._new_state(X, n_outputs, loss, sw)) as state:
            Y = self._standardize_targets(state, Y, sw, first=not warm)
            self._record_penalty(state)
            solver = self._resolve_solver(state, X.shape[0], n_outputs)
            if solver == "sgd":
                self._fit_sgd(state, X, Y, sw)
            else:
                self._fit_batch(state, solver, X, Y, sw)
            state["solver_"] = solver
        return self

    # ------------------------------------------------------------------ #
    # solvers
    # ------------------------------------------------------------------ #
    # Estimators whose constructor takes no ``solver`` train by SGD (the
    # density ratio, GP, fixed-feature and shrinking models run their own loops).
    solver = "sgd"
    # The values ``solver`` may take (an estimator that fixes its solver lists that one).
    _solvers = SOLVERS

    def _solver_options(self):
        """Keyword arguments the batch solver takes beyond the common ones (none here)."""
        return {}

    def _resolve_solver(self, state, n, n_outputs):
        """The solver ``fit`` runs: ``solver``, or the choice of ``"auto"``.

        Batch solvers need a finite feature budget and a loss whose intercept
        is the weight of a constant feature (not, say, novelty's offset).
        """
        if self.solver == "sgd":
            return "sgd"
        loss = self._train_loss(state)
        budget = self._budget_blocks(n_outputs)
        batchable = (budget is not None
                     and getattr(loss, "intercept_rule", "constant_feature") == "constant_feature")
        if self.solver == "auto" and not batchable:
            return "sgd"
        fmap = state["feature_map_"]
        M = budget * fmap.n_components if batchable else 0
        itemsize = self._model_dtype().itemsize
        # a factored map's B is float32 only where its rounding gain allows: counted so
        gain = rounding_gain(fmap, state["seed_"], budget, self.tol) if batchable else 1.0
        if self.solver == "auto":
            factored = getattr(fmap, "linear_factor", None) is not None
            return choose_solver(loss, n, M, n_outputs, itemsize, self.max_memory, self.tol,
                                 factored=factored, gain=gain)
        name = _loss_name(loss)
        if not batchable:
            raise ValueError(f"solver={self.solver!r} needs a finite max_blocks (or "
                             f"n_components, or max_model_bytes) and a loss whose intercept "
                             f"is a constant feature; {name} with "
                             f"{self._budget_text(n_outputs)} trains only with solver='sgd'")
        curvatures = BATCH_SOLVERS[self.solver][1]
        if getattr(loss, "curvature", None) not in curvatures:
            raise ValueError(f"solver={self.solver!r} converges for losses of curvature "
                             f"{' or '.join(map(repr, curvatures))}; {name} has curvature="
                             f"{getattr(loss, 'curvature', None)!r}"
                             + (" (use solver='auto' or 'sgd')" if "sgd" in self._solvers
                                else ""))
        need = solver_memory(self.solver, n, M, n_outputs,
                             feature_dtype(self.solver, self._model_dtype(), self.tol,
                                           gain).itemsize)
        if self.solver != "cholesky" and need > self.max_memory:
            raise ValueError(f"solver={self.solver!r} needs {need / 2 ** 20:.0f} MiB for "
                             f"{n} rows x {M} features, more than max_memory="
                             f"{self.max_memory} bytes: raise max_memory, use fewer "
                             f"features" + (" or solver='sgd'" if "sgd" in self._solvers
                                            else ""))
        return self.solver

    def _fit_batch(self, state, solver, X, Y, sw):
        """Minimise the regularised risk on the full budget of features to ``tol``."""
        fmap, K = state["feature_map_"], state["_n_outputs"]
        M = self._budget_blocks(K) * fmap.n_components
        # the feature matrix (or B) may take what the solver's other arrays leave
        room = self.max_memory - solver_memory(solver, X.shape[0], M, K, 0)
        if self._gamma_is_auto() and state["samples_seen_"] == 0:
            # a new model's bandwidth, before its penalty: the model is then
            # the one gamma=gamma_ gives
            gamma = self._gamma_path(state, solver, X, Y, sw, room)
            if gamma != state["gamma_"]:
                self._use_gamma(state, X, sw, gamma)
        if self._alpha_is_auto():
            # the fit on all rows then starts where alpha=alpha_ would: the
            # same model, to the solver's last rounding
            state["alpha_"] = self._alpha_path(state, solver, X, Y, sw, room)
        op = self._operator(state, solver, X, room)
        try:
            problem = Problem(op, as_cy_loss(self._train_loss(state)), Y, sw,
                              self._penalty(state), self._fits_intercept(), K)
            self._solve_batch(state, solver, problem, X.shape[0])
        finally:
            op.close()

    def _operator(self, state, solver, X, room, n_blocks=None):
        """The :class:`FeatureOperator` of the full feature budget (or ``n_blocks``) on ``X``."""
        fmap = state["feature_map_"]
        if n_blocks is None:
            n_blocks = self._budget_blocks(state["_n_outputs"])
        # (the operator weighs a factored map's rounding gain against tol itself)
        return FeatureOperator(fmap, state["seed_"], n_blocks, X,
                               max_bytes=feature_room(solver, X.shape[0],
                                                      n_blocks * fmap.n_components, room),
                               n_jobs=check_n_jobs(self.n_jobs),
                               dtype=feature_dtype(solver, X.dtype, self.tol), tol=self.tol)

    def _use_gamma(self, state, X, sw, gamma):
        """Rebuild a new model's feature map in ``state`` with the bandwidth ``gamma``."""
        fmap, gamma = self._make_feature_map(X, sw, gamma=gamma)
        state.update(feature_map_=fmap, gamma_=gamma,
                     _blocks=BlockSource(fmap, state["seed_"], self.cache_bytes,
                                         dtype=self._model_dtype()))

    def _gamma_path(self, state, solver, X, Y, sw, room):
        """``gamma="auto"``: the bandwidth of least error on held-out rows.

        Multiples of the ``"scale"`` value by powers of two (``_GAMMA_PATH``,
        from 1/16 to 16, all of them: the held-out error is too noisy to
        stop at its first rise), each scored as a small model of the same
        loss and solver: ``_GAMMA_PATH_BLOCKS`` blocks of features, trained
        on at most ``_GAMMA_PATH_ROWS`` rows and scored by
        :meth:`_validation_error` on up to ``_GAMMA_PATH_VALIDATION`` rows
        held out by content (a quarter of the rows, equal rows on one side;
        on a set of at most ``_GAMMA_PATH_ROWS / 2`` rows, the mean over
        ``_GAMMA_PATH_SPLITS`` such splits), at the penalty ``alpha`` gives
        or, for ``"auto"``, the best of a penalty sweep on the same rows
        (:meth:`_penalty_sweep`).
        Returns ``gamma_`` unchanged where no path runs: a map without a
        bandwidth or fitted on data (Nystrom), or a side of the split empty.
        """
        base = state["gamma_"]
        if (base is None or not isinstance(self.kernel, str)
                or getattr(state["feature_map_"], "needs_fit", False)):
            return base
        # small sets: several splits (their scores averaged), as many as fit
        # the row budget, for the held-out error of a few hundred rows is noisy
        splits = []
        for k in range(max(1, min(_GAMMA_PATH_SPLITS, _GAMMA_PATH_ROWS // X.shape[0]))):
            seed = state["seed_"] + 2 + 16 * k
            train, val = content_split(X, seed, _GAMMA_PATH_HELD_OUT)
            if not (train.size and val.size):
                return base
            if train.size > _GAMMA_PATH_ROWS:
                train = train[content_split(X[train], seed + 1,
                                            _GAMMA_PATH_ROWS / train.size)[1]]
            if val.size > _GAMMA_PATH_VALIDATION:
                val = val[content_split(X[val], seed + 2,
                                        _GAMMA_PATH_VALIDATION / val.size)[1]]
            splits.append(tuple((X[i], Y[i], sw[i]) for i in (train, val)))
        blocks = min(_GAMMA_PATH_BLOCKS, self._budget_blocks(state["_n_outputs"]))
        alphas = None if self._alpha_is_auto() else (self._penalty(state),)
        scores = {}
        for mult in _GAMMA_PATH:
            fmap, _ = self._make_feature_map(X, sw, gamma=base * float(mult))
            sub = dict(state, feature_map_=fmap)
            best = [min(self._penalty_sweep(sub, solver, train, val, room, blocks,
                                            alphas).values())
                    for train, val in splits]
            scores[float(mult)] = tuple(np.mean(best, axis=0))
        return base * min(scores, key=scores.get)

    def _alpha_path(self, state, solver, X, Y, sw, room):
        """``alpha="auto"``: the penalty of least error on held-out rows.

        The batch ``solver`` runs on the rows outside a seeded split by
        content (:func:`onlinekernel.core.splits.content_split`, about
        ``validation_fraction`` held out, equal rows on one side) for the
        penalties of ``_ALPHA_PATH``, strongest first, each solve starting
        from the last one's solution; the path stops
        ``_ALPHA_PATH_PATIENCE`` penalties past the best, and the geometric
        mean of the best and its better neighbour is tried last.  The score
        is :meth:`_validation_error`.  Beyond ``_ALPHA_PATH_ROWS`` training
        rows the path trains on a content-chosen subsample of about that
        many, and its penalty is scaled by the subsample's share of the
        rows' weight (an SVM's ``C`` carried to more rows).  Returns the
        penalty (``_AUTO_ALPHA`` when a side of the split is empty).
        """
        train, val = content_split(X, state["seed_"], self.validation_fraction)
        if not (train.size and val.size):
            return _AUTO_ALPHA
        carry = 1.0  # the subsample's penalty -> all rows': alpha * (rows' weight) kept
        if train.size > _ALPHA_PATH_ROWS:
            train = train[content_split(X[train], state["seed_"] + 1,
                                        _ALPHA_PATH_ROWS / train.size)[1]]
            carry = float(sw[train].sum()) / float(sw.sum())
        tried = self._penalty_sweep(state, solver, (X[train], Y[train], sw[train]),
                                    (X[val], Y[val], sw[val]), room)
        return min(tried, key=tried.get) * carry

    def _penalty_sweep(self, state, solver, train, val, room, n_blocks=None, alphas=None):
        """Held-out scores of the batch ``solver``: ``{alpha: score}``.

        Fitted on the rows ``train`` and scored by :meth:`_validation_error`
        on the rows ``val`` (each ``(X, Y, sample_weight)``), with the
        features of ``state``'s map (its full budget, or ``n_blocks``).
        ``alphas`` given: those penalties.  Else ``_ALPHA_PATH``, strongest
        first, each solve warm-started from the last, stopping
        ``_ALPHA_PATH_PATIENCE`` past the best, then the geometric mean of
        the best and its better neighbour.  A squared loss factors one Gram
        matrix for all of them.
        """
        loss = as_cy_loss(self._train_loss(state))
        solve = BATCH_SOLVERS[solver][0]
        # the held-out error settles long before the gradient does
        tol = _ALPHA_PATH_TOL if self.tol is None else max(self.tol, _ALPHA_PATH_TOL)
        options = dict(tol=tol, max_iter=self.max_iter, **self._solver_options())
        (Xt, Yt, swt), (Xv, Yv, swv) = train, val
        op = self._operator(state, solver, Xt, room, n_blocks)
        op_val = self._operator(state, solver, Xv, 0, n_blocks)
        problem = Problem(op, loss, Yt, np.ascontiguousarray(swt), 0.0, self._fits_intercept(),
                          state["_n_outputs"])
        problem.keep_normal_equations = True  # one Gram for every penalty
        tried, starts = {}, {}

        def run(alpha, start):
            problem.lam = alpha * problem.M
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                sol = solve(problem, **options, **start)
            starts[alpha] = {"coef": sol.coef, "intercept": sol.intercept}
            U = op_val.matvec(sol.coef) + sol.intercept
            tried[alpha] = self._validation_error(loss, Yv, U, swv)
            return starts[alpha]

        try:
            if alphas is not None:
                for alpha in alphas:
                    run(float(alpha), {})
                return tried
            start, since_best = {}, 0
            for alpha in _ALPHA_PATH:
                try:
                    start = run(float(alpha), start)
                except np.linalg.LinAlgError:
                    if not tried:
                        raise
                    break  # a penalty below the rounding of the features' products
                best = min(tried, key=tried.get)
                since_best = 0 if best == alpha else since_best + 1
                if since_best >= _ALPHA_PATH_PATIENCE:
                    break
            i = int(np.flatnonzero(_ALPHA_PATH == best)[0])
            around = [_ALPHA_PATH[j] for j in (i - 1, i + 1)
                      if 0 <= j < _ALPHA_PATH.shape[0] and _ALPHA_PATH[j] in tried]
            if around:
                other = min(around, key=tried.get)
                run(float(np.sqrt(best * other)), starts[best])
            return tried
        finally:
            op.close()
            op_val.close()

    def _validation_error(self, loss, Y, U, sw):
        """Score of raw outputs ``U`` on held-out targets ``Y`` (lower is better).

        The weighted mean loss; classifiers put their error rate first
        (:meth:`DSGClassifier._validation_error`).  Returns a tuple.
        """
        w = sw / sw.sum()
        return (float(w @ loss.loss(np.ascontiguousarray(Y), np.ascontiguousarray(U))),)

    def _solve_batch(self, state, solver, problem, n_rows):
        """Run the batch ``solver`` on ``problem`` (of ``n_rows`` rows) into ``state``.

        The problem is :meth:`_fit_batch`'s on in-memory rows, or a
        distributed fit's (:class:`onlinekernel.integrations.dask.DistributedProblem`).
        """
        M, K = problem.M, problem.K
        nb = M // state["feature_map_"].n_components
        start = {}
        if state["n_blocks_"] == nb:  # warm start from the fitted coefficients
            start = {"coef": float(state["_scale"]) * state["_coef"][:M].astype(np.float64),
                     "intercept": state["_intercept"].copy()}
        tol = 0.0 if self.tol is None else self.tol  # None: all max_iter iterations
        progress = self._progress("Iteration", tag=solver)
        sol = BATCH_SOLVERS[solver][0](problem, tol=tol, max_iter=self.max_iter,
                                       callback=progress or None, **start,
                                       **self._solver_options())
        if not (np.all(np.isfinite(sol.coef)) and np.all(np.isfinite(sol.intercept))):
            raise FloatingPointError(f"solver {solver!r} produced non-finite coefficients "
                                     f"(an overflow in the data or the loss); the model is "
                                     f"unchanged")
        dt = self._model_dtype()
        state["_coef"] = np.ascontiguousarray(sol.coef, dtype=dt)
        state["_scale"] = 1.0
        state["_intercept"] = np.asarray(sol.intercept, dtype=np.float64).copy()
        state["_coef_avg"] = np.zeros_like(state["_coef"])
        state["_intercept_avg"] = np.zeros(K)
        state["n_averaged_"] = 0
        state["n_blocks_"] = nb
        state["samples_seen_"] += n_rows
        state["n_epochs_seen_"] += 1
        state["n_iter_"] = int(sol.n_iter)
        progress.finish(f"{'Convergence' if sol.converged else 'No convergence'} after "
                        f"{sol.n_iter} iterations, objective {sol.objective:.6g}")
        if not sol.converged:
            _warn_caller(f"solver {solver!r} stopped after max_iter={self.max_iter} "
                         f"iterations with a relative gradient norm (or duality gap) of "
                         f"{sol.gradient_norm:.2e}, above tol={self.tol}: raise max_iter",
                         ConvergenceWarning)

    def _fit_sgd(self, state, X, Y, sw):
        """Epochs of doubly stochastic steps until the stopping rule holds.

        The score is the regularised training objective, or with
        ``early_stopping`` the loss on ``validation_fraction`` of the rows
        held out (a seeded split); see :meth:`_sgd_epochs`.
        """
        if self._stopping().early_stopping:
            train, val = self._validation_split(state["seed_"], X.shape[0])
            Xv, Yv, swv = X[val], Y[val], sw[val]
            X, Y, sw = X[train], Y[train], np.ascontiguousarray(sw[train])

            def score():
                return self._objective(state, Xv, Yv, swv, penalty=False)
        else:
            def score():
                return self._objective(state, X, Y, sw, penalty=True)

        config = self._train_config(state)

        def epoch():
            order = self._shuffled(state["seed_"], state["n_epochs_seen_"], X.shape[0])
            self._run_epoch(state, config, X, Y, sw, order)

        self._sgd_epochs(state, epoch, score)

    def _sgd_epochs(self, state, epoch, score):
        """Run ``epoch()`` (one pass over the training rows) until the stopping rule holds.

        scikit-learn's rule: with ``tol`` set, stop once ``score()`` (the
        training objective, or the validation loss under ``early_stopping``)
        has not improved by ``tol`` for ``n_iter_no_change`` consecutive
        epochs; ``max_iter`` caps the epochs, with a ``ConvergenceWarning``
        when the rule has not held by then.  Sets ``n_iter_``.
        """
        stop = self._stopping()
        progress = self._progress("Epoch")
        label = "validation_objective" if stop.early_stopping else "objective"
        best, stalled, epochs, converged = np.inf, 0, 0, False
        while epochs < stop.max_iter:
            epoch()
            state["n_epochs_seen_"] += 1
            epochs += 1
            # without tol the score is computed only for the progress line
            value = score() if stop.tol is not None or progress else None
            if progress:
                progress(epochs, **self._epoch_values(state), **{label: value})
            if stop.tol is None:
                continue
            if not np.isfinite(value):
                raise FloatingPointError(f"the {'validation' if stop.early_stopping else 'training'}"
                                         f" loss is {value} after epoch {epochs}: the steps "
                                         f"diverge (lower eta0); the model is unchanged")
            stalled = stalled + 1 if value > best - stop.tol else 0
            best = min(best, value)
            if stalled >= stop.n_iter_no_change:
                converged = True
                break
        state["n_iter_"] = epochs
        progress.finish(f"Convergence after {epochs} epochs" if converged else
                        f"{epochs} epochs (tol=None)" if stop.tol is None else
                        f"No convergence after {epochs} epochs (max_iter={stop.max_iter})")
        if stop.tol is not None and not converged:
            _warn_caller(f"SGD stopped after max_iter={stop.max_iter} epochs before its "
                         f"stopping rule held (tol={stop.tol}, n_iter_no_change="
                         f"{stop.n_iter_no_change}): raise max_iter", ConvergenceWarning)

    def _progress(self, unit="Epoch", tag=None):
        """The progress lines of this fit (see ``verbose``): silent unless ``verbose >= 1``."""
        return Progress(self.verbose, unit, tag)

    @staticmethod
    def _epoch_values(state):
        """What a progress line shows of the model in ``state``.

        The RKHS norm of ``f`` (``sqrt(M) |coef|``, as in the penalty), the
        intercept (its norm for several outputs), the blocks and the steps;
        averaged when averaging is on, in the model's internal target units.
        """
        averaged = bool(state["n_averaged_"])
        coef = state["_coef_avg"] if averaged else float(state["_scale"]) * state["_coef"]
        rows = state["n_blocks_"] * state["feature_map_"].n_components
        c = coef[:rows].astype(np.float64)
        b = state["_intercept_avg"] if averaged else state["_intercept"]
        values = {"norm": math.sqrt(rows * float(np.einsum("ij,ij->", c, c)))}
        if b.shape[0] == 1:
            values["bias"] = float(b[0])
        else:
            values["bias_norm"] = float(np.linalg.norm(b))
        values.update(blocks=int(state["n_blocks_"]), T=int(state["t_"]))
        return values

    def _stopping(self):
        """The SGD stopping rule of ``fit``, from scikit-learn's parameters."""
        return Stopping(self.max_iter, self.tol, self.n_iter_no_change, self.early_stopping,
                        self.validation_fraction)

    def _objective(self, state, X, Y, sw, penalty):
        """Weighted mean loss of the model in ``state`` on ``(X, Y)`` (+ the penalty)."""
        U = model_outputs(state, X, self.n_jobs)
        w = sw / sw.sum()
        value = float(_weighted_sum(w, as_cy_loss(self._train_loss(state)).loss(Y, U)))
        return value + self._penalty_value(state) if penalty else value

    def _penalty_value(self, state):
        """The penalty term ``alpha / 2 |f|^2`` of the model in ``state``."""
        coef = (state["_coef_avg"] if state["n_averaged_"]
                else float(state["_scale"]) * state["_coef"])
        rows = state["n_blocks_"] * state["feature_map_"].n_components
        c = coef[:rows].astype(np.float64)
        return 0.5 * self._penalty(state) * rows * float(np.einsum("ij,ij->", c, c))

    def _validation_split(self, seed, n):
        """Indices of the training and validation rows (a seeded permutation)."""
        fraction = self._stopping().validation_fraction
        n_val = math.ceil(fraction * n)
        if n_val < 1 or n - n_val < 1:
            raise ValueError(f"early_stopping needs at least one validation and one "
                             f"training row: validation_fraction={fraction} of {n} rows")
        perm = np.argsort(words(seed, _SPLIT_BLOCK, 0, n), kind="stable")
        return np.sort(perm[n_val:]), np.sort(perm[:n_val])

    # ------------------------------------------------------------------ #
    # target scaling
    # ------------------------------------------------------------------ #
    # Regressors with ``normalize_y=True`` train on standardised targets,
    # (y - mean) / scale, with the loss's parameters in the target's units
    # divided by scale, and undo it on prediction (``_raw``).

    def _standardize_targets(self, state, Y, sw, first):
        """``Y`` in the model's internal units, fixing the scaling on the first call."""
        if first and not getattr(self, "normalize_y", False):
            return Y
        if first:
            y = Y[:, 0]
            w = sw / sw.sum()
            mean = float(_weighted_sum(w, y))
            std = float(np.sqrt(_weighted_sum(w, (y - mean) ** 2)))
            # one row (or constant targets) has no spread: scale by its size
            scale = std if std > 0 and np.isfinite(std) else max(abs(mean), 1.0)
            if not (np.isfinite(mean) and np.isfinite(scale)):
                raise ValueError(f"the targets overflow: their mean or standard deviation "
                                 f"is not finite (mean {mean}, std {std})")
            state["_y_mean"], state["_y_scale"] = mean, scale
            Z = (Y - mean) / scale
            # the intercept starts at the constant that minimises the loss
            if self._fits_intercept():
                state["_intercept"] = _constant_minimiser(as_cy_loss(self._train_loss(state)),
                                                          Z, w, state["_n_outputs"])
            return np.ascontiguousarray(Z)
        if "_y_scale" not in state:  # a model of format version 1: raw targets
            return Y
        return np.ascontiguousarray((Y - state["_y_mean"]) / state["_y_scale"])

    def _train_loss(self, state):
        """The loss the solvers see: ``loss_``, with target-unit parameters rescaled.

        A target-unit parameter left at ``None`` (Huber's ``delta``) is a width
        in the standardised targets' units already: it is not rescaled.
        """
        loss = state["loss_"]
        scale = state.get("_y_scale", 1.0)
        units = tuple(getattr(loss, "target_unit_params", ()))
        if scale == 1.0 or not units:
            return loss
        params = dict(loss.get_params())
        # None: a width relative to the loss's own units (the standardised targets)
        given = {p: params[p] / scale for p in units if params.get(p) is not None}
        if not given:
            return loss
        params.update(given)
        return type(loss)(**params)

    @staticmethod
    def _kept_rows(sw):
        keep = sw > 0
        if not keep.any():
            raise ValueError("sample_weight is zero for every row: there is nothing to fit")
        return keep

    # Targets of a fitted model for the fast partial_fit path, or None for
    # the full validation (estimators that define it opt into the path).
    _fast_targets = None

    @staticmethod
    def _fast_rows(X, state):
        """``X`` as rows for the model in ``state`` when it is a plain numpy input, or None
        (:func:`plain_rows`)."""
        return plain_rows(X, state, state["feature_map_"].n_features_in, state["_coef"].dtype)

    def _fast_inputs(self, X, y, sample_weight, classes):
        """``(X, Y)`` for a small numpy update of a fitted model, or None.

        Streaming services call ``partial_fit`` with one row at a time, where
        scikit-learn's input validation costs far more than the update.  Plain
        contiguous numpy input of known shape is checked here directly (shape,
        finiteness, known labels) with the same outcome; anything else, and
        any input that fails a check, takes the full validation, which names
        the problem.
        """
        state = self.__dict__
        if (self._fast_targets is None or sample_weight is not None or classes is not None
                or "_coef" not in state or type(y) is not np.ndarray or y.ndim != 1
                or state["_coef"].dtype != self._model_dtype()
                or self.n_features_in_ != state["feature_map_"].n_features_in):
            return None
        X = self._fast_rows(X, state)
        if X is None or X.shape[0] != y.shape[0]:
            return None
        Y = self._fast_targets(y)
        return None if Y is None else (X, Y)

    def _partial_fit(self, X, y, sample_weight, classes=None):
        if any(map(_dask.is_dask_collection, (X, y, sample_weight))):
            # the partitions in order, one update each (dask-ml's Incremental)
            return _dask.partial_fit(self, X, y, sample_weight, classes=classes)
        checked = self._check_params()
        fast = self._fast_inputs(X, y, sample_weight, classes)
        if fast is not None:
            X, Y = fast
            X = self._scale_inputs(X)
            # a row just predicted by this model: the step starts from that prediction
            first = _shared_half(self, X) if self._model_dtype() == np.float64 else None
            with self._training() as state:
                Y = self._standardize_targets(state, Y, None, first=False)
                config = self._train_config(state, checked)
                sw, order = _unit_rows(X.shape[0])
                self._run_epoch(state, config, X, Y, sw, order, first)
            return self
        first = not hasattr(self, "_coef")
        X, y = validate_data(self, X, y, dtype=self._model_dtype(), order="C",
                             accept_sparse="csr", y_numeric=self._y_numeric, reset=first)
        sw = check_sample_weight(sample_weight, X)
        loss, Y, n_outputs = self._prepare_targets(y, fitting=first, classes=classes)
        keep = self._kept_rows(sw)  # as in fit: a zero weight leaves the row out
        if not keep.all():
            X, Y, sw = X[keep], Y[keep], sw[keep]
        X = self._scale_inputs(X)
        with self._training(self._new_state(X, n_outputs, loss, sw) if first else None) as state:
            sw = np.ascontiguousarray(sw)
            Y = self._standardize_targets(state, Y, sw, first=first)
            self._record_penalty(state)
            order = np.arange(X.shape[0], dtype=np.int64)
            self._run_epoch(state, self._train_config(state, checked), X, Y, sw, order)
        return self

    # ------------------------------------------------------------------ #
    # public training calls (estimators with other arguments override them)
    # ------------------------------------------------------------------ #
    @transactional
    @_docs.doc(_docs.FIT_SOLVER, "X", "y", "sample_weight")
    def fit(self, X, y, sample_weight=None):
        return self._fit(X, y, sample_weight)

    @transactional
    @_docs.doc(_docs.PARTIAL_FIT, "X", "y", "sample_weight")
    def partial_fit(self, X, y, sample_weight=None):
        return self._partial_fit(X, y, sample_weight)

    def _raw(self, X):
        return self._outputs(X)[0]

    def _outputs(self, X):
        """``(raw outputs, the state they come from)``, from one snapshot of the model.

        A concurrent training call publishes its new state in one step, so the
        snapshot is wholly the old or the new model; X is checked against the
        snapshot's width (that of its feature map), not against attributes a
        running ``fit`` may already have reset.
        """
        st = self.__dict__.copy()
        if "_coef" not in st:
            check_is_fitted(self, "_coef")
        rows = self._fast_rows(X, st)
        if rows is not None:
            X = rows
        else:
            snapshot = object.__new__(type(self))
            snapshot.__dict__.update(st)
            snapshot.__dict__["n_features_in_"] = st["feature_map_"].n_features_in
            X = validate_data(snapshot, X, dtype=st["_coef"].dtype, order="C",
                              accept_sparse="csr", reset=False)
        built = st.get("_built_from")
        if isinstance(built, dict) and built.get("input_scaling") is not None:
            # the scaling the model was built with, whatever set_params did since
            X = self._scale_inputs(X, built["input_scaling"])
        keep = _keepable(st, X)
        out = model_outputs(st, X, self.n_jobs, keep=keep)
        if keep is not None:
            _remember_row(self, st, X, out, keep)
        if "_y_scale" in st:  # back to the target's units
            out = out * st["_y_scale"] + st["_y_mean"]
        return out, st

    @property
    def n_random_features_(self):
        """Current number of random features of the model (blocks x block size)."""
        check_is_fitted(self, "_coef")
        return self.n_blocks_ * self.feature_map_.n_components

    @property
    def coef_(self):
        """Coefficients of the random features, shape ``(n_random_features_, n_outputs)``.

        Row ``j * F + k`` is feature ``k`` of block ``j``; the features
        themselves are regenerated from ``seed_`` and never stored.  With
        ``average`` on, these are the averaged coefficients the model
        predicts with.
        """
        check_is_fitted(self, "_coef")
        if self.n_averaged_:
            return self._coef_avg[:self.n_random_features_].copy()
        return self._scale * self._coef[:self.n_random_features_]

    @property
    def intercept_(self):
        """Intercept of each output (averaged when ``average`` is on)."""
        check_is_fitted(self, "_coef")
        return (self._intercept_avg if self.n_averaged_ else self._intercept).copy()

    def save(self, path):
        """Write the fitted model to ``path`` as a model file.

        The file holds the hyper-parameters, the loss and feature map by
        their registered names, the seed and the learned arrays, with a
        checksum; :func:`onlinekernel.load` rebuilds the model without
        running any code from the file (see :mod:`onlinekernel.io.modelfile`
        for the format).  Writing is atomic: ``path`` never holds a partial
        model.

        ``path`` and the errors raised are those of
        :func:`onlinekernel.io.modelfile.save`.

        Examples
        --------
        >>> import os, tempfile
        >>> import numpy as np
        >>> import onlinekernel
        >>> X = np.random.default_rng(0).normal(size=(100, 3))
        >>> reg = onlinekernel.DSGRegressor(random_state=0).fit(X, X[:, 0] ** 2)
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     reg.save(os.path.join(tmp, "model.okm"))
        ...     loaded = onlinekernel.load(os.path.join(tmp, "model.okm"))
        >>> bool((loaded.predict(X) == reg.predict(X)).all())
        True
        """
        modelfile.save(self, path)

    def __getstate__(self):
        # ``object.__getstate__`` returns the live ``__dict__``: copy it before
        # dropping the cache, or pickling would strip the cache off ``self``.
        state = dict(super().__getstate__())
        state.pop("_blocks", None)  # a cache, rebuilt from the seed on load
        return state

    def __setstate__(self, state):
        # a model pickled before a parameter existed: the constructor's default
        missing = {k: v for k, v in _param_defaults(type(self)).items() if k not in state}
        if missing:
            state = {**copy.deepcopy(missing), **state}
        super().__setstate__(state)
        if "feature_map_" in state:
            self._blocks = BlockSource(self.feature_map_, self.seed_, self.cache_bytes,
                                       dtype=self._coef.dtype)
