"""Progress lines of ``fit`` for ``verbose >= 1``, in scikit-learn's format.

scikit-learn's SGD estimators print, per epoch::

    -- Epoch 1
    Norm: 30.97, NNZs: 20, Bias: -3.512458, T: 1000, Avg. loss: 0.826531
    Total training time: 0.00 seconds.

The estimators here print the same three lines per epoch of ``"sgd"`` and
per iteration of a batch solver, with the values that apply to them.  One
:class:`Progress` serves both: the stochastic epochs call it, and the batch
solvers of :mod:`onlinekernel.solvers` take it as their ``callback`` (they
call ``callback(n_iter, **values)`` after each iteration and print nothing
themselves).
"""
import numbers
import sys
import time

import numpy as np

__all__ = ["Progress", "check_verbose"]


def check_verbose(value):
    """The level of a ``verbose`` parameter: a bool or an integer >= 0 (scikit-learn's rule).

    Examples
    --------
    >>> check_verbose(True), check_verbose(2)
    (1, 2)
    """
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(f"verbose must be an integer >= 0 (0: silent, 1 or more: a progress "
                         f"line per epoch or iteration) or a bool, got {value!r}")
    return int(value)


def _format(value):
    if isinstance(value, (bool, np.bool_, str)):
        return str(value)
    if isinstance(value, numbers.Integral):
        return f"{int(value):d}"
    return f"{float(value):.6g}"


def _label(key):
    key = key.replace("_", " ")
    return key[:1].upper() + key[1:]


class Progress:
    """Print one block of lines per epoch or iteration of a fit when ``verbose >= 1``.

    Calling the instance as ``progress(n, **values)`` prints ``-- <unit> n``
    (with the tag, if any), the values as ``Label: value`` (the label is the
    keyword with underscores as spaces and its first letter upper-case; floats
    with 6 significant digits) and the time since the instance was made.
    With ``verbose=0`` it prints nothing and is false, so a caller can skip
    computing the values.  Lines go to ``sys.stdout`` as it is at the call.

    Parameters
    ----------
    verbose : int or bool
        0 (or False): silent; 1 or more: print.
    unit : str, default="Epoch"
        What one call reports (``"Epoch"``, ``"Iteration"``).
    tag : str, default=None
        Shown after the number, in parentheses (the solver's name, say).

    Examples
    --------
    >>> progress = Progress(1, unit="Iteration", tag="newton-cg")
    >>> progress(3, objective=0.25, gradient_norm=1.5e-5, CG_iterations=12)
    -- Iteration 3 (newton-cg)
    Objective: 0.25, Gradient norm: 1.5e-05, CG iterations: 12
    Total training time: ... seconds.
    >>> progress.finish("Convergence after 3 iterations")
    Convergence after 3 iterations; total training time: ... seconds.
    >>> bool(Progress(0)), Progress(0)(1, objective=1.0)
    (False, None)
    """

    def __init__(self, verbose, unit="Epoch", tag=None):
        self.verbose = check_verbose(verbose)
        self.unit = unit
        self.tag = tag
        self.start = time.perf_counter()

    def __bool__(self):
        return self.verbose > 0

    def _elapsed(self):
        return time.perf_counter() - self.start

    def __call__(self, n, **values):
        if not self.verbose:
            return
        head = f"-- {self.unit} {n}" + (f" ({self.tag})" if self.tag else "")
        line = ", ".join(f"{_label(k)}: {_format(v)}" for k, v in values.items())
        print(f"{head}\n{line}\nTotal training time: {self._elapsed():.2f} seconds.",
              file=sys.stdout, flush=True)

    def finish(self, text):
        """Print ``text`` and the total time (the last line of a fit)."""
        if self.verbose:
            print(f"{text}; total training time: {self._elapsed():.2f} seconds.",
                  file=sys.stdout, flush=True)
