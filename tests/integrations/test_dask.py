"""Dask collections: a data-parallel fit on a LocalCluster, partial_fit by partitions, predict.

One cluster of 2 worker processes (1 thread each) serves the module; its
client is made current only inside the tests that use it, so the test of
dask input without a cluster sees none.
"""
import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

from onlinekernel import DSGClassifier, DSGRegressor  # noqa: E402
from onlinekernel.integrations.dask import DistributedProblem  # noqa: E402
from onlinekernel.losses.base import as_cy_loss  # noqa: E402
from onlinekernel import get_feature_map, get_loss  # noqa: E402
from onlinekernel.solvers import solve_newton_cg  # noqa: E402


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None)
    with cluster:
        with distributed.Client(cluster, set_as_default=False) as c:
            yield c


def _data(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    return X, (X[:, 0] * X[:, 1] > 0).astype(int), np.sin(2 * X[:, 0]) + X[:, 1] ** 2


def _chunks(X, y, parts=4):
    rows = -(-X.shape[0] // parts)
    return da.from_array(X, chunks=(rows, X.shape[1])), da.from_array(y, chunks=rows)


@pytest.mark.parametrize("make, target, method", [
    # more rows than features: the normal equations on both sides
    # (gamma="auto" runs no path on dask collections: both sides at "scale")
    (lambda: DSGRegressor(solver="cholesky", n_components=256, alpha=1e-5, gamma="scale",
                          random_state=3), "real", "predict"),
    # fewer rows than features: plain conjugate gradients on both sides
    (lambda: DSGClassifier(solver="newton-cg", n_components=512, alpha=1e-3, tol=1e-12,
                           max_iter=50, random_state=3), "labels", "decision_function"),
])
def test_distributed_fit_equals_single_machine(client, make, target, method):
    n = 1200 if target == "real" else 400
    X, labels, real = _data(n)
    y = real if target == "real" else labels
    local = make().fit(X, y)
    Xd, yd = _chunks(X, y)
    assert Xd.numblocks[0] >= 4
    with client.as_current():
        dist = make().fit(Xd, yd)
    assert dist.solver_ == local.solver_
    assert dist.samples_seen_ == n and dist.n_features_in_ == 4
    a = getattr(local, method)(X)
    b = getattr(dist, method)(X)
    np.testing.assert_allclose(b, a, rtol=0, atol=1e-10)


@pytest.mark.parametrize("d, gamma, m, factored", [
    (20, 0.02, 64, True),    # a well-conditioned factor: B's terms added up
    (2, 0.5, 256, False),    # 2-d inputs, 256 landmarks: every partition whitens
])
def test_a_distributed_nystrom_cholesky_fit_adds_up_b_where_its_rounding_allows(
        client, monkeypatch, d, gamma, m, factored):
    """The partitions of a Nystrom model's normal equations send ``B^T D B`` (no
    whitening of their rows) where the whole sum's rounding lets the penalty reach
    tol, as a single machine's pass does, and the fit equals the single machine's."""
    import onlinekernel.integrations.dask as dask_integration

    rng = np.random.default_rng(4)
    X = rng.normal(size=(2000, d))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=2000)
    finished = []
    real = dask_integration.factored_gram

    def spy(*args):
        out = real(*args)
        finished.append(out is not None)
        return out

    monkeypatch.setattr(dask_integration, "factored_gram", spy)
    make = lambda: DSGRegressor(kernel="nystrom", block_size=m, max_blocks=1,  # noqa: E731
                                gamma=gamma, alpha=1e-4 if factored else 1e-8,
                                solver="cholesky", random_state=2)
    local = make().fit(X, y)
    Xd, yd = _chunks(X, y)
    with client.as_current():
        dist = make().fit(Xd, yd)
    assert finished == ([True] if factored else [])
    a, b = local.predict(X), dist.predict(X)
    np.testing.assert_allclose(b, a, rtol=0, atol=1e-8 * np.abs(a).max())


def _problem(client, n, M=256, parts=4):
    X, labels, _ = _data(n, seed=1)
    Xd, yd = _chunks(X, np.where(labels == 1, 1.0, -1.0), parts)
    wd = da.ones(n, chunks=(Xd.chunks[0],))
    futures = [tuple(client.compute(list(p))) for p in zip(
        Xd.to_delayed().ravel(), yd.to_delayed().ravel(), wd.to_delayed().ravel())]
    fmap = get_feature_map("gaussian", n_components=M // 2, gamma=0.5).bind(4)
    return DistributedProblem(client, futures, lambda y: y[:, None], n, float(n), fmap, 7, 2,
                              as_cy_loss(get_loss("logistic")), 1e-4, True, 1, 1 << 30,
                              np.float64)


def test_bytes_per_step_do_not_grow_with_rows(client):
    """What a gradient, a Hessian product and an objective cost in transfer, at 4x the rows."""
    traffic = []
    for n in (400, 1600):
        with client.as_current():
            p = _problem(client, n)
        try:
            C, b = np.full((p.M, 1), 0.01), np.zeros(1)
            before = dict(p.traffic)
            U = p.raw(C, b)
            p.value(C, U)
            gC, gb = p.gradient(C, U)
            p.hessian_product(U, gC, gb)
            traffic.append({k: p.traffic[k] - before[k] for k in before})
            assert gC.shape == (p.M, 1)
        finally:
            p.close()
    assert traffic[0] == traffic[1]
    # coefficient-sized: per partition, the M x K coefficients out (raw outputs,
    # Hessian direction) and M x K sums back (gradient, Hessian product)
    M, K, parts = 256, 1, 4
    assert traffic[0]["sent"] <= parts * 2 * (M * K + 2 * K) * 8
    assert traffic[0]["received"] <= parts * (2 * (M * K + K) + 1) * 8


def test_solver_on_distributed_problem_is_deterministic(client):
    sols = []
    for _ in range(2):
        with client.as_current():
            p = _problem(client, 600)
        try:
            sols.append(solve_newton_cg(p, tol=1e-8))
        finally:
            p.close()
    assert sols[0].converged
    np.testing.assert_array_equal(sols[0].coef, sols[1].coef)


def test_predict_maps_over_partitions(client):
    X, labels, _ = _data(300)
    clf = DSGClassifier(solver="newton-cg", n_components=256, alpha=1e-3,
                        random_state=0).fit(X, labels)
    Xd, _ = _chunks(X, labels)
    with client.as_current():
        for name in ("predict", "decision_function", "predict_proba"):
            out = getattr(clf, name)(Xd)
            assert isinstance(out, da.Array) and out.chunks[0] == Xd.chunks[0]
            np.testing.assert_array_equal(out.compute(), getattr(clf, name)(X))


def test_partial_fit_takes_partitions_in_order(client):
    X, labels, _ = _data(400)
    Xd, yd = _chunks(X, labels)
    with client.as_current():
        dist = DSGClassifier(random_state=0).partial_fit(Xd, yd)  # classes found by dask
    local = DSGClassifier(random_state=0)
    for i in range(4):
        local.partial_fit(X[100 * i:100 * (i + 1)], labels[100 * i:100 * (i + 1)],
                          classes=[0, 1])
    assert dist.samples_seen_ == 400
    np.testing.assert_array_equal(dist.decision_function(X), local.decision_function(X))


def test_dask_ml_wrappers(client):
    wrappers = pytest.importorskip("dask_ml.wrappers")
    X, labels, _ = _data(400)
    Xd, yd = _chunks(X, labels)
    with client.as_current():
        inc = wrappers.Incremental(DSGClassifier(random_state=0), shuffle_blocks=False)
        inc.fit(Xd, yd, classes=[0, 1])
        post = wrappers.ParallelPostFit(inc.estimator_)
        pred = post.predict(Xd).compute()
    local = DSGClassifier(random_state=0)
    for i in range(4):
        local.partial_fit(X[100 * i:100 * (i + 1)], labels[100 * i:100 * (i + 1)],
                          classes=[0, 1])
    np.testing.assert_array_equal(pred, local.predict(X))


def test_dask_dataframe_and_weights(client):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    X, _, real = _data(800)
    w = np.random.default_rng(2).uniform(0.5, 2.0, size=800)
    frame = dd.from_pandas(pd.DataFrame(X, columns=list("abcd")), npartitions=4)
    target = dd.from_pandas(pd.Series(real), npartitions=4)
    weights = dd.from_pandas(pd.Series(w), npartitions=4)
    make = lambda: DSGRegressor(solver="cholesky", n_components=128, alpha=1e-4,  # noqa: E731
                                random_state=1)
    local = make().fit(X, real, sample_weight=w)
    with client.as_current():
        dist = make().fit(frame, target, sample_weight=weights)
    np.testing.assert_allclose(dist.predict(X), local.predict(X), rtol=0, atol=1e-10)


def test_refusals_name_the_problem(client):
    X, labels, _ = _data(200)
    Xd, yd = _chunks(X, labels)
    with client.as_current():
        with pytest.raises(ValueError, match="solver='sgd'.*partial_fit"):
            DSGClassifier(solver="sgd").fit(Xd, yd)
        with pytest.raises(ValueError, match="'dual-cd'.*does not run distributed"):
            DSGClassifier(loss="hinge", solver="dual-cd", n_components=128).fit(Xd, yd)
        bad = Xd.copy()
        bad[0, 0] = np.nan
        with pytest.raises(ValueError, match="NaN"):
            DSGClassifier(solver="newton-cg", n_components=128).fit(bad, yd)


def test_without_a_client_dask_input_is_fit_in_memory():
    from onlinekernel.integrations.dask import _get_client
    assert _get_client() is None
    X, _, real = _data(300)
    Xd, yd = _chunks(X, real)
    make = lambda: DSGRegressor(solver="cholesky", n_components=128,  # noqa: E731
                                random_state=0)
    np.testing.assert_array_equal(make().fit(Xd, yd).predict(X), make().fit(X, real).predict(X))
