"""Learning on real data: accuracy floors that catch a broken learner.

These are floors for correctness, not the quality goal (exact RBF machines
tuned on this machine reach 98.76 %, 94.6 %, 97.5 %, 85.1 % and R^2 0.78).
Hyper-parameters are set per dataset where the default bandwidth does not
suit the data; the preprocessing is stated in each test.
"""
import numpy as np
import pytest
from sklearn.preprocessing import StandardScaler

from conftest import load_dataset, needs_data
from onlinekernel import DSGClassifier, DSGRegressor


def _classifier_case(name, floor, **params):
    return pytest.param(name, params, floor, id=name, marks=needs_data(name))


@pytest.mark.parametrize("name, params, floor", [
    # Features already in [-1, 1]; default model (logistic by Newton-CG on 4,096
    # features, gamma='scale'; measured 98.3 %, the exact SVC 98.76 %).
    _classifier_case("ijcnn1", 0.970),
    # Pixels in [-1, 1]; 10 classes, hinge one-vs-rest; a narrower bandwidth
    # than 'scale' (1 / (256 * var) = 0.004) and 10 passes.
    _classifier_case("usps", 0.93, loss="hinge", gamma=0.008, solver="sgd", max_iter=10,
                     tol=None),
    # Features in [-1, 1]; 26 classes, hinge one-vs-rest by SGD, gamma = 3.
    _classifier_case("letter", 0.93, loss="hinge", gamma=3.0, solver="sgd", max_iter=5,
                     tol=None),
    # Features already scaled to [0, 1]; a Pegasos-like schedule (the inverse
    # one, alpha matched to its decay: eta0 * t0 = 1 / alpha; the last
    # iterate) without intercept.
    _classifier_case("covtype_binary_sub20k", 0.80, loss="hinge", gamma=4.0, alpha=1e-4,
                     learning_rate="inverse", average=False, eta0=1000.0, t0=10.0,
                     fit_intercept=False, solver="sgd", max_iter=5, tol=None),
])
def test_classifier_accuracy_floor(name, params, floor):
    X, y, Xt, yt = load_dataset(name)
    clf = DSGClassifier(**params, random_state=0).fit(X, y)
    assert clf.score(Xt, yt) >= floor


@needs_data("cadata")
def test_cadata_regression():
    # Features standardised with a StandardScaler fitted on the training
    # split; the target is centred and scaled by its training mean and
    # standard deviation and mapped back for scoring.
    X, y, Xt, yt = load_dataset("cadata")
    scaler = StandardScaler().fit(X)
    mu, sd = y.mean(), y.std()
    reg = DSGRegressor(solver="sgd", max_iter=10, tol=None, random_state=0).fit(scaler.transform(X), (y - mu) / sd)
    pred = reg.predict(scaler.transform(Xt)) * sd + mu
    r2 = 1.0 - np.mean((pred - yt) ** 2) / np.var(yt)
    assert r2 >= 0.72


@needs_data("letter")
def test_one_pass_with_polynomial_averaging_beats_the_inverse_schedule():
    """One pass of partial_fit (letter, standardised, 26 classes, chunks of 5,000
    shuffled rows): the default, slower ``invsqrt`` steps with polynomial-decay
    averaging learn more from the pass than the ``inverse`` schedule (the
    default before 2026-12-04), whose steps have shrunk sixfold by its end (500
    steps; ``invsqrt``'s 2.4-fold); measured 10.0 % test error against 12.1 %."""
    X, y, Xt, yt = load_dataset("letter")
    scaler = StandardScaler().fit(X)
    X, Xt = scaler.transform(X), scaler.transform(Xt)
    order = np.random.default_rng(0).permutation(X.shape[0])
    errors = {}
    for name, params in {"inverse": dict(learning_rate="inverse", average=False),
                         "polynomial": {}}.items():
        clf = DSGClassifier(random_state=0, **params)
        for s in range(0, X.shape[0], 5000):
            idx = order[s:s + 5000]
            clf.partial_fit(X[idx], y[idx], classes=np.unique(y))
        errors[name] = 1.0 - clf.score(Xt, yt)
    assert errors["polynomial"] <= errors["inverse"] - 0.01, errors
    assert errors["polynomial"] < 0.12, errors
