"""``verbose``: progress lines of ``fit`` on standard output (issue 16, item 22).

scikit-learn's convention: 0 prints nothing; 1 or more prints, per epoch of
the stochastic solver, ``-- Epoch n``, the model's norm, bias, steps and
objective, and the training time so far; the batch solvers print one such
block per iteration with their objective and gradient norm (or duality gap).
Printing never changes the model.
"""
import re

import numpy as np
import pytest
from conftest import fit_any, gaussian_problem

import onlinekernel
from onlinekernel import (DSGClassifier, DSGDensityRatio, DSGGaussianProcessRegressor,
                          DSGOneClassSVM, DSGQuantileRegressor, DSGRegressor,
                          ExtremeLearningMachineClassifier, FixedFeatureClassifier,
                          FixedFeatureRegressor, ShrinkingGradientRegressor,
                          WeightedKitchenSinksClassifier, WeightedKitchenSinksRegressor)
from onlinekernel.solvers import (solve_cholesky, solve_dual_cd, solve_lbfgs, solve_newton_cg,
                                  solve_sarah, solve_svrg)

SMALL = dict(block_size=16, max_blocks=4, random_state=0)


def _data(n=200, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, X[:, 0] + 0.3 * np.sin(3 * X[:, 1]) + 0.1 * rng.normal(size=n)


def _blocks(out, unit):
    """The ``-- <unit> n`` blocks of the output: ``[(n, tag, {label: value}), ...]``."""
    found = re.findall(rf"^-- {unit} (\d+)(?: \((.+)\))?\n(.*)\nTotal training time: "
                       rf"\d+\.\d\d seconds\.$", out, flags=re.M)
    blocks = []
    for n, tag, line in found:
        values = dict(item.split(": ") for item in line.split(", "))
        blocks.append((int(n), tag, {k: float(v) for k, v in values.items()}))
    return blocks


# every estimator with fit, with a small, quick configuration
MODELS = {
    "DSGClassifier-sgd": lambda v: DSGClassifier(solver="sgd", max_iter=3, tol=None, verbose=v,
                                                 **SMALL),
    "DSGClassifier-newton-cg": lambda v: DSGClassifier(solver="newton-cg", verbose=v, **SMALL),
    "DSGClassifier-dual-cd": lambda v: DSGClassifier(loss="hinge", solver="dual-cd", alpha=1e-3,
                                                     verbose=v, **SMALL),
    "DSGRegressor-sgd": lambda v: DSGRegressor(solver="sgd", max_iter=3, verbose=v, **SMALL),
    "DSGRegressor-cholesky": lambda v: DSGRegressor(solver="cholesky", verbose=v, **SMALL),
    "DSGRegressor-lbfgs": lambda v: DSGRegressor(loss="huber", solver="lbfgs", verbose=v,
                                                 **SMALL),
    "DSGQuantileRegressor": lambda v: DSGQuantileRegressor(verbose=v, **SMALL),
    "DSGOneClassSVM": lambda v: DSGOneClassSVM(max_iter=3, verbose=v, **SMALL),
    "DSGDensityRatio": lambda v: DSGDensityRatio(max_iter=3, verbose=v, **SMALL),
    "DSGGaussianProcessRegressor-exact": lambda v: DSGGaussianProcessRegressor(
        variance_blocks=2, verbose=v, **SMALL),
    "DSGGaussianProcessRegressor-sgd": lambda v: DSGGaussianProcessRegressor(
        solver="sgd", variance_blocks=2, max_iter=3, verbose=v, **SMALL),
    "FixedFeatureRegressor": lambda v: FixedFeatureRegressor(max_iter=3, verbose=v,
                                                             random_state=0),
    "FixedFeatureRegressor-early": lambda v: FixedFeatureRegressor(
        max_iter=3, early_stopping=True, verbose=v, random_state=0),
    "FixedFeatureClassifier": lambda v: FixedFeatureClassifier(max_iter=2, verbose=v,
                                                               random_state=0),
    "ShrinkingGradientRegressor": lambda v: ShrinkingGradientRegressor(
        n_estimates=16, block_size=16, predict_blocks=2, n_epochs=2, verbose=v,
        random_state=0),
    "ExtremeLearningMachineClassifier": lambda v: ExtremeLearningMachineClassifier(
        n_components=64, block_size=16, verbose=v, random_state=0),
    "WeightedKitchenSinksRegressor": lambda v: WeightedKitchenSinksRegressor(
        n_components=64, block_size=16, max_iter=20, verbose=v, random_state=0),
    "WeightedKitchenSinksClassifier": lambda v: WeightedKitchenSinksClassifier(
        n_components=64, block_size=16, radius=3.0, verbose=v, random_state=0),
}


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("name", MODELS)
def test_verbose_0_prints_nothing_and_1_prints_progress_without_changing_the_model(name, capsys):
    X, y = _data()
    quiet = fit_any(MODELS[name](0), X, y)
    assert capsys.readouterr() == ("", "")
    loud = fit_any(MODELS[name](1), X, y)
    out, err = capsys.readouterr()
    assert err == ""
    unit = "Iteration" if re.search(r"^-- Iteration", out, flags=re.M) else "Epoch"
    blocks = _blocks(out, unit)
    assert blocks, out
    assert [n for n, _, _ in blocks] == list(range(1, len(blocks) + 1)) or "Output" in out
    assert re.search(r"; total training time: \d+\.\d\d seconds\.\n\Z", out), out
    # every line of the output belongs to a block or is the last line
    assert len(out.splitlines()) == 3 * len(blocks) + 1
    # the printing changes nothing: the same model, bit for bit
    np.testing.assert_array_equal(quiet.coef_, loud.coef_)
    np.testing.assert_array_equal(quiet.intercept_, loud.intercept_)
    if hasattr(quiet, "n_iter_"):
        assert quiet.n_iter_ == loud.n_iter_


@pytest.mark.parametrize("max_iter, tol", [(4, None), (200, 1e-2)])
def test_sgd_prints_one_block_per_epoch_with_the_objective(max_iter, tol, capsys):
    X, y = _data()
    reg = DSGRegressor(solver="sgd", max_iter=max_iter, tol=tol, verbose=1, **SMALL).fit(X, y)
    out = capsys.readouterr().out
    blocks = _blocks(out, "Epoch")
    assert len(blocks) == reg.n_iter_ == (4 if tol is None else reg.n_iter_)
    assert all(set(v) == {"Norm", "Bias", "Blocks", "T", "Objective"} for _, _, v in blocks)
    steps = -(-len(y) // reg.batch_size)  # per epoch
    assert [v["T"] for _, _, v in blocks] == [k * steps for k in range(1, len(blocks) + 1)]
    assert blocks[-1][2]["Blocks"] == 4
    # the last objective is the model's training objective
    state = dict(vars(reg))
    Y = ((y - reg._y_mean) / reg._y_scale)[:, None]
    assert blocks[-1][2]["Objective"] == pytest.approx(
        reg._objective(state, X, Y, np.ones(len(y)), penalty=True), rel=1e-5)
    assert blocks[-1][2]["Norm"] == pytest.approx(
        np.sqrt(reg.n_random_features_) * np.linalg.norm(reg.coef_), rel=1e-5)
    last = out.splitlines()[-1]
    assert last.startswith(f"{reg.n_iter_} epochs (tol=None)" if tol is None
                           else f"Convergence after {reg.n_iter_} epochs")


def test_early_stopping_reports_the_validation_objective(capsys):
    X, y = _data()
    DSGRegressor(solver="sgd", early_stopping=True, max_iter=3, tol=None, verbose=1,
                 **SMALL).fit(X, y)
    blocks = _blocks(capsys.readouterr().out, "Epoch")
    assert len(blocks) == 3 and all("Validation objective" in v for _, _, v in blocks)


@pytest.mark.parametrize("solver, loss, keys", [
    ("newton-cg", "logistic", {"Objective", "Gradient norm", "CG iterations", "Step"}),
    ("lbfgs", "logistic", {"Objective", "Gradient norm"}),
    ("dual-cd", "hinge", {"Objective", "Duality gap"}),
])
def test_batch_solvers_print_one_block_per_iteration(solver, loss, keys, capsys):
    X, y = _data()
    clf = DSGClassifier(loss=loss, solver=solver, alpha=1e-3, tol=1e-7, verbose=1,
                        **SMALL).fit(X, y > 0)
    out = capsys.readouterr().out
    blocks = _blocks(out, "Iteration")
    assert len(blocks) == clf.n_iter_ >= 2
    assert all(tag == solver and set(v) == keys for _, tag, v in blocks)
    measure = "Duality gap" if solver == "dual-cd" else "Gradient norm"
    assert blocks[-1][2][measure] <= 1e-7 < blocks[0][2][measure]
    assert out.splitlines()[-1].startswith(f"Convergence after {clf.n_iter_} iterations")


@pytest.mark.parametrize("solver", ["svrg", "sarah"])
def test_variance_reduced_solvers_print_one_block_per_epoch(solver, capsys):
    X, y = _data()
    clf = DSGClassifier(loss="logistic", solver=solver, alpha=1e-2, tol=1e-6, verbose=1,
                        **SMALL).fit(X, y > 0)
    out = capsys.readouterr().out
    blocks = _blocks(out, "Iteration")
    assert len(blocks) == clf.n_iter_ >= 2
    keys = {"Objective", "Gradient norm", "Step", "Passes"}
    assert all(tag == solver and set(v) == keys for _, tag, v in blocks)
    assert blocks[-1][2]["Gradient norm"] <= 1e-6 < blocks[0][2]["Gradient norm"]
    passes = [v["Passes"] for _, _, v in blocks]
    assert all(b > a for a, b in zip(passes, passes[1:]))  # about three per epoch
    assert out.splitlines()[-1].startswith(f"Convergence after {clf.n_iter_} iterations")


def test_cholesky_prints_its_one_step(capsys):
    X, y = _data()
    DSGRegressor(solver="cholesky", verbose=1, **SMALL).fit(X, y)
    (block,) = _blocks(capsys.readouterr().out, "Iteration")
    assert block[0] == 1 and block[1] == "cholesky" and block[2]["Gradient norm"] < 1e-6


def test_dual_cd_numbers_the_epochs_of_each_output(capsys):
    X, y = _data()
    DSGQuantileRegressor(quantiles=(0.2, 0.8), solver="dual-cd", verbose=1, **SMALL).fit(X, y)
    blocks = _blocks(capsys.readouterr().out, "Iteration")
    outputs = [v["Output"] for _, _, v in blocks]
    assert sorted(set(outputs)) == [0, 1] and outputs == sorted(outputs)
    for c in (0, 1):
        epochs = [n for n, _, v in blocks if v["Output"] == c]
        assert epochs == list(range(1, len(epochs) + 1))


@pytest.mark.parametrize("make", [
    lambda: DSGRegressor(verbose=1, **SMALL),
    lambda: DSGClassifier(verbose=1, **SMALL),
    lambda: DSGGaussianProcessRegressor(variance_blocks=2, verbose=1, **SMALL),
    lambda: ShrinkingGradientRegressor(n_estimates=16, block_size=16, verbose=1),
])
def test_partial_fit_prints_nothing(make, capsys):
    X, y = _data()
    model = make()
    if isinstance(model, DSGClassifier):
        model.partial_fit(X, y > 0, classes=[False, True])
    else:
        model.partial_fit(X, y)
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize("value", [-1, 1.5, "yes", None])
@pytest.mark.parametrize("make", [
    lambda v: DSGRegressor(verbose=v, **SMALL),
    lambda v: FixedFeatureRegressor(verbose=v),
    lambda v: ShrinkingGradientRegressor(verbose=v, n_estimates=16, block_size=16),
])
def test_a_bad_verbose_is_refused(make, value):
    X, y = _data(n=40)
    model = make(value)
    with pytest.raises(ValueError, match=r"verbose must be an integer >= 0 .* or a bool, "
                                         rf"got {re.escape(repr(value))}"):
        model.fit(X, y)
    assert not hasattr(model, "_coef")


def test_verbose_true_is_level_1_and_round_trips(tmp_path, capsys):
    X, y = _data()
    reg = DSGRegressor(solver="sgd", max_iter=2, tol=None, verbose=True, **SMALL).fit(X, y)
    assert len(_blocks(capsys.readouterr().out, "Epoch")) == 2
    reg.save(tmp_path / "m.okm")
    loaded = onlinekernel.load(tmp_path / "m.okm")
    assert loaded.get_params()["verbose"] is True
    np.testing.assert_array_equal(loaded.predict(X), reg.predict(X))


# --------------------------------------------------------------------------- #
# the solvers' callback, which verbose is built on
# --------------------------------------------------------------------------- #
def _problem(loss, Y, n=200, alpha=1e-3):
    return gaussian_problem(loss, Y, n, 2, alpha)[0]


@pytest.mark.parametrize("solve, loss, measure", [
    (solve_newton_cg, "logistic", "gradient_norm"),
    (solve_lbfgs, "logistic", "gradient_norm"),
    (solve_cholesky, "squared", "gradient_norm"),
    (solve_dual_cd, "hinge", "duality_gap"),
    (solve_svrg, "logistic", "gradient_norm"),
    (solve_sarah, "squared", "gradient_norm"),
])
def test_solver_callbacks_see_every_iteration(solve, loss, measure):
    def target(X):
        return np.where(X[:, :1] * X[:, 1:] > 0, 1.0, -1.0)

    problem = _problem(loss, target)
    calls = []
    sol = solve(problem, tol=1e-6, callback=lambda n, **v: calls.append((n, v)))
    assert [n for n, _ in calls] == list(range(1, sol.n_iter + 1))
    assert all(measure in v and "objective" in v for _, v in calls)
    assert calls[-1][1]["objective"] == pytest.approx(sol.objective, rel=1e-9)
    if solve is not solve_dual_cd:  # dual-cd's primal is the best seen, reported as is
        assert calls[-1][1][measure] == pytest.approx(sol.gradient_norm, rel=1e-9)
    # and without a callback, the same solution
    again = solve(problem, tol=1e-6)
    np.testing.assert_array_equal(again.coef, sol.coef)
