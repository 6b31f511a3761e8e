# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Running standardisation of a stream's inputs: one sample's update, compiled.

Welford's update of each feature's mean and sum of squared deviations, and
the scale ``1 / std`` that standardises the next sample (1 for a feature
constant up to rounding: only centred); and the reading of one sample, a
dict of plain numbers, into a row and its standardised form.  The same
operations as numpy's elementwise ones, in the same order (IEEE-754, no
contraction): the same bits, at one call where numpy takes about ten (the
River classifiers of stored rows call them at every sample).

Examples
--------
>>> import numpy as np
>>> from onlinekernel.core.running import welford_step
>>> mean, m2, scale = np.zeros(2), np.zeros(2), np.ones(2)
>>> for n, row in enumerate(([1.0, 5.0], [3.0, 5.0]), start=1):
...     welford_step(np.array(row), mean, m2, n, scale)
>>> mean.tolist(), (m2 / 2).tolist(), scale.tolist()
([2.0, 5.0], [1.0, 0.0], [1.0, 1.0])
"""
import numpy as np
from libc.math cimport fabs, isfinite, sqrt

__all__ = ["inverse_std", "read_row", "standardised_row", "welford_step"]


cdef inline double _inverse(double std, double center) noexcept nogil:
    """``1 / std``; 1 for a feature constant up to rounding (at most ``1e-12 (1 + |center|)``:
    only centred)."""
    return 1.0 / std if std > 1e-12 * (1.0 + fabs(center)) else 1.0


def inverse_std(const double[::1] center, const double[::1] std):
    """``1 / std`` per feature (a new array); 1 where the feature is constant up to rounding.

    >>> inverse_std(np.array([0.0, 5.0]), np.array([0.5, 1e-15])).tolist()
    [2.0, 1.0]
    """
    cdef Py_ssize_t j, d = std.shape[0]
    if center.shape[0] != d:
        raise ValueError(f"{center.shape[0]} centres against {d} standard deviations")
    out = np.empty(d)
    cdef double[::1] o = out
    for j in range(d):
        o[j] = _inverse(std[j], center[j])
    return out


def welford_step(const double[::1] row, double[::1] mean, double[::1] m2, Py_ssize_t n,
                 double[::1] scale):
    """Take ``row``, the ``n``-th sample, into ``mean`` and ``m2``; set ``scale``; in place.

    ``scale[j]`` becomes ``1 / sqrt(m2[j] / n)``, or 1 where that standard
    deviation is at most ``1e-12 (1 + |mean[j]|)``.
    """
    cdef Py_ssize_t j, d = row.shape[0]
    cdef double delta, std
    if mean.shape[0] != d or m2.shape[0] != d or scale.shape[0] != d:
        raise ValueError(f"a row of {d} values against statistics of {mean.shape[0]}, "
                         f"{m2.shape[0]} and {scale.shape[0]}")
    if n < 1:
        raise ValueError(f"n counts the samples taken in, including this one: got {n}")
    for j in range(d):
        delta = row[j] - mean[j]
        mean[j] = mean[j] + delta / n
        m2[j] = m2[j] + delta * (row[j] - mean[j])
        scale[j] = _inverse(sqrt(m2[j] / n), mean[j])


def read_row(x, tuple features, fast_types, double[::1] row):
    """Fill ``row`` with the values of the mapping ``x`` in the order of ``features``.

    A missing key reads 0.0.  Returns True when every value read is a
    finite number of one of the ``fast_types`` (``float``, ``int``, ...):
    then ``row`` is the sample.  Anything else -- ``None``, NaN, an infinite
    value, a bool, a string, an int too large for a float -- returns False
    at once (``row`` partly filled), for the caller's checked conversion to
    read or refuse by name.  One compiled pass where Python takes a list,
    a type check of each value, an array and a finiteness test.

    >>> row = np.empty(3)
    >>> read_row({"b": 2, "a": 0.5, "z": "ignored"}, ("a", "b", "c"), {float, int}, row)
    True
    >>> row.tolist()
    [0.5, 2.0, 0.0]
    >>> read_row({"a": float("nan")}, ("a", "b", "c"), {float, int}, row)
    False
    """
    cdef Py_ssize_t j, d = len(features)
    cdef object v
    cdef double value
    cdef bint plain = type(x) is dict
    if row.shape[0] != d:
        raise ValueError(f"a row of {row.shape[0]} values for {d} features")
    for j in range(d):
        if plain:
            v = (<dict>x).get(features[j], 0.0)
        else:
            v = x.get(features[j], 0.0)
        if type(v) not in fast_types:
            return False
        try:
            value = v
        except OverflowError:
            return False
        if not isfinite(value):
            return False
        row[j] = value
    return True


def standardised_row(const double[::1] row, const double[::1] center,
                     const double[::1] scale):
    """``(row - center) * scale`` as a new ``(1, d)`` array: numpy's bits, one call.

    >>> standardised_row(np.array([3.0, 1.0]), np.array([1.0, 1.0]), np.array([0.5, 2.0]))
    array([[1., 0.]])
    """
    cdef Py_ssize_t j, d = row.shape[0]
    if center.shape[0] != d or scale.shape[0] != d:
        raise ValueError(f"a row of {d} values against {center.shape[0]} centres and "
                         f"{scale.shape[0]} scales")
    out = np.empty((1, d))
    cdef double[:, ::1] z = out
    for j in range(d):
        z[0, j] = (row[j] - center[j]) * scale[j]
    return out
