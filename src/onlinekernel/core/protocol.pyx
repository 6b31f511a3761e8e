# cython: language_level=3
"""The parameter protocol shared by the compiled losses, feature maps and operator objectives.

:class:`CyParams` gives a compiled class scikit-learn's ``get_params`` /
``set_params`` / ``__sklearn_clone__``, pickling, equality, hashing and
``repr``, all read from ``get_params()`` through the functions of
:mod:`onlinekernel.core.params` (the Python bases get the same from
``ParamsMixin``).  A subclass states its constructor parameters by
overriding ``get_params``; a class with more state than its parameters
(a feature map bound to an input dimension) overrides ``__reduce__``,
``__setstate__`` and ``__eq__`` as well.
"""
from onlinekernel.core.params import clone_of, params_eq, params_hash, params_repr, \
    set_params_of


cdef class CyParams:
    """Base class of the compiled parameter objects (see the module docstring)."""

    def get_params(self, deep=True):
        """Constructor parameters, as a dict (``deep``: for scikit-learn; no nested objects)."""
        return {}

    def set_params(self, **params):
        """Set constructor parameters in place, checked first (scikit-learn's ``set_params``)."""
        return set_params_of(self, params)

    def __sklearn_clone__(self):
        return clone_of(self)

    def __reduce__(self):
        return (type(self), (), self.get_params())

    def __setstate__(self, state):
        if state:
            self.__init__(**state)

    def __eq__(self, other):
        return params_eq(self, other)

    def __hash__(self):
        return params_hash(self)

    def __repr__(self):
        return params_repr(self)


def as_compiled(obj, compiled, python, adapter, kind):
    """``obj`` if it is a ``compiled`` object, ``adapter(obj)`` if a ``python`` one.

    What ``as_cy_loss`` and ``as_cy_feature_map`` run: a Python subclass of
    ``python`` (:class:`onlinekernel.Loss`, :class:`onlinekernel.FeatureMap`)
    goes through its adapter to the compiled protocol; ``kind`` names the
    protocol in the error for anything else.
    """
    if isinstance(obj, compiled):
        return obj
    if isinstance(obj, python):
        return adapter(obj)
    raise TypeError(
        f"a {kind} must be a registered name, a compiled {compiled.__name__} or a subclass of "
        f"onlinekernel.{python.__name__}; got {type(obj).__name__}")
