# cython: language_level=3, boundscheck=False, wraparound=False
"""Feature-map protocol: the compiled base class of random-feature maps.

A feature map draws blocks of ``F = n_components`` random features.  The
parameters of block ``j`` are a pure function of ``(seed, j)``: the map's
``generate`` reads them from the counter-based streams of
:mod:`onlinekernel._random`, so any block is regenerated alone, in any order.
``transform`` evaluates a block on a tile of rows.  The kernel is estimated
by the block average ``k(x, x') ~ (1/F) sum_k phi_k(x) phi_k(x')``.

Subclasses implement ``generate``, ``transform``, ``_sizes(d)`` (returns
``(param_size, work_per_row)``) and, where the kernel has a closed form,
``kernel(X, Y)``; parameters are validated in ``__init__``.
"""
import numpy as np
cimport numpy as cnp
from libc.stdint cimport uint64_t

cnp.import_array()


cdef class CyFeatureMap:
    """Base class of compiled random-feature maps (see the module docstring)."""
    name = None

    def __init__(self, Py_ssize_t n_components=256):
        if n_components < 1:
            raise ValueError(f"n_components must be >= 1, got {n_components}")
        self.n_components = n_components
        self.n_features_in = 0
        self.param_size = 0
        self.work_per_row = 0

    cdef void generate(self, uint64_t seed, uint64_t block, double* params) noexcept nogil:
        pass

    cdef void transform(self, const double* params, const double* X, Py_ssize_t n,
                        Py_ssize_t ldx, double* out, double* work) noexcept nogil:
        pass

    def _sizes(self, Py_ssize_t n_features_in):
        """Return ``(param_size, work_per_row)`` for input dimension ``d``."""
        return 0, 0

    def bind(self, Py_ssize_t n_features_in):
        """Fix the input dimension; returns self."""
        if n_features_in < 1:
            raise ValueError(f"n_features_in must be >= 1, got {n_features_in}")
        self.param_size, self.work_per_row = self._sizes(n_features_in)
        self.n_features_in = n_features_in
        return self

    def _require_bound(self):
        if self.n_features_in < 1:
            raise ValueError(f"{type(self).__name__} is not bound to an input "
                             "dimension; call bind(n_features_in) first")

    def generate_block(self, uint64_t seed, uint64_t block):
        """Parameters of block ``block`` for seed ``seed`` (flat float64 array)."""
        self._require_bound()
        out = np.empty(self.param_size, dtype=np.float64)
        cdef double[::1] o = out
        if self.param_size:
            self.generate(seed, block, &o[0])
        return out

    def transform_block(self, uint64_t seed, uint64_t block, X):
        """Features of block ``block`` on the rows of ``X``, shape ``(n, F)``."""
        self._require_bound()
        Xc = np.ascontiguousarray(X, dtype=np.float64)
        if Xc.ndim != 2 or Xc.shape[1] != self.n_features_in:
            raise ValueError(f"X must have shape (n, {self.n_features_in}), got {Xc.shape}")
        params = self.generate_block(seed, block)
        cdef Py_ssize_t n = Xc.shape[0]
        out = np.zeros((n, self.n_components), dtype=np.float64)
        work = np.zeros(max(1, n * self.work_per_row), dtype=np.float64)
        cdef const double[:, ::1] x_ = Xc
        cdef double[:, ::1] o_ = out
        cdef double[::1] p_ = params if self.param_size else np.zeros(1)
        cdef double[::1] w_ = work
        if n:
            with nogil:
                self.transform(&p_[0], &x_[0, 0], n, x_.shape[1], &o_[0, 0], &w_[0])
        return out

    def get_params(self):
        """Constructor parameters, as a dict."""
        return {"n_components": self.n_components}

    def __reduce__(self):
        return (type(self), (), (self.get_params(), self.n_features_in))

    def __setstate__(self, state):
        params, d = state
        self.__init__(**params)
        if d:
            self.bind(d)

    def __eq__(self, other):
        return (type(self) is type(other) and self.get_params() == other.get_params()
                and self.n_features_in == other.n_features_in)

    def __hash__(self):
        return hash((type(self), tuple(sorted(self.get_params().items()))))

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"
