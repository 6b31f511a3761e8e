"""What the estimators of stored points share (EigenPro, NORMA).

These models evaluate ``k(x_i, x)`` between rows, not random features: the
kernel is any registered feature map's exact ``kernel(X, Y)`` (and its
compiled ``kernel_row`` where the map has one).
"""
import copy

from onlinekernel import registry
from onlinekernel.estimators._base import scale_gamma
from onlinekernel.estimators._constraints import Real

__all__ = ["StoredRows", "check_gamma", "exact_kernel", "transaction"]


def check_gamma(name, value):
    """``gamma``: ``"scale"`` or a finite number > 0."""
    if isinstance(value, str):
        if value != "scale":
            raise ValueError(f"gamma must be 'scale' or a finite number > 0, got {value!r}")
        return
    Real(0.0, strict=True)(name, value)


def exact_kernel(est, X):
    """The feature map whose exact ``kernel(X, Y)`` ``est`` uses, and its gamma.

    A map given by name (``est.kernel``) gets ``est.gamma`` (``"scale"``:
    ``1 / (d Var X)``, as scikit-learn's SVC) when it takes one and
    ``est.kernel_params`` does not set it; a map object is used as it is (a
    copy).
    """
    kernel = est.kernel
    if isinstance(kernel, str):
        maps = registry.available_feature_maps()
        if kernel not in maps:
            registry.get_feature_map(kernel)  # raises the error that lists the names
        params = dict(est.kernel_params or {})
        if "gamma" in maps[kernel]["parameters"] and "gamma" not in params:
            params["gamma"] = scale_gamma(X) if isinstance(est.gamma, str) else float(est.gamma)
        fmap = registry.get_feature_map(kernel, **params)
    elif est.kernel_params:
        raise ValueError("kernel_params applies to a kernel given by name; a feature-map "
                         "object carries its own parameters")
    else:
        fmap = copy.deepcopy(kernel)
    if not callable(getattr(fmap, "kernel", None)):
        raise ValueError(f"kernel {kernel!r} has no exact kernel function (a kernel(X, Y) "
                         f"method): {type(est).__name__} needs the kernel's values")
    return fmap, getattr(fmap, "gamma", None)


def transaction(est, fn, *args):
    """``fn(*args)``; on any failure ``est`` is put back as it was, and the error raised."""
    saved = dict(est.__dict__)
    try:
        fn(*args)
    except BaseException:
        est.__dict__.clear()
        est.__dict__.update(saved)
        raise
    return est


class StoredRows:
    """Mixin of the estimators of stored rows: dense input only, parameters checked by
    ``_parameter_constraints`` (a dict of name -> check(name, value))."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        return tags

    def _validate(self):
        for name, check in self._parameter_constraints.items():
            check(name, getattr(self, name))
