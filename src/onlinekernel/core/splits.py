"""Seeded train/validation splits of rows by their content.

A row goes to the validation side by a hash of its non-zero entries (their
column and float32 bit pattern) and the seed, so equal rows fall on the same side:
a row of weight ``w`` and ``w`` copies of it split alike (scikit-learn's
sample-weight equivalence), a duplicated row is never both trained on and
validated on, and a dense array and its CSR form split alike.
"""
import numpy as np
import scipy.sparse as sp

__all__ = ["content_split"]

_ROWS_PER_CHUNK = 4096  # bounds the n x d temporaries of a dense hash
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(z):
    """splitmix64's finaliser, elementwise on uint64 (arithmetic wraps modulo 2^64)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _bits(values):
    """The bit patterns of float values, rounded to float32, as uint64.

    Rounded so that inputs a float64 rounding apart (scaled by
    ``input_scaling`` or by hand) and the float32 copy of the same data
    split alike, but for values on a float32 rounding boundary.
    """
    values = np.ascontiguousarray(values, dtype=np.float32)
    return values.view(np.uint32).astype(np.uint64)


def row_hashes(X, seed):
    """A seeded 64-bit hash of each row of ``X`` (dense or CSR) from its non-zero entries.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> X = np.array([[0.0, 1.5], [2.0, 0.0], [0.0, 1.5]])
    >>> h = row_hashes(X, seed=7)
    >>> bool(h[0] == h[2]), bool(h[0] == h[1])
    (True, False)
    >>> bool(np.array_equal(h, row_hashes(sp.csr_matrix(X), seed=7)))
    True
    """
    key = _mix(np.array([seed % 2 ** 64], dtype=np.uint64) ^ _GOLDEN)[0]
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        nz = X.data != 0
        terms = _mix(_bits(X.data) ^ _mix(X.indices.astype(np.uint64) + key)) * nz
        n = X.shape[0]
        out = np.zeros(n, dtype=np.uint64)
        rows = np.flatnonzero(np.diff(X.indptr))  # reduceat needs non-empty segments
        if rows.size:
            out[rows] = np.add.reduceat(terms, X.indptr[rows])
        return out
    X = np.asarray(X)
    cols = _mix(np.arange(X.shape[1], dtype=np.uint64) + key)
    out = np.empty(X.shape[0], dtype=np.uint64)
    for i in range(0, X.shape[0], _ROWS_PER_CHUNK):
        part = X[i:i + _ROWS_PER_CHUNK]
        terms = _mix(_bits(part) ^ cols) * (part != 0)
        out[i:i + _ROWS_PER_CHUNK] = terms.sum(axis=1, dtype=np.uint64)
    return out


def content_split(X, seed, fraction):
    """``(train, validation)`` row indices: each row held out with probability ``fraction``.

    The choice is a function of the row's content and the seed
    (:func:`row_hashes`), so the validation side holds about ``fraction``
    of the rows, and all copies of a row fall on one side.

    Examples
    --------
    >>> X = np.random.default_rng(0).normal(size=(1000, 3))
    >>> train, val = content_split(X, seed=0, fraction=0.1)
    >>> train.shape[0] + val.shape[0], 70 < val.shape[0] < 130
    (1000, True)
    """
    u = (_mix(row_hashes(X, seed) ^ _GOLDEN) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
    held = u < fraction
    return np.flatnonzero(~held), np.flatnonzero(held)
