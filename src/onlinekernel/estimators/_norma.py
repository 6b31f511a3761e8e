"""NORMA (Kivinen, Smola & Williamson 2004): kernel SGD on a budget of stored rows.

The random-feature models approximate a kernel globally, with the same
``M`` features everywhere; a stream whose concept is local and moving
(River's ``RandomRBFDrift``: fifty drifting clusters) needs the exact
kernel at a narrow width on the last few hundred rows, which random
features approximate poorly at any affordable ``M``.  NORMA keeps those
rows themselves: ``f(x) = sum_j a_j k(c_j, x)`` over the last ``budget``
support vectors, every coefficient shrinking by ``1 - eta0 * alpha`` per
step (so old rows fade, and the oldest is dropped when the budget is full).
It is the first baseline of the doubly stochastic gradients paper (Dai et
al. 2014), and the lecture notes' kernel primal SGD.

A step costs ``budget`` kernel values (compiled for the Gaussian and
Laplacian kernels): the same order as ``budget`` random features, whatever
the stream's length.  The compiled loop is
:mod:`onlinekernel.solvers.norma`.
"""
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from onlinekernel import registry
from onlinekernel.estimators._base import _check_dict, _same, plain_rows
from onlinekernel.estimators._classifier import (
    DSGClassifier, _with_probabilities, fast_labels, probabilities)
from onlinekernel.estimators._constraints import Int, Real
from onlinekernel.estimators._stored import StoredRows, check_gamma, exact_kernel, transaction
from onlinekernel.featuremaps.base import as_cy_feature_map
from onlinekernel.losses.base import as_cy_loss
from onlinekernel.solvers.norma import LinearRows, NormaRows, norma_outputs, norma_steps

__all__ = ["LinearStream", "NormaClassifier", "NormaStream"]


#: Parameters a model is built with: partial_fit refuses to continue it once they change.
_FIXED = ("kernel", "gamma", "kernel_params", "loss", "budget")


def _bound_kernel(est, X, n_features):
    """``est``'s exact kernel as a compiled map bound to ``n_features`` inputs, and its gamma
    (``"scale"`` measured on ``X``)."""
    fmap, gamma = exact_kernel(est, X)
    return as_cy_feature_map(fmap).bind(n_features), gamma


def _check_loss(name, value):
    if isinstance(value, str):
        # raises the error that lists the names (the registry's listing itself
        # introspects every factory: 300 us, more than a one-row step)
        registry.get_loss(value)
        return
    as_cy_loss(value)  # a loss object: compiled, or a Python Loss the adapter wraps


class NormaClassifier(ClassifierMixin, StoredRows, BaseEstimator):
    r"""Kernel classifier trained by NORMA: SGD on a budget of support vectors.

    ``f(x) = sum_j a_j k(c_j, x)`` over at most ``budget`` stored rows.  Each
    row ``x`` (in order) is first scored, then every coefficient shrinks by
    ``1 - eta0 * alpha`` and, when the loss's gradient ``g`` at ``f(x)`` is
    not zero, ``x`` joins the support vectors with coefficients ``-eta0 *
    g``, in place of the oldest once there are ``budget`` of them (Kivinen,
    Smola & Williamson 2004, with a constant step: the tracking mode for
    drifting data).  Binary problems use one output, more classes one per
    class (the loss's multiclass form, as :class:`DSGClassifier`).  There is
    no intercept.  See :mod:`onlinekernel.estimators._norma`.

    Parameters
    ----------
    kernel : str or feature map, default="gaussian"
        A registered feature map whose exact kernel the model evaluates, or
        such a map object.  The Gaussian and Laplacian kernels are compiled;
        others go through the map's Python ``kernel(X, Y)``, row by row.
    gamma : "scale" or float, default="scale"
        The kernel's bandwidth, for maps that take one; ``"scale"`` is
        ``1 / (d Var X)`` of the first ``fit`` or ``partial_fit`` rows.
    kernel_params : dict, default=None
        Further parameters of a map given by name.
    loss : str or loss object, default="hinge"
        A registered loss (``"hinge"``, ``"logistic"``, ``"squared_hinge"``,
        ...) or a loss object.  With the hinge loss only rows inside the
        margin become support vectors.
    budget : int, default=1024
        Support vectors kept at most (NORMA's truncation).
    eta0 : float, default=1.0
        The constant step size.
    alpha : float, default=1e-3
        The penalty ``alpha / 2 ||f||^2``: coefficients shrink by ``1 -
        eta0 * alpha`` per row (``eta0 * alpha < 1``); 0 keeps them until
        the budget drops them.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The labels.
    centers_ : ndarray of shape (budget, n_features_in_)
        Storage of the support vectors; the first ``n_support_`` rows are
        used, in the order the sums run over them (a ring: the next row
        replaces the oldest).
    coef_ : ndarray of shape (budget, n_outputs)
        Their coefficients (zero in unused rows).
    n_support_ : int
        Support vectors stored.
    gamma_ : float or None
        The kernel's bandwidth (None for a kernel without one).
    kernel_ : feature map
        The map whose kernel the model evaluates.
    loss_ : CyLoss
        The loss trained (the multiclass form for more than two classes).
    t_ : int
        Rows learned.

    Examples
    --------
    >>> import numpy as np
    >>> from onlinekernel import NormaClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 2))
    >>> y = np.hypot(X[:, 0], X[:, 1]) < 1.2  # no line separates them
    >>> clf = NormaClassifier(gamma=1.0, budget=256)
    >>> for i in range(0, 1500, 100):  # a stream, in chunks
    ...     clf = clf.partial_fit(X[i:i + 100], y[i:i + 100], classes=[False, True])
    >>> bool(clf.score(X[1500:], y[1500:]) > 0.9), clf.n_support_ <= 256
    (True, True)
    """

    _parameter_constraints = {
        "gamma": check_gamma,
        "kernel_params": _check_dict,
        "loss": _check_loss,
        "budget": Int(1),
        "eta0": Real(0.0, strict=True),
        "alpha": Real(0.0),
    }

    def __init__(self, kernel="gaussian", *, gamma="scale", kernel_params=None, loss="hinge",
                 budget=1024, eta0=1.0, alpha=1e-3):
        self.kernel = kernel
        self.gamma = gamma
        self.kernel_params = kernel_params
        self.loss = loss
        self.budget = budget
        self.eta0 = eta0
        self.alpha = alpha

    def _validate(self):
        super()._validate()
        if not self.eta0 * self.alpha < 1.0:
            raise ValueError(f"eta0 * alpha must be < 1 (each step shrinks the coefficients "
                             f"by 1 - eta0 * alpha), got {self.eta0 * self.alpha:g}")

    def _resolve_base_loss(self):
        if isinstance(self.loss, str):
            return as_cy_loss(registry.get_loss(self.loss))
        return as_cy_loss(self.loss)

    def _new_state(self, X, classes):
        """A fresh model for ``classes``, its kernel fixed by the first rows ``X``."""
        loss = self._resolve_base_loss()
        if classes.shape[0] > 2:
            loss = loss.multiclass_loss()
        fmap, gamma = _bound_kernel(self, X, X.shape[1])
        K = DSGClassifier._encode(classes, loss, classes)[1]
        return {"_built_from": {k: getattr(self, k) for k in _FIXED},
                "classes_": classes, "loss_": loss, "kernel_": fmap, "gamma_": gamma,
                "centers_": np.zeros((self.budget, X.shape[1])),
                "coef_": np.zeros((self.budget, K)),
                "_ring": np.zeros(2, dtype=np.intp), "t_": 0}

    @staticmethod
    def _targets(state, y):
        """The loss's targets of labels ``y`` for the model in ``state``."""
        return DSGClassifier._encode(state["classes_"], state["loss_"], y)[0]

    def _learn(self, state, X, Y):
        """The steps of rows ``X`` (targets ``Y``) run on copies of ``state``; returns them."""
        new = dict(state, centers_=state["centers_"].copy(), coef_=state["coef_"].copy(),
                   _ring=state["_ring"].copy())
        fmap = new["kernel_"]
        norma_steps(fmap, fmap.kernel, new["centers_"], new["coef_"], new["_ring"], X, Y,
                    new["loss_"], float(self.eta0), 1.0 - float(self.eta0) * float(self.alpha))
        if not np.isfinite(new["coef_"]).all():
            raise FloatingPointError("NORMA's coefficients overflowed; lower eta0")
        new["n_support_"] = int(new["_ring"][0])
        new["t_"] = state["t_"] + X.shape[0]
        return new

    def _publish(self, state):
        for name, value in state.items():
            setattr(self, name, value)

    def fit(self, X, y):
        """Learn the rows of ``X`` once, in order, from a fresh model."""
        return transaction(self, self._fit, X, y)

    def _fit(self, X, y):
        self._validate()
        X, y = validate_data(self, X, y, dtype=np.float64, order="C")
        y = column_or_1d(y, warn=True)
        check_classification_targets(y)
        classes = np.unique(y)
        if classes.shape[0] < 2:
            raise ValueError(f"the classifier needs samples of at least 2 classes in the data, "
                             f"but the data contain only one class: {classes[0]!r}")
        state = self._new_state(X, classes)
        self._publish(self._learn(state, X, self._targets(state, y)))

    def partial_fit(self, X, y, classes=None):
        """Learn the rows of ``X`` in order; the first call fixes the classes.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        classes : array-like, default=None
            Every label of the stream (first call; default: those of ``y``).
        """
        return transaction(self, self._partial_fit, X, y, classes)

    def _partial_fit(self, X, y, classes):
        first = not hasattr(self, "classes_")
        self._validate()  # (eta0 and alpha may change between calls)
        if not first:
            self._check_fixed(classes)
            fast = self._fast_inputs(X, y, classes)
            if fast is not None:  # a plain numpy update: no validate_data
                self._publish(self._learn(self._state(), *fast))
                return
        X, y = validate_data(self, X, y, dtype=np.float64, order="C", reset=first)
        y = column_or_1d(y, warn=True)
        check_classification_targets(y)
        if first:
            labels = np.unique(y if classes is None else np.asarray(classes))
            unknown = np.setdiff1d(np.unique(y), labels)
            if unknown.size:
                raise ValueError(f"labels {unknown.tolist()} are not in classes "
                                 f"{labels.tolist()}")
            if labels.shape[0] < 2:
                raise ValueError(f"the classifier needs at least 2 classes: pass classes= on "
                                 f"the first call to partial_fit (got {labels.tolist()})")
            state = self._new_state(X, labels)
        else:
            state = self._state()
        self._publish(self._learn(state, X, self._targets(state, y)))

    def _state(self):
        """The fitted model's arrays and settings, as :meth:`_learn` takes them."""
        return {name: getattr(self, name) for name in
                ("_built_from", "classes_", "loss_", "kernel_", "gamma_", "centers_", "coef_",
                 "_ring", "t_")}

    def _check_fixed(self, classes):
        """Refuse to continue the model with other fixed parameters or classes."""
        changed = [k for k in _FIXED if not _same(self._built_from[k], getattr(self, k))]
        if changed:
            now = ", ".join(f"{k}={getattr(self, k)!r}" for k in changed)
            was = ", ".join(f"{k}={self._built_from[k]!r}" for k in changed)
            raise ValueError(f"{now} changed since the model was built with {was}: "
                             f"partial_fit continues that model (eta0 and alpha may "
                             f"change); call fit for a new one, or set them back")
        if classes is not None and not np.array_equal(np.unique(classes), self.classes_):
            raise ValueError(f"classes {np.unique(classes).tolist()} differ from the "
                             f"classes of the first call {self.classes_.tolist()}")

    def _fast_inputs(self, X, y, classes):
        """``(X, Y)`` of a plain numpy update of the fitted model, or None
        (:func:`~onlinekernel.estimators._base.plain_rows`)."""
        if classes is not None or type(y) is not np.ndarray or y.ndim != 1:
            return None
        X = plain_rows(X, self.__dict__, self.n_features_in_, np.float64)
        if X is None or X.shape[0] != y.shape[0]:
            return None
        Y = fast_labels(self.classes_, self.loss_, y)
        return None if Y is None else (X, Y)

    def _raw(self, X):
        check_is_fitted(self, "coef_")
        plain = plain_rows(X, self.__dict__, self.n_features_in_, np.float64)
        X = plain if plain is not None else validate_data(self, X, reset=False,
                                                          dtype=np.float64, order="C")
        return norma_outputs(self.kernel_, self.kernel_.kernel, self.centers_, self.coef_,
                             self.n_support_, X)

    def decision_function(self, X):
        """The outputs: ``f(x)`` (1-d) for two classes, one column per class otherwise."""
        raw = self._raw(X)
        if self.loss_.target_encoding == "class_index" or raw.shape[1] > 1:
            return raw
        return raw[:, 0]

    def predict(self, X):
        """The class of the largest output (two classes: the sign of ``f``)."""
        raw = self._raw(X)
        if raw.shape[1] == 1:
            return self.classes_[(raw[:, 0] > 0).astype(np.intp)]
        return self.classes_[np.argmax(raw, axis=1)]

    @_with_probabilities
    def predict_proba(self, X):
        """Class probabilities (losses with a logistic or softmax link)."""
        return probabilities(self._raw(X), self.loss_.link)


def _stream_step(spec):
    """A stream model's loss, step and shrink factor from the NORMA parameters ``spec``
    (checked; the loss must take margin targets)."""
    spec._validate()
    loss = spec._resolve_base_loss()
    if loss.target_encoding != "margin":
        raise ValueError(f"loss {spec.loss!r} does not take margin targets (+-1): "
                         f"one output per label needs them")
    return loss, float(spec.eta0), 1.0 - float(spec.eta0) * float(spec.alpha)


def _with_zero_column(A):
    """``A`` (2-d) with one more column of zeros, C-contiguous: a new label's output."""
    return np.ascontiguousarray(np.hstack([A, np.zeros((A.shape[0], 1))]))


class _RowModel:
    """What the stream models share: their compiled one-row calls (``_calls``), bound to
    their arrays when first needed -- and again when an array is replaced (a new label)
    -- and never pickled or copied (a copy binds its own arrays)."""

    _calls = None

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_calls", None)
        return state

    def outputs(self, Z):
        """``f(z)`` of one standardised row ``Z`` (shape ``(1, d)``): ``(K,)`` values."""
        return self._bound().outputs(Z)

    def learn(self, Z, Y, outputs=None):
        """One step on the row ``Z`` with margin targets ``Y`` (``(1, K)``), in place.

        ``outputs``: the row's outputs under the model as it is (from
        :meth:`outputs`), not computed again.
        """
        self._bound().learn(Z, Y, outputs)


class NormaStream(_RowModel):
    """A NORMA model fed one prepared row at a time: the arrays and the compiled calls.

    For a caller that validates and standardises its rows itself and may
    meet new labels (the River adapter): no input checks, one output per
    label added by :meth:`add_output`, trained on the margin targets of a
    scalar loss.

    Parameters
    ----------
    kernel, gamma, budget, eta0, alpha, loss
        As :class:`NormaClassifier`'s (``gamma`` a number).
    n_features : int
        Inputs of a row.
    """

    def __init__(self, kernel, gamma, n_features, budget, eta0, alpha, loss):
        spec = NormaClassifier(kernel=kernel, gamma=gamma, budget=budget, eta0=eta0,
                               alpha=alpha, loss=loss)
        self.loss, self.eta, self.shrink = _stream_step(spec)
        self.kernel = _bound_kernel(spec, None, n_features)[0]
        self.centers = np.zeros((budget, n_features))
        self.coef = np.zeros((budget, 0))
        self.ring = np.zeros(2, dtype=np.intp)

    @property
    def n_support(self):
        """Support vectors stored."""
        return int(self.ring[0])

    def add_output(self):
        """One more output (a new label), zero everywhere until trained."""
        self.coef = _with_zero_column(self.coef)

    def _bound(self):
        calls = self._calls
        if (calls is None or calls.coef is not self.coef or calls.centers is not self.centers
                or calls.ring is not self.ring):
            calls = self._calls = NormaRows(self.kernel, self.centers, self.coef, self.ring,
                                            self.loss, self.eta, self.shrink)
        return calls


class LinearStream(_RowModel):
    """NORMA with the linear kernel, fed one prepared row at a time: the expansion as weights.

    With ``k(x, x') = <x, x'>`` the expansion ``sum_j a_j <c_j, x>`` is
    ``<w, x>`` with ``w = sum_j a_j c_j``: every row ever learned is kept
    (no budget) in ``d`` numbers an output, and a step costs ``O(d)``.  The
    step is NORMA's -- ``w`` shrinks by ``1 - eta0 * alpha`` and moves by
    ``-eta0 g x``, ``g`` the loss's gradient at the row's output -- plus an
    intercept stepped by ``-eta0 g`` and never shrunk, without which a
    linear model can only split the inputs through their mean.  The same
    interface as :class:`NormaStream` (the River multiple-kernel
    classifier's linear experts).

    Parameters
    ----------
    n_features : int
        Inputs of a row.
    eta0, alpha, loss
        As :class:`NormaClassifier`'s.

    Examples
    --------
    >>> import numpy as np
    >>> model = LinearStream(2, eta0=0.1, alpha=0.0, loss="logistic")
    >>> model.add_output()
    >>> for _ in range(200):
    ...     model.learn(np.array([[1.0, 0.0]]), np.array([[1.0]]))
    ...     model.learn(np.array([[-1.0, 0.5]]), np.array([[-1.0]]))
    >>> bool(model.outputs(np.array([[1.0, 0.0]]))[0] > 0 > model.outputs(
    ...     np.array([[-1.0, 0.5]]))[0])
    True
    """

    def __init__(self, n_features, eta0, alpha, loss):
        self.loss, self.eta, self.shrink = _stream_step(
            NormaClassifier(eta0=eta0, alpha=alpha, loss=loss))
        self.weights = np.zeros((n_features, 0))
        self.intercept = np.zeros(0)

    def add_output(self):
        """One more output (a new label), zero until trained."""
        self.weights = _with_zero_column(self.weights)
        self.intercept = np.append(self.intercept, 0.0)

    def _bound(self):
        calls = self._calls
        if (calls is None or calls.weights is not self.weights
                or calls.intercept is not self.intercept):
            calls = self._calls = LinearRows(self.weights, self.intercept, self.loss, self.eta,
                                             self.shrink)
        return calls
