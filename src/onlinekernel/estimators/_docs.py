"""Numpydoc text the estimators' methods share, written once.

Every estimator has ``fit`` and ``partial_fit`` (and some ``predict`` or
``score``) taking the same ``X``, ``y`` and ``sample_weight``; their
docstrings are assembled here from named parameter entries so that a
change of wording is made in one place.  :func:`doc` gives a method its
docstring:

>>> @doc("Fit the model.", "X", "y", "sample_weight")
... def fit(self, X, y, sample_weight=None):
...     return self
>>> print(fit.__doc__.splitlines()[0])
Fit the model.
>>> "sample_weight : array-like of shape (n_samples,), default=None" in fit.__doc__
True
"""
__all__ = ["PARAMS", "doc", "fill"]

# Parameter entries by name: the first line is the numpydoc "name : type"
# line, the next ones its description (indented by four spaces).
PARAMS = {
    "X": "X : array-like of shape (n_samples, n_features)",
    "y": "y : array-like of shape (n_samples,)",
    "y_ignored": "y : ignored",
    "classes": "classes : array-like, default=None\n    All classes; required on the first call.",
    "sample_weight": (
        "sample_weight : array-like of shape (n_samples,), default=None\n"
        "    Weights multiply each row's loss gradient; rows of weight 0 are\n"
        "    left out."),
    "sample_weight_residual": (
        "sample_weight : array-like of shape (n_samples,), default=None\n"
        "    Weights multiply each row's residual in its step (and weight the\n"
        "    validation score); rows of weight 0 are left out."),
    "sample_weight_step": (
        "sample_weight : array-like of shape (n_samples,), default=None\n"
        "    Weights multiply each row's residual in its step; rows of weight\n"
        "    0 are left out."),
    "sample_weight_hinge": (
        "sample_weight : array-like of shape (n_samples,), default=None\n"
        "    Weights of the rows' hinge terms; rows of weight 0 are left out."),
    "sample_weight_as_fit": (
        "sample_weight : array-like of shape (n_samples,), default=None\n"
        "    As in :meth:`fit`."),
}

# Blocks of class-docstring parameters several estimators share; a class
# decorated with @fill names one on a line of its own: ``{{map_params}}``
PARAMS["map_params"] = (
    "degree : int, default=3\n"
    "    Degree, for maps that take one (``poly_sketch``).\n"
    "coef0 : float, default=0.0\n"
    "    Constant term, for maps that take one (``poly_sketch``).\n"
    "kernel_params : dict, default=None\n"
    "    Further parameters of the feature map.")
PARAMS["seed_to_jobs"] = (
    "random_state : int, RandomState or None, default=None\n"
    "    Seeds the random features and the shuffling.\n"
    "warm_start : bool, default=False\n"
    "    Continue from the current model in ``fit``.\n"
    "cache_bytes : int, default=64 MiB\n"
    "    Memory budget for materialised blocks.\n"
    "dtype : {\"float64\", \"float32\"}, default=\"float64\"\n"
    "    As in :class:`onlinekernel.DSGClassifier`.\n"
    "n_jobs : int or None, default=None\n"
    "    As in :class:`onlinekernel.DSGClassifier`.")
PARAMS["step_attributes"] = (
    "n_blocks_ : int\n"
    "    The current number of blocks.\n"
    "t_ : int\n"
    "    Training steps taken.\n"
    "seed_ : int\n"
    "    The 64-bit seed of the random features.")
PARAMS["batch_attributes"] = (
    "n_random_features_, n_blocks_, seed_, gamma_, loss_, feature_map_, n_features_in_, solver_\n"
    "    As in :class:`onlinekernel.DSGClassifier`.")

# The summaries several estimators share
FIT_SOLVER = "Fit the model on ``(X, y)`` with ``solver`` (see the class docstring)."
FIT_PASSES = "Fit the model on ``(X, y)``: ``max_iter`` passes, or fewer with early stopping."
PARTIAL_FIT = "Run one pass of training steps over ``(X, y)``, in order."
# What the first partial_fit call of the fixed-feature models decides
FIRST_CALL_SIZES = ("The first call builds the model: the ``\"auto\"`` sizes come from\n"
                    "``n_samples_hint``, or else from the rows of this call.")


def doc(summary, *params, body=None, returns="self"):
    """Decorator giving a method the docstring ``summary``, ``body``, Parameters, Returns.

    Each of ``params`` is a name of :data:`PARAMS` or a whole entry
    (``"name : type\\n    description"``); ``returns`` is the Returns
    section's text.
    """
    entries = [PARAMS.get(p, p) for p in params]
    parts = [summary]
    if body:
        parts.append(body)
    parts.append("Parameters\n----------\n" + "\n".join(entries))
    parts.append("Returns\n-------\n" + returns)
    text = "\n\n".join(parts) + "\n"

    def decorate(method):
        method.__doc__ = text
        return method
    return decorate


def fill(cls):
    """Class decorator: each docstring line ``{{name}}`` becomes the entries ``PARAMS[name]``.

    The entries take the line's indentation.
    """
    if not cls.__doc__:  # python -OO
        return cls
    lines = []
    for line in cls.__doc__.split("\n"):
        key = line.strip()
        if key.startswith("{{") and key.endswith("}}"):
            indent = line[:len(line) - len(line.lstrip())]
            lines.extend(indent + entry for entry in PARAMS[key[2:-2]].split("\n"))
        else:
            lines.append(line)
    cls.__doc__ = "\n".join(lines)
    return cls
