"""Base class for losses written in pure Python.

Subclass :class:`Loss` and implement the vectorised ``loss`` and
``gradient``; an instance (or its registered name) then works in every
estimator.  The solver calls ``gradient`` once per mini-batch with the GIL
held, so a Python loss costs one Python call and a few array copies per
mini-batch: slower than a compiled loss, most visibly with small batches
(``partial_fit`` one sample at a time), and otherwise the same algorithm.

Examples
--------
A Cauchy (Lorentzian) regression loss, robust to outliers:

>>> import numpy as np
>>> from onlinekernel import Loss, DSGRegressor
>>> class CauchyLoss(Loss):
...     name = "cauchy_regression"
...     target_encoding = "real"
...     def __init__(self, c=1.0):
...         self.c = c
...     def loss(self, y, raw):
...         r = (raw - y) / self.c
...         return (0.5 * self.c ** 2 * np.log1p(r ** 2)).sum(axis=1)
...     def gradient(self, y, raw):
...         r = raw - y
...         return r / (1.0 + (r / self.c) ** 2)
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(200, 3))
>>> y = np.sin(X[:, 0])
>>> model = DSGRegressor(loss=CauchyLoss(), random_state=0).fit(X, y)
>>> model.predict(X[:2]).shape
(2,)
"""
from abc import ABC, abstractmethod

from onlinekernel.core.curvature import finite_difference_hessian_product
from onlinekernel.core.params import ParamsMixin

__all__ = ["Loss"]


class Loss(ParamsMixin, ABC):
    """A loss written in Python, vectorised over the rows of a mini-batch.

    Attributes to set on a subclass:

    ``name``
        The registered name (used in model files and listings).
    ``target_encoding``
        ``"margin"`` (classification only: classes as +-1 per output,
        one-vs-rest beyond two classes), ``"real"`` (real targets; usable
        for regression, and for classification on +-1 targets) or
        ``"class_index"`` (classification only: one column holding the class
        index, raw has one output per class).
    ``link``
        ``"identity"``, ``"logistic"`` or ``"softmax"``: how raw outputs map
        to probabilities (``predict_proba`` exists only for the latter two).

    Methods take ``y`` of shape ``(n, m)`` and ``raw`` of shape ``(n, k)``
    (``m == k`` except for ``"class_index"`` where ``m == 1``).
    """

    name = None
    target_encoding = "margin"
    link = "identity"
    #: Python losses use the default intercept step (a constant feature).
    intercept_rule = "constant_feature"
    #: How the batch solvers may treat the loss: "constant", "smooth",
    #: "piecewise_linear" or None (see :mod:`onlinekernel.core.curvature`).
    curvature = None
    #: Optional: an upper bound on the largest eigenvalue of the loss's
    #: Hessian in the raw outputs, over all targets and outputs (logistic
    #: 1/4); sets the step of solvers "svrg" and "sarah" (None: estimated).
    curvature_bound = None
    #: Whether the loss of a row is a sum of one term per output (an
    #: elementwise loss applied to each output), so that its Hessian is
    #: block diagonal: "newton-cg" then solves each output's block with its
    #: own conjugate-gradient steps.
    separable_outputs = False
    #: Constructor parameters in the target's units (rescaled with the targets).
    target_unit_params = ()

    @abstractmethod
    def loss(self, y, raw):
        """Loss of each row, shape ``(n,)``."""

    @abstractmethod
    def gradient(self, y, raw):
        """Derivative of the loss with respect to ``raw``, shape ``(n, k)``."""

    def hessian_product(self, y, raw, v):
        """Per row, the Hessian with respect to ``raw`` times ``v``, shape ``(n, k)``.

        By default central differences of :meth:`gradient`; override it with
        the exact product where it is cheap.
        """
        return finite_difference_hessian_product(self, y, raw, v)

    def multiclass_loss(self):
        """The loss used for more than two classes (default: self, one-vs-rest)."""
        return self
