"""Budgeted DSG: reuse modes (UDSG, CDSG, none, all), preconditioning,
Pegasos projection and averaging, against plain-numpy references.

The reference below is written from the rules of ``onlinekernel.solvers.reuse``
(its module docstring), not from the solver's code: it takes the random
features from the model (``feature_map_.transform_block``) and does the
rest -- predictions, hinge gradients, shrinking, the block rules, the
preconditioned solves, the safe step of eq. 9 (through ``np.roots``) and the
projection -- in numpy, on plain (unscaled) coefficients.
"""
import numpy as np
import pytest

from onlinekernel import DSGClassifier, DSGRegressor, load
from onlinekernel.solvers.reuse import precondition, safe_step_size, uniform_picks
from onlinekernel.estimators._base import POLYNOMIAL_DECAY

from conftest import PyGaussianRFF, polynomial_mean

F, B = 16, 8


def _data(n=400, d=3, seed=0, classes=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    r = np.hypot(X[:, 0], X[:, 1])
    y = (r < 1.0).astype(int) if classes == 2 else np.digitize(r, [0.8, 1.4])
    return X, y


def _model(**kw):
    params = dict(loss="hinge", gamma=0.5, alpha=1e-3, batch_size=B, block_size=F,
                  max_blocks=4, learning_rate="constant", eta0=4.0, shuffle=False,
                  random_state=0, precondition=False, average=False)
    params.update(kw)
    return DSGClassifier(**params)


# --------------------------------------------------------------------------- #
# the numpy reference
# --------------------------------------------------------------------------- #
def _largest_root(a, b, c):
    if a <= 0.0:
        return 0.0 if b == 0.0 and c <= 0.0 else -np.inf
    roots = np.roots([a, b, c])
    real = roots[np.abs(roots.imag) <= 1e-12 * max(1.0, np.abs(roots).max())].real
    return real.max() if real.size else -np.inf


class Reference:
    """Plain-numpy steps of a budgeted DSG classifier with the hinge loss."""

    def __init__(self, model, n_outputs):
        self.m = model
        self.K = n_outputs
        self.A = []          # plain coefficients of each block, F x K
        self.b = np.zeros(n_outputs)
        self.t = 0
        self.events = []     # per step: ("new", j) / ("move", j) / ("all", -1)
        self.ridge = (1.0 if model.precondition is True else float(model.precondition or 0.0))
        self.radius = 1.0 / np.sqrt(model.alpha) if model.projection else 0.0

    def phi(self, fitted, j, X):
        return fitted.feature_map_.transform_block(fitted.seed_, j, X)

    def move(self, Phi, G, step):
        n = Phi.shape[0]
        if self.ridge:
            return -step / n * np.linalg.solve(Phi.T @ Phi + self.ridge * n * np.eye(F),
                                               Phi.T @ G)
        return -step / (n * F) * Phi.T @ G

    def step(self, fitted, X, Y, gamma):
        m, n = self.m, X.shape[0]
        Phis = [self.phi(fitted, j, X) for j in range(len(self.A))]
        U = self.b + sum((P @ A for P, A in zip(Phis, self.A)), np.zeros((n, self.K)))
        G = np.where(Y * U < 1.0, -Y, 0.0)
        f = max(0.0, 1.0 - gamma * m.alpha)
        self.A = [f * A for A in self.A]
        nblk, full = len(self.A), len(self.A) >= m.max_blocks
        G_, U_ = m.reuse_schedule
        if nblk == 0:
            act = "new"
        elif m.reuse == "check":
            act = "check"
        elif full:
            act = {"none": "replace", "uniform": "one", "all": "all"}[m.reuse]
        elif m.reuse == "none" or self.t % (G_ + U_) < G_:
            act = "new"
        else:
            act = "one" if m.reuse == "uniform" else "all"
        if act == "check":
            best, jbest, Dbest = -np.inf, -1, None
            for j, (P, A) in enumerate(zip(Phis, self.A)):
                D = -P.T @ G / (n * F)
                d = -np.einsum("bf,bk->bfk", P, G) / F
                var = (np.sum((d - D) ** 2) / (n - 1)) if n > 1 else np.sum(d ** 2)
                eta = _largest_root(2 * (np.sum(D * D) + var / n), 4 * np.sum(A * D),
                                    np.sum(A * A) - gamma ** 2 * np.sum(D * D))
                if eta > best:
                    best, jbest, Dbest = eta, j, D
            if best < gamma and not full:
                act = "new"
            else:
                if best > 0:
                    self.A[jbest] = self.A[jbest] + best * Dbest
                self.events.append(("move", jbest, best))
        if act == "new":
            j = nblk
            self.A.append(self.move(self.phi(fitted, j, X), G, gamma))
            self.events.append(("new", j))
        elif act == "replace":
            j = self.t % nblk
            self.A[j] = self.move(Phis[j], G, gamma)
            self.events.append(("replace", j))
        elif act == "one":
            j = int(uniform_picks(fitted.seed_, self.t, 1, nblk)[0])
            self.A[j] = self.A[j] + self.move(Phis[j], G, gamma)
            self.events.append(("move", j))
        elif act == "all":
            for j in range(nblk):
                self.A[j] = self.A[j] + self.move(Phis[j], G, gamma / nblk)
            self.events.append(("all", -1))
        if m.fit_intercept:
            self.b = f * self.b - gamma * G.mean(axis=0)
        if self.radius:
            M = len(self.A) * F
            norm = np.sqrt(M * sum(np.sum(A * A) for A in self.A))
            if norm > self.radius:
                self.A = [A * self.radius / norm for A in self.A]
        self.t += 1

    def coef(self):
        return np.vstack(self.A)


def _targets(model, y):
    if model.classes_.shape[0] == 2:
        return np.where(y == model.classes_[1], 1.0, -1.0)[:, None]
    return np.where(y[:, None] == model.classes_[None, :], 1.0, -1.0)


def _step_size(model, t):
    """Step t (1-based) of the model's schedule, for full batches."""
    if model.learning_rate == "constant":
        return model.eta0
    assert model.learning_rate == "inverse"
    return model.eta0 / (1.0 + (t - 1.0) / model.t0)


def _run_against_reference(model, X, y, n_steps):
    """partial_fit one batch per step; compare with the reference after each step."""
    classes = np.unique(y)
    ref = None
    for s in range(n_steps):
        Xb, yb = X[s * B:(s + 1) * B], y[s * B:(s + 1) * B]
        if ref is None:
            # the first step predicts with no blocks; the reference replays it
            # once the model (and so its feature map) exists
            model.partial_fit(Xb, yb, classes=classes)
            ref = Reference(model, model._n_outputs)
        else:
            model.partial_fit(Xb, yb)
        ref.step(model, Xb, _targets(model, yb), _step_size(model, s + 1))
        assert model.n_blocks_ == len(ref.A), f"step {s}"
        np.testing.assert_allclose(model.coef_, ref.coef(), rtol=1e-9, atol=1e-12,
                                   err_msg=f"step {s}")
        np.testing.assert_allclose(model.intercept_, ref.b, rtol=1e-9, atol=1e-12)
    return ref


CASES = [
    dict(reuse="all"),
    dict(reuse="all", reuse_schedule=(2, 1)),
    dict(reuse="none"),
    dict(reuse="uniform"),
    dict(reuse="uniform", reuse_schedule=(1, 1)),
    dict(reuse="check"),
    dict(reuse="check", learning_rate="inverse", eta0=64.0, t0=1.0, max_blocks=12),
    dict(reuse="all", precondition=True),
    dict(reuse="uniform", precondition=0.05, reuse_schedule=(1, 2)),
    dict(reuse="none", precondition=0.5),
    dict(reuse="all", projection=True, alpha=0.05),
    dict(reuse="uniform", projection=True, alpha=0.05, precondition=True),
    dict(reuse="check", projection=True, alpha=0.05),
    dict(reuse="none", projection=True, alpha=0.05),
]


@pytest.mark.parametrize("params", CASES, ids=lambda p: "-".join(f"{k}={v}" for k, v in p.items()))
@pytest.mark.parametrize("classes", [2, 3])
def test_steps_match_the_numpy_reference(params, classes):
    X, y = _data(classes=classes)
    model = _model(**params)
    ref = _run_against_reference(model, X, y, n_steps=24)
    kinds = {e[0] for e in ref.events}
    if params["reuse"] != "check":
        assert kinds - {"new"}, "the run never reached a reuse step"


def test_check_reuses_only_blocks_whose_safe_step_beats_a_new_block():
    # with decaying steps the old blocks carry large early steps; when the
    # gradient points against one of them its safe step beats the DSG step
    # and the block is reused before the budget is full; otherwise the step
    # falls back to a new block
    X, y = _data()
    model = _model(reuse="check", learning_rate="inverse", eta0=64.0, t0=1.0, max_blocks=20)
    ref = _run_against_reference(model, X, y, n_steps=30)
    n_new, growing_moves = 0, []
    for t, event in enumerate(ref.events, start=1):
        if event[0] == "new":
            n_new += 1
        elif n_new < 20:
            growing_moves.append((t, event[2]))
    assert n_new == 20 and model.n_blocks_ == 20
    assert growing_moves, "no block passed the check before the budget was full"
    assert all(eta >= _step_size(model, t) for t, eta in growing_moves)


def test_check_adds_blocks_while_no_old_block_qualifies():
    # constant steps: an old block's safe step stays below the DSG step, so
    # every step adds a block until the budget is full; then the best block
    # moves by its safe step, whatever it is
    X, y = _data()
    model = _model(reuse="check", eta0=4.0, max_blocks=6)
    ref = _run_against_reference(model, X, y, n_steps=16)
    assert [e[0] for e in ref.events[:6]] == ["new"] * 6
    assert [e[0] for e in ref.events[6:]] == ["move"] * 10
    assert any(e[2] < model.eta0 for e in ref.events[6:])
    assert model.n_blocks_ == 6


# --------------------------------------------------------------------------- #
# budget and cost
# --------------------------------------------------------------------------- #
CALLS = {"features": 0, "generate": 0}


class CountingRFF(PyGaussianRFF):
    """Gaussian random Fourier features that count their evaluations."""
    name = "counting_rff"

    def generate_params(self, seed, block):
        CALLS["generate"] += 1
        return super().generate_params(seed, block)

    def features(self, params, X):
        CALLS["features"] += 1
        return super().features(params, X)


@pytest.mark.parametrize("params", [dict(reuse="all"), dict(reuse="none"),
                                    dict(reuse="uniform"), dict(reuse="check"),
                                    dict(reuse="uniform", reuse_schedule=(1, 3)),
                                    dict(reuse="all", precondition=True),
                                    dict(reuse="none", precondition=True, projection=True)],
                         ids=lambda p: "-".join(f"{k}={v}" for k, v in p.items()))
def test_full_budget_keeps_the_blocks_and_a_constant_cost_per_step(params):
    X, y = _data()
    model = _model(kernel=CountingRFF(n_components=F, gamma=0.5), max_blocks=5, **params)
    per_step, generated, full = [], [], None
    for s in range(40):
        before, gen = CALLS["features"], CALLS["generate"]
        model.partial_fit(X[s * B:(s + 1) * B], y[s * B:(s + 1) * B], classes=[0, 1])
        per_step.append(CALLS["features"] - before)
        generated.append(CALLS["generate"] - gen)
        if full is not None:
            assert model.n_blocks_ == 5 and model.n_random_features_ == 5 * F
        elif model.n_blocks_ == 5:
            full = s
    assert full is not None and full <= 20
    # once full: every block evaluated once per step (the batch's features
    # are kept for the update), no block generated again (cached)
    assert per_step[full + 1:] == [5] * (39 - full)
    assert sum(generated[full + 1:]) == 0
    assert model.t_ == 40


# --------------------------------------------------------------------------- #
# UDSG: the picks
# --------------------------------------------------------------------------- #
def test_uniform_picks_are_reproducible_and_uniform():
    a = uniform_picks(123, 0, 32000, 16)
    assert np.array_equal(a, uniform_picks(123, 0, 32000, 16))
    assert np.array_equal(a[1000:1010], uniform_picks(123, 1000, 10, 16))  # random access
    assert not np.array_equal(a, uniform_picks(124, 0, 32000, 16))
    counts = np.bincount(a, minlength=16)
    chi2 = np.sum((counts - 2000.0) ** 2 / 2000.0)
    assert chi2 < 37.7  # the 0.1 % critical value of chi2 with 15 degrees of freedom
    # consecutive picks are not correlated (pairs uniform over 16 x 16)
    pairs = np.bincount(a[:-1] * 16 + a[1:], minlength=256)
    expected = (a.size - 1) / 256.0
    assert np.sum((pairs - expected) ** 2 / expected) < 330.5  # 0.1 %, 255 dof


def test_a_udsg_model_moves_the_picked_block_and_only_it():
    X, y = _data()
    model = _model(reuse="uniform", alpha=0.0, fit_intercept=False, max_blocks=6)
    for s in range(6):
        model.partial_fit(X[s * B:(s + 1) * B], y[s * B:(s + 1) * B], classes=[0, 1])
    moved = []
    for s in range(6, 40):
        before = model.coef_.reshape(6, F).copy()
        t = model.t_
        model.partial_fit(X[s * B:(s + 1) * B], y[s * B:(s + 1) * B])
        changed = np.flatnonzero(np.any(model.coef_.reshape(6, F) != before, axis=1))
        assert changed.size <= 1
        if changed.size:  # (a batch the hinge loss is happy with moves nothing)
            assert changed[0] == uniform_picks(model.seed_, t, 1, 6)[0]
            moved.append(int(changed[0]))
    assert len(set(moved)) >= 4
    # the same seed gives the same model, another seed other picks
    twin = _model(reuse="uniform", alpha=0.0, fit_intercept=False, max_blocks=6)
    for s in range(40):
        twin.partial_fit(X[s * B:(s + 1) * B], y[s * B:(s + 1) * B], classes=[0, 1])
    assert np.array_equal(twin.coef_, model.coef_)
    other = uniform_picks(model.seed_ + 1, 6, 34, 6)
    assert not np.array_equal(other, uniform_picks(model.seed_, 6, 34, 6))


def test_reuse_schedule_before_the_budget_is_full():
    X, y = _data()
    model = _model(reuse="uniform", reuse_schedule=(2, 1), max_blocks=100)
    blocks = []
    for s in range(12):
        model.partial_fit(X[s * B:(s + 1) * B], y[s * B:(s + 1) * B], classes=[0, 1])
        blocks.append(model.n_blocks_)
    # steps t = 0, 1 add, t = 2 reuses, t = 3, 4 add, ...
    assert blocks == [1, 2, 2, 3, 4, 4, 5, 6, 6, 7, 8, 8]


# --------------------------------------------------------------------------- #
# CDSG: the safe step of eq. 9
# --------------------------------------------------------------------------- #
def _eq9_slack(beta, D, var, n, gamma, eta):
    """right side minus left side of eq. 9 at eta (>= 0: the inequality holds)."""
    lhs = 2 * np.sum((beta + eta * D) ** 2) + 2 * eta ** 2 * var / n
    return np.sum(beta ** 2) + gamma ** 2 * np.sum(D ** 2) - lhs


def test_safe_step_is_the_largest_step_satisfying_eq9():
    rng = np.random.default_rng(0)
    solved = 0
    for trial in range(400):
        beta = rng.normal(size=(F, 2)) * rng.uniform(0.01, 3.0)
        D = rng.normal(size=(F, 2)) * rng.uniform(0.01, 3.0)
        if trial % 2:  # gradients against the coefficients: large safe steps
            D = -rng.uniform(0.1, 2.0) * beta + 0.3 * D
        var, n, gamma = rng.uniform(0.0, 2.0), int(rng.integers(1, 100)), rng.uniform(0.1, 2)
        eta = safe_step_size(beta, D, var, n, gamma)
        scale = np.sum(beta ** 2) + gamma ** 2 * np.sum(D ** 2)
        if np.isfinite(eta):
            solved += 1
            assert _eq9_slack(beta, D, var, n, gamma, eta) >= -1e-9 * scale
            bigger = eta + 1e-6 * max(1.0, abs(eta))
            assert _eq9_slack(beta, D, var, n, gamma, bigger) < 0.0
        else:
            # no real root: the inequality fails everywhere (its quadratic
            # part is positive at its minimum)
            etas = np.linspace(-10, 10, 2001)
            assert all(_eq9_slack(beta, D, var, n, gamma, e) < 0 for e in etas[::50])
            a = 2 * (np.sum(D * D) + var / n)
            eta_min = -4 * np.sum(beta * D) / (2 * a)
            assert _eq9_slack(beta, D, var, n, gamma, eta_min) < 0
    assert 100 < solved < 400


def test_safe_step_of_a_fresh_block_is_below_the_dsg_step():
    # beta = 0: the old block is no better than a new one; eq. 9 allows at
    # most gamma / sqrt(2), so CDSG takes a new block
    D = np.ones((F, 1))
    eta = safe_step_size(np.zeros((F, 1)), D, 0.0, 8, 1.0)
    assert np.isclose(eta, 1.0 / np.sqrt(2.0))


# --------------------------------------------------------------------------- #
# preconditioning
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("n", [5, 16, 40])
def test_precondition_solves_the_stated_system(n):
    rng = np.random.default_rng(n)
    Phi, G = rng.normal(size=(n, F)), rng.normal(size=(n, 3))
    lam = 0.3
    X = precondition(Phi, G, lam)
    # (Phi^T Phi / n + lam I) X = Phi^T G / n
    np.testing.assert_allclose((Phi.T @ Phi / n + lam * np.eye(F)) @ X, Phi.T @ G / n,
                               rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("batch, block", [(200, 16), (200, 256), (8, 16)])
def test_preconditioned_step_in_the_model(batch, block):
    # one step of a one-block model: coef = -(step / B^2) (Phi^T Phi / B + lam I)^{-1} Phi^T G;
    # 200 rows span two tiles of the solver (both the B x B and the F x F solve)
    X, y = _data(n=batch)
    lam, step = 0.2, 3.0
    model = DSGClassifier(loss="hinge", gamma=0.5, alpha=0.0, batch_size=batch,
                          block_size=block, max_blocks=1, learning_rate="constant", eta0=step,
                          precondition=lam,
                          fit_intercept=False, random_state=0)
    model.partial_fit(X, y, classes=[0, 1])
    Phi = model.feature_map_.transform_block(model.seed_, 0, X)
    G = -np.where(y == 1, 1.0, -1.0)[:, None]  # hinge gradient at f = 0
    C = Phi.T @ Phi / batch + lam * np.eye(block)
    expected = -step / batch ** 2 * np.linalg.solve(C, Phi.T @ G)
    np.testing.assert_allclose(model.coef_, expected, rtol=1e-9, atol=1e-14)
    # and on the batch, the outputs move by -(step / B) Q G with Q = P (P + lam B I)^{-1}
    P = Phi @ Phi.T
    Q = P @ np.linalg.inv(P + lam * batch * np.eye(batch))
    np.testing.assert_allclose(Phi @ model.coef_, -step / batch * Q @ G, rtol=1e-7, atol=1e-10)


# --------------------------------------------------------------------------- #
# averaging
# --------------------------------------------------------------------------- #
def _iterates(reuse, X, y, n_steps, rows):
    """Coefficients and intercepts after each of ``n_steps`` one-step calls, unaveraged."""
    plain = _model(reuse=reuse, learning_rate="invsqrt", eta0=8.0, t0=2.0)
    iterates, intercepts = [], []
    for s in range(n_steps):
        plain.partial_fit(X[s * B:(s + 1) * B], y[s * B:(s + 1) * B], classes=[0, 1])
        c = np.zeros((rows, 1))
        c[:plain.n_random_features_] = plain.coef_
        iterates.append(c)
        intercepts.append(plain.intercept_.copy())
    return iterates, intercepts


@pytest.mark.parametrize("average", [True, 5])
@pytest.mark.parametrize("reuse", ["all", "uniform"])
def test_average_is_the_mean_of_the_iterates(average, reuse):
    X, y = _data()
    n_steps, rows = 20, 4 * F
    iterates, intercepts = _iterates(reuse, X, y, n_steps, rows)
    first = 0 if average is True else average
    averaged = _model(reuse=reuse, learning_rate="invsqrt", eta0=8.0, t0=2.0, average=average)
    averaged.partial_fit(X[:n_steps * B], y[:n_steps * B], classes=[0, 1])  # one call
    np.testing.assert_allclose(averaged.coef_, np.mean(iterates[first:], axis=0),
                               rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(averaged.intercept_, np.mean(intercepts[first:], axis=0),
                               rtol=1e-10, atol=1e-13)
    assert averaged.n_averaged_ == n_steps - first
    # averaging does not change the iterates themselves
    np.testing.assert_allclose(averaged._scale * averaged._coef[:rows], iterates[-1],
                               rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("reuse", ["all", "uniform"])
def test_polynomial_average_weighs_late_iterates_more(reuse):
    X, y = _data()
    n_steps, rows = 20, 4 * F
    iterates, intercepts = _iterates(reuse, X, y, n_steps, rows)
    averaged = _model(reuse=reuse, learning_rate="invsqrt", eta0=8.0, t0=2.0,
                      average="polynomial")
    averaged.partial_fit(X[:n_steps * B], y[:n_steps * B], classes=[0, 1])
    eta = POLYNOMIAL_DECAY
    np.testing.assert_allclose(averaged.coef_, polynomial_mean(iterates, eta),
                               rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(averaged.intercept_, polynomial_mean(intercepts, eta),
                               rtol=1e-10, atol=1e-13)
    assert averaged.n_averaged_ == n_steps
    # not the plain mean: the late iterates count more
    assert not np.allclose(averaged.coef_, np.mean(iterates, axis=0), rtol=1e-6)


def test_a_polynomial_average_continues_from_its_model_file(tmp_path):
    X, y = _data()
    model = _model(average="polynomial").partial_fit(X[:4 * B], y[:4 * B], classes=[0, 1])
    model.save(tmp_path / "poly.okm")
    loaded = load(tmp_path / "poly.okm")
    assert loaded.average == "polynomial" and loaded.n_averaged_ == model.n_averaged_
    for m in (model, loaded):
        m.partial_fit(X[4 * B:8 * B], y[4 * B:8 * B])
    np.testing.assert_array_equal(loaded.coef_, model.coef_)
    np.testing.assert_array_equal(loaded.intercept_, model.intercept_)


def test_average_takes_a_bool_a_step_count_or_polynomial():
    X, y = _data()
    model = _model(average="polynomial").partial_fit(X[:B], y[:B], classes=[0, 1])
    before = model.coef_.copy()
    for bad in ("poly", "mean", -1):
        model.set_params(average=bad)
        with pytest.raises(ValueError, match="average"):
            model.partial_fit(X[B:2 * B], y[B:2 * B])
        np.testing.assert_array_equal(model.coef_, before)


# --------------------------------------------------------------------------- #
# Pegasos
# --------------------------------------------------------------------------- #
def _pegasos_objective(model, X, y, alpha):
    s = np.where(y == 1, 1.0, -1.0)
    f = model.decision_function(X)
    norm2 = model.n_random_features_ * np.sum(model.coef_ ** 2)
    return alpha / 2 * norm2 + np.mean(np.maximum(0.0, 1.0 - s * f)), norm2


def _pegasos(projection, alpha, X, y, n_steps, checkpoints):
    """Pegasos steps on random batches of 8 rows; |f|^2 after every step of the
    first 200 (where the projection is busiest), then after every 100th."""
    model = DSGClassifier(loss="hinge", learning_rate="pegasos", alpha=alpha,
                          projection=projection, fit_intercept=False, gamma=1.0, batch_size=8,
                          block_size=32, max_blocks=4, random_state=0)
    idx = np.random.default_rng(1).integers(0, X.shape[0], size=8 * n_steps)
    objective, norms, step = {}, [], 0
    while step < n_steps:
        k = 1 if step < 200 else 100  # one partial_fit call runs k steps
        rows = idx[8 * step:8 * (step + k)]
        model.partial_fit(X[rows], y[rows], classes=[0, 1])
        step += k
        norms.append(model.n_random_features_ * np.sum(model.coef_ ** 2))
        if step in checkpoints:
            objective[step] = _pegasos_objective(model, X, y, alpha)[0]
    return objective, np.array(norms)


def test_pegasos_with_projection_decreases_its_objective_inside_the_ball():
    X, y = _data(n=300, d=2)
    alpha = 0.005
    objective, norms = _pegasos(True, alpha, X, y, 1000, (10, 100, 1000))
    assert np.all(norms <= (1 + 1e-9) / alpha), "the projection let |f| leave the ball"
    assert objective[10] > objective[100] > objective[1000]
    # without the projection the early iterates leave the ball, and the
    # objective after 10 steps is worse
    free, free_norms = _pegasos(False, alpha, X, y, 10, (10,))
    assert free_norms.max() > 1.0 / alpha
    assert free[10] > objective[10]


# --------------------------------------------------------------------------- #
# parameters
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("params, match", [
    ({"reuse": "udsg"}, "unknown reuse 'udsg'; choose one of 'all', 'none', 'uniform', 'check'"),
    ({"reuse": None}, "unknown reuse None"),
    ({"reuse_schedule": (0, 1)}, r"reuse_schedule must be a pair \(G, U\).*got \(0, 1\)"),
    ({"reuse_schedule": (1, -1)}, r"reuse_schedule must be a pair.*got \(1, -1\)"),
    ({"reuse_schedule": 3}, r"reuse_schedule must be a pair.*got 3"),
    ({"reuse_schedule": (1.5, 1)}, r"reuse_schedule must be a pair.*got \(1.5, 1\)"),
    ({"block_size": 2 ** 63}, "block_size must be at most 1,048,576"),
    ({"precondition": -1.0}, "precondition must be 'auto', 'eigenpro', True, False or a ridge > 0, got -1.0"),
    ({"precondition": 0.0}, "precondition must be 'auto', 'eigenpro', True, False or a ridge > 0, got 0.0"),
    ({"precondition": "yes"}, "precondition must be 'auto', 'eigenpro', True, False or a ridge > 0, got 'yes'"),
    ({"precondition": True, "reuse": "check"}, "precondition cannot be combined with "
                                               "reuse='check'"),
    ({"projection": 1}, "projection must be True or False, got 1"),
    ({"projection": True, "alpha": 0.0}, r"projection=True needs alpha > 0"),
])
@pytest.mark.parametrize("Est", [DSGClassifier, DSGRegressor])
def test_bad_parameters_raise_and_leave_the_model_unchanged(Est, params, match):
    X, y = _data(n=48)
    model = Est(batch_size=8, block_size=F, max_blocks=4, random_state=0).fit(X, y)
    coef, t = model.coef_.copy(), model.t_
    model.set_params(**params)
    for call in (model.fit, model.partial_fit):
        with pytest.raises(ValueError, match=match):
            call(X, y)
        assert np.array_equal(model.coef_, coef) and model.t_ == t


def test_parameters_survive_a_model_file(tmp_path):
    X, y = _data(n=96)
    model = _model(reuse="uniform", reuse_schedule=(2, 1), precondition=0.5, projection=True,
                   alpha=0.01).fit(X, y)
    model.save(tmp_path / "m.okm")
    loaded = load(tmp_path / "m.okm")
    assert loaded.get_params() == model.get_params()
    assert loaded.reuse_schedule == (2, 1)
    assert np.array_equal(loaded.predict(X), model.predict(X))
    model.partial_fit(X[:16], y[:16])
    loaded.partial_fit(X[:16], y[:16])  # resumes with the same rules (and the tracked norm)
    assert np.array_equal(loaded.coef_, model.coef_)
