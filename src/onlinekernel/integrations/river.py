"""River adapters: onlinekernel's kernel machines as River online models.

:class:`RiverClassifier` and :class:`RiverRegressor` wrap
:class:`~onlinekernel.DSGClassifier` and :class:`~onlinekernel.DSGRegressor`
behind River's interface (``learn_one`` / ``predict_one`` /
``predict_proba_one`` on dicts of features, ``learn_many`` / ``predict_many``
on pandas DataFrames), so they work in ``river.evaluate.progressive_val_score``,
in River pipelines and with River's metrics.  This module needs River
(``pip install river``); ``import onlinekernel`` does not.

Notes
-----
**Warm-up.**  A random-feature model needs a fixed input dimension and a
bandwidth before its first step, and the label set of a classifier before
its first ``partial_fit``.  The adapter therefore holds the first
``warm_up`` samples (default 32) in a buffer, predicting from them meanwhile
(the most frequent label, or the mean target).  When the buffer is full --
and, for a classifier, once two labels are known -- it fixes from the buffer:

* the **feature order**: the union of the buffered samples' keys, sorted
  (by ``repr`` if the keys do not sort); the random features are drawn for
  exactly these inputs;
* the **standardisation** (``standardize=True``): each feature's mean and
  standard deviation over the buffer, frozen from then on (a feature
  constant in the buffer is only centred).  Regressor targets are centred
  on the buffer's mean;
* ``gamma="scale"``: ``1 / (n_features * var)`` with ``var`` the variance
  of all the (standardised) buffered values -- the ``SVC`` rule applied to
  the buffer, where one sample would give a meaningless variance.  About
  ``1 / n_features`` when standardising.

It then builds the estimator and trains it on the buffered samples, one
step per sample in arrival order: afterwards the model is exactly what
learning each sample on arrival (with the frozen statistics) would have
given.  ``warm_up=1`` builds the model at the first sample.  While a
classifier has seen a single label (or no sample had a feature) the adapter
keeps only the latest ``warm_up`` samples.

**Features.**  After the warm-up, a missing key -- or a value that is
``None`` or NaN -- counts as 0.0 (before standardisation), as in River's
sparse convention; keys never seen in the warm-up are ignored, since the
input dimension of the random features is fixed.  Values must be numbers
(``bool`` counts as 0/1); a string raises a :class:`TypeError` naming the
feature: encode categorical features first, for example with
``river.preprocessing.OneHotEncoder``.  A row whose values are all floats
or ints is read by one C-level pass over the model's features; others take a
checked conversion of the same result.

**Moving scales.**  Frozen statistics suit a stationary input distribution.
For streams whose feature scales move, ``standardize="running"``
standardises with the mean and standard deviation of every sample learned
so far (River's ``StandardScaler``: updated by each learned sample before its
step, the variance dividing by the count; a feature constant so far is only
centred), continuing from the warm-up's statistics.  ``refresh_gamma=N``
refreshes the bandwidth every ``N`` learned samples: the variance of all
the (standardised) values of those samples is measured, as ``gamma="scale"``
measures it on the warm-up, and the inputs are rescaled by
``sqrt(v0 / v)``, ``v0`` the variance the bandwidth was chosen for.  For the
Gaussian kernel this is exactly ``gamma = gamma0 * v0 / v`` -- the
``"scale"`` rule on the recent samples -- while the random features, the
seed and the learned coefficients stay as they are; for other kernels it
keeps the inputs at the scale their bandwidth was set for.  Neither changes
predictions between learning calls.

**Drift.**  A stream whose concept changes needs a model that forgets.
The estimators' parameters for it pass through ``**kwargs``: ``eta_min``
floors the decaying step schedule, ``forgetting`` shrinks the coefficients
geometrically per row (see :class:`~onlinekernel.DSGClassifier`).  The
adapter adds a drift detector: ``drift_detector=`` takes River's ADWIN,
PageHinkley or any object with an ``update(x)`` method and a
``drift_detected`` attribute; ``learn_one`` feeds it the model's
prequential error on each sample before learning it (0/1 for the
classifier, the absolute error for the regressor), and when it fires while
the errors have risen (their recent average, over about 50 samples, above
their mean since the last reaction -- a detector also fires when a model
still learning gets better) the model reacts with ``drift_reaction``:

* ``"reset_step"``: restart the step schedule, so that the next steps are
  as large as the first ones; the coefficients stay.  (A constant schedule,
  the regressor's default, has nothing to restart.)
* ``"shrink"``: restart the schedule and halve the coefficients.
* ``"regrow"`` (default): drop the model's blocks of random features and
  restart the schedule: the model keeps its intercept (and the feature
  order, standardisation and labels of the adapter) and grows its features
  again, as a new model would.

The samples learned before each reaction are in ``drifts_``.  Feeding the
detector costs one prediction per learned sample, except in test-then-train,
where the prediction just made of the sample is reused.  The classifier's
default is ``drift_detector="adwin"`` (River's ``ADWIN()``) with
``"regrow"``, chosen by the measurements below; the regressor has no
detector by default.  Measured on a stream
whose labels flip at row 5,000 of 10,000 (``benchmarks/drift.py``, three
seeds; the trailing 250-row prequential accuracy back within 0.05 of the
1,000 rows before the change), with ``RiverClassifier``'s defaults
otherwise:

=======================  ==========================  =========================
system                   rows to recover (3 seeds)   accuracy after the change
=======================  ==========================  =========================
no reaction              1,990  2,258  1,587         0.851
ADWIN + ``reset_step``     939  1,490    991         0.905
ADWIN + ``shrink``         843    898    960         0.924
ADWIN + ``regrow``         468    617    561         0.944
``eta_min=8``            1,578  1,541  1,564         0.875
``forgetting=3e-4``        844    931    969         0.894
=======================  ==========================  =========================

ADWIN fired once per stream, 23 rows after the change, and never before
it; ``regrow`` recovered fastest.  On River's streams (first 20,000 rows,
prequential accuracy) ADWIN with ``regrow`` raised ``RandomRBFDrift``
(moving centroids) from 0.776 to 0.825 and changed nothing on
``Hyperplane`` (no detection) and ``Phishing`` (stationary), where
``eta_min=8`` and ``forgetting=3e-4`` lost 0.8 and 0.7 points on
``Hyperplane``.  Hence the classifier's defaults: ADWIN and ``"regrow"``,
no step floor, no forgetting.  (Forgetting suits a stream known to drift
gradually: ``forgetting=5e-4`` gets 0.843 on ``RandomRBFDrift`` but loses
0.8-6.2 points on stationary streams, ``benchmarks/stream_defaults.py``.)

Labels flip at row 600 here; ADWIN fires some 40 rows later:

>>> import random
>>> from river import drift
>>> from onlinekernel.integrations.river import RiverClassifier
>>> rng = random.Random(1)
>>> model = RiverClassifier(drift_detector=drift.ADWIN(), drift_reaction="regrow", seed=0)
>>> for i in range(1000):
...     x = {"a": rng.uniform(-2, 2), "b": rng.uniform(-2, 2)}
...     model.learn_one(x, (x["a"] * x["b"] > 0) == (i < 600))
>>> [600 <= d < 700 for d in model.drifts_]
[True]

**Labels.**  Labels may be any hashable values (bools, strings, numbers);
the estimator is trained on their indices in order of first appearance
(labels passed as ``classes=`` come first).  A label first seen after the
model is built adds an output to the fitted model without losing what it
learned: the scores of the known labels are kept exactly (a binary model's
decision value ``f`` becomes the pair ``(-f, f)`` of a one-vs-rest model, or
``(-f/2, f/2)`` of a softmax model, which keeps the odds), and the new
label's score starts at zero coefficients with the smallest intercept of
the known labels, so it is predicted only where the model is undecided
until samples of it arrive.

**Learning.**  ``learn_one`` runs one training step on the sample at once
(``partial_fit`` on one row), so ``predict_one`` right after it reflects
it.  ``learn_many`` is one ``partial_fit`` call on the whole DataFrame: one
step per ``batch_size`` rows.  The estimator's step clock counts rows in
units of ``batch_size``, so a one-row step moves the model by
``1 / batch_size`` of a full step: the size of a step per sample is
``eta0 / batch_size``, the same whichever way the samples come.  The
adapters keep that per-sample step of the estimators' defaults but in
smaller batches, which suits streams: the classifier uses
``batch_size=8, eta0=16, t0=400`` (``DSGClassifier``'s 2 per sample,
decaying after the same 3,200 samples), the regressor ``batch_size=4``
(with ``eta0=1``: a quarter of the residual per sample, where
``DSGRegressor``'s 1/64 left 2.5-3 times the progressive MAE on the test
streams).  Parameters passed
explicitly win.

**No intercept.**  The classifier learns no intercept
(``fit_intercept=False``).  An intercept moves by the full step of every
sample, everywhere at once, and nothing forgets it (forgetting and drift
reactions leave it): on a stream it wanders and drowns the local sums of
the kernel, which represents a constant part of the scores by itself.
Without it the prequential accuracy rose on every stream measured
(``benchmarks/stream_defaults.py``, first 20,000 rows; Phishing's 1,250):

=====================================  ==============  =================
stream                                 with intercept  without (default)
=====================================  ==============  =================
RandomRBFDrift (moving centroids)      0.798           0.825
Hyperplane (stationary, 5 % noise)     0.911           0.923
Phishing                               0.878           0.886
SEA (10 % noise)                       0.858           0.870
Agrawal (function 2)                   0.897           0.907
imbalanced (12 % positives)            0.983           0.986
=====================================  ==============  =================

On 100,000 rows: 0.796 -> 0.836 (``RandomRBFDrift``) and 0.933 -> 0.940
(``Hyperplane``).  Pass ``fit_intercept=True`` to learn one.

**The last iterate.**  The classifier keeps ``learning_rate="inverse",
average=False``, the ``DSGClassifier`` defaults before 2026-12-04, where
``DSGClassifier`` now averages ``"invsqrt"`` steps
(``average="polynomial"``).  On the streams above
(``benchmarks/stream_defaults.py``, 2026-12-04) the averaged steps scored
higher on the five stationary ones (Hyperplane 0.923 -> 0.930, Phishing
0.886 -> 0.894, SEA 0.870 -> 0.883, Agrawal 0.907 -> 0.913, imbalanced
0.986 -> 0.987) but lower on the drifting one (RandomRBFDrift 0.825 ->
0.814), the case the adapter's drift detection is for; and a model that
predicts from an average cannot start a one-row step from the prediction
just made, so test-then-train would compute each row's features twice.
Pass ``learning_rate="invsqrt", average="polynomial"`` for a stream known
not to drift.

Measured on four synthetic streams of 4,000 samples (a disk, XOR and a
checkerboard to classify, a sine surface to regress; 3 seeds), learning
each sample at once gave the lowest progressive error: ``learn_many`` on
batches of 4, 16 and 64 samples erred on 0.5-2, 1.5-3 and 1.8-4.4 more
points of the classification streams and had an 11-13 % larger regression
MAE, for about 1.5, 4.5 and 12 times the throughput (at the time,
``learn_one`` plus ``predict_one`` cost about 1 ms of CPU per sample on a
loaded 2-core machine, mostly scikit-learn's input validation, against
0.07 ms per sample in batches of 64; a one-row call now skips the
validation of what does not depend on the row and, in test-then-train,
evaluates each row's features once: 0.24-0.35 ms a sample, see
``benchmarks/streams.py``).  So ``learn_one`` learns each sample
immediately, and ``learn_many`` is there for throughput.  River's check
that ``learn_many`` matches a ``learn_one`` loop does not apply for that
reason (as for River's own mini-batch linear models).

**Probabilities.**  With a probabilistic loss (``logistic``,
``multinomial``) ``predict_proba_one`` is exactly the estimator's
``predict_proba`` (the default loss is ``logistic``).  Other losses
(``hinge``, ``squared_hinge``) have no probabilities; the adapter returns the logistic sigmoid of the decision
value for two labels (as River's linear classifiers do, whatever their loss)
and the softmax of the decision values for more.  These are monotone in the scores -- the
most probable label is the predicted one -- but not calibrated.

**Threads.**  The compiled training steps and the seeded prediction of the
estimators run with the GIL released; a loss or feature map written in
Python takes the GIL back for each mini-batch (loss) or each tile of up to
128 rows and each block (feature map), and input validation runs in
Python.  A ``predict`` or ``decision_function`` may run while another
thread calls ``partial_fit`` or ``fit`` on the same estimator: training
calls are serialised by a per-estimator lock, train on copies of the state
and publish it in one step, so a concurrent prediction uses the model
either before or after a training call, never a mix.  The adapters add the
same guarantee on top: ``learn_one`` / ``learn_many`` calls are serialised
by a per-adapter lock, and ``predict_one`` / ``predict_proba_one`` /
``predict_many`` read one published view (feature order, statistics,
labels and model together).

Examples
--------
>>> import random
>>> from river import evaluate, metrics
>>> from onlinekernel.integrations.river import RiverClassifier
>>> rng = random.Random(0)
>>> def ring(n):  # inside or outside a circle: no linear model separates it
...     for _ in range(n):
...         x = {"a": rng.uniform(-2, 2), "b": rng.uniform(-2, 2)}
...         yield x, x["a"] ** 2 + x["b"] ** 2 < 1.5
>>> model = RiverClassifier(seed=0)
>>> model.predict_one({"a": 0.0, "b": 0.0}) is None  # nothing learned yet
True
>>> metric = evaluate.progressive_val_score(ring(1000), model, metrics.Accuracy())
>>> metric.get() > 0.85
True
>>> model.predict_proba_one({"a": 0.0, "b": 0.0})[True] > 0.5
True
"""
import copy
import math
import numbers
import threading
from collections import namedtuple

import numpy as np
from sklearn.base import clone as _sk_clone

try:
    from river import base as _river_base
except ImportError as exc:  # pragma: no cover - the tests run with River installed
    raise ImportError("onlinekernel.integrations.river needs River: pip install river") from exc

from onlinekernel.core.running import (
    inverse_std, read_row, standardised_row, welford_step)
from onlinekernel.estimators import (
    DRIFT_REACTIONS, DSGClassifier, DSGRegressor, LinearStream, NormaStream, probabilities)

__all__ = ["DEFAULT_EXPERTS", "RiverClassifier", "RiverMultiKernelClassifier",
           "RiverNormaClassifier", "RiverRegressor", "hedge_weights"]

# What predictions read, published as one object: feature order and index,
# standardisation, labels (classifier) or target offset (regressor), model.
_View = namedtuple("_View", "features index center inv_scale labels y_offset model")


def _number(name, value):
    """``value`` as a float, ``None`` for a missing value; a clear error otherwise."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)):
        return float(value)
    if not isinstance(value, numbers.Real):
        raise TypeError(f"feature {name!r} has the non-numeric value {value!r} "
                        f"({type(value).__name__}); onlinekernel's models take numbers: encode "
                        f"it first, for example with river.preprocessing.OneHotEncoder")
    v = float(value)
    if math.isnan(v):
        return None
    if math.isinf(v):
        raise ValueError(f"feature {name!r} is infinite ({value!r})")
    return v


# rows of the recent error average that decides whether a detection is a rise
# of the errors (see _DSGAdapter._watch)
_RECENT = 50

# value types the one-row conversion takes as they are (see _DSGAdapter._raw_row)
_FAST_TYPES = frozenset((float, int, np.float64, np.float32, np.int64))


def _sorted_keys(keys):
    try:
        return tuple(sorted(keys))
    except TypeError:  # keys of mixed types that do not compare
        return tuple(sorted(keys, key=repr))


def _with_new_class(est):
    """A copy of the fitted classifier ``est`` (trained on class indices) with class ``K``."""
    return est.with_new_class(est.classes_.shape[0])


class _Locked:
    """Pickling without the lock that serialises an adapter's calls (a new one on load)."""

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_lock", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.RLock()


class _DSGAdapter(_Locked):
    """Warm-up, feature handling and publication shared by the two adapters."""

    _estimator_class = None
    # defaults of the wrapped estimator's parameters that differ from its
    # own (see the subclasses); a parameter passed in **kwargs wins
    _stream_defaults = {}
    # adapters pickled before drift detection existed load without one
    drift_detector = None
    drift_reaction = "regrow"
    _detector = None
    _drifts = ()
    _n_learned = 0
    _error_means = (0, 0.0, 0.0)
    _last = None

    def __init__(self, estimator=None, *, warm_up=32, standardize=True, refresh_gamma=None,
                 drift_detector=None, drift_reaction="regrow", seed=None, **kwargs):
        self.estimator = estimator
        self.warm_up = warm_up
        self.standardize = standardize
        self.refresh_gamma = refresh_gamma
        self.drift_detector = drift_detector
        self.drift_reaction = drift_reaction
        self.seed = seed
        self.kwargs = kwargs
        self._template = self._make_template()
        # the adapter's own detector (a copy: the parameter stays as given)
        self._detector = self._make_detector()
        self._drifts = ()      # samples learned when the detector fired
        self._n_learned = 0
        # the errors' mean since the last reaction and their recent average
        # (see _watch): [count, mean, recent]
        self._error_means = (0, 0.0, 0.0)
        self._last = None      # the last one-row prediction (see _remember_prediction)
        self._lock = threading.RLock()
        self._buffer = []      # warm-up samples: (features dict, target, weight)
        self._view = None      # set when the model is built
        self._prior = ()       # what predictions use before that (see subclasses)
        self._online = None    # running statistics (see _adapt), set when the model is built

    def _make_template(self):
        cls = self._estimator_class
        if not isinstance(self.warm_up, numbers.Integral) or isinstance(self.warm_up, bool) \
                or self.warm_up < 1:
            raise ValueError(f"warm_up must be an integer >= 1, got {self.warm_up!r}")
        if not (isinstance(self.standardize, (bool, np.bool_)) or self.standardize == "running"):
            raise ValueError(f"standardize must be True, False or 'running', got "
                             f"{self.standardize!r}")
        r = self.refresh_gamma
        if r is not None and (not isinstance(r, numbers.Integral) or isinstance(r, bool)
                              or r < 1):
            raise ValueError(f"refresh_gamma must be None or an integer >= 1 (samples between "
                             f"refreshes), got {r!r}")
        det = self.drift_detector
        if isinstance(det, str):
            if det != "adwin":
                raise ValueError(f"drift_detector must be None, 'adwin' or a drift detector "
                                 f"object, got {det!r}")
        elif det is not None and not (callable(getattr(det, "update", None))
                                      and hasattr(det, "drift_detected")):
            raise TypeError(f"drift_detector must be None, 'adwin' or a drift detector with "
                            f"River's interface (an update(x) method and a drift_detected "
                            f"attribute, as river.drift.ADWIN), got {type(det).__name__}")
        if not (isinstance(self.drift_reaction, str) and self.drift_reaction in DRIFT_REACTIONS):
            raise ValueError(f"unknown drift_reaction {self.drift_reaction!r}; choose one of "
                             f"{', '.join(map(repr, DRIFT_REACTIONS))}")
        if self.estimator is not None:
            if self.kwargs:
                raise ValueError(f"pass either an estimator or its parameters "
                                 f"({', '.join(sorted(map(str, self.kwargs)))}), not both")
            if not isinstance(self.estimator, cls):
                raise TypeError(f"estimator must be a {cls.__name__}, got "
                                f"{type(self.estimator).__name__}")
            template = _sk_clone(self.estimator)
        else:
            if self.seed is not None and "random_state" in self.kwargs:
                raise ValueError("pass the seed as seed= or random_state=, not both")
            # an unknown parameter raises TypeError here
            template = cls(**{**self._stream_defaults, **self.kwargs})
        if self.seed is not None:
            template.set_params(random_state=self.seed)
        template.check_params()  # bad values fail now, not at the end of the warm-up
        return template

    # ------------------------------------------------------------------ #
    # River plumbing
    # ------------------------------------------------------------------ #
    def __repr__(self):
        # River's repr lists the signature's parameters; add the estimator's
        rep = super().__repr__()
        if not self.kwargs:
            return rep
        extra = "".join(f"\n  {k}={v!r}" for k, v in sorted(self.kwargs.items()))
        head, _, tail = rep.rpartition("\n")
        return f"{head}{extra}\n{tail}"

    def _unit_test_skips(self):
        # learn_many is one partial_fit call (one step per batch_size rows),
        # learn_one one step per sample: they differ by design
        return {"check_learn_many_matches_learn_one"}

    @property
    def model_(self):
        """The fitted estimator, or ``None`` during the warm-up.

        It takes standardised features in the order of :attr:`features_`
        (and, for a classifier, label indices); do not train it directly.
        """
        view = self._view
        return None if view is None else view.model

    @property
    def drifts_(self):
        """When ``drift_detector`` fired: the number of samples learned before each detection."""
        return self._drifts

    @property
    def features_(self):
        """The feature names the model takes, in order (``None`` during the warm-up)."""
        view = self._view
        return None if view is None else view.features

    # ------------------------------------------------------------------ #
    # features
    # ------------------------------------------------------------------ #
    @staticmethod
    def _clean(x):
        """A copy of ``x`` with float values, missing ones dropped."""
        out = {}
        for k, v in x.items():
            v = _number(k, v)
            if v is not None:
                out[k] = v
        return out

    @staticmethod
    def _raw_row(x, view):
        """The model's inputs of the dict ``x``, before standardisation (float64, 1-d).

        The values are read in the model's feature order by one compiled
        pass (:func:`~onlinekernel.core.running.read_row`); when all are
        floats or ints and finite they are the row.  Anything else -- ``None``,
        NaN, a bool, a string, an infinite value -- takes the checked
        conversion, which counts missing values as 0.0 and names a bad one.
        """
        row = np.empty(len(view.features))
        if read_row(x, view.features, _FAST_TYPES, row):
            return row
        row[:] = 0.0
        index = view.index
        for k, v in x.items():
            j = index.get(k)
            if j is not None:
                v = _number(k, v)
                if v is not None:
                    row[j] = v
        return row

    @classmethod
    def _row(cls, x, view):
        """One standardised row of the model's inputs from the dict ``x``."""
        return standardised_row(cls._raw_row(x, view), view.center, view.inv_scale)

    @classmethod
    def _matrix(cls, X, view):
        """The standardised input matrix of the DataFrame ``X``."""
        return np.ascontiguousarray((cls._raw_matrix(X, view) - view.center) * view.inv_scale)

    @staticmethod
    def _raw_matrix(X, view):
        """The input matrix of the DataFrame ``X`` before standardisation."""
        cols = list(view.features)
        M = X.reindex(columns=cols)
        try:
            M = M.astype(np.float64).to_numpy(dtype=np.float64, copy=True)
        except (TypeError, ValueError):
            for c in cols:  # name the offending column
                if c in X.columns:
                    for v in X[c]:
                        _number(c, v)
            raise
        M[np.isnan(M)] = 0.0
        bad = np.isinf(M).any(axis=0)
        if bad.any():
            raise ValueError(f"feature {cols[int(np.argmax(bad))]!r} has an infinite value")
        return M

    def _statistics(self, rows):
        """Feature order, standardisation, resolved gamma, the standardised rows and
        the statistics the online preprocessing continues from (see ``_adapt``)."""
        features = _sorted_keys(set().union(*rows))
        index = {k: j for j, k in enumerate(features)}
        X = np.zeros((len(rows), len(features)))
        for i, r in enumerate(rows):
            for k, v in r.items():
                X[i, index[k]] = v
        if self.standardize:
            center = X.mean(axis=0)
            inv_scale = inverse_std(center, X.std(axis=0))
        else:
            center, inv_scale = np.zeros(len(features)), np.ones(len(features))
        Z = (X - center) * inv_scale
        var = float(Z.var())
        gamma = None
        if isinstance(self._template.gamma, str):  # "scale", on the whole buffer
            gamma = 1.0 / (len(features) * var) if var > 0 else 1.0
        # what _adapt continues from: the buffer's moments (standardize="running")
        # and the variance gamma was chosen for (refresh_gamma)
        online = {"n": X.shape[0], "mean": X.mean(axis=0),
                  "m2": ((X - X.mean(axis=0)) ** 2).sum(axis=0),
                  "inv_std": inv_scale, "factor": 1.0, "var_ref": var, "window": [0, 0.0, 0.0]}
        return features, index, center, inv_scale, gamma, Z, online

    def _new_estimator(self, gamma):
        est = _sk_clone(self._template)
        if gamma is not None:
            est.set_params(gamma=gamma)
        return est

    # ------------------------------------------------------------------ #
    # learning
    # ------------------------------------------------------------------ #
    def learn_one(self, x, y, w=1.0):
        """Learn one sample: buffered during the warm-up, one training step after it.

        Parameters
        ----------
        x : dict
            Features by name; values are numbers, ``None``/NaN are missing.
        y
            The label (classifier) or the numeric target (regressor).
        w : float, default=1.0
            Sample weight, multiplying the sample's loss gradient; a zero
            weight learns nothing.
        """
        w = float(w)
        if not (w >= 0.0 and math.isfinite(w)):
            raise ValueError(f"w must be a finite, non-negative weight, got {w!r}")
        with self._lock:
            view = self._view
            if view is None:
                self._buffer_one(self._clean(x), y, w)
                self._n_learned += w > 0.0
                return
            raw = self._raw_row(x, view)[None, :]
            if self._detector is not None and w > 0.0:
                self._check_target(y)  # a bad label must not reach the detector
                self._watch(raw, [y], view)
                view = self._view
            target = self._target(y, view)  # may publish a view with a new label
            if w > 0.0:
                self._learn(raw, target, w)
                self._n_learned += 1

    def learn_many(self, X, y):
        """Learn a mini-batch: one ``partial_fit`` call, one step per ``batch_size`` rows.

        During the warm-up, rows are taken one by one as by :meth:`learn_one`
        until the model is built.

        Parameters
        ----------
        X : pandas.DataFrame
            One row per sample, one column per feature (NaN: missing).
        y : pandas.Series
            Labels or targets, aligned with ``X``.
        """
        if len(X) != len(y):
            raise ValueError(f"X has {len(X)} rows but y has {len(y)}")
        with self._lock:
            ys = list(y)
            i = 0
            if self._view is None:
                records = X.to_dict(orient="records")
                while i < len(ys) and self._view is None:
                    self.learn_one(records[i], ys[i])
                    i += 1
            if i == len(ys):
                return
            M = self._raw_matrix(X.iloc[i:], self._view)
            if self._detector is not None:
                for t in ys[i:]:
                    self._check_target(t)
                self._watch(M, ys[i:], self._view)
            targets = self._targets(ys[i:])  # may publish views with new labels
            self._learn(M, targets, None)
            self._n_learned += len(ys) - i

    def _watch(self, R, ys, view):
        """Feed the drift detector the errors of the model on the raw rows ``R``; react.

        The errors are those of predicting each row before learning it (the
        prequential errors): 0/1 for a classifier, the absolute error for a
        regressor.  When the detector fires and the errors have *risen* --
        their recent average (an exponential one over about
        ``_RECENT`` rows) is above their mean since the last reaction -- the
        model reacts with ``drift_reaction`` before it learns the rows (a
        batch reacts once).  A detection of falling errors is ignored: River's
        detectors report any change of the mean, and a model still learning
        its concept changes it too (on the tests' stream ADWIN fired after
        1,000 rows of steady improvement).
        """
        last = self._last
        if (R.shape[0] == 1 and last is not None and last[0] is view
                and last[1] is view.model.__dict__.get("_coef")
                and last[2].tobytes() == R[0].tobytes()):
            # test-then-train: the prediction just made of this row
            errors = self._errors(view, None, ys, last[3][None])
        else:
            errors = self._errors(view, np.ascontiguousarray((R - view.center) * view.inv_scale),
                                  ys)
        fired = None
        count, mean, recent = self._error_means
        for k, e in enumerate(errors):
            count += 1
            mean += (e - mean) / count
            recent += (e - recent) * max(1.0 / count, 1.0 / _RECENT)
            self._detector.update(e)
            if self._detector.drift_detected and fired is None and recent > mean:
                fired = k
                count, mean = 1, e  # the errors since this reaction
        if fired is not None:
            view.model.react_to_drift(self.drift_reaction)
            self._drifts = self._drifts + (self._n_learned + fired,)
        self._error_means = (count, mean, recent)

    def _make_detector(self):
        """The detector the adapter updates: a copy of ``drift_detector`` (or a new ADWIN)."""
        det = self.drift_detector
        if det is None:
            return None
        if isinstance(det, str):  # "adwin", validated
            from river.drift import ADWIN
            return ADWIN()
        return copy.deepcopy(det)

    def _remember_prediction(self, view, raw, out):
        """Keep the model's output for the raw row of a one-row prediction, for ``_watch``.

        A detector needs the prediction of each learned sample before it is
        learned, which in test-then-train is the prediction just made: it is
        reused when the published view and model (every training call and
        reaction publishes new coefficient arrays) and the row are the same.
        """
        if self._detector is not None:
            self._last = (view, view.model.__dict__.get("_coef"), raw, out)

    def _buffer_one(self, x, y, w):
        self._check_target(y)
        prior = self._prior
        self._remember(y)
        self._buffer.append((x, y, w))
        if len(self._buffer) >= self.warm_up and self._ready() \
                and any(r for r, _, _ in self._buffer):
            try:
                self._build()
            except BaseException:  # leave the adapter as it was
                self._buffer.pop()
                self._prior = prior
                raise
        elif len(self._buffer) > self.warm_up:  # waiting for a second label or a feature
            del self._buffer[0]

    def _build(self):
        rows = [r for r, _, _ in self._buffer]
        features, index, center, inv_scale, gamma, Z, online = self._statistics(rows)
        est = self._new_estimator(gamma)
        view = self._initial_view(features, index, center, inv_scale, est)
        for i, (_, y, w) in enumerate(self._buffer):
            if w > 0.0:
                self._step(view, Z[i:i + 1], self._targets([y], view), w)
        self._view, self._online = view, online
        self._buffer = []

    def _learn(self, R, targets, w):
        """Learn the raw rows ``R``: update the running statistics, then step.

        The statistics (``standardize="running"``, ``refresh_gamma``) take the
        rows in first, as River's ``StandardScaler`` in a pipeline does; the
        view with the new scaling is published once the step succeeded (a
        failed step leaves the adapter as it was).
        """
        view = self._view
        online = self._adapt(R) if self._online is not None and (
            self.standardize == "running" or self.refresh_gamma) else None
        if online is not None:
            view = view._replace(center=online["center"], inv_scale=online["inv_scale"])
        self._step(view, np.ascontiguousarray((R - view.center) * view.inv_scale), targets, w)
        if online is not None:
            del online["center"], online["inv_scale"]
            self._online = online
            self._view = view

    def _adapt(self, R):
        """The running statistics after the raw rows ``R``, and the scaling they give.

        ``standardize="running"``: each feature's mean and variance over all
        learned rows (Chan et al.'s update of count, mean and sum of squared
        deviations; the variance divides by the count, as River's
        ``StandardScaler``).  ``refresh_gamma=N``: the variance of the
        standardised values of the last ``N`` learned rows (all entries, as
        ``gamma="scale"`` measures it); when ``N`` rows are in, the inputs are
        rescaled by ``sqrt(v0 / v)``, ``v0`` the variance gamma was chosen for.
        """
        st = dict(self._online)
        inv_std = st["inv_std"]
        if self.standardize == "running":
            n, mean, m2 = st["n"], st["mean"], st["m2"]
            k = R.shape[0]
            mean_r = R.mean(axis=0)
            delta = mean_r - mean
            total = n + k
            st["mean"] = mean + delta * (k / total)
            st["m2"] = m2 + ((R - mean_r) ** 2).sum(axis=0) + delta ** 2 * (n * k / total)
            st["n"] = total
            inv_std = st["inv_std"] = inverse_std(st["mean"], np.sqrt(st["m2"] / total))
            center = st["mean"]
        else:
            center = self._view.center
        if self.refresh_gamma:
            Z = (R - center) * inv_std
            rows, s1, s2 = st["window"]
            rows, s1, s2 = rows + R.shape[0], s1 + float(Z.sum()), s2 + float((Z * Z).sum())
            if rows >= self.refresh_gamma:
                cnt = rows * R.shape[1]
                var = s2 / cnt - (s1 / cnt) ** 2
                if var > 0 and st["var_ref"] > 0:
                    st["factor"] = math.sqrt(st["var_ref"] / var)
                rows, s1, s2 = 0, 0.0, 0.0
            st["window"] = [rows, s1, s2]
        st["center"], st["inv_scale"] = center, inv_std * st["factor"]
        return st

    def _step(self, view, X, targets, w):
        sw = None if w is None or w == 1.0 else np.array([w])
        self._partial_fit(view, X, targets, sw)


class RiverClassifier(_DSGAdapter, _river_base.MiniBatchClassifier):
    """A River classifier learning a kernel machine with :class:`~onlinekernel.DSGClassifier`.

    See :mod:`onlinekernel.integrations.river` for the warm-up, the feature handling,
    labels arriving over time, probabilities and threads.

    Parameters
    ----------
    estimator : DSGClassifier, default=None
        A template: the adapter trains a clone of it (``fit`` is never
        called on it).  ``None`` builds one from ``**kwargs``.
    classes : tuple, default=None
        Labels known in advance (their indices come first).  Not needed:
        labels are also discovered as they arrive.
    warm_up : int, default=32
        Samples buffered before the model is built (see the module notes).
    standardize : bool or "running", default=True
        Standardise each feature: ``True`` with the warm-up's mean and
        standard deviation, frozen; ``"running"`` with the mean and standard
        deviation of every sample learned so far, updated at each
        ``learn_one`` / ``learn_many`` (River's ``StandardScaler``, for streams
        whose feature scales move); ``False`` not at all.
    refresh_gamma : int, default=None
        Every ``refresh_gamma`` learned samples, rescale the inputs so that
        their variance is again the one the bandwidth was chosen for (see
        the module notes); ``None`` keeps the warm-up's bandwidth.
    drift_detector : "adwin", object or None, default="adwin"
        A drift detector with River's interface (``update(x)``,
        ``drift_detected``), such as ``river.drift.PageHinkley()``, fed the
        0/1 prequential error of each learned sample; the adapter updates a
        copy.  ``"adwin"``: River's ``ADWIN()`` with its defaults, the
        stream default chosen by ``benchmarks/drift.py`` (see the module
        notes); ``None``: no detection.
    drift_reaction : {"regrow", "reset_step", "shrink"}, default="regrow"
        What the model does when the detector reports a rise of the errors
        (see the module notes).
    seed : int, default=None
        The estimator's ``random_state`` (River's name for it).
    **kwargs
        Parameters of :class:`~onlinekernel.DSGClassifier` (``loss``,
        ``kernel``, ``gamma``, ``alpha``, ...), with its defaults except
        ``batch_size=8, eta0=16.0, t0=400.0`` (the same step per sample in
        smaller batches), ``fit_intercept=False`` and
        ``learning_rate="inverse", average=False`` (see the module notes).

    Attributes
    ----------
    model_ : DSGClassifier or None
        The fitted estimator (``None`` during the warm-up).
    features_ : tuple or None
        The model's features, in order.
    classes_ : tuple
        The labels seen or declared so far, in index order.
    drifts_ : tuple of int
        The samples learned before each drift reaction.

    Examples
    --------
    >>> import random
    >>> from onlinekernel.integrations.river import RiverClassifier
    >>> def label(x):
    ...     return "low" if x < -1 else "high" if x > 1 else "mid"
    >>> rng = random.Random(0)
    >>> model = RiverClassifier(loss="logistic", seed=0)
    >>> for i in range(400):  # "mid" values only arrive after 200 samples
    ...     x = rng.uniform(-3, 3) if i >= 200 else rng.choice([-1, 1]) * rng.uniform(1, 3)
    ...     model.learn_one({"x": x}, label(x))
    >>> model.classes_  # in order of first appearance
    ('high', 'low', 'mid')
    >>> [model.predict_one({"x": x}) for x in (-2.5, 0.0, 2.5)]
    ['low', 'mid', 'high']
    >>> p = model.predict_proba_one({"x": 2.5})
    >>> sorted(p), round(sum(p.values()), 6)
    (['high', 'low', 'mid'], 1.0)
    """

    _estimator_class = DSGClassifier
    _stream_defaults = {"batch_size": 8, "eta0": 16.0, "t0": 400.0, "fit_intercept": False,
                        "learning_rate": "inverse", "average": False}

    def __init__(self, estimator=None, *, classes=None, warm_up=32, standardize=True,
                 refresh_gamma=None, drift_detector="adwin", drift_reaction="regrow",
                 seed=None, **kwargs):
        self.classes = classes
        if classes is not None:
            labels = tuple(classes)
            if len(set(labels)) != len(labels):
                raise ValueError(f"classes has repeated labels: {classes!r}")
        super().__init__(estimator, warm_up=warm_up, standardize=standardize,
                         refresh_gamma=refresh_gamma, drift_detector=drift_detector,
                         drift_reaction=drift_reaction, seed=seed, **kwargs)
        self._prior = (tuple(classes) if classes is not None else (), ())

    @property
    def _multiclass(self):
        return True

    @property
    def classes_(self):
        """The labels known so far, in index order."""
        view = self._view
        return view.labels if view is not None else self._prior[0]

    # -- labels ---------------------------------------------------------- #
    @staticmethod
    def _check_target(y):
        if y is None:
            raise ValueError("the label y is None")
        if isinstance(y, numbers.Real) and not isinstance(y, numbers.Integral) and y != y:
            # NaN != NaN: every NaN would become a class of its own
            raise ValueError(f"the label y is NaN ({y!r}): a missing label, not a class")
        try:
            hash(y)
        except TypeError:
            raise TypeError(f"labels must be hashable, got {type(y).__name__}") from None

    def _remember(self, y):
        labels, counts = self._prior
        counts = dict(counts)
        if y not in counts and y not in labels:
            labels = labels + (y,)
        counts[y] = counts.get(y, 0) + 1
        self._prior = (labels, tuple(counts.items()))

    def _ready(self):
        return len(self._prior[0]) >= 2

    def _initial_view(self, features, index, center, inv_scale, est):
        return _View(features, index, center, inv_scale, self._prior[0], None, est)

    def _target(self, y, view):
        return np.array([self._code(y)])

    def _targets(self, ys, view=None):
        if view is not None:  # the warm-up's labels, all known to view
            return np.array([view.labels.index(y) for y in ys])
        return np.array([self._code(y) for y in ys])

    def _code(self, y):
        """The index of label ``y``, adding it to the model if it is new."""
        self._check_target(y)
        view = self._view
        try:
            return view.labels.index(y)
        except ValueError:
            pass
        # a new label: one more output, published with the label in one step
        model = view.model
        if hasattr(model, "classes_"):
            model = _with_new_class(model)
        # (an estimator not trained yet -- zero weights so far -- takes the
        # longer label list at its first partial_fit)
        self._view = view._replace(labels=view.labels + (y,), model=model)
        return len(view.labels)

    def _errors(self, view, Z, ys, P=None):
        """0/1 errors of the model's labels for the standardised rows ``Z``.

        ``P``: the model's probabilities for them, when already computed
        (``Z`` is then not read).
        """
        if not hasattr(view.model, "classes_"):  # not trained yet: every label is a guess
            return [1.0] * len(ys)
        if P is None:
            P = self._proba(view.model, Z)
        return [0.0 if view.labels[int(k)] == y else 1.0
                for k, y in zip(np.argmax(P, axis=1), ys)]

    def _partial_fit(self, view, X, codes, sw):
        est = view.model
        if hasattr(est, "classes_"):
            est.partial_fit(X, codes, sample_weight=sw)
        else:
            est.partial_fit(X, codes, classes=np.arange(len(view.labels)), sample_weight=sw)

    # -- predictions ----------------------------------------------------- #
    def _proba(self, est, Z):
        if est.loss_.link in ("logistic", "softmax"):
            return est.predict_proba(Z)
        s = est.decision_function(Z)
        # margins: the sigmoid of one output, a softmax of several
        return probabilities(s[:, None], "logistic") if s.ndim == 1 else \
            probabilities(s, "softmax")

    def _prior_proba(self):
        labels, counts = self._prior
        total = sum(c for _, c in counts)
        if not total:
            return {}
        counts = dict(counts)
        return {lab: counts.get(lab, 0) / total for lab in labels}

    def predict_proba_one(self, x, **kwargs):
        """Probability of each known label (an empty dict before any sample).

        During the warm-up, the labels' frequencies; after it, the model's
        probabilities (see the module notes for losses without them).
        """
        view = self._view
        if view is None:
            return self._prior_proba()
        raw = self._raw_row(x, view)
        p = self._proba(view.model, standardised_row(raw, view.center, view.inv_scale))[0]
        self._remember_prediction(view, raw, p)
        return {lab: float(v) for lab, v in zip(view.labels, p)}

    def predict_one(self, x, **kwargs):
        """The most probable label, ``None`` before any sample."""
        proba = self.predict_proba_one(x)
        return max(proba, key=proba.get) if proba else None

    def predict_proba_many(self, X):
        """:meth:`predict_proba_one` for each row of the DataFrame ``X``."""
        import pandas as pd
        view = self._view
        if view is None:
            prior = self._prior_proba()
            return pd.DataFrame([prior] * len(X), index=X.index, columns=list(prior))
        P = self._proba(view.model, self._matrix(X, view))
        return pd.DataFrame(P, index=X.index, columns=list(view.labels))

    def predict_many(self, X):
        """:meth:`predict_one` for each row of the DataFrame ``X``."""
        import pandas as pd
        P = self.predict_proba_many(X)
        if P.shape[1] == 0:
            return pd.Series([None] * len(X), index=X.index, dtype=object)
        labels = np.empty(P.shape[1], dtype=object)
        labels[:] = list(P.columns)
        return pd.Series(labels[np.argmax(P.to_numpy(), axis=1)], index=X.index, dtype=object)


class RiverRegressor(_DSGAdapter, _river_base.MiniBatchRegressor):
    """A River regressor learning a kernel machine with :class:`~onlinekernel.DSGRegressor`.

    See :mod:`onlinekernel.integrations.river` for the warm-up, the feature handling and
    threads.  Targets are centred on the warm-up's mean when
    ``standardize`` is on (the losses depend on the residual only, so this
    changes nothing but the intercept's starting point).

    Parameters
    ----------
    estimator : DSGRegressor, default=None
        A template: the adapter trains a clone of it.  ``None`` builds one
        from ``**kwargs``.
    warm_up : int, default=32
        Samples buffered before the model is built (see the module notes).
    standardize : bool or "running", default=True
        Standardise each feature with the warm-up's mean and standard
        deviation (``"running"``: with those of every sample learned so far,
        as River's ``StandardScaler``), and centre the targets on the
        warm-up's mean.
    refresh_gamma : int, default=None
        Every ``refresh_gamma`` learned samples, rescale the inputs to the
        variance the bandwidth was chosen for (see the module notes).
    drift_detector : "adwin", object or None, default=None
        A drift detector with River's interface (``update(x)``,
        ``drift_detected``), fed the absolute prequential error of each
        learned sample (see the module notes); the adapter updates a copy.
        ``"adwin"``: River's ``ADWIN()``.  No detector by default: the
        regressor's constant step already follows a changing target, and
        no regression stream was measured.
    drift_reaction : {"regrow", "reset_step", "shrink"}, default="regrow"
        What the model does when the detector reports a rise of the errors.
    seed : int, default=None
        The estimator's ``random_state``.
    **kwargs
        Parameters of :class:`~onlinekernel.DSGRegressor`, with its defaults
        except ``batch_size=4`` (see the module notes).

    Attributes
    ----------
    model_ : DSGRegressor or None
        The fitted estimator (``None`` during the warm-up).
    features_ : tuple or None
        The model's features, in order.
    drifts_ : tuple of int
        The samples learned before each drift reaction.

    Examples
    --------
    >>> import math, random
    >>> from river import evaluate, metrics
    >>> from onlinekernel.integrations.river import RiverRegressor
    >>> rng = random.Random(0)
    >>> stream = []
    >>> for _ in range(600):
    ...     x = {"u": rng.uniform(-3, 3)}
    ...     stream.append((x, math.sin(x["u"])))
    >>> model = RiverRegressor(seed=0)
    >>> model.predict_one({"u": 0.0})
    0.0
    >>> metric = evaluate.progressive_val_score(stream, model, metrics.MAE())
    >>> metric.get() < 0.2
    True

    Inputs whose unit changes mid-stream (tenfold after 500 samples),
    standardised with the statistics of every sample learned so far:

    >>> model = RiverRegressor(standardize="running", seed=0)
    >>> for i in range(1500):
    ...     u = rng.uniform(-3, 3)
    ...     model.learn_one({"u": u * (1.0 if i < 500 else 10.0)}, math.sin(u))
    >>> max(abs(model.predict_one({"u": 10 * u}) - math.sin(u)) for u in (-2, -1, 0.5, 1.5)) < 0.1
    True
    """

    _estimator_class = DSGRegressor
    _stream_defaults = {"batch_size": 4}

    def __init__(self, estimator=None, *, warm_up=32, standardize=True, refresh_gamma=None,
                 drift_detector=None, drift_reaction="regrow", seed=None, **kwargs):
        super().__init__(estimator, warm_up=warm_up, standardize=standardize,
                         refresh_gamma=refresh_gamma, drift_detector=drift_detector,
                         drift_reaction=drift_reaction, seed=seed, **kwargs)
        self._prior = (0, 0.0)  # samples and mean target of the warm-up

    @staticmethod
    def _check_target(y):
        if isinstance(y, (bool, np.bool_)) or not isinstance(y, numbers.Real):
            raise TypeError(f"the target y must be a number, got {y!r} ({type(y).__name__})")
        if not math.isfinite(y):
            raise ValueError(f"the target y must be finite, got {y!r}")

    def _remember(self, y):
        n, mean = self._prior
        self._prior = (n + 1, mean + (float(y) - mean) / (n + 1))

    def _ready(self):
        return True

    def _initial_view(self, features, index, center, inv_scale, est):
        offset = self._prior[1] if self.standardize else 0.0
        return _View(features, index, center, inv_scale, None, offset, est)

    def _target(self, y, view):
        self._check_target(y)
        return np.array([float(y) - view.y_offset])

    def _targets(self, ys, view=None):
        view = self._view if view is None else view
        for y in ys:
            self._check_target(y)
        return np.asarray(ys, dtype=np.float64) - view.y_offset

    def _errors(self, view, Z, ys, pred=None):
        """Absolute errors of the model's predictions for the standardised rows ``Z``.

        ``pred``: the model's predictions for them, when already computed
        (``Z`` is then not read).
        """
        if pred is None:
            pred = (view.model.predict(Z) if hasattr(view.model, "_coef")
                    else np.zeros(len(ys)))
        return list(np.abs(pred + view.y_offset - np.asarray(ys, dtype=np.float64)))

    def _partial_fit(self, view, X, targets, sw):
        view.model.partial_fit(X, targets, sample_weight=sw)

    def predict_one(self, x, **kwargs):
        """The predicted target: the mean target during the warm-up (0.0 before any)."""
        view = self._view
        if view is None:
            return float(self._prior[1])
        raw = self._raw_row(x, view)
        out = view.model.predict(standardised_row(raw, view.center, view.inv_scale))
        self._remember_prediction(view, raw, out[0])
        return float(out[0] + view.y_offset)

    def predict_many(self, X):
        """:meth:`predict_one` for each row of the DataFrame ``X``."""
        import pandas as pd
        view = self._view
        if view is None:
            return pd.Series(np.full(len(X), float(self._prior[1])), index=X.index)
        return pd.Series(view.model.predict(self._matrix(X, view)) + view.y_offset,
                         index=X.index)


# What a NORMA model's one-row calls read: feature order and index (for
# _DSGAdapter._raw_row).
_NormaView = namedtuple("_NormaView", "features index")


class _PreparedRowsClassifier(_Locked, _river_base.Classifier):
    """What the classifiers of standardised rows share: inputs, labels, statistics, the lock.

    Subclasses build their stream models (objects with the
    :class:`~onlinekernel.NormaStream` interface) in :meth:`_build` and
    take one step of them in :meth:`_step`.
    """

    def _reset(self):
        self._lock = threading.RLock()
        self._view = None      # feature order, set by the first learned sample
        self._labels = ()
        self._models = None    # the stream models, made at the first learned sample
        self._n, self._mean, self._m2, self._scale = 0, None, None, None
        self._targets = None
        self._version = 0      # bumped by every step: a kept prediction is of this model
        self._last = None      # (version, standardised row, each model's outputs)

    @property
    def _multiclass(self):
        return True

    def _standardised(self, x):
        """The row of the dict ``x``, and it standardised by the statistics of the samples
        learned before (shape ``(1, d)``)."""
        row = _DSGAdapter._raw_row(x, self._view)
        return row, standardised_row(row, self._mean, self._scale)

    def learn_one(self, x, y):
        """Learn one sample: one step of the model(s) on it, then of the statistics."""
        RiverClassifier._check_target(y)
        with self._lock:
            if self._view is None:
                x = _DSGAdapter._clean(x)
                if not x:
                    return  # no feature to fix the inputs by
                features = _sorted_keys(x)
                d = len(features)
                self._models = self._build(d)
                self._view = _NormaView(features, {k: j for j, k in enumerate(features)})
                self._mean, self._m2, self._scale = np.zeros(d), np.zeros(d), np.ones(d)
            row, Z = self._standardised(x)  # a bad value raises before anything changes
            new = y not in self._labels
            if new:
                self._labels += (y,)
                for model in self._models:
                    model.add_output()
                K = len(self._labels)
                self._targets = 2.0 * np.eye(K) - 1.0  # row i: label i's margin targets
            i = self._labels.index(y)
            last = self._last
            known = (last is not None and last[0] == self._version
                     and last[2][0].shape[0] == len(self._labels)
                     and last[1].tobytes() == Z.tobytes())
            outputs = last[2] if known else [model.outputs(Z) for model in self._models]
            self._step(Z, i, outputs, new)
            self._version += 1
            self._last = None
            # the statistics take the sample in after its step (Welford's update)
            self._n += 1
            welford_step(row, self._mean, self._m2, self._n, self._scale)

    def _step(self, Z, i, outputs, new):
        """One step of every model on the row ``Z`` of label ``i`` (``outputs``: theirs;
        ``new``: the label was met for the first time)."""
        T = self._targets[i:i + 1]
        for model, f in zip(self._models, outputs):
            model.learn(Z, T, f)

    def _outputs(self, x):
        """The labels and each model's outputs of ``x`` (``None`` before two labels)."""
        with self._lock:
            labels = self._labels
            if len(labels) < 2:
                return labels, None
            Z = self._standardised(x)[1]
            outputs = [model.outputs(Z) for model in self._models]
            self._last = (self._version, Z, outputs)
        return labels, outputs

    def predict_one(self, x):
        """The most probable label, ``None`` before any sample."""
        proba = self.predict_proba_one(x)
        return max(proba, key=proba.get) if proba else None


class RiverNormaClassifier(_PreparedRowsClassifier):
    """A River classifier of stored rows: NORMA, kernel SGD on a budget.

    The stream form of :class:`~onlinekernel.NormaClassifier`.

    Where :class:`RiverClassifier` approximates the kernel with random
    features everywhere at once, this model keeps the last ``budget``
    support vectors themselves and lets old ones fade (``alpha``): the model
    for streams whose concept is local and moving.  On River's
    ``RandomRBFDrift`` (fifty drifting clusters, 100,000 rows) it scores
    0.94 prequential accuracy, where ``RiverClassifier`` scores 0.84 and
    River's best (``KNNClassifier``) 0.91; on a slowly turning hyperplane
    it is a poor model (0.84, where ``RiverClassifier`` scores 0.94).
    Figures and commands: ``benchmarks/streams.py``.

    Each label has an output, trained one-vs-rest on the margin targets
    ``+-1`` (a label met later starts at zero); the predicted label is the
    largest output.  Inputs: the keys of the first learned sample, in
    sorted order (later keys are ignored, a missing key or ``None``/NaN
    counts as 0.0), each standardised by the mean and standard deviation of
    the samples learned before it (River's ``StandardScaler``, updated
    after the sample's step rather than before, so that a test-then-train
    prediction and step see the same row and share its kernel values).

    Parameters
    ----------
    gamma : float, default=8.0
        The kernel's bandwidth times the number of inputs: ``k(x, x') =
        exp(-gamma / d ||x - x'||^2)`` on the standardised inputs (chosen
        by measurement on River's streams, ``benchmarks/stream_defaults``).
    budget : int, default=1024
        Support vectors kept at most.
    eta0 : float, default=1.0
        The constant step.
    alpha : float, default=3e-3
        Coefficients shrink by ``1 - eta0 * alpha`` a sample.
    loss : str, default="hinge"
        A registered loss with margin targets (``"hinge"``, ``"logistic"``,
        ``"squared_hinge"``, ...).
    kernel : str, default="gaussian"
        A registered feature map whose exact kernel the model evaluates
        (compiled: ``"gaussian"``, ``"laplacian"``).

    Examples
    --------
    >>> import random
    >>> from river import evaluate, metrics
    >>> from onlinekernel.integrations.river import RiverNormaClassifier
    >>> rng = random.Random(0)
    >>> def ring(n):
    ...     for _ in range(n):
    ...         x = {"a": rng.uniform(-2, 2), "b": rng.uniform(-2, 2)}
    ...         yield x, x["a"] ** 2 + x["b"] ** 2 < 1.5
    >>> model = RiverNormaClassifier(gamma=2.0)
    >>> evaluate.progressive_val_score(ring(2000), model, metrics.Accuracy()).get() > 0.9
    True
    """

    def __init__(self, gamma=8.0, budget=1024, eta0=1.0, alpha=3e-3, loss="hinge",
                 kernel="gaussian"):
        self.gamma = gamma
        self.budget = budget
        self.eta0 = eta0
        self.alpha = alpha
        self.loss = loss
        self.kernel = kernel
        self._build(1)  # bad parameters fail now, not at the first sample
        self._reset()

    def __setstate__(self, state):
        if "_model" in state:  # pickled before the list of models (2026-11-29)
            model = state.pop("_model")
            state["_models"] = None if model is None else [model]
            state["_last"] = None  # a kept prediction only saves work
        super().__setstate__(state)

    @property
    def _model(self):
        return None if self._models is None else self._models[0]

    @property
    def n_support_(self):
        """Support vectors stored."""
        return 0 if self._models is None else self._model.n_support

    def _build(self, d):
        return [NormaStream(self.kernel, self.gamma / d, d, self.budget, self.eta0,
                            self.alpha, self.loss)]

    def predict_proba_one(self, x):
        """Probability of each label: the logistic link's where the loss has one, else a softmax.

        Before any sample: an empty dict.
        """
        labels, outputs = self._outputs(x)
        if outputs is None:
            return {labels[0]: 1.0} if labels else {}
        # the logistic link's (normalised), else a softmax of the margins
        link = "logistic" if self._model.loss.link == "logistic" else "softmax"
        p = probabilities(outputs[0][None, :], link)[0]
        return {lab: float(v) for lab, v in zip(labels, p)}


#: The multiple-kernel classifier's experts, chosen on River's streams (benchmarks/streams.py):
#: local concepts (Gaussian, as RiverNormaClassifier), rougher ones (Laplacian), and linear
#: ones at a tracking and a converging step.
DEFAULT_EXPERTS = (
    {"kernel": "gaussian"},
    {"kernel": "laplacian", "gamma": 2.0, "alpha": 0.0, "eta0": 0.5},
    {"kernel": "linear", "eta0": 0.01},
    {"kernel": "linear", "eta0": 0.001},
)

#: A linear expert's parameters where its dict gives none (River's LogisticRegression's step).
_LINEAR_DEFAULTS = {"eta0": 0.01, "alpha": 0.0, "loss": "logistic"}


def hedge_weights(mistakes, learning_rate):
    """Hedge's shares of the vote: ``exp(-learning_rate * L)`` normalised, one per expert's
    (discounted) mistake count ``L``; Python floats (a few experts: cheaper than numpy).

    >>> [round(w, 3) for w in hedge_weights([0.0, 1.0, 5.0], 1.0)]
    [0.727, 0.268, 0.005]
    """
    least = min(mistakes)
    w = [math.exp(-learning_rate * (m - least)) for m in mistakes]
    total = math.fsum(w)
    return [v / total for v in w]


def _expert(spec, d):
    """The stream model of the expert ``spec`` (a dict) for ``d`` inputs; a named error."""
    if not isinstance(spec, dict):
        raise ValueError(f"an expert is a dict of parameters, got {spec!r}")
    params = dict(spec)
    kernel = params.pop("kernel", "gaussian")
    try:
        if kernel == "linear":
            unknown = set(params) - set(_LINEAR_DEFAULTS)
            if unknown:
                raise ValueError(f"a linear expert takes {sorted(_LINEAR_DEFAULTS)}, "
                                 f"not {sorted(unknown)}")
            return LinearStream(d, **{**_LINEAR_DEFAULTS, **params})
        return RiverNormaClassifier(kernel=kernel, **params)._build(d)[0]
    except (TypeError, ValueError) as exc:
        raise ValueError(f"expert {spec!r}: {exc}") from None


class RiverMultiKernelClassifier(_PreparedRowsClassifier):
    """A River classifier that follows whichever of several kernels predicts best lately.

    Online multiple-kernel classification (Jin, Hoi & Yang 2010; Hoi et al.
    2013): each expert is a kernel model learning every sample -- NORMA on
    a budget of support vectors (:class:`RiverNormaClassifier`'s model) or,
    for the linear kernel, its weights (:class:`~onlinekernel.estimators.LinearStream`)
    -- and the prediction is the experts' vote, each weighted by Hedge:
    ``exp(-learning_rate * L_j)``, ``L_j`` the expert's mistakes discounted
    by ``decay`` a sample (so a stream whose best kernel changes moves the
    weight within about ``1 / (1 - decay)`` samples).  No stream needs its
    kernel known in advance: the default experts cover River's drifting
    clusters (Gaussian), a turning hyperplane (linear) and the Phishing
    data (Laplacian), where each single kernel fails on one of them
    (figures: ``benchmarks/streams.py``).  Inputs, labels and
    standardisation are :class:`RiverNormaClassifier`'s, shared by all the
    experts.

    Parameters
    ----------
    experts : tuple of dict, default=DEFAULT_EXPERTS
        One dict per expert: ``kernel`` (a registered map name, default
        ``"gaussian"``, or ``"linear"``) and any of
        :class:`RiverNormaClassifier`'s other parameters (its defaults
        fill the rest), or for ``"linear"`` only ``eta0`` (default 0.01),
        ``alpha`` (0.0) and ``loss`` (``"logistic"``).
    learning_rate : float, default=1.0
        Hedge's rate: how sharply fewer recent mistakes win the vote.
    decay : float, default=0.999
        The factor each expert's mistake count shrinks by a sample, in
        ``(0, 1]`` (1: all mistakes count forever).

    Examples
    --------
    >>> import random
    >>> from river import evaluate, metrics
    >>> from onlinekernel.integrations.river import RiverMultiKernelClassifier
    >>> rng = random.Random(0)
    >>> def ring(n):
    ...     for _ in range(n):
    ...         x = {"a": rng.uniform(-2, 2), "b": rng.uniform(-2, 2)}
    ...         yield x, x["a"] ** 2 + x["b"] ** 2 < 1.5
    >>> model = RiverMultiKernelClassifier()
    >>> evaluate.progressive_val_score(ring(2000), model, metrics.Accuracy()).get() > 0.95
    True
    >>> model.weights_.round(2).tolist()  # a ring: the linear experts have no say
    [0.0, 1.0, 0.0, 0.0]
    """

    def __init__(self, experts=DEFAULT_EXPERTS, learning_rate=1.0, decay=0.999):
        self.experts = experts
        self.learning_rate = learning_rate
        self.decay = decay
        if isinstance(experts, (dict, str)) or not hasattr(experts, "__len__") or not experts:
            raise ValueError(f"experts must be a non-empty sequence of dicts, got {experts!r}")
        if not (isinstance(learning_rate, numbers.Real) and 0.0 < learning_rate < math.inf):
            raise ValueError(f"learning_rate must be a positive number, got {learning_rate!r}")
        if not (isinstance(decay, numbers.Real) and 0.0 < decay <= 1.0):
            raise ValueError(f"decay must be in (0, 1], got {decay!r}")
        self._build(1)  # bad parameters fail now, not at the first sample
        self._reset()

    def _reset(self):
        super()._reset()
        self._mistakes = [0.0] * len(self.experts)  # discounted, one per expert
        self._weights = hedge_weights(self._mistakes, self.learning_rate)

    @property
    def weights_(self):
        """Each expert's share of the vote now, in the order of ``experts``."""
        return np.array(self._weights)

    def _build(self, d):
        return [_expert(spec, d) for spec in self.experts]

    def _step(self, Z, i, outputs, new):
        # an expert's guess is the label of its largest output before the step; a label met
        # for the first time is a mistake of every expert (none could have guessed it)
        decay = self.decay
        self._mistakes = [decay * m + (new or f.argmax() != i)
                          for m, f in zip(self._mistakes, outputs)]
        self._weights = hedge_weights(self._mistakes, self.learning_rate)
        super()._step(Z, i, outputs, new)

    def predict_proba_one(self, x):
        """Each label's share of the experts' weighted vote.

        Before any sample: an empty dict.
        """
        labels, outputs = self._outputs(x)
        if outputs is None:
            return {labels[0]: 1.0} if labels else {}
        votes = [0.0] * len(labels)
        for f, w in zip(outputs, self._weights):
            votes[f.argmax()] += w
        return {lab: min(v, 1.0) for lab, v in zip(labels, votes)}  # a sum may round above 1
