# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""TensorSketch random features of the polynomial kernel (Pham & Pagh 2013)."""
import numbers

import numpy as np
from libc.math cimport sqrt, INFINITY
from libc.stdint cimport uint32_t, uint64_t, int64_t
from libc.string cimport memcpy, memset
from onlinekernel.featuremaps.base cimport CyFeatureMap
from onlinekernel.core.streams cimport ok_fill_hash, ok_fill_sign, ok_cos, ok_sin

cdef double TWO_PI = 6.283185307179586


cdef void _cfft(double* a, Py_ssize_t M, const double* tw, bint inverse) noexcept nogil:
    """In-place unnormalised radix-2 FFT of M complex values (interleaved re, im).

    ``tw[2k], tw[2k+1] = cos, sin(2 pi k / (2M))`` for ``k < M``; the forward
    transform uses exp(-2 pi i nk/M), the inverse exp(+2 pi i nk/M).  M is a
    power of two.
    """
    cdef Py_ssize_t i, j, bit, L, half, s, k, t, step
    cdef double tr, ti, wr, wi, vr, vi, ur, ui
    cdef double sgn = 1.0 if inverse else -1.0
    # bit-reversal permutation
    j = 0
    for i in range(1, M):
        bit = M >> 1
        while j & bit:
            j ^= bit
            bit >>= 1
        j |= bit
        if i < j:
            tr = a[2 * i]
            ti = a[2 * i + 1]
            a[2 * i] = a[2 * j]
            a[2 * i + 1] = a[2 * j + 1]
            a[2 * j] = tr
            a[2 * j + 1] = ti
    # butterflies of length L = 2, 4, ..., M
    L = 2
    while L <= M:
        half = L >> 1
        step = (2 * M) // L        # exp(-2 pi i k/L) is table entry k * step
        s = 0
        while s < M:
            for k in range(half):
                wr = tw[2 * k * step]
                wi = sgn * tw[2 * k * step + 1]
                t = s + k + half
                vr = a[2 * t] * wr - a[2 * t + 1] * wi
                vi = a[2 * t] * wi + a[2 * t + 1] * wr
                ur = a[2 * (s + k)]
                ui = a[2 * (s + k) + 1]
                a[2 * (s + k)] = ur + vr
                a[2 * (s + k) + 1] = ui + vi
                a[2 * t] = ur - vr
                a[2 * t + 1] = ui - vi
            s += L
        L <<= 1


cdef void _rfft_multiply(double* z, Py_ssize_t M, const double* tw, double* acc,
                         bint first) noexcept nogil:
    """Spectrum of the real sequence held in ``z`` (N = 2M doubles), into ``acc``.

    ``z`` is read as M complex values ``x[2n] + i x[2n+1]`` and transformed
    in place by one half-length FFT; the bins ``X[0..M]`` of the length-N real
    transform are then unpacked and stored into (``first``) or multiplied into
    ``acc`` (M + 1 complex values).  The other bins are conjugates.
    """
    cdef Py_ssize_t k
    cdef double ar, ai, br, bi, er, ei, dr, di, orr, oi, c, s, xr, xi, pr, pi_
    _cfft(z, M, tw, False)
    for k in range(M + 1):
        if k == 0 or k == M:
            # even and odd halves' DC terms are Re Z[0] and Im Z[0]; W^0 = 1, W^M = -1
            xr = z[0] + z[1] if k == 0 else z[0] - z[1]
            xi = 0.0
        else:
            ar = z[2 * k]
            ai = z[2 * k + 1]
            br = z[2 * (M - k)]
            bi = -z[2 * (M - k) + 1]
            er = 0.5 * (ar + br)            # E = (Z[k] + conj Z[M-k]) / 2
            ei = 0.5 * (ai + bi)
            dr = 0.5 * (ar - br)
            di = 0.5 * (ai - bi)
            orr = di                        # O = -i (Z[k] - conj Z[M-k]) / 2
            oi = -dr
            c = tw[2 * k]
            s = tw[2 * k + 1]
            xr = er + c * orr + s * oi      # X = E + exp(-2 pi i k/N) O
            xi = ei + c * oi - s * orr
        if first:
            acc[2 * k] = xr
            acc[2 * k + 1] = xi
        else:
            pr = acc[2 * k] * xr - acc[2 * k + 1] * xi
            pi_ = acc[2 * k] * xi + acc[2 * k + 1] * xr
            acc[2 * k] = pr
            acc[2 * k + 1] = pi_


cdef void _irfft(const double* acc, Py_ssize_t M, const double* tw, double* out,
                 double scale) noexcept nogil:
    """``out[0..2M) = scale * N * IDFT_N(P)`` for the Hermitian spectrum P = acc[0..M].

    Inverse of :func:`_rfft_multiply`: the even and odd samples' spectra are
    recovered from P and packed into one half-length inverse FFT whose real
    and imaginary parts are the even and odd outputs.
    """
    cdef Py_ssize_t k
    cdef double ar, ai, br, bi, er, ei, dr, di, c, s, orr, oi
    for k in range(M):
        ar = acc[2 * k]
        ai = acc[2 * k + 1]
        br = acc[2 * (M - k)]
        bi = -acc[2 * (M - k) + 1]
        er = ar + br                        # 2E = P[k] + conj P[M-k]
        ei = ai + bi
        dr = ar - br
        di = ai - bi
        c = tw[2 * k]
        s = tw[2 * k + 1]
        orr = dr * c - di * s               # 2O = (P[k] - conj P[M-k]) exp(2 pi i k/N)
        oi = dr * s + di * c
        out[2 * k] = er - oi                # 2E + i 2O
        out[2 * k + 1] = ei + orr
    _cfft(out, M, tw, True)
    for k in range(2 * M):
        out[k] *= scale


cdef class PolySketch(CyFeatureMap):
    r"""TensorSketch features of :math:`k(x, x') = (\gamma\, x^\top x' + c)^p`.

    The input is extended to :math:`\tilde x = (\sqrt\gamma\, x, \sqrt c)`
    (dimension :math:`\tilde d = d + 1`), so that the kernel is
    :math:`(\tilde x^\top \tilde x')^p`.  A block holds :math:`p` independent
    count sketches :math:`C_i(\tilde x)_m = \sum_{j: h_i(j) = m} s_i(j) \tilde
    x_j` with hashes :math:`h_i: [\tilde d] \to [F]` and signs
    :math:`s_i: [\tilde d] \to \{\pm1\}`; their tensor sketch is the circular
    convolution :math:`TS(x) = \mathrm{IFFT}(\prod_i \mathrm{FFT}(C_i(\tilde
    x)))`, an unbiased sketch of :math:`\tilde x^{\otimes p}`:
    :math:`\mathbb E\,\langle TS(x), TS(x')\rangle = (\tilde x^\top \tilde
    x')^p`.  The features are :math:`\phi = \sqrt F\, TS(x)`, so that
    :math:`k(x, x') \approx \frac1F \sum_k \phi_k(x) \phi_k(x')`, and
    averaging blocks averages independent sketches.

    The FFTs are a compiled radix-2 transform, each real length-``F``
    transform done as one complex transform of length ``F/2``; ``F`` must
    be a power of two.  Degree 1 is a plain count sketch with no FFT.

    Block parameters: the ``p * (d + 1)`` hashes (sketch ``i`` at offset
    ``i * (d + 1)``, stored as doubles) from stream 0, then as many signs
    from stream 1.  They do not depend on ``gamma`` or ``coef0``.

    Parameters
    ----------
    n_components : int, default=256
        Features per block (the sketch dimension), a power of two.
    gamma : float, default=1.0
        Scale of the inner product, finite and > 0.
    degree : int, default=3
        Degree :math:`p` of the kernel, >= 1.
    coef0 : float, default=0.0
        Constant :math:`c`, finite and >= 0.

    Examples
    --------
    >>> from onlinekernel import get_feature_map
    >>> fmap = get_feature_map("poly_sketch", n_components=4096, degree=2,
    ...                        coef0=1.0).bind(2)
    >>> X = np.array([[0.6, 0.0], [0.3, 0.4]])
    >>> fmap.kernel(X, X).round(4)   # (x . y + 1) ** 2
    array([[1.8496, 1.3924],
           [1.3924, 1.5625]])
    >>> Z = np.hstack([fmap.transform_block(seed=0, block=j, X=X) for j in range(4)])
    >>> approx = Z[0] @ Z[1] / Z.shape[1]
    >>> bool(abs(approx - 1.3924) < 0.05)
    True
    """
    name = "poly_sketch"
    cdef readonly double gamma
    cdef readonly int degree
    cdef readonly double coef0
    cdef double sqrt_gamma, sqrt_coef0
    cdef object _twiddles     # owns the table _tw points into
    cdef const double* _tw

    def __init__(self, Py_ssize_t n_components=256, double gamma=1.0, degree=3,
                 double coef0=0.0):
        super().__init__(n_components)
        if n_components & (n_components - 1) or n_components > 2 ** 30:
            raise ValueError(f"poly_sketch: n_components must be a power of two "
                             f"(at most 2**30), got {n_components}")
        if not (gamma > 0.0 and gamma < INFINITY):
            raise ValueError(f"poly_sketch: gamma must be a finite number > 0, got {gamma}")
        if (isinstance(degree, (bool, np.bool_)) or not isinstance(degree, numbers.Integral)
                or degree < 1):
            raise ValueError(f"poly_sketch: degree must be an integer >= 1, got {degree!r}")
        if not (coef0 >= 0.0 and coef0 < INFINITY):
            raise ValueError(f"poly_sketch: coef0 must be a finite number >= 0 (it enters "
                             f"as sqrt(coef0)), got {coef0}")
        self.gamma = gamma
        self.degree = int(degree)
        self.coef0 = coef0
        self.sqrt_gamma = sqrt(gamma)
        self.sqrt_coef0 = sqrt(coef0)
        # twiddles exp(-2 pi i k/F), k < F/2, from the package's deterministic
        # cos/sin so features are the same on every libm
        cdef Py_ssize_t k, M = n_components // 2
        tw = np.zeros(2 * max(M, 1), dtype=np.float64)
        cdef double[::1] t = tw
        for k in range(M):
            t[2 * k] = ok_cos(TWO_PI * k / n_components)
            t[2 * k + 1] = ok_sin(TWO_PI * k / n_components)
        self._twiddles = tw
        self._tw = &t[0]

    def _sizes(self, Py_ssize_t d):
        cdef Py_ssize_t work = 0
        if self.degree > 1 and self.n_components > 1:
            work = self.n_components + 2        # the product spectrum, F/2 + 1 bins
        return 2 * self.degree * (d + 1), work

    cdef void generate(self, uint64_t seed, uint64_t block, double* params) noexcept nogil:
        cdef Py_ssize_t i, m = self.degree * (self.n_features_in + 1)
        cdef int64_t h
        # hashes are drawn as int64 into the same storage, then converted in
        # place (memcpy: the buffer is typed double)
        ok_fill_hash(seed, block, 0, m, <uint32_t>self.n_components, <int64_t*>params)
        for i in range(m):
            memcpy(&h, params + i, sizeof(int64_t))
            params[i] = <double>h
        ok_fill_sign(seed, block, 1, m, params + m)

    cdef inline void _count_sketch(self, const double* params, Py_ssize_t i, const double* x,
                                   double* c) noexcept nogil:
        """c[0..F) = C_i(x~) (c is cleared first)."""
        cdef Py_ssize_t j, d = self.n_features_in, dt = d + 1
        cdef const double* h = params + i * dt
        cdef const double* s = params + self.degree * dt + i * dt
        memset(c, 0, self.n_components * sizeof(double))
        for j in range(d):
            c[<Py_ssize_t>h[j]] += s[j] * (self.sqrt_gamma * x[j])
        c[<Py_ssize_t>h[d]] += s[d] * self.sqrt_coef0

    cdef void transform(self, const double* params, const double* X, Py_ssize_t n,
                        Py_ssize_t ldx, double* out, double* work) noexcept nogil:
        cdef Py_ssize_t F = self.n_components, M = F // 2, p = self.degree
        cdef Py_ssize_t r, i, k
        cdef double* o
        cdef double prod
        cdef double sqrtF = sqrt(<double>F)
        for r in range(n):
            o = out + r * F
            if F == 1:
                # length-1 FFTs are the identity: the sketch is a product of sums
                prod = 1.0
                for i in range(p):
                    self._count_sketch(params, i, X + r * ldx, o)
                    prod *= o[0]
                o[0] = prod
            elif p == 1:
                self._count_sketch(params, 0, X + r * ldx, o)
                for k in range(F):
                    o[k] *= sqrtF
            else:
                # the output row doubles as the FFT buffer; work holds the product
                for i in range(p):
                    self._count_sketch(params, i, X + r * ldx, o)
                    _rfft_multiply(o, M, self._tw, work, i == 0)
                # sqrt(F) TS = sqrt(F) * IDFT_F(P) = IDFT_unnormalised(P) / sqrt(F)
                _irfft(work, M, self._tw, o, 1.0 / sqrtF)

    def kernel(self, X, Y):
        """The exact kernel matrix between the rows of ``X`` and ``Y``."""
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        Y = np.atleast_2d(np.asarray(Y, dtype=np.float64))
        return (self.gamma * (X @ Y.T) + self.coef0) ** self.degree

    def get_params(self, deep=True):
        return {"n_components": self.n_components, "gamma": self.gamma,
                "degree": self.degree, "coef0": self.coef0}
