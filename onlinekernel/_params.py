"""What losses, feature maps and operator objectives share as parameter objects.

Each is described by its class and ``get_params()``: two are equal when both
match, which is what pickling, ``copy.deepcopy``, scikit-learn's ``clone``
and the model files rely on.  The compiled base classes call these
functions; the Python bases inherit :class:`ParamsMixin`.

Examples
--------
>>> from onlinekernel import get_loss
>>> params_repr(get_loss("huber", delta=2.0))
'Huber(delta=2.0)'
>>> params_eq(get_loss("huber", delta=2.0), get_loss("huber", delta=2.0))
True
"""
import inspect

__all__ = ["params_eq", "params_hash", "params_repr", "init_params", "ParamsMixin"]


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


class ParamsMixin:
    """``get_params``, equality, hashing and ``repr`` from the constructor's parameters."""

    def get_params(self):
        """Constructor parameters, read from attributes of the same names."""
        return init_params(self)

    def __eq__(self, other):
        return params_eq(self, other)

    def __hash__(self):
        return params_hash(self)

    def __repr__(self):
        return params_repr(self)
