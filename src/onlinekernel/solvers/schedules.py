"""Step-size schedules, on a clock that counts full batches.

A step on ``nb`` rows, with ``batch_size = B``, is ``nb / B`` of a standard
step: the schedule's clock advances by ``nb / B`` and the step is scaled by
``nb / B``.  So a short last batch, or a stream fed one row at a time to
``partial_fit``, moves the model as much per row as full batches do.
"""
import math

import numpy as np

SCHEDULES = ("constant", "inverse", "invsqrt", "pegasos")


def schedule(name, tau, *, eta0, t0, alpha):
    """Step of schedule ``name`` at clock time ``tau`` (full batches, >= 0).

    ``constant``: ``eta0``; ``inverse``: ``eta0 / (1 + (tau - 1) / t0)`` (the
    paper's ``theta / (t + t0)``); ``invsqrt``: ``eta0 / sqrt(1 + (tau - 1) / t0)``;
    ``pegasos``: ``1 / (alpha tau)``.  The decaying schedules hold ``eta0``
    until the clock reaches one full batch (``tau <= 1``).  ``tau`` is an
    array, or a float (then so is the step: the same IEEE arithmetic, without
    numpy's cost per call on a stream's one-row steps).

    Examples
    --------
    >>> schedule("inverse", np.array([1.0, 2.0, 3.0]), eta0=1.0, t0=1.0, alpha=0.0)
    array([1.        , 0.5       , 0.33333333])
    >>> schedule("inverse", 3.0, eta0=1.0, t0=1.0, alpha=0.0)
    0.3333333333333333
    """
    scalar = isinstance(tau, float)
    if scalar:
        positive, sqrt = (lambda v: max(v, 0.0)), math.sqrt
    else:
        tau = np.asarray(tau, dtype=np.float64)
        positive, sqrt = (lambda v: np.maximum(v, 0.0)), np.sqrt
    if name == "constant":
        return float(eta0) if scalar else np.full(tau.shape, float(eta0))
    if name == "inverse":
        return eta0 / (1.0 + positive(tau - 1.0) / t0)
    if name == "invsqrt":
        return eta0 / sqrt(1.0 + positive(tau - 1.0) / t0)
    if name == "pegasos":
        return 1.0 / (alpha * tau)
    raise ValueError(f"unknown learning_rate {name!r}; choose one of {', '.join(SCHEDULES)}")


def step_sizes(name, rows_seen, batch_rows, batch_size, *, eta0, t0, alpha, eta_min=0.0):
    """Steps for consecutive batches of ``batch_rows`` rows after ``rows_seen`` rows.

    Each batch's step is the schedule at the clock time reached by its end,
    ``(rows seen + its rows) / batch_size``, floored at ``eta_min`` (a
    decaying schedule never goes below it, so a model keeps learning on a
    stream whose concept changes), times ``rows / batch_size``.

    Examples
    --------
    >>> step_sizes("inverse", 0, np.array([4, 4, 2]), 4, eta0=1.0, t0=1.0, alpha=0.0)
    array([1. , 0.5, 0.2])
    >>> step_sizes("inverse", 0, np.array([4, 4, 4]), 4, eta0=1.0, t0=1.0, alpha=0.0,
    ...            eta_min=0.4)
    array([1. , 0.5, 0.4])
    """
    if len(batch_rows) == 1:  # one step (a stream's one-row call): floats, the same bits
        rows = float(batch_rows[0])
        step = schedule(name, (rows_seen + rows) / batch_size, eta0=eta0, t0=t0, alpha=alpha)
        if eta_min:
            step = max(step, eta_min)
        return np.array([step * (rows / batch_size)])
    batch_rows = np.asarray(batch_rows, dtype=np.float64)
    tau = (rows_seen + np.cumsum(batch_rows)) / batch_size
    steps = schedule(name, tau, eta0=eta0, t0=t0, alpha=alpha)
    if eta_min:
        steps = np.maximum(steps, eta_min)
    return steps * (batch_rows / batch_size)
