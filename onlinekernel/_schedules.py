"""Step-size schedules: the step ``gamma_t`` of training step ``t`` (1-based)."""
import numpy as np

SCHEDULES = ("constant", "inverse", "invsqrt", "pegasos")


def step_sizes(schedule, t_done, n_steps, *, eta0, t0, alpha):
    """Steps ``gamma_t`` for ``t = t_done + 1 .. t_done + n_steps``.

    ``constant``: ``eta0``; ``inverse``: ``eta0 / (1 + (t - 1) / t0)`` (the
    paper's ``theta / (t + t0)``); ``invsqrt``: ``eta0 / sqrt(1 + (t - 1) / t0)``;
    ``pegasos``: ``1 / (alpha t)``.

    Examples
    --------
    >>> step_sizes("inverse", 0, 3, eta0=1.0, t0=1.0, alpha=0.0)
    array([1.        , 0.5       , 0.33333333])
    """
    t = np.arange(t_done + 1, t_done + n_steps + 1, dtype=np.float64)
    if schedule == "constant":
        return np.full(n_steps, float(eta0))
    if schedule == "inverse":
        return eta0 / (1.0 + (t - 1.0) / t0)
    if schedule == "invsqrt":
        return eta0 / np.sqrt(1.0 + (t - 1.0) / t0)
    if schedule == "pegasos":
        return 1.0 / (alpha * t)
    raise ValueError(f"unknown learning_rate {schedule!r}; choose one of {', '.join(SCHEDULES)}")
