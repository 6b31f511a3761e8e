"""Model files: save fitted estimators and load them without running any code.

A model file holds what defines a fitted :class:`~onlinekernel.DSGClassifier`
or :class:`~onlinekernel.DSGRegressor`: its hyper-parameters, the loss and the
random-feature map by their registered plugin names, the 64-bit seed the
random features are regenerated from, the coefficients, the intercepts and the
step counters.  The random features themselves are never stored, so a file
is the coefficients (8 bytes per random feature and output) plus a header of
one or two kilobytes.

Loading never executes anything taken from the file: there is no pickle
inside, the header is JSON, the arrays are raw little-endian numbers whose
data types come from a fixed list, the estimator class is looked up among
onlinekernel's own estimators (nothing named in the file is imported), and
losses and feature maps are rebuilt through the plugin registry by name.  A
loaded model predicts bit for bit as the saved one did, and training it
further with ``partial_fit`` gives the same model as never stopping.

Every problem a file can have -- not a model file, truncated, corrupted or
modified, written by a newer format version, naming an estimator class that
is not onlinekernel's, needing a plugin that is not installed -- raises
:class:`ModelFileError` with a message naming it.

Notes
-----
**Layout.**  A model file is four consecutive parts; integers are
little-endian.

========  ==================  ===============================================
offset    size (bytes)        content
========  ==================  ===============================================
0         8                   signature ``89 4F 4B 4D 0D 0A 1A 0A``
                              (``\\x89OKM\\r\\n\\x1a\\n``: a non-text byte,
                              ``OKM``, and the line endings and end-of-file
                              byte that a text-mode transfer would alter)
8         4                   format version (uint32): 2, or 3 for a
                              feature map fitted on data
12        4                   header length ``H`` (uint32)
16        8                   payload length ``P`` (uint64)
24        ``H``               header: JSON, ASCII-encoded
24 + H    ``P``               payload: the raw bytes of the arrays
24+H+P    32                  SHA-256 digest of bytes ``0 .. 24+H+P``
                              (everything before it)
========  ==================  ===============================================

A reader checks, in order: the signature, the format version (a newer one is
refused), the length (``24 + H + P + 32`` bytes exactly), the digest, and
only then parses the header and validates every field against the payload.
The digest detects damage and modification, it does not authenticate the
writer: a file with a valid digest is still validated field by field, and
loading a deliberately crafted file can only produce a model (or an error),
never run code.

**Header fields.**  The header is one JSON object.  Every value is plain JSON
except where a *tagged value* is needed to keep the Python type: an object
``{"$type": ...}`` with

* ``{"$type": "float", "value": "nan" | "inf" | "-inf"}`` -- a non-finite
  float (finite floats are JSON numbers, written with the shortest
  representation that reads back to the same double);
* ``{"$type": "tuple", "items": [...]}`` -- a tuple;
* ``{"$type": "dict", "items": [[key, value], ...]}`` -- a dict that itself
  has a ``"$type"`` key;
* ``{"$type": "RandomState", "key": "<array name>", "pos": int,
  "has_gauss": int, "cached_gaussian": float}`` -- a
  :class:`numpy.random.RandomState` passed as ``random_state``, with the
  Mersenne Twister state (its 624-word key is an array of the payload);
* ``{"$type": "loss" | "feature_map", "name": str, "params": {...},
  "distribution": str, "distribution_version": str | null, "plugin": str}``
  -- a loss or feature-map object passed as the ``loss`` / ``kernel``
  hyper-parameter, by its registered name and parameters;
* ``{"$type": "array", "name": "extra.param.<n>"}`` -- a numeric array in a
  hyper-parameter (``input_scaling``), stored in the payload.

Numpy scalars are stored as the Python scalars of the same value.

``format``
    ``"onlinekernel-model"``.
``format_version``
    The integer of the prelude, repeated.
``library_version``
    The version of onlinekernel that wrote the file (informational).
``estimator``
    ``{"module": ..., "qualname": ...}`` of the estimator class, e.g.
    ``onlinekernel.estimators._classifier`` / ``DSGClassifier``.  A reader
    accepts only the estimator classes of the onlinekernel package (each
    registers itself through :func:`register_estimator` as it is defined);
    it never imports a name read from a file.
``params``
    The hyper-parameters, ``get_params(deep=False)``.  A ``loss`` or
    ``kernel`` given as a name is the string; given as an object, it is a
    tagged ``loss`` / ``feature_map`` value, which is possible only when the
    object is a registered plugin: its registered name must rebuild an equal
    object from its ``get_params()``.
``loss``
    The fitted loss ``loss_`` (for example ``multinomial`` when ``logistic``
    met more than two classes): ``{"name", "params", "distribution",
    "distribution_version", "plugin"}`` -- the registered name, its
    ``get_params()``, and where the plugin came from (the installed Python
    distribution and its version), used only to say what to install when the
    name is not registered where the file is loaded.
``feature_map``
    The fitted, bound feature map ``feature_map_``: the same fields as
    ``loss`` plus ``n_features_in``, the input dimension it is bound to.
``seed``
    The 64-bit seed ``seed_`` (an integer in ``[0, 2**64)``): block ``j`` of
    random features is regenerated from ``(seed, j)``.
``state``
    Scalars of the learned state: ``_scale`` (the global factor of the
    coefficients), ``gamma_`` (float or null), ``n_features_in_``,
    ``_n_outputs`` (``K``), ``n_blocks_``, ``t_``, ``samples_seen_``,
    ``n_epochs_seen_`` and ``n_averaged_``.
``extra``
    Further fitted attributes of estimators that keep more state than the
    above, by attribute name: the names an estimator class lists in its
    ``_extra_state`` (empty for the classifier and the regressor).  A value
    is a (tagged) JSON value, or ``{"$type": "array", "name": "extra.<attr>"}``
    for an array of the payload.  A reader sets only the attributes its class
    lists; saving a model with a fitted attribute that is neither part of the
    format nor listed is refused, since the loaded model would lack it.
``arrays``
    One entry per array.  A numeric or string array is in the payload:
    ``{"dtype", "shape", "offset", "nbytes"}`` with the little-endian numpy
    type string (one of bool, signed and unsigned integers, floats,
    complex, fixed-width unicode ``<U`` and bytes ``|S``), the shape, the
    byte offset from the start of the payload (a multiple of 8) and the
    byte length.  An array of Python objects (class labels given as Python
    strings, ``feature_names_in_``) is in the header instead:
    ``{"dtype": "object", "shape": [n], "values": [...]}``.  The arrays are

    * ``coef``: the used rows of ``_coef``, in the model's precision
      (float64, or float32 for a ``dtype="float32"`` model), of shape
      ``(n_blocks_ * F, K)`` where ``F`` is the map's ``n_components``; row
      ``j * F + k`` is feature ``k`` of block ``j``.  The coefficients are
      ``_scale * coef``.
    * ``intercept``: float64, ``(K,)``.
    * ``coef_avg`` (only when averaging has produced a non-zero average):
      the used rows of ``_coef_avg``, the dtype of ``coef``, ``(n_blocks_ * F, K)``;
      absent means zeros.
    * ``intercept_avg``: float64, ``(K,)``.
    * ``classes`` (classifiers): ``classes_`` with its own dtype, so
      integer, float, boolean and string labels come back unchanged.
    * ``feature_names_in`` (when the model was fitted on a DataFrame).
    * ``random_state_key``: the key of a ``RandomState`` hyper-parameter,
      uint32 ``(624,)`` (``random_state_key.<n>`` for any further one).
    * ``extra.<attr>``: the arrays of ``extra`` attributes.

The block cache (``_blocks``) is not stored: it is rebuilt from the feature
map and the seed.  A change to any of this that a reader must understand
comes with a new format version; a reader rejects fields it does not know.

Version 2 (onlinekernel with batch solvers) adds, as ``extra`` attributes of
every estimator, the target scaling of the regressors (``_y_mean``,
``_y_scale``: the model predicts ``raw * _y_scale + _y_mean``), the solver
``fit`` ran (``solver_``) and its iteration count (``n_iter_``), the
preconditioner of ``precondition="eigenpro"`` (``_eig_vectors``,
``_eig_values``, ``_eig_step``, ``_eig_level``: stored, so that training
resumes exactly), the penalty trained with (``alpha_``: what ``alpha="auto"``
chose; absent in files written before it: the model's ``alpha``, or 1e-6 for
``"auto"``) and, after a drift reaction, the row count at which the
step schedule's clock restarted (``_clock_start``; absent: 0); the
estimators that took ``n_epochs`` now take the stopping parameters of
scikit-learn.  A file with ``n_epochs=N`` (version 1, and the one-class,
density-ratio and GP models of early version-2 files) loads with it read as
``max_iter=N, tol=None`` and, where there was no solver parameter,
``solver="sgd"`` (the same training, N epochs); a regressor's file
without ``normalize_y`` (version 1, and GP models of early version-2 files)
loads with ``normalize_y=False`` (its model was trained on raw targets).

Version 3 (onlinekernel with Nystrom features) adds a feature map fitted on
data: its ``feature_map`` entry has a field ``fitted``, ``{name: {"$type":
"array", "name": "feature_map.<name>"}}``, naming arrays of the payload that
hold its fitted state -- for ``nystrom`` the landmarks (``M x d`` rows of the
training data, float64), the Cholesky factor of their kernel matrix (``M x
M``) and the number of blocks they were chosen for.  A writer uses version 3
only for such a model, and version 2 otherwise, so that models of random
features stay readable by onlinekernel versions that read version 2; a
reader of version 3 reads versions 1 and 2 unchanged.

Examples
--------
>>> import os, tempfile
>>> import numpy as np
>>> import onlinekernel
>>> from onlinekernel import DSGClassifier
>>> from onlinekernel.io.modelfile import read_header
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(300, 2))
>>> y = np.where(np.hypot(X[:, 0], X[:, 1]) < 1.0, "in", "out")
>>> clf = DSGClassifier(loss="logistic", block_size=64, max_blocks=4,
...                     random_state=0).fit(X, y)
>>> with tempfile.TemporaryDirectory() as tmp:
...     path = os.path.join(tmp, "circle.okm")
...     clf.save(path)
...     size = os.path.getsize(path)
...     header = read_header(path)
...     loaded = onlinekernel.load(path)
>>> bool((loaded.predict_proba(X) == clf.predict_proba(X)).all())
True
>>> loaded.classes_
array(['in', 'out'], dtype='<U3')
>>> header["loss"]["name"], header["feature_map"]["name"], header["arrays"]["coef"]["shape"]
('logistic', 'gaussian', [256, 1])
>>> size - 256 * 8 < 4096  # the coefficients plus a small header
True
"""
import errno
import hashlib
import importlib.metadata
import json
import math
import numbers
import os
import struct

import numpy as np
from sklearn.base import is_classifier
from sklearn.utils.validation import check_is_fitted

from onlinekernel import registry
from onlinekernel.featuremaps.base import PyFeatureMapAdapter, as_cy_feature_map
from onlinekernel.core.threads import train_lock
from onlinekernel.io.files import replacing
from onlinekernel.losses.base import PyLossAdapter, as_cy_loss
from onlinekernel.solvers.dsg import BlockSource
from onlinekernel.featuremaps import MAX_BLOCK_SIZE
from onlinekernel._version import __version__

__all__ = ["save", "load", "dumps", "loads", "read_header", "ModelFileError",
           "ModelFileNotFoundError", "FORMAT_NAME", "FORMAT_VERSION", "MAGIC"]

FORMAT_NAME = "onlinekernel-model"
FORMAT_VERSION = 3
# Files are written in the lowest version that holds the model: 3 only for a
# feature map fitted on data (its arrays), so that every other model stays
# readable by onlinekernel versions that read version 2.
_FITTED_MAP_VERSION = 3
_BASE_VERSION = 2
MAGIC = b"\x89OKM\r\n\x1a\n"
# Doubles of parameters one block may have (2 GiB): beyond it a file is refused
_MAX_BLOCK_PARAMS = 2 ** 28
_PRELUDE = struct.Struct("<8sIIQ")  # signature, format version, header and payload lengths
_DIGEST_SIZE = 32
_ALIGN = 8
_NUMERIC_KINDS = "biufcUS"  # array dtypes a file may hold: no objects, records or datetimes
_RS_KEY = "random_state_key"
_STATE_INTS = ("n_features_in_", "_n_outputs", "n_blocks_", "t_", "samples_seen_",
               "n_epochs_seen_", "n_averaged_")
_STATE_KEYS = ("_scale", "gamma_") + _STATE_INTS
_HEADER_KEYS = ("format", "format_version", "library_version", "estimator", "params", "loss",
                "feature_map", "seed", "state", "extra", "arrays")
_PLUGIN_KEYS = ("name", "params", "distribution", "distribution_version", "plugin")
_ARRAY_NAMES = ("coef", "intercept", "coef_avg", "intercept_avg", "classes",
                "feature_names_in", _RS_KEY)  # and _RS_KEY + ".<n>", "extra.<attr>"
_EXTRA_PREFIX = "extra."  # arrays of the ``extra`` attributes
_MAP_PREFIX = "feature_map."  # arrays of a feature map fitted on data (version 3)
# Fitted attributes the format stores (or rebuilds: _blocks, _built_from).
_FORMAT_ATTRIBUTES = frozenset(_STATE_KEYS) | {
    "loss_", "feature_map_", "seed_", "_coef", "_intercept", "_coef_avg", "_intercept_avg",
    "classes_", "feature_names_in_", "_blocks", "_built_from"}
# Fitted attributes of every estimator stored as ``extra`` (format version 2).
_COMMON_EXTRA = ("_y_mean", "_y_scale", "solver_", "n_iter_", "_eig_vectors", "_eig_values",
                 "_eig_step", "_eig_level", "alpha_", "_clock_start")
# scikit-learn's routing and output configuration: not part of a model
_NOT_STORED = frozenset({"_metadata_request", "_sklearn_output_config"})


class ModelFileError(ValueError):
    """A model file (or a model to save) is not valid; the message names the problem."""


class ModelFileNotFoundError(ModelFileError, FileNotFoundError):
    """No model file at the path given to :func:`load` (also a :class:`FileNotFoundError`)."""


# ---------------------------------------------------------------------- #
# values: JSON with a few tagged types
# ---------------------------------------------------------------------- #
def _float_to_json(x):
    x = float(x)
    if math.isfinite(x):
        return x
    return {"$type": "float", "value": repr(x)}


def _to_json(value, what, payload):
    """``value`` as JSON, keeping its type (see "Header fields" above)."""
    if value is None or isinstance(value, (bool, np.bool_)):
        return None if value is None else bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return _float_to_json(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, tuple):
        return {"$type": "tuple", "items": [_to_json(v, what, payload) for v in value]}
    if isinstance(value, list):
        return [_to_json(v, what, payload) for v in value]
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise ModelFileError(f"cannot store {what}: a dict with keys that are not strings")
        items = {k: _to_json(v, f"{what}[{k!r}]", payload) for k, v in value.items()}
        if "$type" in items:
            return {"$type": "dict", "items": [[k, v] for k, v in items.items()]}
        return items
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf" and payload is not None:
        # a parameter holding numbers (input_scaling's mean and scale): an array
        name = f"{_EXTRA_PREFIX}param.{len(payload.table)}"
        payload.add(name, value)
        return {"$type": "array", "name": name}
    if isinstance(value, np.random.RandomState):
        _, key, pos, has_gauss, cached = value.get_state(legacy=True)
        name = _RS_KEY
        while name in payload.table:  # one array per RandomState
            name = f"{_RS_KEY}.{len(payload.table)}"
        payload.add(name, np.asarray(key, dtype=np.uint32))
        return {"$type": "RandomState", "key": name, "pos": int(pos),
                "has_gauss": int(has_gauss), "cached_gaussian": _float_to_json(cached)}
    raise ModelFileError(f"cannot store {what}: a model file holds numbers, strings, "
                         f"None, lists, tuples and dicts of those, not "
                         f"{type(value).__name__} (pickle the model instead)")


def _plain(value, what):
    """Decode a tagged JSON value that may not name a plugin or an array."""
    return _from_json(value, what, None)


def _from_json(value, what, ctx):
    if isinstance(value, list):
        return [_from_json(v, what, ctx) for v in value]
    if not isinstance(value, dict):
        return value
    tag = value.get("$type")
    if tag is None:
        return {k: _from_json(v, f"{what}[{k!r}]", ctx) for k, v in value.items()}
    if tag == "float":
        _keys(value, ("$type", "value"), what)
        if value["value"] not in ("nan", "inf", "-inf"):
            raise ModelFileError(f"invalid non-finite float {value['value']!r} in {what}")
        return float(value["value"])
    if tag == "tuple":
        _keys(value, ("$type", "items"), what)
        return tuple(_from_json(_typed(value["items"], list, what), what, ctx))
    if tag == "dict":
        _keys(value, ("$type", "items"), what)
        out = {}
        for item in _typed(value["items"], list, what):
            if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)):
                raise ModelFileError(f"invalid dict item {item!r} in {what}")
            out[item[0]] = _from_json(item[1], f"{what}[{item[0]!r}]", ctx)
        return out
    if ctx is None:
        raise ModelFileError(f"{what} holds a {tag!r} value where none is allowed")
    if tag == "RandomState":
        _keys(value, ("$type", "key", "pos", "has_gauss", "cached_gaussian"), what)
        key = ctx.array(_typed(value["key"], str, what), np.uint32, (624,))
        pos = _int(value["pos"], f"{what} pos", 0, 624)
        has_gauss = _int(value["has_gauss"], f"{what} has_gauss", 0, 1)
        cached = _real(_plain(value["cached_gaussian"], what), f"{what} cached_gaussian")
        rs = np.random.RandomState()
        rs.set_state(("MT19937", key, pos, has_gauss, cached))
        return rs
    if tag in ("loss", "feature_map"):
        return ctx.plugin(tag, value, what)
    if tag == "array":
        _keys(value, ("$type", "name"), what)
        name = _typed(value["name"], str, what)
        if not name.startswith(_EXTRA_PREFIX) or name not in ctx.arrays:
            raise ModelFileError(f"invalid {what}: no array {name!r}")
        return ctx.arrays[name]
    raise ModelFileError(f"unknown value type {tag!r} in {what}")


def _keys(obj, expected, what, optional=()):
    if not isinstance(obj, dict):
        raise ModelFileError(f"{what} must be a JSON object, got {type(obj).__name__}")
    missing = [k for k in expected if k not in obj]
    unknown = [k for k in obj if k not in expected and k not in optional]
    if missing or unknown:
        parts = ([f"missing {', '.join(map(repr, missing))}"] if missing else []) + \
                ([f"unknown {', '.join(map(repr, unknown))}"] if unknown else [])
        raise ModelFileError(f"invalid {what}: {'; '.join(parts)}")


def _typed(value, kind, what):
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ModelFileError(f"invalid {what}: expected {kind.__name__}, got {value!r}")
    return value


def _int(value, what, low, high=2 ** 63 - 1):
    _typed(value, int, what)
    if value < low or value > high:
        raise ModelFileError(f"invalid {what}: {value} is out of range")
    return value


def _real(value, what):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ModelFileError(f"invalid {what}: expected a number, got {value!r}")
    return float(value)


# ---------------------------------------------------------------------- #
# arrays
# ---------------------------------------------------------------------- #
class _Payload:
    """Collects the arrays of a model being written: the table and the bytes."""

    def __init__(self):
        self.chunks = []
        self.size = 0
        self.table = {}

    def add(self, name, array):
        array = np.asarray(array)
        if array.dtype.hasobject:
            if array.ndim != 1:
                raise ModelFileError(f"cannot store array {name!r}: object arrays must be 1-d")
            values = []
            for v in array:
                if not isinstance(v, (str, numbers.Real, np.bool_)) and v is not None:
                    raise ModelFileError(
                        f"cannot store {name!r}: its element {v!r} is a {type(v).__name__} "
                        f"(a model file holds strings, numbers, booleans and None)")
                values.append(_to_json(v, name, self))
            self.table[name] = {"dtype": "object", "shape": [array.shape[0]], "values": values}
            return
        if array.dtype.kind not in _NUMERIC_KINDS or array.dtype.fields is not None:
            raise ModelFileError(f"cannot store array {name!r} of dtype {array.dtype}: a model "
                                 f"file holds booleans, numbers and fixed-width strings")
        dtype = array.dtype.newbyteorder("<")
        data = np.ascontiguousarray(array, dtype=dtype).tobytes()
        pad = -self.size % _ALIGN
        if pad:
            self.chunks.append(b"\0" * pad)
            self.size += pad
        self.table[name] = {"dtype": dtype.str, "shape": list(array.shape),
                            "offset": self.size, "nbytes": len(data)}
        self.chunks.append(data)
        self.size += len(data)

    def bytes(self):
        return b"".join(self.chunks)


def _read_array(name, spec, payload):
    what = f"array {name!r}"
    if isinstance(spec, dict) and spec.get("dtype") == "object":
        _keys(spec, ("dtype", "shape", "values"), what)
        values = [_plain(v, what) for v in _typed(spec["values"], list, what)]
        if spec["shape"] != [len(values)]:
            raise ModelFileError(f"invalid {what}: shape {spec['shape']} for "
                                 f"{len(values)} values")
        for v in values:
            if not isinstance(v, (str, int, float)) and v is not None:
                raise ModelFileError(f"invalid {what}: element {v!r}")
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out
    _keys(spec, ("dtype", "shape", "offset", "nbytes"), what)
    try:
        dtype = np.dtype(_typed(spec["dtype"], str, f"{what} dtype"))
    except TypeError:
        raise ModelFileError(f"invalid {what}: unknown dtype {spec['dtype']!r}") from None
    if (dtype.kind not in _NUMERIC_KINDS or dtype.fields is not None or dtype.subdtype
            or dtype.byteorder == ">" or dtype.itemsize == 0):
        raise ModelFileError(f"invalid {what}: dtype {spec['dtype']!r} is not allowed")
    shape = _typed(spec["shape"], list, f"{what} shape")
    if len(shape) > 8:
        raise ModelFileError(f"invalid {what}: {len(shape)} dimensions")
    shape = tuple(_int(s, f"{what} shape", 0) for s in shape)
    offset = _int(spec["offset"], f"{what} offset", 0)
    nbytes = _int(spec["nbytes"], f"{what} nbytes", 0)
    count = math.prod(shape)
    if count * dtype.itemsize != nbytes:
        raise ModelFileError(f"invalid {what}: {nbytes} bytes for shape {list(shape)} of "
                             f"{dtype.str}")
    if offset + nbytes > len(payload):
        raise ModelFileError(f"invalid {what}: bytes {offset}..{offset + nbytes} lie beyond "
                             f"the {len(payload)}-byte payload")
    array = np.frombuffer(payload, dtype=dtype, count=count, offset=offset)
    # an owned, writable, native-order copy: training updates these in place
    return array.astype(dtype.newbyteorder("="), copy=True).reshape(shape)


# ---------------------------------------------------------------------- #
# plugins
# ---------------------------------------------------------------------- #
_KINDS = {
    "loss": ("loss", registry.available_losses, registry.get_loss),
    "feature_map": ("feature map", registry.available_feature_maps, registry.get_feature_map),
}


def _unwrap(obj):
    if isinstance(obj, PyLossAdapter):
        return obj.loss_obj
    if isinstance(obj, PyFeatureMapAdapter):
        return obj.map_obj
    return obj


def _same_plugin(a, b):
    a, b = _unwrap(a), _unwrap(b)
    try:
        return type(a) is type(b) and bool(a.get_params() == b.get_params())
    except Exception:  # parameters that do not compare (arrays) cannot be matched
        return False


def _distribution_version(dist):
    try:
        return importlib.metadata.version(dist)
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return None


def _plugin_spec(tag, obj, what, payload):
    """``{"name", "params", ...}`` of a loss or feature map, found in the registry."""
    kind, available, build = _KINDS[tag]
    inner = _unwrap(obj)
    try:
        params = dict(inner.get_params())
    except Exception as exc:
        raise ModelFileError(f"cannot save {what}: {inner!r}.get_params() failed: "
                             f"{exc}") from None
    table = available()
    cls = type(inner)
    qualified = f"{cls.__module__}.{cls.__qualname__}"
    own = getattr(inner, "name", None)
    candidates = [own] if isinstance(own, str) and own in table else []
    candidates += [n for n, info in table.items() if info["factory"] == qualified
                   and n not in candidates]
    for name in candidates:
        try:
            rebuilt = build(name, **params)
        except Exception:
            continue
        if _same_plugin(rebuilt, inner):
            info = table[name]
            return {"name": name, "params": _to_json(params, f"the parameters of {what}", payload),
                    "distribution": info["distribution"],
                    "distribution_version": _distribution_version(info["distribution"]),
                    "plugin": info["plugin"]}
    raise ModelFileError(
        f"cannot save {what}: {inner!r} is not a registered {kind} (a model file names "
        f"losses and feature maps by their registered name, so that loading never runs "
        f"code from the file); register its class through the 'onlinekernel' entry-point "
        f"group, or pickle the model instead")


def _build_plugin(tag, spec, what, source, more_keys=()):
    kind, available, build = _KINDS[tag]
    _keys(spec, _PLUGIN_KEYS + more_keys, what)
    name = _typed(spec["name"], str, f"{what} name")
    params = _plain(spec["params"], f"{what} parameters")
    _typed(params, dict, f"{what} parameters")
    table = available()
    if name not in table:
        dist, version = spec["distribution"], spec["distribution_version"]
        plugin = spec["plugin"]
        if dist == "<registered at runtime>":
            hint = (f"it was registered at run time by the plugin {plugin!r}; register it "
                    f"again before loading")
        elif dist == "onlinekernel":
            hint = (f"it is built into onlinekernel {version or ''}, which wrote the file, but "
                    f"not into this onlinekernel {__version__}: upgrade onlinekernel")
        elif isinstance(dist, str):
            hint = (f"it comes from the plugin distribution {dist!r}"
                    f"{f' (version {version})' if version else ''}, which is not "
                    f"installed or not enabled here: install it (pip install {dist}) and "
                    f"load again")
        else:
            hint = "the file does not say which distribution provides it"
        raise ModelFileError(
            f"cannot load {source}: the model needs the {kind} {name!r}, which is not "
            f"registered in this installation; {hint}. Registered {kind}s: "
            f"{', '.join(table) or '(none)'}")
    try:
        obj = build(name, **params)
    except Exception as exc:
        raise ModelFileError(f"cannot load {source}: the installed {kind} {name!r} rejects "
                             f"the saved parameters {params}: {exc}") from None
    return obj


# ---------------------------------------------------------------------- #
# writing
# ---------------------------------------------------------------------- #
_ESTIMATORS = {}


def register_estimator(cls):
    """Let model files hold estimators of class ``cls`` (onlinekernel's own only).

    The estimators' base class registers each of its subclasses as it is
    defined; a class outside the ``onlinekernel`` package (or a local one)
    is not registered, so a model file chooses among onlinekernel's
    estimators and never makes the reader import a name it contains.
    Returns ``cls``.
    """
    module, qualname = cls.__module__, cls.__qualname__
    if (module == "onlinekernel" or module.startswith("onlinekernel.")) and "<" not in qualname:
        _ESTIMATORS[(module, qualname)] = cls
    return cls


def _estimator_classes():
    """onlinekernel's estimator classes, by ``(module, qualname)``."""
    return dict(_ESTIMATORS)


def _declared_extra(cls):
    """The ``extra`` attributes a model of ``cls`` may hold."""
    return tuple(getattr(cls, "_extra_state", ())) + _COMMON_EXTRA


def _pack(header, payload):
    """The bytes of a model file with ``header`` (a dict) and ``payload`` (bytes)."""
    head = json.dumps(header, ensure_ascii=True, allow_nan=False,
                      separators=(",", ":")).encode("ascii")
    body = _PRELUDE.pack(MAGIC, header["format_version"], len(head), len(payload)) + head \
        + payload
    return body + hashlib.sha256(body).digest()


def dumps(model):
    """The model file of a fitted estimator, as bytes.

    Parameters
    ----------
    model : DSGClassifier or DSGRegressor
        A fitted estimator.

    Returns
    -------
    bytes

    Raises
    ------
    sklearn.exceptions.NotFittedError
        If the model is not fitted.
    ModelFileError
        If a hyper-parameter cannot be stored (a loss or feature-map object
        that is not a registered plugin, a value that is not a number,
        string, list, tuple or dict).
    """
    cls = type(model)
    if not any(issubclass(cls, c) for c in _ESTIMATORS.values()):
        raise TypeError(f"model files hold onlinekernel estimators of random features; a "
                        f"{type(model).__name__} cannot be saved in one (pickle it)")
    if _estimator_classes().get((cls.__module__, cls.__qualname__)) is not cls:
        raise ModelFileError(f"cannot save a {cls.__qualname__}: model files hold the "
                             f"estimators defined in onlinekernel (pickle a subclass instead)")
    # the training lock: a concurrent fit cannot be half-way through its
    # validation (which resets n_features_in_) while the state is read
    with train_lock(model):
        check_is_fitted(model, "_coef")
        st = dict(model.__dict__)
        params = model.get_params(deep=False)
    declared = _declared_extra(cls)
    # what the constructor sets (the parameters, fixed settings) is rebuilt by it
    built = set(vars(cls(**params)))
    unknown = set(st) - built - _FORMAT_ATTRIBUTES - _NOT_STORED - set(declared)
    if unknown:
        raise ModelFileError(
            f"cannot save the {cls.__name__}: its attributes {sorted(unknown)} are not part of "
            f"the model-file format, and a loaded model would lack them (an estimator class "
            f"lists the further state it keeps in _extra_state)")
    payload = _Payload()
    encoded = {}
    for key, value in params.items():
        what = f"parameter {key}"
        if key in ("loss", "kernel") and not isinstance(value, str):
            tag = "loss" if key == "loss" else "feature_map"
            encoded[key] = {"$type": tag, **_plugin_spec(tag, value, what, payload)}
        else:
            encoded[key] = _to_json(value, what, payload)
    fmap = st["feature_map_"]
    F = fmap.n_components
    rows = st["n_blocks_"] * F
    feature_map = _plugin_spec("feature_map", fmap, "the feature map", payload)
    feature_map["n_features_in"] = int(fmap.n_features_in)
    fitted = _unwrap(fmap).fitted_arrays() if hasattr(_unwrap(fmap), "fitted_arrays") else {}
    if fitted:
        feature_map["fitted"] = {}
        for name, value in fitted.items():
            payload.add(_MAP_PREFIX + name, np.asarray(value))
            feature_map["fitted"][name] = {"$type": "array", "name": _MAP_PREFIX + name}
    state = {"_scale": _float_to_json(st["_scale"]),
             "gamma_": None if st["gamma_"] is None else _float_to_json(st["gamma_"])}
    state.update({k: int(st[k]) for k in _STATE_INTS})
    payload.add("coef", st["_coef"][:rows])
    payload.add("intercept", st["_intercept"])
    if np.any(st["_coef_avg"][:rows]):
        payload.add("coef_avg", st["_coef_avg"][:rows])
    payload.add("intercept_avg", st["_intercept_avg"])
    if "classes_" in st:
        payload.add("classes", st["classes_"])
    if "feature_names_in_" in st:
        payload.add("feature_names_in", st["feature_names_in_"])
    extra = {}
    for name in declared:
        if name not in st:
            continue
        value = st[name]
        if isinstance(value, np.ndarray):
            payload.add(_EXTRA_PREFIX + name, value)
            extra[name] = {"$type": "array", "name": _EXTRA_PREFIX + name}
        else:
            extra[name] = _to_json(value, f"attribute {name}", payload)
    header = {
        "format": FORMAT_NAME,
        "format_version": _FITTED_MAP_VERSION if fitted else _BASE_VERSION,
        "library_version": __version__,
        "estimator": {"module": cls.__module__, "qualname": cls.__qualname__},
        "params": encoded,
        "loss": _plugin_spec("loss", st["loss_"], "the loss", payload),
        "feature_map": feature_map,
        "seed": int(st["seed_"]),
        "state": state,
        "extra": extra,
        "arrays": payload.table,
    }
    return _pack(header, payload.bytes())


def save(model, path):
    """Write a fitted estimator to ``path`` as a model file, atomically.

    The file is written under a temporary name in the same directory, flushed
    to disk and then renamed over ``path``: ``path`` holds either its old
    content or the complete new model, never a part of one.  A symbolic link
    is followed; a device or a pipe is written into, never replaced.

    Parameters
    ----------
    model : DSGClassifier or DSGRegressor
        A fitted estimator.
    path : str or os.PathLike
        The file to write (replaced if it exists).

    Raises
    ------
    sklearn.exceptions.NotFittedError
        If the model is not fitted.
    ModelFileError
        If the model cannot be stored (see :func:`dumps`).
    FileNotFoundError
        If the directory of ``path`` does not exist.
    IsADirectoryError
        If ``path`` is a directory.
    """
    data = dumps(model)
    with replacing(path) as f:
        f.write(data)


# ---------------------------------------------------------------------- #
# reading
# ---------------------------------------------------------------------- #
def _unpack(data, source):
    """Check the framing and the digest; return ``(header dict, payload memoryview)``."""
    n = len(data)
    if n < _PRELUDE.size:
        if data[:len(MAGIC)] == MAGIC[:n]:
            raise ModelFileError(f"{source} is truncated: {n} bytes, fewer than the "
                                 f"{_PRELUDE.size} of a model file's prelude")
        raise ModelFileError(f"{source} is not an onlinekernel model file (it does not start "
                             f"with the model-file signature)")
    magic, version, hlen, plen = _PRELUDE.unpack_from(data)
    if magic != MAGIC:
        raise ModelFileError(f"{source} is not an onlinekernel model file (it does not start "
                             f"with the model-file signature)")
    expected = _PRELUDE.size + hlen + plen + _DIGEST_SIZE
    view = memoryview(data)
    intact = n == expected and \
        hashlib.sha256(view[:-_DIGEST_SIZE]).digest() == bytes(view[-_DIGEST_SIZE:])
    if version > FORMAT_VERSION:
        # a newer layout need not frame the file as this one does, so the
        # checksum can only say that a file of this layout was damaged
        raise ModelFileError(
            f"{source} has model-file format version {version}, newer than the version "
            f"{FORMAT_VERSION} this onlinekernel {__version__} reads: upgrade onlinekernel "
            f"to load it" + ("" if intact else " (if the file was written in version "
                             f"{FORMAT_VERSION}, it is corrupted)"))
    if version < 1:
        raise ModelFileError(f"{source} is corrupted: invalid format version {version}")
    if n < expected:
        raise ModelFileError(f"{source} is truncated (or its prelude is corrupted): it has "
                             f"{n} bytes, its prelude announces {expected}")
    if n > expected:
        raise ModelFileError(f"{source} is corrupted: {n - expected} unexpected bytes after "
                             f"the {expected} its prelude announces")
    if not intact:
        raise ModelFileError(f"{source} is corrupted: its SHA-256 checksum does not match "
                             f"its content (the file was damaged or modified after it was "
                             f"written)")
    try:
        header = json.loads(bytes(view[_PRELUDE.size:_PRELUDE.size + hlen]).decode("ascii"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ModelFileError(f"{source} has an invalid header: {exc}") from None
    _keys(header, _HEADER_KEYS, "header")
    if header["format"] != FORMAT_NAME:
        raise ModelFileError(f"{source} is not an onlinekernel model file (format "
                             f"{header['format']!r})")
    if header["format_version"] != version:
        raise ModelFileError(f"{source} is corrupted: its header says format version "
                             f"{header['format_version']!r}, its prelude {version}")
    start = _PRELUDE.size + hlen
    return header, view[start:start + plen]


def _read(path):
    """The bytes of a model file: the prelude first, then no more than it announces.

    A file without the signature is rejected after its first 24 bytes (a
    2 GiB data file, ``/dev/zero``); one whose prelude announces more than the
    file holds is read only as far as it goes, so a corrupted or crafted
    length never allocates more memory than the file's size.
    """
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            data = f.read(_PRELUDE.size)
            if len(data) < _PRELUDE.size or data[:len(MAGIC)] != MAGIC:
                return data, repr(path)  # _unpack says what is wrong
            _, _, hlen, plen = _PRELUDE.unpack(data)
            # one byte more than announced shows "unexpected bytes after"
            want = hlen + plen + _DIGEST_SIZE + 1
            size = os.fstat(f.fileno()).st_size
            if size:  # a regular file: never more than it holds
                want = min(want, max(0, size - _PRELUDE.size))
            parts = [data]
            while want > 0:
                part = f.read(min(want, 1 << 26))
                if not part:
                    break
                parts.append(part)
                want -= len(part)
            return b"".join(parts), repr(path)
    except FileNotFoundError:
        exc = ModelFileNotFoundError(f"no model file at {path!r}: the path does not exist")
        exc.errno = errno.ENOENT
        raise exc from None
    except OSError as exc:
        raise ModelFileError(f"cannot read the model file {path!r}: "
                             f"{exc.strerror or exc}") from None


class _Context:
    """What decoding needs beyond JSON: the payload's arrays and the registry."""

    def __init__(self, arrays, source):
        self.arrays = arrays
        self.source = source

    def array(self, name, dtype, shape):
        array = self.arrays.get(name)
        if array is None or array.dtype != dtype or array.shape != shape:
            raise ModelFileError(f"invalid array {name!r}: expected {np.dtype(dtype)} of "
                                 f"shape {shape}")
        return array

    def plugin(self, tag, spec, what):
        return _build_plugin(tag, spec, what, self.source, more_keys=("$type",))


def _float_array(arrays, name, shape, dtype=np.float64):
    a = arrays.get(name)
    if a is None:
        raise ModelFileError(f"invalid model: array {name!r} is missing")
    if a.dtype != dtype or a.shape != shape:
        raise ModelFileError(f"invalid model: array {name!r} is {a.dtype} of shape "
                             f"{a.shape}, expected {np.dtype(dtype)} of shape {shape}")
    return a


def _restore_fitted_map(fmap, fspec, arrays):
    """Give a map fitted on data (Nystrom) the arrays the file holds for it."""
    spec = _typed(fspec.get("fitted", {}), dict, "feature_map fitted")
    fitted = {}
    for name, ref in spec.items():
        _keys(ref, ("$type", "name"), f"feature_map fitted {name!r}")
        key = _typed(ref["name"], str, f"feature_map fitted {name!r}")
        if ref["$type"] != "array" or key != _MAP_PREFIX + name or key not in arrays:
            raise ModelFileError(f"invalid model: no array for the feature map's {name!r}")
        fitted[name] = arrays[key]
    stray = sorted(k for k in arrays if k.startswith(_MAP_PREFIX)
                   and k[len(_MAP_PREFIX):] not in fitted)
    if stray:
        raise ModelFileError(f"invalid model: arrays {stray} belong to no fitted feature map")
    if getattr(fmap, "needs_fit", False) and not fitted:
        raise ModelFileError(f"invalid model: the feature map {_unwrap(fmap).name!r} is fitted "
                             f"on data, and the file holds none of its fitted state")
    try:
        fmap.set_fitted_arrays(fitted)
    except (ValueError, TypeError) as exc:
        raise ModelFileError(f"invalid model: the feature map's fitted state: {exc}") from None


def _build(header, payload, source):
    spec = header["estimator"]
    _keys(spec, ("module", "qualname"), "estimator")
    key = (_typed(spec["module"], str, "estimator module"),
           _typed(spec["qualname"], str, "estimator qualname"))
    cls = _estimator_classes().get(key)
    if cls is None:
        raise ModelFileError(
            f"cannot load {source}: its estimator class {'.'.join(map(str, key))!r} is not "
            f"one of onlinekernel's estimators "
            f"({', '.join(f'{m}.{q}' for m, q in sorted(_estimator_classes()))}); model "
            f"files never import other classes")
    table = _typed(header["arrays"], dict, "arrays")
    prefixes = (_EXTRA_PREFIX, _RS_KEY + ".")
    if header["format_version"] >= _FITTED_MAP_VERSION:
        prefixes += (_MAP_PREFIX,)
    unknown = sorted(n for n in table if n not in _ARRAY_NAMES and not n.startswith(prefixes))
    if unknown:
        raise ModelFileError(f"invalid model: unknown arrays {unknown}")
    arrays = {name: _read_array(name, s, payload) for name, s in table.items()}
    ctx = _Context(arrays, source)

    # hyper-parameters: the constructor's own names only
    raw_params = _typed(header["params"], dict, "params")
    accepted = set(cls._get_param_names())
    if "n_epochs" in raw_params and "n_epochs" not in accepted:
        # n_epochs passes (version 1, and the one-class, density-ratio and GP
        # models of early version-2 files): the same training by max_iter epochs
        raw_params = dict(raw_params)
        raw_params.update(max_iter=raw_params.pop("n_epochs"), tol=None)
        if "solver" in accepted and "solver" not in raw_params:
            raw_params["solver"] = "sgd"  # there was no other
    if "normalize_y" in accepted and "normalize_y" not in raw_params:
        raw_params = dict(raw_params, normalize_y=False)  # trained on raw targets
    unknown = sorted(set(raw_params) - accepted)
    if unknown:
        raise ModelFileError(f"cannot load {source}: parameters {unknown} are unknown to "
                             f"{cls.__name__} of onlinekernel {__version__}")
    params = {k: _from_json(v, f"parameter {k}", ctx) for k, v in raw_params.items()}
    model = cls(**params)
    cache_bytes = model.cache_bytes
    _int(cache_bytes, "parameter cache_bytes", 0)

    # fitted loss and feature map, through the registry
    loss = _build_plugin("loss", header["loss"], "loss", source)
    as_cy_loss(loss)  # a registry entry that does not make a loss fails here
    fspec = header["feature_map"]
    fitted_keys = ("fitted",) if header["format_version"] >= _FITTED_MAP_VERSION else ()
    _keys(fspec, _PLUGIN_KEYS + ("n_features_in",), "feature_map", optional=fitted_keys)
    state = header["state"]
    _keys(state, _STATE_KEYS, "state")
    d = _int(fspec["n_features_in"], "feature_map n_features_in", 1)
    named = {k: v for k, v in fspec.items() if k != "fitted"}
    fmap = as_cy_feature_map(_build_plugin("feature_map", named, "feature_map", source,
                                           more_keys=("n_features_in",)))
    try:
        fmap.bind(d)
    except (ValueError, TypeError, OverflowError, MemoryError) as exc:
        raise ModelFileError(f"invalid model: the feature map cannot be bound to {d} "
                             f"features: {exc}") from None
    # sizes a prediction allocates: checked here, not met as a MemoryError later
    if fmap.n_components > MAX_BLOCK_SIZE or fmap.param_size > _MAX_BLOCK_PARAMS:
        raise ModelFileError(f"invalid model: a block of {fmap.n_components:,d} features with "
                             f"{fmap.param_size:,d} parameters on {d:,d} inputs is beyond what "
                             f"onlinekernel builds (at most {MAX_BLOCK_SIZE:,d} features and "
                             f"{_MAX_BLOCK_PARAMS:,d} parameters a block)")
    _restore_fitted_map(fmap, fspec, arrays)

    ints = {k: _int(state[k], f"state {k}", 0) for k in _STATE_INTS}
    if ints["n_features_in_"] != d:
        raise ModelFileError(f"invalid model: n_features_in_ {ints['n_features_in_']} but the "
                             f"feature map is bound to {d}")
    K = ints["_n_outputs"]
    if K < 1:
        raise ModelFileError("invalid model: _n_outputs must be >= 1")
    seed = _int(header["seed"], "seed", 0, 2 ** 64 - 1)
    scale = _real(_plain(state["_scale"], "state _scale"), "state _scale")
    gamma = state["gamma_"]
    gamma = None if gamma is None else _real(_plain(gamma, "state gamma_"), "state gamma_")
    rows = ints["n_blocks_"] * fmap.n_components
    # the model's precision is its coefficients' (float32 or float64 models)
    dt = arrays["coef"].dtype if "coef" in arrays else np.dtype(np.float64)
    if dt not in (np.float32, np.float64):
        raise ModelFileError(f"invalid model: array 'coef' is {dt}, expected float32 or "
                             f"float64")
    coef = _float_array(arrays, "coef", (rows, K), dt)
    coef_avg = (_float_array(arrays, "coef_avg", (rows, K), dt) if "coef_avg" in arrays
                else np.zeros((rows, K), dtype=dt))
    new = {
        "loss_": loss, "feature_map_": fmap, "gamma_": gamma, "seed_": seed,
        "_coef": coef, "_scale": scale, "_intercept": _float_array(arrays, "intercept", (K,)),
        "_coef_avg": coef_avg, "_intercept_avg": _float_array(arrays, "intercept_avg", (K,)),
        **ints,
    }
    if is_classifier(model):
        classes = arrays.get("classes")
        if classes is None or classes.ndim != 1 or classes.shape[0] < 2:
            raise ModelFileError("invalid model: a classifier needs an array 'classes' of at "
                                 "least 2 labels")
        n_classes = classes.shape[0]
        encoding = getattr(loss, "target_encoding", None)
        expected = n_classes if (encoding == "class_index" or n_classes > 2) else 1
        if K != expected:
            raise ModelFileError(f"invalid model: {n_classes} classes with a "
                                 f"{encoding!r} loss need {expected} outputs, not {K}")
        new["classes_"] = classes
    elif "classes" in arrays:
        raise ModelFileError(f"invalid model: a {cls.__name__} has no classes")
    if "feature_names_in" in arrays:
        names = arrays["feature_names_in"]
        if names.shape != (d,):
            raise ModelFileError(f"invalid model: {names.shape[0]} feature names for "
                                 f"{d} features")
        new["feature_names_in_"] = names
    extra = _typed(header["extra"], dict, "extra")
    declared = _declared_extra(cls)
    for name, value in extra.items():
        if name not in declared:
            raise ModelFileError(f"invalid model: {cls.__name__} keeps no attribute {name!r}")
        new[name] = _from_json(value, f"attribute {name}", ctx)
    try:
        new["_blocks"] = BlockSource(fmap, seed, cache_bytes, dtype=dt)
    except (ValueError, OverflowError, MemoryError) as exc:
        raise ModelFileError(f"invalid model: {exc}") from None
    new["_built_from"] = model._build_params()
    model.__dict__.update(new)
    return model


def loads(data, source="the model data"):
    """Rebuild an estimator from the bytes of a model file.

    Parameters
    ----------
    data : bytes-like
        The content of a model file (as written by :func:`dumps` or
        :func:`save`).
    source : str, default="the model data"
        How error messages name the data.

    Returns
    -------
    DSGClassifier or DSGRegressor

    Raises
    ------
    ModelFileError
        If the data is not a valid model file, or needs a loss or feature map
        that is not installed.
    """
    header, payload = _unpack(bytes(data), source)
    return _build(header, payload, source)


def load(path):
    """Load a model saved with ``model.save(path)``.

    Nothing in the file is executed: see :mod:`onlinekernel.io.modelfile` for
    the format and the checks.

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    DSGClassifier or DSGRegressor
        The fitted estimator, predicting bit for bit as the saved one and
        ready to continue training with ``partial_fit``.

    Raises
    ------
    ModelFileNotFoundError
        If ``path`` does not exist (a :class:`ModelFileError` and a
        :class:`FileNotFoundError`).
    ModelFileError
        If the file is not a model file, is truncated, corrupted or modified,
        has a newer format version, names a class that is not an onlinekernel
        estimator, or needs a loss or feature map that is not installed (the
        message names it and the distribution that provides it).
    """
    data, source = _read(path)
    return loads(data, source)


def read_header(path):
    """The header of a model file, as a dict, after checking its integrity.

    Nothing is rebuilt, so this works even when a plugin the model needs is
    missing.

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    dict
        The JSON header (see the format above).

    Raises
    ------
    ModelFileError
        As :func:`load`, for the file's framing and checksum.
    """
    data, source = _read(path)
    return _unpack(data, source)[0]
