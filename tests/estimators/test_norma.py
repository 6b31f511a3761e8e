"""NORMA: kernel SGD on a budget of support vectors (NormaClassifier, its compiled loop)."""
import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.utils.estimator_checks import parametrize_with_checks

from onlinekernel import Loss, NormaClassifier, get_feature_map, get_loss
from onlinekernel.estimators import LinearStream, NormaStream
from onlinekernel.losses.base import as_cy_loss
from onlinekernel.solvers.norma import NormaRows, norma_outputs, norma_steps


def _ring(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    return X, (np.hypot(X[:, 0], X[:, 1]) < 1.2).astype(int)


@parametrize_with_checks([NormaClassifier(), NormaClassifier(loss="logistic", budget=64),
                          NormaClassifier(kernel="laplacian", alpha=0.0),
                          NormaClassifier(kernel=get_feature_map("matern", gamma=0.5))])
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


# --------------------------------------------------------------------------- #
# the compiled loop against NORMA written out in numpy
# --------------------------------------------------------------------------- #
def _reference(kernel, X, Y, loss, eta, alpha, budget):
    """NORMA step by step: outputs before each step, and the final support vectors."""
    C, A, raws = [], [], []
    for x, y in zip(X, Y):
        u = (kernel(np.array(C), x[None])[:, 0] @ np.array(A)) if C else np.zeros(Y.shape[1])
        raws.append(u)
        g = loss.gradient(y[None], u[None])[0]
        A = [a * (1.0 - eta * alpha) for a in A]
        if np.any(g != 0):
            if len(C) == budget:  # the oldest goes
                C, A = C[1:], A[1:]
            C.append(x)
            A.append(-eta * g)
    return np.array(raws), np.array(C), np.array(A)


@pytest.mark.parametrize("loss_name, n_out", [("hinge", 1), ("logistic", 1), ("hinge", 3)])
def test_steps_are_norma(loss_name, n_out):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(120, 3))
    Y = np.where(rng.random((120, n_out)) < 0.5, 1.0, -1.0)
    fmap = get_feature_map("gaussian", gamma=0.7).bind(3)
    loss = as_cy_loss(get_loss(loss_name))
    budget, eta, alpha = 17, 0.8, 0.05
    C, A, ring = np.zeros((budget, 3)), np.zeros((budget, n_out)), np.zeros(2, np.intp)
    raw = norma_steps(fmap, fmap.kernel, C, A, ring, X, Y, loss, eta, 1 - eta * alpha)
    ref_raw, ref_C, ref_A = _reference(fmap.kernel, X, Y, loss, eta, alpha, budget)
    np.testing.assert_allclose(raw, ref_raw, rtol=1e-12, atol=1e-12)
    assert ring[0] == budget
    # the ring holds the last `budget` support vectors, the oldest at ring[1]
    order = np.roll(np.arange(budget), -ring[1])
    np.testing.assert_array_equal(C[order], ref_C)
    np.testing.assert_allclose(A[order], ref_A, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("kernel", ["gaussian", "laplacian", "matern"])
def test_one_row_calls_are_the_loops_bits(kernel):
    # NormaRows (bound views, the stream's path) against norma_outputs / norma_steps;
    # matern has no compiled kernel row: the Python kernel's path
    rng = np.random.default_rng(2)
    X = rng.normal(size=(60, 3))
    Y = np.where(rng.random((60, 2)) < 0.5, 1.0, -1.0)
    fmap = get_feature_map(kernel, gamma=0.7).bind(3)
    loss = as_cy_loss(get_loss("hinge"))
    arrays = [(np.zeros((9, 3)), np.zeros((9, 2)), np.zeros(2, np.intp)) for _ in range(2)]
    (C, A, ring), (C1, A1, ring1) = arrays
    rows = NormaRows(fmap, C1, A1, ring1, loss, 0.5, 0.99)
    for i in range(len(X)):
        ref = norma_outputs(fmap, fmap.kernel, C, A, int(ring[0]), X[i:i + 1])[0]
        out = rows.outputs(X[i:i + 1])
        assert out.tobytes() == ref.tobytes()
        norma_steps(fmap, fmap.kernel, C, A, ring, X[i:i + 1], Y[i:i + 1], loss, 0.5, 0.99)
        rows.learn(X[i:i + 1], Y[i:i + 1], out if i % 2 else None)
        assert C.tobytes() == C1.tobytes() and A.tobytes() == A1.tobytes()
    assert ring.tolist() == ring1.tolist() == [9, 60 % 9]
    with pytest.raises(ValueError, match="one row of 3 inputs expected, got 2 x 3"):
        rows.outputs(X[:2])
    with pytest.raises(ValueError, match="1 outputs given for a model of 2"):
        rows.learn(X[:1], Y[:1], np.zeros(1))
    with pytest.raises(ValueError, match="one row of 2 values expected for 2 outputs, got 1 x 1"):
        rows.learn(X[:1], Y[:1, :1])
    assert C.tobytes() == C1.tobytes() and A.tobytes() == A1.tobytes()  # refused: unchanged


def test_a_stream_binds_its_calls_to_its_own_arrays():
    X, y = _ring(40)
    a = NormaStream("gaussian", 0.5, 2, 16, 1.0, 1e-3, "hinge")
    a.add_output()
    for i in range(20):
        a.learn(X[i:i + 1], np.array([[2.0 * y[i] - 1.0]]))
    b = pickle.loads(pickle.dumps(a))  # the bound calls are not pickled: b binds its own
    assert "_calls" in a.__dict__ and "_calls" not in b.__dict__
    for m in (a, b):
        m.add_output()  # a new coefficient array: bound again
        for i in range(20, 40):
            m.learn(X[i:i + 1], np.array([[2.0 * y[i] - 1.0, 1.0 - 2.0 * y[i]]]))
    assert a.coef is not b.coef and np.array_equal(a.coef, b.coef)
    assert np.array_equal(a.centers, b.centers) and a.n_support == b.n_support == 16
    assert a.outputs(X[:1]).tobytes() == b.outputs(X[:1]).tobytes()


def test_hinge_stores_only_rows_inside_the_margin():
    X, y = _ring(400)
    clf = NormaClassifier(gamma=1.0, budget=1000, alpha=0.0).fit(X, y)
    margins = np.where(y == 1, 1.0, -1.0)
    # every stored row had a margin below 1 when it came; rows beyond did not get in
    assert 0 < clf.n_support_ < 400
    assert np.all(clf.coef_[clf.n_support_:] == 0)
    assert set(np.abs(clf.coef_[:clf.n_support_, 0])) == {1.0}  # eta0 * |g|, no shrink
    assert np.all(np.sign(clf.coef_[:clf.n_support_, 0])
                  == margins[np.isin(X[:, 0], clf.centers_[:clf.n_support_, 0])])


def test_compiled_kernels_are_the_maps_kernels():
    rng = np.random.default_rng(2)
    C, x = rng.normal(size=(50, 4)), rng.normal(size=(1, 4))
    for name in ("gaussian", "laplacian"):
        fmap = get_feature_map(name, gamma=0.3).bind(4)
        A = np.eye(50)
        got = norma_outputs(fmap, fmap.kernel, C, A, 50, x)[0]
        np.testing.assert_allclose(got, fmap.kernel(C, x)[:, 0], rtol=1e-13)


def test_exp_is_within_an_ulp_and_the_same_bits_everywhere():
    # ok_exp (the kernel values of stored rows): fdlibm's algorithm in IEEE
    # arithmetic, so golden bits hold on every machine
    fmap = get_feature_map("gaussian", gamma=1.0).bind(1)
    t = np.concatenate([np.linspace(0.0, 745.0, 200_001), np.logspace(-15, 2.87, 2000)])
    got = norma_outputs(fmap, fmap.kernel, np.zeros((1, 1)), np.ones((1, 1)), 1,
                        np.sqrt(t)[:, None])[:, 0]
    ref = np.exp(-np.sqrt(t) ** 2)
    normal = ref > np.finfo(float).tiny
    assert np.max(np.abs(got[normal] - ref[normal]) / ref[normal]) <= 2.3e-16
    assert np.max(np.abs(got[~normal] - ref[~normal])) <= 5e-324
    golden = norma_outputs(fmap, fmap.kernel, np.zeros((1, 1)), np.ones((1, 1)), 1,
                           np.sqrt([[0.5], [3.0], [700.0], [744.0]]))[:, 0]
    assert [v.hex() for v in golden] == [
        "0x1.368b2fc6f9609p-1", "0x1.97db0ccceb0b2p-5", "0x1.14f2b0fb9307fp-1010",
        "0x0.0000000000002p-1022"]


def test_python_kernels_take_the_same_path():
    # a map without a compiled kernel_row (Matern) goes through kernel(X, Y)
    X, y = _ring(300)
    matern = get_feature_map("matern", gamma=1.0)
    clf = NormaClassifier(kernel=matern, budget=64).fit(X, y)
    fmap = clf.kernel_
    raw = np.array([fmap.kernel(clf.centers_[:clf.n_support_], x[None])[:, 0]
                    @ clf.coef_[:clf.n_support_, 0] for x in X[:20]])
    np.testing.assert_allclose(clf.decision_function(X[:20]), raw, rtol=1e-12)
    assert clf.score(X, y) > 0.8


# --------------------------------------------------------------------------- #
# the estimator
# --------------------------------------------------------------------------- #
def test_stream_chunks_one_rows_and_fit_give_the_same_model():
    X, y = _ring(600)
    whole = NormaClassifier(gamma=1.0, budget=128).fit(X, y)
    chunks = NormaClassifier(gamma=1.0, budget=128)
    for i in range(0, 600, 37):
        chunks.partial_fit(X[i:i + 37], y[i:i + 37], classes=[0, 1])
    assert np.array_equal(whole.coef_, chunks.coef_)
    assert np.array_equal(whole.centers_, chunks.centers_)
    assert whole.t_ == chunks.t_ == 600
    one = np.array([whole.decision_function(X[i:i + 1])[0] for i in range(50)])
    assert np.array_equal(one, whole.decision_function(X[:50]))  # bit for bit


def test_plain_numpy_rows_skip_validation_with_the_same_model():
    """partial_fit and predict of plain numpy rows take the one-row path (no
    validate_data): the same bits as lists, which take the full validation."""
    X, y = _ring(400)
    fast = NormaClassifier(gamma=1.0, budget=64).partial_fit(X[:100], y[:100], classes=[0, 1])
    full = NormaClassifier(gamma=1.0, budget=64).partial_fit(X[:100], y[:100], classes=[0, 1])
    for i in range(100, 400):
        fast.partial_fit(X[i:i + 1], y[i:i + 1])
        full.partial_fit(X[i:i + 1].tolist(), y[i:i + 1].tolist())
    assert np.array_equal(fast.coef_, full.coef_) and fast.t_ == full.t_ == 400
    one = [fast.decision_function(X[i:i + 1])[0] for i in range(20)]
    assert np.array_equal(one, full.decision_function(X[:20].tolist()))
    X32 = X[:20].astype(np.float32)  # converted to float64 on both paths
    assert np.array_equal(fast.decision_function(X32), full.decision_function(X32.tolist()))


def test_learns_a_ring_and_forgets_a_changed_concept():
    X, y = _ring(4000)
    clf = NormaClassifier(gamma=1.0, budget=256)
    for i in range(0, 2000, 50):
        clf.partial_fit(X[i:i + 50], y[i:i + 50], classes=[0, 1])
    assert clf.score(X[3000:], y[3000:]) > 0.93
    # the concept flips: a model of the last few hundred rows follows it
    for i in range(2000, 3000, 50):
        clf.partial_fit(X[i:i + 50], 1 - y[i:i + 50])
    assert clf.score(X[3000:], 1 - y[3000:]) > 0.9


def test_multiclass_and_probabilities():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(1500, 2))
    y = np.array(["a", "b", "c"])[(X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5)]
    clf = NormaClassifier(loss="logistic", gamma=0.5).fit(X[:1000], y[:1000])
    assert clf.coef_.shape == (1024, 3)
    P = clf.predict_proba(X[1000:])
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert np.array_equal(clf.classes_[P.argmax(axis=1)], clf.predict(X[1000:]))
    assert clf.score(X[1000:], y[1000:]) > 0.85
    with pytest.raises(AttributeError, match="no predict_proba"):
        NormaClassifier().fit(X[:100], y[:100]).predict_proba(X[:2])


def test_pipeline_grid_search_clone_and_pickle():
    X, y = _ring(400)
    grid = GridSearchCV(NormaClassifier(budget=128), {"gamma": [0.25, 1.0]}, cv=2).fit(X, y)
    best = grid.best_estimator_
    assert clone(best).get_params() == best.get_params()
    again = pickle.loads(pickle.dumps(best))
    assert np.array_equal(again.decision_function(X), best.decision_function(X))
    again.partial_fit(X[:10], y[:10])  # a pickled model keeps learning
    assert again.t_ == best.t_ + 10


@pytest.mark.parametrize("make, error, match", [
    (lambda: NormaClassifier(kernel="no_such_map"), ValueError, "no_such_map"),
    (lambda: NormaClassifier(loss="no_such_loss"), ValueError, "no_such_loss"),
    (lambda: NormaClassifier(gamma="auto"), ValueError, "gamma must be 'scale'"),
    (lambda: NormaClassifier(budget=0), ValueError, "budget must be an integer"),
    (lambda: NormaClassifier(eta0=2.0, alpha=0.5), ValueError, "eta0 \\* alpha must be < 1"),
    (lambda: NormaClassifier(kernel=object()), ValueError, "no exact kernel function"),
])
def test_bad_parameters_are_named(make, error, match):
    X, y = _ring(100)
    with pytest.raises(error, match=match):
        make().fit(X, y)


def test_bad_input_leaves_the_model_unchanged():
    X, y = _ring(300)
    clf = NormaClassifier(budget=64).partial_fit(X, y, classes=[0, 1])
    before = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in vars(clf).items()}
    bad = X[:5].copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        clf.partial_fit(bad, y[:5])
    for labels in ([0, 1, 7, 0, 1], np.array([0, 1, 7, 0, 1])):  # full and one-row paths
        with pytest.raises(ValueError, match=r"labels \[7\] are not among the classes"):
            clf.partial_fit(X[:5], labels)
    clf.set_params(eta0=-1.0)  # checked at every call, not only the first
    with pytest.raises(ValueError, match="eta0"):
        clf.partial_fit(X[:5], y[:5])
    clf.set_params(eta0=1.0)
    with pytest.raises(ValueError, match="differ from the classes"):
        clf.partial_fit(X[:5], y[:5], classes=[0, 1, 2])
    with pytest.raises(ValueError, match="3 features"):
        clf.partial_fit(np.c_[X[:5], X[:5, :1]], y[:5])
    with pytest.raises(ValueError, match="Unknown label type|continuous"):
        clf.fit(X, X[:, 0])
    after = vars(clf)
    assert before.keys() == after.keys()
    for k, v in before.items():
        if isinstance(v, np.ndarray):
            assert np.array_equal(v, after[k]), k
        else:
            assert v is after[k] or v == after[k], k
    clf.set_params(budget=32)
    with pytest.raises(ValueError, match="budget=32 changed since the model was built with "
                                         "budget=64"):
        clf.partial_fit(X[:5], y[:5])
    clf.set_params(budget=64, eta0=0.5)  # the step may change
    clf.partial_fit(X[:5], y[:5])
    fresh = NormaClassifier()
    with pytest.raises(ValueError, match="at least 2 classes"):
        fresh.partial_fit(X[:5], [1] * 5)
    assert vars(fresh) == vars(NormaClassifier())


# --------------------------------------------------------------------------- #
# LinearStream: NORMA's linear-kernel form
# --------------------------------------------------------------------------- #
def test_linear_stream_is_scikit_learns_constant_step_sgd():
    # without a penalty the step is plain SGD with an intercept: scikit-learn's
    # SGDClassifier fed one row at a time, learning_rate="constant"
    from sklearn.linear_model import SGDClassifier
    X, y = _ring(300, seed=3)
    X = X + np.array([0.5, -0.2])  # an offset the intercept must learn
    t = 2.0 * y - 1.0
    ours = LinearStream(2, eta0=0.05, alpha=0.0, loss="logistic")
    ours.add_output()
    sgd = SGDClassifier(loss="log_loss", penalty=None, learning_rate="constant", eta0=0.05,
                        shuffle=False)
    for i in range(len(X)):
        ours.learn(X[i:i + 1], t[i:i + 1, None])
        sgd.partial_fit(X[i:i + 1], t[i:i + 1], classes=[-1.0, 1.0])
    assert np.allclose(ours.weights[:, 0], sgd.coef_[0], rtol=1e-10, atol=1e-12)
    assert np.allclose(ours.intercept, sgd.intercept_, rtol=1e-10, atol=1e-12)
    assert np.allclose(ours.outputs(X[:1]), sgd.decision_function(X[:1]), rtol=1e-10)


def test_linear_stream_step_is_normas_with_the_linear_kernel():
    # the expansion sum_j a_j <c_j, x>, NORMA's step written out on stored rows,
    # is the weights' model: the same outputs at every step, alpha > 0, two outputs
    rng = np.random.default_rng(4)
    X = rng.normal(size=(60, 3))
    Y = np.where(rng.random((60, 1)) < 0.5, 1.0, -1.0) * np.array([[1.0, -1.0]])
    eta, alpha = 0.3, 0.2
    ours = LinearStream(3, eta0=eta, alpha=alpha, loss="hinge")
    ours.add_output()
    ours.add_output()
    hinge = get_loss("hinge")
    rows, coef, bias = [], [], np.zeros(2)
    for i in range(len(X)):
        f = sum((a * (c @ X[i]) for c, a in zip(rows, coef)), np.zeros(2)) + bias
        assert np.allclose(ours.outputs(X[i:i + 1]), f, atol=1e-12)
        g = hinge.gradient(Y[i:i + 1], f[None, :])[0]
        coef = [a * (1 - eta * alpha) for a in coef] + [-eta * g]
        rows.append(X[i])
        bias = bias - eta * g
        ours.learn(X[i:i + 1], Y[i:i + 1])


def test_linear_stream_takes_known_outputs_and_names_bad_parameters():
    X, y = _ring(50)
    a, b = (LinearStream(2, eta0=0.1, alpha=1e-3, loss="logistic") for _ in range(2))
    for m in (a, b):
        m.add_output()
    for i in range(len(X)):
        T = np.array([[2.0 * y[i] - 1.0]])
        a.learn(X[i:i + 1], T, a.outputs(X[i:i + 1]))
        b.learn(X[i:i + 1], T)
    assert np.array_equal(a.weights, b.weights) and np.array_equal(a.intercept, b.intercept)
    again = pickle.loads(pickle.dumps(a))
    assert np.array_equal(again.outputs(X[:1]), a.outputs(X[:1]))
    with pytest.raises(ValueError, match="one row of 2 inputs expected, got 1 x 3"):
        a.learn(np.zeros((1, 3)), np.ones((1, 1)), np.zeros(1))
    with pytest.raises(ValueError, match="2 outputs given for a model of 1"):
        a.learn(np.zeros((1, 2)), np.ones((1, 1)), np.zeros(2))
    with pytest.raises(ValueError, match="one row of 1 values expected for 1 outputs, got 2"):
        a.learn(np.zeros((1, 2)), np.ones((2, 1)))
    assert np.array_equal(a.weights, b.weights)  # refused: unchanged
    # outputs sum the inputs in order (not a BLAS product's machine-dependent order)
    z = np.array([[0.1, -3.0]])
    assert a.outputs(z)[0] == (0.0 + 0.1 * a.weights[0, 0] + -3.0 * a.weights[1, 0]
                               + a.intercept[0])
    with pytest.raises(ValueError, match="margin targets"):
        LinearStream(2, eta0=0.1, alpha=0.0, loss="multinomial")
    with pytest.raises(ValueError, match="eta0"):
        LinearStream(2, eta0=-0.1, alpha=0.0, loss="logistic")
    with pytest.raises(ValueError, match="eta0 \\* alpha must be < 1"):
        LinearStream(2, eta0=1.0, alpha=1.0, loss="logistic")


class _PythonLogistic(Loss):
    """The compiled logistic loss's values, through the pure-Python loss adapter."""

    name = "python_logistic"
    link = "logistic"

    def loss(self, y, raw):
        return get_loss("logistic").loss(y, raw)

    def gradient(self, y, raw):
        return get_loss("logistic").gradient(y, raw)


def test_a_python_loss_trains_as_its_compiled_twin():
    # the compiled loop takes a Python loss's gradient through its adapter (it
    # once read a gradient of zero from it, and learned nothing)
    X, y = _ring(300)
    compiled = NormaClassifier(loss="logistic", budget=64).fit(X, y)
    python = NormaClassifier(loss=_PythonLogistic(), budget=64).fit(X, y)
    assert python.n_support_ == compiled.n_support_ > 0
    assert np.allclose(python.coef_, compiled.coef_, rtol=1e-14, atol=0.0)
    a, b = (LinearStream(2, eta0=0.1, alpha=1e-3, loss=loss)
            for loss in ("logistic", _PythonLogistic()))
    for m in (a, b):
        m.add_output()
        for i in range(len(X)):
            m.learn(X[i:i + 1], np.array([[2.0 * y[i] - 1.0]]))
    assert np.allclose(a.weights, b.weights, rtol=1e-14) and np.any(a.weights != 0)
