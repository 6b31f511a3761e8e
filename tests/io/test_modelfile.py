"""Model files: exact round trips, resuming training, and every way a file can be bad.

Comparisons of a loaded model with the saved one are exact
(``assert_array_equal``): the file stores the coefficients bit for bit and
the random features are regenerated from the seed, so any difference is a
bug.  Files that are damaged on purpose are made from real model files; files
that are *crafted* (a valid checksum over a header a writer would never
produce) go through ``modelfile._pack``, the writer's own framing.
"""
import importlib.metadata
import json
import os
import pickle
import sys
import textwrap

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

import onlinekernel
from onlinekernel import DSGClassifier, DSGRegressor, ModelFileError, registry
from onlinekernel.io import modelfile
from onlinekernel.io.modelfile import MAGIC, ModelFileNotFoundError, dumps, loads, read_header

from conftest import PyCauchyLoss, PyGaussianRFF, plugin_source

# the step schedule pinned (the last iterate), so that tuning the defaults does
# not move these tests
SCHEDULE = dict(alpha=1e-6, learning_rate="invsqrt", eta0=1.0, t0=1.0, average=False)
SMALL = dict(SCHEDULE, block_size=16, max_blocks=4, batch_size=8, solver="sgd", max_iter=2, tol=None, random_state=0)
PRELUDE = 24


def _data(n=120, d=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d))


def _labels(X, kind):
    r = np.hypot(X[:, 0], X[:, 1])
    if kind == "binary":
        return (r < 1.0).astype(int)
    if kind == "pm1":
        return np.where(r < 1.0, 1, -1)
    if kind == "three":
        return np.digitize(X[:, 0] + 0.5 * X[:, 1] ** 2, [-0.3, 0.6])
    if kind == "strings":
        return np.array(["inner", "ring", "outer"])[np.digitize(r, [0.8, 1.4])]
    if kind == "objects":  # Python strings in an object array, as pandas gives them
        return np.array(["no", "yes"], dtype=object)[(r < 1.0).astype(int)]
    if kind == "floats":
        return np.where(r < 1.0, 1.0, 2.0)  # integral floats: labels, not targets
    if kind == "bools":
        return r < 1.0
    raise ValueError(kind)


def _assert_same_model(a, b, X):
    """Same predictions (all methods), coefficients and learned state, exactly."""
    assert type(a) is type(b)
    pa, pb = a.get_params(deep=False), b.get_params(deep=False)
    assert pa.keys() == pb.keys()
    for key in pa:
        if isinstance(pa[key], np.random.RandomState):
            sa, sb = pa[key].get_state(), pb[key].get_state()
            assert sa[0] == sb[0] and sa[2:] == sb[2:], key
            np.testing.assert_array_equal(sa[1], sb[1])
        else:
            assert pa[key] == pb[key] and type(pa[key]) is type(pb[key]), key
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)
    for name in ("seed_", "gamma_", "n_features_in_", "_n_outputs", "_scale", "n_blocks_", "t_",
                 "samples_seen_", "n_epochs_seen_", "n_averaged_"):
        assert getattr(a, name) == getattr(b, name), name
        assert type(getattr(a, name)) is type(getattr(b, name)), name
    rows = a.n_random_features_
    np.testing.assert_array_equal(a._coef[:rows], b._coef[:rows])
    np.testing.assert_array_equal(a._coef_avg[:rows], b._coef_avg[:rows])
    np.testing.assert_array_equal(a._intercept, b._intercept)
    np.testing.assert_array_equal(a._intercept_avg, b._intercept_avg)
    assert a.loss_ == b.loss_ and a.feature_map_ == b.feature_map_
    if hasattr(a, "classes_"):
        assert a.classes_.dtype == b.classes_.dtype
        np.testing.assert_array_equal(a.classes_, b.classes_)
        np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
        if hasattr(a, "predict_proba"):
            np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


def _round_trip(model, tmp_path, name="model.okm"):
    path = tmp_path / name
    model.save(path)
    return onlinekernel.load(path)


# ---------------------------------------------------------------------- #
# exact round trips
# ---------------------------------------------------------------------- #
@pytest.mark.parametrize("loss, kind", [
    ("hinge", "binary"), ("hinge", "pm1"), ("logistic", "binary"),
    ("hinge", "three"),            # one-vs-rest
    ("logistic", "three"),         # switches to the multinomial loss
    ("logistic", "strings"), ("squared_hinge", "objects"), ("logistic", "floats"),
    ("hinge", "bools"), ("squared", "binary"),
])
def test_classifier_round_trip_is_exact(loss, kind, tmp_path):
    X = _data()
    y = _labels(X, kind)
    clf = DSGClassifier(loss=loss, **SMALL).fit(X, y)
    loaded = _round_trip(clf, tmp_path)
    _assert_same_model(clf, loaded, _data(seed=9))
    np.testing.assert_array_equal(loaded.predict(X), clf.predict(X))
    assert loaded.predict(X).dtype == clf.predict(X).dtype
    if loss == "logistic" and kind == "three":
        assert loaded.loss_.name == "multinomial"


@pytest.mark.parametrize("loss", ["squared", "huber", "epsilon_insensitive", "quantile"])
def test_regressor_round_trip_is_exact(loss, tmp_path):
    X = _data()
    reg = DSGRegressor(loss=loss, **SMALL).fit(X, np.sin(X[:, 0]) + X[:, 1])
    _assert_same_model(reg, _round_trip(reg, tmp_path), _data(seed=9))


def _builtin_maps():
    return sorted(n for n, info in registry.available_feature_maps().items()
                  if info["distribution"] == "onlinekernel")


@pytest.mark.parametrize("kernel", _builtin_maps())
@pytest.mark.parametrize("estimator", ["classifier", "regressor"])
def test_every_builtin_kernel_round_trips_exactly(kernel, estimator, tmp_path):
    X = _data(d=4)
    params = dict(SMALL, kernel=kernel, gamma=0.3, degree=2, coef0=1.0)
    if estimator == "classifier":
        model = DSGClassifier(loss="logistic", **params).fit(X, _labels(X, "three"))
    else:
        model = DSGRegressor(**params).fit(X, np.cos(X[:, 0]))
    loaded = _round_trip(model, tmp_path)
    assert loaded.feature_map_.name == kernel
    _assert_same_model(model, loaded, _data(d=4, seed=9))


@pytest.mark.parametrize("average", [True, 5, "polynomial"])
def test_averaged_models_round_trip_exactly(average, tmp_path):
    X = _data()
    params = dict(SMALL, average=average)
    clf = DSGClassifier(loss="logistic", **params).fit(X, _labels(X, "three"))
    reg = DSGRegressor(**params).fit(X, X[:, 0] ** 2)
    for model in (clf, reg):
        assert model.n_averaged_ > 0
        assert "coef_avg" in read_header_of(model, tmp_path)["arrays"]
        _assert_same_model(model, _round_trip(model, tmp_path), _data(seed=9))


def read_header_of(model, tmp_path):
    path = tmp_path / "header.okm"
    model.save(path)
    return read_header(path)


def test_kernel_params_and_hyper_parameters_are_kept(tmp_path):
    X = _data()
    clf = DSGClassifier(kernel="gaussian", kernel_params={"pairs": True}, max_blocks=None,
                        average=False, gamma="scale", batch_size=16, block_size=8,
                        random_state=3, solver="sgd", max_iter=1, tol=None).fit(X, _labels(X, "binary"))
    loaded = _round_trip(clf, tmp_path)
    assert loaded.get_params() == clf.get_params()
    assert loaded.kernel_params == {"pairs": True} and loaded.max_blocks is None
    assert loaded.feature_map_.get_params()["pairs"] is True
    _assert_same_model(clf, loaded, X)


def test_loss_and_kernel_objects_are_stored_by_registered_name(tmp_path):
    from onlinekernel.featuremaps.gaussian import Gaussian
    from onlinekernel.losses.builtin import Huber
    X = _data()
    reg = DSGRegressor(loss=Huber(delta=0.25), kernel=Gaussian(n_components=16, gamma=0.7),
                       **{k: v for k, v in SMALL.items() if k != "block_size"})
    reg.fit(X, X[:, 0])
    header = read_header_of(reg, tmp_path)
    assert header["params"]["loss"]["$type"] == "loss"
    assert header["params"]["loss"]["name"] == "huber"
    assert header["params"]["loss"]["params"] == {"delta": 0.25}
    assert header["params"]["kernel"]["name"] == "gaussian"
    assert header["params"]["kernel"]["params"]["gamma"] == 0.7
    loaded = _round_trip(reg, tmp_path)
    assert isinstance(loaded.loss, Huber) and loaded.loss.delta == 0.25
    assert isinstance(loaded.kernel, Gaussian) and loaded.kernel.gamma == 0.7
    _assert_same_model(reg, loaded, X)


def test_header_describes_the_model(tmp_path):
    X = _data(d=5)
    clf = DSGClassifier(loss="logistic", **SMALL).fit(X, _labels(X, "strings"))
    path = tmp_path / "m.okm"
    clf.save(path)
    header = read_header(path)
    assert header["format"] == "onlinekernel-model" and header["format_version"] == 2
    assert header["library_version"] == onlinekernel.__version__
    assert header["estimator"] == {"module": "onlinekernel.estimators._classifier",
                                   "qualname": "DSGClassifier"}
    assert header["params"]["loss"] == "logistic" and header["params"]["random_state"] == 0
    assert header["loss"]["name"] == "multinomial"
    assert header["loss"]["distribution"] == "onlinekernel"
    assert header["feature_map"]["name"] == "gaussian"
    assert header["feature_map"]["params"] == clf.feature_map_.get_params()
    assert header["feature_map"]["n_features_in"] == 5
    assert header["seed"] == clf.seed_
    assert header["state"]["t_"] == clf.t_ and header["state"]["_scale"] == clf._scale
    coef = header["arrays"]["coef"]
    assert coef["dtype"] == "<f8" and coef["shape"] == [64, 3] and coef["nbytes"] == 64 * 3 * 8
    assert header["arrays"]["classes"]["dtype"] == "<U5"
    assert "coef_avg" not in header["arrays"]  # no averaging: not stored


def test_pandas_feature_names_are_kept(tmp_path):
    pd = pytest.importorskip("pandas")
    X = pd.DataFrame(_data(), columns=["alpha", "beta", "gamma"])
    y = pd.Series(_labels(X.to_numpy(), "strings")).astype(object)
    clf = DSGClassifier(**SMALL).fit(X, y)
    loaded = _round_trip(clf, tmp_path)
    np.testing.assert_array_equal(loaded.feature_names_in_, clf.feature_names_in_)
    np.testing.assert_array_equal(loaded.predict(X), clf.predict(X))
    with pytest.raises(ValueError, match="feature names"):
        loaded.predict(X.rename(columns={"alpha": "a"}))


def test_the_format_stores_every_fitted_attribute():
    # A new fitted attribute must be added to the model-file format (and this
    # list), or loaded models would silently lack it.
    X = _data()
    known = {"loss_", "feature_map_", "gamma_", "seed_", "n_features_in_", "_n_outputs", "_coef",
             "_scale", "_intercept", "n_blocks_", "t_", "samples_seen_", "n_epochs_seen_",
             "_coef_avg", "_intercept_avg", "n_averaged_", "_blocks", "_built_from", "classes_",
             "solver_", "n_iter_", "_y_mean", "_y_scale", "alpha_"}
    for model in (DSGClassifier(**SMALL).fit(X, _labels(X, "binary")),
                  DSGRegressor(**SMALL).fit(X, X[:, 0])):
        fitted = set(vars(model)) - set(model.get_params())
        assert fitted <= known, fitted - known


def test_random_state_objects_are_restored(tmp_path):
    X = _data()
    y = _labels(X, "binary")
    clf = DSGClassifier(**dict(SMALL, random_state=np.random.RandomState(7))).fit(X, y)
    loaded = _round_trip(clf, tmp_path)
    assert isinstance(loaded.random_state, np.random.RandomState)
    _assert_same_model(clf, loaded, X)
    # the generator continues where it was: a refit draws the same new seed
    clf.fit(X, y)
    loaded.fit(X, y)
    _assert_same_model(clf, loaded, X)


def test_pickle_round_trip_still_works(tmp_path):
    X = _data()
    clf = DSGClassifier(loss="logistic", **SMALL).fit(X, _labels(X, "three"))
    _assert_same_model(clf, pickle.loads(pickle.dumps(clf)), X)
    loaded = _round_trip(clf, tmp_path)
    _assert_same_model(clf, pickle.loads(pickle.dumps(loaded)), X)


def test_the_block_cache_is_not_stored(tmp_path):
    X = _data()
    clf = DSGClassifier(**SMALL).fit(X, _labels(X, "binary"))
    cold = dumps(clf)
    clf.predict(_data(n=500))  # fills the block cache
    assert clf._blocks.n_cached > 0
    assert dumps(clf) == cold
    loaded = loads(cold)
    assert loaded._blocks.n_cached == 0 and loaded._blocks.seed == clf.seed_


# ---------------------------------------------------------------------- #
# resuming training from a file
# ---------------------------------------------------------------------- #
def _stream(model, X, y, start, stop, step=24, **kwargs):
    for i in range(start, stop, step):
        model.partial_fit(X[i:i + step], y[i:i + step], **kwargs)


@pytest.mark.parametrize("stop_at", [48, 240])  # budget still growing / already full
@pytest.mark.parametrize("average", [False, True])
def test_classifier_resumed_from_a_file_equals_the_one_that_never_stopped(stop_at, average,
                                                                          tmp_path):
    X = _data(n=480)
    y = _labels(X, "strings")
    params = dict(SMALL, loss="logistic", average=average)
    classes = np.unique(y)
    never = DSGClassifier(**params)
    _stream(never, X, y, 0, 480, classes=classes)

    first = DSGClassifier(**params)
    _stream(first, X, y, 0, stop_at, classes=classes)
    first.save(tmp_path / "checkpoint.okm")
    resumed = onlinekernel.load(tmp_path / "checkpoint.okm")
    _stream(resumed, X, y, stop_at, 480)
    _assert_same_model(never, resumed, _data(seed=4))


@pytest.mark.parametrize("stop_at", [48, 240])
def test_regressor_resumed_from_a_file_equals_the_one_that_never_stopped(stop_at, tmp_path):
    X = _data(n=480)
    y = np.sin(2 * X[:, 0]) + X[:, 2]
    never = DSGRegressor(**SMALL)
    _stream(never, X, y, 0, 480)
    first = DSGRegressor(**SMALL)
    _stream(first, X, y, 0, stop_at)
    resumed = _round_trip(first, tmp_path)
    _stream(resumed, X, y, stop_at, 480)
    _assert_same_model(never, resumed, _data(seed=4))


def test_warm_start_fit_resumes_from_a_file(tmp_path):
    X = _data(n=200)
    y = _labels(X, "three")
    never = DSGClassifier(warm_start=True, **SMALL).fit(X, y)
    resumed = _round_trip(DSGClassifier(warm_start=True, **SMALL).fit(X, y), tmp_path)
    never.fit(X, y)
    resumed.fit(X, y)
    _assert_same_model(never, resumed, X)


# ---------------------------------------------------------------------- #
# saving: refusals and atomicity
# ---------------------------------------------------------------------- #
def test_saving_an_unfitted_model_raises_not_fitted(tmp_path):
    with pytest.raises(NotFittedError):
        DSGClassifier().save(tmp_path / "m.okm")
    assert not os.listdir(tmp_path)
    with pytest.raises(TypeError, match="onlinekernel estimators"):
        modelfile.save(object(), tmp_path / "m.okm")


def test_an_unregistered_loss_object_is_refused_with_a_clear_error(tmp_path):
    class Unregistered(onlinekernel.Loss):
        name = "unregistered_cauchy"
        target_encoding = "real"

        def loss(self, y, raw):
            return np.log1p((raw - y) ** 2).sum(axis=1)

        def gradient(self, y, raw):
            return 2 * (raw - y) / (1 + (raw - y) ** 2)

    X = _data()
    reg = DSGRegressor(loss=Unregistered(), **SMALL).fit(X, X[:, 0])
    with pytest.raises(ModelFileError, match=r"parameter loss.*not a registered loss.*pickle"):
        reg.save(tmp_path / "m.okm")
    assert not os.listdir(tmp_path)


def test_a_subclass_outside_onlinekernel_is_refused(tmp_path):
    class MyClassifier(DSGClassifier):
        pass

    X = _data()
    clf = MyClassifier(**SMALL).fit(X, _labels(X, "binary"))
    with pytest.raises(ModelFileError, match="MyClassifier.*estimators defined in onlinekernel"):
        clf.save(tmp_path / "m.okm")


def test_an_unstorable_parameter_is_refused(tmp_path):
    X = _data()
    clf = DSGClassifier(**SMALL).fit(X, _labels(X, "binary"))
    clf.kernel_params = {"pairs": False, "tag": object()}  # set after fitting
    with pytest.raises(ModelFileError, match=r"kernel_params\['tag'\].*object"):
        clf.save(tmp_path / "m.okm")


def _fitted(**kwargs):
    X = _data()
    return DSGClassifier(**dict(SMALL, **kwargs)).fit(X, _labels(X, "binary"))


@pytest.mark.parametrize("fail_in", ["fsync", "replace"])
def test_a_failed_save_leaves_the_old_file_and_no_temporary(fail_in, tmp_path, monkeypatch):
    path = tmp_path / "m.okm"
    old = _fitted(random_state=1)
    old.save(path)
    before = path.read_bytes()

    def crash(*args):
        raise OSError("simulated crash")

    monkeypatch.setattr(os, fail_in, crash)
    with pytest.raises(OSError, match="simulated crash"):
        _fitted(random_state=2).save(path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["m.okm"]
    _assert_same_model(old, onlinekernel.load(path), _data())


def test_save_replaces_an_existing_file_and_accepts_str_paths(tmp_path):
    path = str(tmp_path / "m.okm")
    _fitted(random_state=1).save(path)
    new = _fitted(random_state=2)
    new.save(path)
    _assert_same_model(new, onlinekernel.load(path), _data())
    assert os.listdir(tmp_path) == ["m.okm"]


def test_saving_into_a_missing_directory_names_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        _fitted().save(tmp_path / "nowhere" / "m.okm")


# ---------------------------------------------------------------------- #
# loading: every way a file can be bad
# ---------------------------------------------------------------------- #
@pytest.fixture(scope="module")
def small_file():
    X = _data(n=64)
    clf = DSGClassifier(loss="hinge", **dict(SMALL, block_size=4, max_blocks=2, solver="sgd",
                                             max_iter=1, tol=None)).fit(X, _labels(X, "binary"))
    return dumps(clf)


def _header_span(data):
    hlen = int.from_bytes(data[12:16], "little")
    return PRELUDE, PRELUDE + hlen


def test_a_missing_path_raises_a_file_not_found_model_error(tmp_path):
    path = tmp_path / "absent.okm"
    with pytest.raises(ModelFileNotFoundError, match="absent.okm.*does not exist") as info:
        onlinekernel.load(path)
    assert isinstance(info.value, FileNotFoundError) and isinstance(info.value, ModelFileError)
    with pytest.raises(ModelFileError, match="cannot read"):
        onlinekernel.load(tmp_path)  # a directory


@pytest.mark.parametrize("content", [
    b"x,y\n1,2\n" * 10,                        # a CSV
    pickle.dumps({"coef": [1.0, 2.0]}) * 3,    # a pickle: never unpickled
    b"\x93NUMPY\x01\x00" + b" " * 40,          # an .npy file
    b"\x89PNG\r\n\x1a\n" + b"\0" * 40,
])
def test_a_file_that_is_not_a_model_file_is_named_as_such(content, tmp_path):
    path = tmp_path / "other.bin"
    path.write_bytes(content)
    with pytest.raises(ModelFileError, match="other.bin.*not an onlinekernel model file"):
        onlinekernel.load(path)


def test_a_truncated_file_is_reported_at_every_length(small_file, tmp_path):
    for n in list(range(0, 40)) + list(range(40, len(small_file), 7)) + [len(small_file) - 1]:
        with pytest.raises(ModelFileError, match="truncated"):
            loads(small_file[:n])
    path = tmp_path / "cut.okm"
    path.write_bytes(small_file[:len(small_file) // 2])
    with pytest.raises(ModelFileError, match="cut.okm.* is truncated"):
        onlinekernel.load(path)


def test_flipping_any_byte_is_detected(small_file):
    start, end = _header_span(small_file)
    for i in range(len(small_file)):
        damaged = bytearray(small_file)
        damaged[i] ^= 0xFF
        with pytest.raises(ModelFileError) as info:
            loads(bytes(damaged))
        message = str(info.value)
        if i < 8:
            assert "not an onlinekernel model file" in message
        elif i < 12:
            assert "format version" in message
        elif i < start:
            assert "truncated" in message or "unexpected bytes" in message
        else:  # header, payload, digest
            assert "checksum does not match" in message, (i, message)


def test_a_corrupted_payload_is_reported(small_file, tmp_path):
    _, end = _header_span(small_file)
    damaged = bytearray(small_file)
    damaged[end + 3] ^= 0x01  # one bit of a coefficient
    path = tmp_path / "bad.okm"
    path.write_bytes(bytes(damaged))
    with pytest.raises(ModelFileError, match="bad.okm.*corrupted.*SHA-256 checksum"):
        onlinekernel.load(path)
    with pytest.raises(ModelFileError, match="corrupted"):
        read_header(path)


def test_a_tampered_header_is_reported(small_file):
    text = small_file.decode("latin-1")
    for old, new in [('"t_":', '"t_":1'), ('"hinge"', '"huber"'),
                     ('"n_blocks_":2', '"n_blocks_":9')]:
        assert old in text
        tampered = text.replace(old, new, 1).encode("latin-1")
        if len(tampered) == len(small_file):
            with pytest.raises(ModelFileError, match="checksum does not match"):
                loads(tampered)
        else:  # the prelude's header length no longer fits either
            with pytest.raises(ModelFileError, match="corrupted|truncated"):
                loads(tampered)
    with pytest.raises(ModelFileError, match="unexpected bytes"):
        loads(small_file + b"\0")


def _crafted(data, edit):
    """A file with a *valid* checksum whose header was changed by ``edit``."""
    start, end = _header_span(data)
    header = json.loads(data[start:end])
    edit(header)
    return modelfile._pack(header, data[end:-32])


def test_a_newer_format_version_is_refused_naming_both_versions(small_file):
    def newer(h):
        h["format_version"] = 4
    with pytest.raises(ModelFileError,
                       match=r"format version 4, newer than the version 3 .*upgrade") as info:
        loads(_crafted(small_file, newer))
    assert "corrupted" not in str(info.value)


def test_an_unknown_estimator_class_is_refused_without_importing_it(small_file):
    for module, qualname in [("os", "system"), ("ok_evil_module", "Payload"),
                             ("onlinekernel.estimators._base", "BaseDSG"),
                             ("onlinekernel.registry", "_Registry"),
                             ("sklearn.linear_model", "SGDClassifier")]:
        def swap(h):
            h["estimator"] = {"module": module, "qualname": qualname}
        with pytest.raises(ModelFileError,
                           match=rf"'{module}\.{qualname}' is not one of onlinekernel's"):
            loads(_crafted(small_file, swap))
    assert "ok_evil_module" not in sys.modules


@pytest.mark.parametrize("edit, message", [
    (lambda h: h["arrays"]["coef"].update(shape=[9, 1], nbytes=72), "coef"),
    (lambda h: h["arrays"]["coef"].update(offset=10 ** 6), "beyond"),
    (lambda h: h["arrays"]["coef"].update(dtype="|O"), "not allowed"),
    (lambda h: h["arrays"]["coef"].update(dtype="V8"), "not allowed"),
    (lambda h: h["arrays"]["coef"].update(dtype="not a dtype"), "dtype"),
    (lambda h: h["arrays"]["coef"].update(nbytes=8), "bytes for shape"),
    (lambda h: h["arrays"].update(extra=h["arrays"]["coef"]), "unknown arrays"),
    (lambda h: h["arrays"].pop("intercept"), "intercept"),
    (lambda h: h["state"].update(n_blocks_=3), "coef"),
    (lambda h: h["state"].update(_n_outputs=2), "coef"),
    (lambda h: h["state"].update(n_features_in_=7), "n_features_in_"),
    (lambda h: h["state"].update(t_=-1), "t_"),
    (lambda h: h["state"].update(t_="7"), "t_"),
    (lambda h: h["state"].pop("t_"), "missing 't_'"),
    (lambda h: h.update(seed=2 ** 64), "seed"),
    (lambda h: h["params"].update(not_a_parameter=1), "not_a_parameter"),
    (lambda h: h["params"].update(cache_bytes="lots"), "cache_bytes"),
    (lambda h: h["params"].update(alpha={"$type": "os.system"}), "unknown value type"),
    (lambda h: h["loss"]["params"].update(delta=2.0), "rejects the saved parameters"),
    (lambda h: h.update(surprise=1), "unknown 'surprise'"),
    (lambda h: h.update(format="something-else"), "not an onlinekernel model file"),
])
def test_a_crafted_header_with_a_valid_checksum_is_validated(small_file, edit, message):
    with pytest.raises(ModelFileError, match=message):
        loads(_crafted(small_file, edit))


def test_a_header_that_is_not_json_is_reported(small_file):
    start, end = _header_span(small_file)
    body = small_file[:start] + b"{" * (end - start) + small_file[end:-32]
    import hashlib
    with pytest.raises(ModelFileError, match="invalid header"):
        loads(body + hashlib.sha256(body).digest())


# ---------------------------------------------------------------------- #
# plugins from another distribution: stored by name, missing ones named
# ---------------------------------------------------------------------- #
PLUGIN_DIST = "ok-modelfile-plugin"
PLUGIN_MODULE = "ok_modelfile_plugin"
PLUGIN_SOURCE = '''
"""A third-party plugin with a pure-Python loss and feature map."""
import numpy as np

from onlinekernel import FeatureMap, Loss
from onlinekernel.hookspecs import Plugin
''' + plugin_source(PyCauchyLoss, PyGaussianRFF) + '''

class CauchyLoss(PyCauchyLoss):
    name = "ok_mf_cauchy"


class CosineMap(PyGaussianRFF):
    name = "ok_mf_cosine"


plugin = Plugin(losses=[CauchyLoss], feature_maps=[CosineMap])
'''


@pytest.fixture
def plugin(tmp_path, monkeypatch, entry_point_plugins):
    """``ok-modelfile-plugin`` installed as a real distribution (dist-info + entry point).

    Entry-point loading is switched on: the suite runs on the built-ins alone
    (``conftest.py``).
    """
    site = tmp_path / "site"
    site.mkdir()
    (site / f"{PLUGIN_MODULE}.py").write_text(textwrap.dedent(PLUGIN_SOURCE))
    info = site / f"{PLUGIN_DIST.replace('-', '_')}-0.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {PLUGIN_DIST}\nVersion: 0.3\n")
    (info / "entry_points.txt").write_text(f"[onlinekernel]\nok_mf = {PLUGIN_MODULE}:plugin\n")
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    registry.reset()
    yield site
    sys.modules.pop(PLUGIN_MODULE, None)
    registry.reset()


def _uninstall(site):
    sys.path.remove(str(site))
    sys.modules.pop(PLUGIN_MODULE, None)
    importlib.invalidate_caches()
    registry.reset()


def test_python_plugins_round_trip_by_name(plugin, tmp_path):
    X = _data(n=80)
    y = np.sin(X[:, 0])
    params = dict(SMALL, solver="sgd", max_iter=1, tol=None)
    by_name = DSGRegressor(loss="ok_mf_cauchy", kernel="ok_mf_cosine", **params).fit(X, y)
    _assert_same_model(by_name, _round_trip(by_name, tmp_path), X)
    module = sys.modules[PLUGIN_MODULE]
    as_objects = DSGRegressor(loss=module.CauchyLoss(c=0.5),
                              kernel=module.CosineMap(n_components=16, gamma=0.2),
                              **{k: v for k, v in params.items() if k != "block_size"})
    as_objects.fit(X, y)
    header = read_header_of(as_objects, tmp_path)
    assert header["loss"] == {"name": "ok_mf_cauchy", "params": {"c": 0.5},
                              "distribution": PLUGIN_DIST, "distribution_version": "0.3",
                              "plugin": "ok_mf"}
    assert header["params"]["kernel"]["name"] == "ok_mf_cosine"
    loaded = _round_trip(as_objects, tmp_path)
    assert isinstance(loaded.kernel, module.CosineMap) and loaded.kernel.gamma == 0.2
    _assert_same_model(as_objects, loaded, X)


@pytest.mark.parametrize("loss, kernel, missing", [
    ("ok_mf_cauchy", "gaussian", "loss 'ok_mf_cauchy'"),
    ("squared", "ok_mf_cosine", "feature map 'ok_mf_cosine'"),
])
def test_a_missing_plugin_names_it_and_its_distribution(plugin, tmp_path, loss, kernel,
                                                        missing):
    X = _data(n=40)
    reg = DSGRegressor(loss=loss, kernel=kernel, **dict(SMALL, solver="sgd", max_iter=1, tol=None)).fit(X, X[:, 0])
    path = tmp_path / "needs_plugin.okm"
    reg.save(path)
    _uninstall(plugin)
    assert "ok_mf_cauchy" not in onlinekernel.available_losses()
    with pytest.raises(ModelFileError,
                       match=rf"needs_plugin.okm.*needs the {missing}.*not registered.*"
                             rf"distribution '{PLUGIN_DIST}' \(version 0.3\).*"
                             rf"pip install {PLUGIN_DIST}"):
        onlinekernel.load(path)
    # the header can still be inspected
    assert read_header(path)["params"]["loss"] == loss


# ---------------------------------------------------------------------- #
# size
# ---------------------------------------------------------------------- #
def size_report(d, n_random_features, X, y, block_size=256, average=False):
    """Model-file size of a DSGClassifier and pickled size of the equivalent
    ``RBFSampler + SGDClassifier`` pipeline with the same number of features."""
    from sklearn.kernel_approximation import RBFSampler
    from sklearn.linear_model import SGDClassifier
    from sklearn.pipeline import make_pipeline
    M = n_random_features
    clf = DSGClassifier(block_size=block_size, max_blocks=M // block_size, gamma=0.1,
                        solver="sgd", max_iter=1, tol=None, average=average,
                        random_state=0).fit(X, y)
    ours = len(dumps(clf))
    pipe = make_pipeline(RBFSampler(gamma=0.1, n_components=M, random_state=0),
                         SGDClassifier(max_iter=5, tol=None, random_state=0)).fit(X, y)
    theirs = len(pickle.dumps(pipe))
    return {"file_bytes": ours, "bytes_per_feature": ours / clf.n_random_features_,
            "pipeline_bytes": theirs, "ratio": theirs / ours}


# an averaged model (the classifier's default) stores its iterate besides the
# average, so that it can go on learning
@pytest.mark.parametrize("average, n_arrays", [(False, 1), ("polynomial", 2)])
def test_the_file_is_the_coefficients_plus_a_small_header_and_beats_a_pickled_pipeline(
        average, n_arrays):
    d, M = 24, 512
    X = _data(n=256, d=d)
    y = (X[:, :3].sum(axis=1) ** 2 < 3).astype(int)
    report = size_report(d, M, X, y, block_size=128, average=average)
    assert n_arrays * M * 8 < report["file_bytes"] < n_arrays * M * 8 + 4096
    assert report["bytes_per_feature"] < n_arrays * 8 + 8
    # the pipeline stores its M x d random weights, the model file only a seed
    assert report["pipeline_bytes"] > M * d * 8
    assert report["ratio"] > 10


def test_the_model_file_grows_with_the_features_not_the_data():
    small = _fitted(max_blocks=4)
    big = DSGClassifier(**dict(SMALL, max_blocks=4)).fit(_data(n=600), _labels(_data(n=600),
                                                                                "binary"))
    assert big.n_random_features_ == small.n_random_features_
    assert abs(len(dumps(big)) - len(dumps(small))) < 16  # counters' digits only
    assert dumps(small)[:8] == MAGIC


# ---------------------------------------------------------------------- #
# state beyond the common one
# ---------------------------------------------------------------------- #
def test_an_attribute_outside_the_format_is_refused_naming_it(tmp_path):
    model = _fitted()
    model.deployed_by_ = "me"
    with pytest.raises(ModelFileError, match=r"\['deployed_by_'\] are not part of the model-file"):
        model.save(tmp_path / "m.okm")
    assert not os.listdir(tmp_path)


def test_extra_state_declared_by_the_class_round_trips(tmp_path, monkeypatch):
    monkeypatch.setattr(DSGRegressor, "_extra_state", ("sums_", "weights_", "absent_"))
    X = _data()
    reg = DSGRegressor(**SMALL).fit(X, X[:, 0])
    reg.sums_ = (3, 0.1, 4, float("-inf"))
    reg.weights_ = np.arange(6, dtype=np.int32).reshape(2, 3)
    header = read_header_of(reg, tmp_path)
    assert header["extra"]["weights_"] == {"$type": "array", "name": "extra.weights_"}
    assert "absent_" not in header["extra"]
    loaded = _round_trip(reg, tmp_path)
    assert loaded.sums_ == (3, 0.1, 4, float("-inf"))
    assert loaded.weights_.dtype == np.int32
    np.testing.assert_array_equal(loaded.weights_, reg.weights_)
    _assert_same_model(reg, loaded, X)
    # a reader sets only the attributes its class declares
    monkeypatch.setattr(DSGRegressor, "_extra_state", ("weights_",))
    with pytest.raises(ModelFileError, match="keeps no attribute 'sums_'"):
        onlinekernel.load(tmp_path / "model.okm")


def test_training_refuses_state_the_solver_cannot_step(tmp_path):
    # States a crafted file (or set_params after fitting) can produce: the
    # model loads and predicts, training raises and leaves it unchanged.
    X = _data()
    reg = DSGRegressor(**SMALL).fit(X, X[:, 0])
    two = loads(dumps(reg))
    two._coef = np.hstack([two._coef, two._coef])
    two._coef_avg = np.hstack([two._coef_avg, two._coef_avg])
    two._intercept, two._intercept_avg = np.repeat(reg._intercept, 2), np.zeros(2)
    two._n_outputs = 2
    crafted = loads(dumps(two))
    np.testing.assert_array_equal(crafted.predict(X), reg.predict(X))
    with pytest.raises(ValueError, match="the loss needs 120 rows of 2 target columns for "
                                         "2 outputs"):
        crafted.partial_fit(X, X[:, 0])
    assert crafted.t_ == reg.t_

    shrunk = loads(dumps(reg.set_params(max_blocks=2)))
    before = shrunk.coef_
    with pytest.raises(ValueError, match="4 blocks, more than max_blocks=2"):
        shrunk.partial_fit(X, X[:, 0])
    np.testing.assert_array_equal(shrunk.coef_, before)


def test_saving_while_another_thread_trains_gives_a_consistent_model():
    import threading
    X = _data(n=8 * 30)
    y = np.cos(X[:, 0])
    params = dict(SMALL, max_blocks=3)
    # reference: the model after k one-step batches, for every k
    ref, references = DSGRegressor(**params), {}
    for k in range(30):
        ref.partial_fit(X[8 * k:8 * k + 8], y[8 * k:8 * k + 8])
        references[ref.t_] = ref.predict(X)
    live = DSGRegressor(**params).partial_fit(X[:8], y[:8])
    done = threading.Event()

    def train():
        for k in range(1, 30):
            live.partial_fit(X[8 * k:8 * k + 8], y[8 * k:8 * k + 8])
        done.set()

    worker = threading.Thread(target=train)
    worker.start()
    snapshots = []
    while not done.is_set() or not snapshots:
        snapshots.append(dumps(live))
    worker.join()
    for data in snapshots[::max(1, len(snapshots) // 20)] + [snapshots[-1]]:
        model = loads(data)
        assert model.samples_seen_ == 8 * model.t_
        np.testing.assert_array_equal(model.predict(X), references[model.t_])


def test_a_builtin_of_a_newer_onlinekernel_asks_for_an_upgrade(small_file):
    def newer_builtin(h):
        h["loss"].update(name="ok_future_loss", distribution="onlinekernel",
                         distribution_version="9.0")
    with pytest.raises(ModelFileError, match=r"needs the loss 'ok_future_loss'.*built into "
                                             r"onlinekernel 9.0.*upgrade onlinekernel"):
        loads(_crafted(small_file, newer_builtin))


@pytest.mark.parametrize("make", [
    lambda: (onlinekernel.DSGOneClassSVM(max_iter=3, tol=None, random_state=0), 1),
    lambda: (onlinekernel.DSGDensityRatio(max_iter=3, tol=None, random_state=0), 2),
    lambda: (onlinekernel.DSGGaussianProcessRegressor(solver="sgd", max_iter=3, tol=None,
                                                      normalize_y=False, random_state=0), 1),
], ids=["one_class", "density_ratio", "gp"])
def test_files_with_n_epochs_load_as_the_same_training(make):
    # the one-class, density-ratio and GP models took n_epochs=N (passes)
    # until they got scikit-learn's stopping rule: such a file is N epochs
    model, n_samples = make()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    args = (X, X + 1.0) if n_samples == 2 else (X, X[:, 0]) if hasattr(model, "noise_variance") \
        else (X,)
    model.fit(*args)
    stopping = ("max_iter", "tol", "n_iter_no_change", "early_stopping", "validation_fraction",
                "normalize_y")

    def old_params(h):
        for name in stopping:
            h["params"].pop(name, None)
        h["params"]["n_epochs"] = 3
    loaded = loads(_crafted(dumps(model), old_params))
    params = loaded.get_params()
    assert params["max_iter"] == 3 and params["tol"] is None and "n_epochs" not in params
    assert params.get("solver") == model.get_params().get("solver")
    predict = "predict" if n_samples == 1 else "log_ratio"
    np.testing.assert_array_equal(getattr(loaded, predict)(X), getattr(model, predict)(X))
    # refitting it is the same training
    np.testing.assert_array_equal(getattr(loaded.fit(*args), predict)(X),
                                  getattr(model, predict)(X))


V1 = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "model_files_v1")


@pytest.mark.parametrize("name", ["classifier_hinge", "classifier_logistic_3",
                                  "classifier_float32", "regressor_huber", "quantiles"])
def test_files_of_format_version_1_load_and_predict_what_they_predicted(name):
    # written by onlinekernel at commit 828729f (tests/data/model_files_v1/generate.py).
    # That version summed the features and the predictions with BLAS, whose
    # order depends on the CPU: its own predictions differed in the last bit
    # between AVX2 and AVX-512 machines (OPENBLAS_CORETYPE=Haswell vs
    # SkylakeX).  Today's fixed order (src/oklinalg.h) gives the same bits
    # everywhere (test_gemm.py), within a few ulps of what the file's writer saw.
    expected = np.load(os.path.join(V1, "expected.npz"))
    path = os.path.join(V1, name + ".okm")
    assert read_header(path)["format_version"] == 1
    model = onlinekernel.load(path)
    X = expected["X"]
    out = model.decision_function(X) if hasattr(model, "decision_function") else model.predict(X)
    # a sum's rounding is relative to its terms, not to its value: the bound
    # is a few ulps of the largest output
    eps = np.finfo(np.float32 if name == "classifier_float32" else np.float64).eps
    np.testing.assert_allclose(out, expected[name], rtol=0,
                               atol=64 * eps * np.abs(expected[name]).max())
    # n_epochs=N is read as the same training: N epochs of SGD, raw targets
    params = model.get_params()
    assert params["solver"] == "sgd" and params["tol"] is None and params["max_iter"] >= 1
    assert "n_epochs" not in params
    if "normalize_y" in params:
        assert params["normalize_y"] is False and "_y_scale" not in vars(model)
    # and the model keeps learning on the targets it was trained on
    y = expected[name] if out.ndim == 1 else np.argmax(out, axis=1)
    if name.startswith("classifier"):
        y = model.predict(X)
    elif name == "quantiles":
        y = X[:, 0]
    before = model.coef_.copy()
    model.partial_fit(X, y)
    assert np.isfinite(model.coef_).all() and not np.array_equal(model.coef_, before)


def test_load_rejects_a_big_non_model_file_after_its_first_bytes(tmp_path):
    import tracemalloc
    path = tmp_path / "big.bin"
    with open(path, "wb") as f:
        f.truncate(2 ** 31)  # 2 GiB of zeros, sparse on disk
    tracemalloc.start()
    try:
        with pytest.raises(ModelFileError, match="not an onlinekernel model file"):
            onlinekernel.load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 ** 20  # read the prelude, not the file


def test_a_prelude_announcing_more_than_the_file_holds_reads_only_the_file(tmp_path, small_file):
    import tracemalloc
    forged = bytearray(small_file)
    forged[16:24] = (2 ** 60).to_bytes(8, "little")  # the payload length
    (tmp_path / "forged.okm").write_bytes(bytes(forged))
    tracemalloc.start()
    try:
        with pytest.raises(ModelFileError, match="truncated"):
            onlinekernel.load(tmp_path / "forged.okm")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 ** 24


def test_a_model_declaring_a_huge_block_is_refused_at_load(small_file):
    def huge(h):
        h["feature_map"]["params"]["n_components"] = 10 ** 12
    with pytest.raises(ModelFileError, match="a block of 1,000,000,000,000 features .* beyond"):
        loads(_crafted(small_file, huge))
