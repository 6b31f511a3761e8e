"""What losses, feature maps and operator objectives share as parameter objects.

Each is described by its class and ``get_params()``: two are equal when both
match, which is what pickling, ``copy.deepcopy``, scikit-learn's ``clone``
and the model files rely on.  They are scikit-learn parameters of the
estimators: ``clone`` copies them (``__sklearn_clone__``), a grid search
sets their parameters by nested names (``loss__quantile``) through
``set_params``.  The compiled base classes call these functions; the Python
bases inherit :class:`ParamsMixin`.

Examples
--------
>>> from onlinekernel import get_loss
>>> params_repr(get_loss("huber", delta=2.0))
'Huber(delta=2.0)'
>>> params_eq(get_loss("huber", delta=2.0), get_loss("huber", delta=2.0))
True
>>> set_params_of(get_loss("huber"), {"delta": 3.0})
Huber(delta=3.0)
"""
import inspect

__all__ = ["params_eq", "params_hash", "params_repr", "init_params", "set_params_of",
           "clone_of", "ParamsMixin"]


def params_eq(a, b):
    """Same class and the same parameters."""
    return type(a) is type(b) and a.get_params() == b.get_params()


def params_hash(obj):
    """A hash consistent with :func:`params_eq`."""
    return hash((type(obj), tuple(sorted(obj.get_params().items()))))


def params_repr(obj):
    """``ClassName(param=value, ...)``."""
    args = ", ".join(f"{k}={v!r}" for k, v in obj.get_params().items())
    return f"{type(obj).__name__}({args})"


def init_params(obj):
    """The constructor's parameters, read from attributes of the same names."""
    sig = inspect.signature(type(obj).__init__)
    return {p: getattr(obj, p) for p in sig.parameters if p != "self"
            and sig.parameters[p].kind not in (inspect.Parameter.VAR_POSITIONAL,
                                               inspect.Parameter.VAR_KEYWORD)}


def set_params_of(obj, params):
    """Set constructor parameters of ``obj`` in place (scikit-learn's ``set_params``).

    The new parameters are checked by building a fresh object first, so a
    bad name or value raises and leaves ``obj`` as it was; a feature map
    bound to an input dimension stays bound to it.
    """
    current = obj.get_params()
    unknown = sorted(set(params) - set(current))
    if unknown:
        raise ValueError(f"invalid parameter{'s' if len(unknown) > 1 else ''} {unknown} for "
                         f"{type(obj).__name__}; it takes {sorted(current)}")
    merged = {**current, **params}
    type(obj)(**merged)  # validates before anything changes
    bound = getattr(obj, "n_features_in", 0)
    obj.__init__(**merged)
    if bound:
        obj.bind(bound)
    return obj


def clone_of(obj):
    """A new object of the same class and parameters (unbound, for scikit-learn's ``clone``)."""
    return type(obj)(**obj.get_params())


class ParamsMixin:
    """``get_params``, equality, hashing and ``repr`` from the constructor's parameters."""

    def get_params(self, deep=True):
        """Constructor parameters, read from attributes of the same names.

        ``deep`` is accepted for scikit-learn (the parameters hold no objects
        with parameters of their own).
        """
        return init_params(self)

    def set_params(self, **params):
        """Set constructor parameters (checked first; see :func:`set_params_of`)."""
        return set_params_of(self, params)

    def __sklearn_clone__(self):
        return clone_of(self)

    def __eq__(self, other):
        return params_eq(self, other)

    def __hash__(self):
        return params_hash(self)

    def __repr__(self):
        return params_repr(self)
