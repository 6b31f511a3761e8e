"""The smooth hinge: a hinge loss whose kink is rounded off by a parabola.

Examples
--------
>>> from onlinekernel_example_plugin.smooth_hinge import SmoothHinge
>>> loss = SmoothHinge()
>>> loss.loss([[1.0], [1.0], [1.0]], [[2.0], [0.5], [-1.0]])
array([0.   , 0.125, 1.5  ])
"""
import numbers

import numpy as np

from onlinekernel import Loss

__all__ = ["SmoothHinge"]


def _as_columns(a):
    """``a`` as a float64 matrix; a 1-d array is one output (one column)."""
    a = np.asarray(a, dtype=np.float64)
    return a[:, None] if a.ndim == 1 else a


class SmoothHinge(Loss):
    r"""Quadratically smoothed hinge loss for labels :math:`y \in \{-1, +1\}`.

    With the margin :math:`z = y u` (``u`` the raw output) and the smoothing
    width :math:`h`:

    .. math::

        \ell(z) = \begin{cases}
            0 & z \ge 1, \\
            (1 - z)^2 / (2h) & 1 - h < z < 1, \\
            1 - z - h/2 & z \le 1 - h.
        \end{cases}

    It is convex and continuously differentiable, with derivative
    :math:`-y \min(1, \max(0, (1 - z)/h))` bounded by 1 like the hinge's; as
    :math:`h \to 0` it becomes the hinge :math:`\max(0, 1 - z)`.  With
    ``h = 1`` it is :math:`(1 - z)^2/2` on :math:`(0, 1)` and
    :math:`1/2 - z` below.  Registered as ``"smooth_hinge"``; for more than
    two classes the estimators train one output per class (one-vs-rest).

    Parameters
    ----------
    smoothing : float, default=1.0
        Width :math:`h > 0` of the quadratic piece.

    Raises
    ------
    ValueError
        If ``smoothing`` is not a finite number > 0.

    Examples
    --------
    >>> import numpy as np
    >>> from onlinekernel import get_loss
    >>> loss = get_loss("smooth_hinge", smoothing=0.5)
    >>> loss.gradient(np.array([[1.0], [-1.0]]), np.array([[0.75], [0.0]]))
    array([[-0.5],
           [ 1. ]])
    >>> get_loss("smooth_hinge", smoothing=0.0)
    Traceback (most recent call last):
    ...
    ValueError: smooth_hinge: smoothing must be a finite number > 0, got 0.0
    """

    name = "smooth_hinge"
    target_encoding = "margin"  # classes as +-1 per output
    link = "identity"  # a margin, not a probability: no predict_proba

    def __init__(self, smoothing=1.0):
        if (not isinstance(smoothing, numbers.Real) or isinstance(smoothing, bool)
                or not np.isfinite(smoothing) or smoothing <= 0):
            raise ValueError(f"smooth_hinge: smoothing must be a finite number > 0, "
                             f"got {smoothing!r}")
        self.smoothing = float(smoothing)

    def loss(self, y, raw):
        """Loss of each row (summed over outputs), shape ``(n,)`` (the arguments as in :class:`onlinekernel.Loss`)."""
        y, raw = _as_columns(y), _as_columns(raw)
        h = self.smoothing
        gap = 1.0 - y * raw  # how far the margin falls short of 1
        value = np.where(gap >= h, gap - 0.5 * h, 0.5 * np.maximum(gap, 0.0) ** 2 / h)
        return value.sum(axis=1)

    def gradient(self, y, raw):
        """Derivative of the loss with respect to ``raw``, shape ``(n, k)`` (the arguments as in :class:`onlinekernel.Loss`)."""
        y, raw = _as_columns(y), _as_columns(raw)
        return -y * np.clip((1.0 - y * raw) / self.smoothing, 0.0, 1.0)
