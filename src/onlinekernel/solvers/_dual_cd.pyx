# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled inner loop of the dual coordinate descent solver.

One call runs one epoch of coordinate updates over the dual variables of one
output (see :mod:`onlinekernel.solvers.dual_cd` for the problem).  Each
update costs one dot product and one axpy of length ``M`` on the explicit
feature matrix; everything else (permutations, the duality gap, the
intercept's multiplier) stays in Python, once per epoch.

This module depends only on Cython, the C library and SciPy's BLAS
bindings, so it compiles on its own.
"""
from cython cimport floating
from libc.math cimport fabs
from scipy.linalg.cython_blas cimport daxpy, ddot, dsdot


cdef inline double _box_step(double a, double g, double h, double eps,
                             double lo, double hi) noexcept nogil:
    """Exact minimiser over ``z`` in ``[lo, hi]`` of ``g (z - a) + h/2 (z - a)^2 + eps |z|``.

    ``lo <= 0 <= hi`` and ``eps >= 0`` (checked by the caller).
    """
    cdef double z, thr, v_lo, v_hi, v_0
    if h > 0.0:
        # A convex parabola plus eps |z|: soft-threshold the unconstrained
        # Newton point, then clip (exact for a convex function of one variable).
        z = a - g / h
        thr = eps / h
        if z > thr:
            z -= thr
        elif z < -thr:
            z += thr
        else:
            z = 0.0
        if z < lo:
            z = lo
        elif z > hi:
            z = hi
        return z
    # h == 0 (a zero feature row without intercept): the objective is
    # piecewise linear with its kink at 0, so the minimum is at lo, 0 or hi.
    v_lo = g * lo + eps * fabs(lo)
    v_hi = g * hi + eps * fabs(hi)
    v_0 = 0.0
    if v_lo < v_0 and v_lo <= v_hi:
        return lo
    if v_hi < v_0:
        return hi
    return 0.0


def cd_epoch(const floating[:, ::1] Phi, const Py_ssize_t[::1] order,
             const double[::1] w, const double[::1] r, const double[::1] s,
             const double[::1] lo, const double[::1] hi, const double[::1] eps,
             const double[::1] qd, double[::1] a, double[::1] C, floating[::1] C_work,
             double lam, double b, double rho, double S):
    """One pass of dual coordinate updates over the rows ``order``.

    Minimises, one coordinate ``a_i`` at a time (in place),

    ``lam/2 ||C(a)||^2 - sum_i w_i (a_i r_i - eps_i |a_i|) + b S(a) + rho/2 S(a)^2``

    with ``C(a) = Phi.T (w s a) / lam`` and ``S(a) = sum_i w_i s_i a_i``, over
    ``lo_i <= a_i <= hi_i``: the dual of the primal with intercept ``b`` when
    ``rho == 0``, and its augmented Lagrangian (the equality constraint
    ``S(a) = 0`` of an unpenalised intercept, multiplier ``b``) when
    ``rho > 0``.

    Parameters
    ----------
    Phi : ndarray of shape (n, M), float32 or float64, C-contiguous
        The feature matrix.
    order : ndarray of shape (n_visit,), intp
        The rows to update, in this order (rows with ``w_i > 0``).
    w, r, s, lo, hi, eps : ndarray of shape (n,), float64
        Row weights and the loss's dual form (``lo <= 0 <= hi``, ``eps >= 0``).
    qd : ndarray of shape (n,), float64
        ``||Phi_i||^2 / lam``.
    a : ndarray of shape (n,), float64
        The dual variables, updated in place.
    C : ndarray of shape (M,), float64
        ``C(a)``, updated in place.
    C_work : ndarray of shape (M,), Phi's dtype
        For float64 ``Phi`` the same array as ``C``; for float32 a float32
        copy of ``C`` kept equal to ``C`` rounded, for single-precision dot
        products accumulated in double (``dsdot``).
    lam, b, rho, S : float
        Penalty, multiplier (intercept centre), augmentation weight and
        ``S(a)`` on entry.

    Returns
    -------
    S : float
        ``S(a)`` after the pass (kept incrementally).
    """
    cdef Py_ssize_t n_visit = order.shape[0], t, i, j
    cdef int M = <int>Phi.shape[1], one = 1
    cdef double u, g, h, z, d, step, ws
    if Phi.shape[1] != C.shape[0] or C_work.shape[0] != C.shape[0]:
        raise ValueError(f"Phi has {Phi.shape[1]} columns but C has {C.shape[0]} entries")
    with nogil:
        for t in range(n_visit):
            i = order[t]
            # Gradient of the objective in a_i, divided by w_i: the margin
            # term s_i * (raw output with the current effective intercept).
            if floating is double:
                u = ddot(&M, <double*>&Phi[i, 0], &one, &C[0], &one)
            else:
                u = dsdot(&M, <float*>&Phi[i, 0], &one, &C_work[0], &one)
            ws = w[i] * s[i]
            g = s[i] * (u + b + rho * S) - r[i]
            h = w[i] * s[i] * s[i] * (qd[i] + rho)
            z = _box_step(a[i], g, h, eps[i], lo[i], hi[i])
            d = z - a[i]
            if d == 0.0:
                continue
            a[i] = z
            S += ws * d
            step = ws * d / lam
            if floating is double:
                daxpy(&M, &step, <double*>&Phi[i, 0], &one, &C[0], &one)
            else:
                # Keep the double master copy exact and its float32 image in
                # step (a float32-only C would drift by rounding over epochs).
                for j in range(M):
                    C[j] += step * Phi[i, j]
                    C_work[j] = <float>C[j]
    return S
