"""What each estimator parameter accepts, declared once per class and checked in one place.

Each estimator class has a ``_parameter_constraints`` dict: parameter name
-> a check called as ``check(name, value)`` that raises ``ValueError`` (or
``TypeError``) naming the parameter and what it accepts.  A subclass
extends its base's dict (``{**BaseDSG._parameter_constraints, ...}``) and
``BaseDSG._validate_params`` runs the checks of the constructor's
parameters, then the class's rules that tie parameters together.

This mirrors scikit-learn's ``_parameter_constraints`` (``Interval``,
``StrOptions``, ...) but keeps this package's messages ("batch_size must be
an integer >= 1, got 0"), which callers and tests match, and leaves out its
private module (``sklearn.utils._param_validation``).

>>> Int(1)("batch_size", 0)
Traceback (most recent call last):
...
ValueError: batch_size must be an integer >= 1, got 0
>>> Options(("a", "b"))("mode", "c")
Traceback (most recent call last):
...
ValueError: unknown mode 'c'; choose one of 'a', 'b'
"""
import numbers

import numpy as np

__all__ = ["Int", "Real", "Bool", "Options", "check_int", "check_real", "check_bool"]


def check_int(name, value, low, allow_none=False, high=None):
    """Raise unless ``value`` is an integer ``>= low`` (and ``<= high``), or None if allowed."""
    if value is None and allow_none:
        return
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    if high is not None and value > high:
        raise ValueError(f"{name} must be at most {high:,d}, got {value!r}")


def check_real(name, value, low, strict=False):
    """Raise unless ``value`` is a finite real number ``>= low`` (``> low`` if strict)."""
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and np.isfinite(value)
    if not ok or (value <= low if strict else value < low):
        raise ValueError(f"{name} must be a finite number {'>' if strict else '>='} {low}, "
                         f"got {value!r}")


def check_bool(name, value):
    """Raise unless ``value`` is True or False (a numpy bool too)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r}")


class Int:
    """An integer ``>= low`` (and ``<= high``); None too when ``none``."""

    def __init__(self, low, high=None, none=False):
        self.low, self.high, self.none = low, high, none

    def __call__(self, name, value):
        check_int(name, value, self.low, allow_none=self.none, high=self.high)


class Real:
    """A finite number ``>= low`` (``> low`` when ``strict``); None too when ``none``."""

    def __init__(self, low, strict=False, none=False):
        self.low, self.strict, self.none = low, strict, none

    def __call__(self, name, value):
        if value is None and self.none:
            return
        check_real(name, value, self.low, strict=self.strict)


class Bool:
    """True or False."""

    def __call__(self, name, value):
        check_bool(name, value)


class Options:
    """One of ``options`` (strings); ``quote=False`` lists them without quotes."""

    def __init__(self, options, quote=True):
        self.options, self.quote = tuple(options), quote

    def __call__(self, name, value):
        if not (isinstance(value, str) and value in self.options):
            listed = ", ".join(map(repr if self.quote else str, self.options))
            raise ValueError(f"unknown {name} {value!r}; choose one of {listed}")
