"""Smoke test of benchmarks/quality.py on two tiny synthetic datasets (a few seconds)."""
import json
from types import SimpleNamespace

import numpy as np
import pytest

from benchmarks import quality


@pytest.fixture
def data_dir(tmp_path):
    """A disc-in-a-square classification set and a smooth regression set, npz as in shared/data."""
    rng = np.random.default_rng(0)
    d = tmp_path / "data"
    d.mkdir()
    X = rng.uniform(-1, 1, size=(500, 2)).astype(np.float32)
    y = np.where(np.hypot(X[:, 0], X[:, 1]) < 0.7, 1, -1).astype(np.int64)
    np.savez_compressed(d / "disc.npz", X_train=X[:400], y_train=y[:400],
                        X_test=X[400:], y_test=y[400:])
    X = rng.uniform(-2, 2, size=(400, 3)).astype(np.float32)
    y = 50.0 + 10.0 * np.sin(X[:, 0]) * np.cos(X[:, 1]) + rng.normal(0, 0.1, 400)
    np.savez_compressed(d / "wave.npz", X_train=X[:320], y_train=y[:320],
                        X_test=X[320:], y_test=y[320:])
    return d


def test_quick_run_writes_results_and_reuses_exact_cache(data_dir, tmp_path):
    out = tmp_path / "out"
    cache = tmp_path / "exact.json"
    args = ["--data-dir", str(data_dir), "--output-dir", str(out), "--exact-cache", str(cache),
            "--quick", "--no-plot", "--no-readme", "--datasets", "disc", "wave"]
    report = quality.main(args)
    res = report["results"]
    assert set(res) == {"disc", "wave"}
    disc, wave = res["disc"], res["wave"]
    assert disc["task"] == "classification" and wave["task"] == "regression"
    assert disc["exact"]["model"] == "SVC" and wave["exact"]["model"] == "KernelRidge"
    assert not disc["exact"]["from_cache"]
    # the exact machine learns the disc; the regression RMSE is in y's units (sd ~ 3.9)
    assert disc["exact"]["test_error"] < 10.0
    assert wave["exact"]["test_error"] < 1.5
    for r in (disc, wave):
        # every contender: ours by default, ours tuned on the exact machine's grid, and
        # the pipeline tuned on the same grid, with its error after every pass timed
        assert r["default"]["error"] < 20.0 and r["default"]["solver"] != "sgd"
        # the final model is the tuned size's last fit (or Nystrom's refit with more
        # centres, or a converged smaller model when the tuned size stopped
        # unconverged); the curve also holds the same setting with fewer features,
        # each a cold fit of its own
        setting, curve = r["tuned"]["setting"], r["tuned"]["curve"]
        top = setting.get("tuned_max_blocks", setting["max_blocks"]) * quality.BLOCK_SIZE
        final = r["tuned"]["final"]
        sizes = [c["n_features"] for c in curve]
        more = quality.NYSTROM_REFIT_GROWTH * top
        assert sizes[0] == top and all(m < top or m == more for m in sizes[sizes.count(top):])
        # the smaller models reach down to the curves' floor
        assert min(sizes) == quality.CURVE_FLOOR_FEATURES
        last_top = [c for c in curve if c["n_features"] == top][-1]
        if final["n_features"] == top:
            assert final["error"] == last_top["error"]
        elif final["n_features"] == more:
            assert setting.get("kernel") == "nystrom" and final["converged"]
        else:
            assert final["n_features"] < top and final["converged"]
            assert not quality._converged(last_top)
        times = [c["time_s"] for c in r["pipeline"]["curve"]]
        assert times == sorted(times) and times[0] > 0
        # the pipeline's curve has the same floor
        assert min(c["n_components"] for c in r["pipeline"]["curves_fewer_features"]) == \
            quality.CURVE_FLOOR_FEATURES
        assert set(r["checks"]) >= {"tuned_within_tol_ok", "default_within_tol_ok",
                                    "vs_pipeline_ok", "vs_exact_ok"}
    assert wave["default"]["solver"] == "cholesky"
    saved = json.loads((out / "quality_quick.json").read_text())
    assert saved["results"]["disc"]["exact"]["params"] == disc["exact"]["params"]
    md = (out / "quality_quick.md").read_text()
    assert "| disc |" in md and "| wave |" in md and "Within tolerance" in md
    entries = json.loads(cache.read_text())["entries"]
    assert set(entries) == {"disc@quick", "wave@quick"}

    # second run: the exact baselines come from the cache
    again = quality.main(args[:-3] + ["--datasets", "disc"])
    assert again["results"]["disc"]["exact"]["from_cache"]
    assert again["results"]["disc"]["exact"]["test_error"] == disc["exact"]["test_error"]


def test_time_to_a_level_is_read_off_a_curve():
    curve = [{"time_s": 1.0, "error": 5.0}, {"time_s": 2.0, "error": 3.0},
             {"time_s": 3.0, "error": 2.5}]
    assert quality.time_to(curve, 3.0) == 2.0
    assert quality.time_to(curve, 1.0) is None


def _features(params):
    return params["max_blocks"] * params["block_size"]


def test_refit_falls_back_to_a_smaller_model_when_the_tuned_size_fails(monkeypatch):
    calls = []

    def fit(prep, task, params, cap_s):
        calls.append(_features(params))
        if _features(params) == 16384:
            return {"failed": "over the 90 s cap", "timeout": True}
        return {"time_s": 1.0, "error": 5.0 / _features(params), "solver": "cholesky",
                "n_iter": 1, "warnings": []}

    monkeypatch.setattr(quality, "capped_fit", fit)
    setting = {"gamma": 0.1, "alpha_krr": 0.1, "loss": "squared", "max_blocks": 64}
    params, final, curve, note = quality.refit_ours(
        SimpleNamespace(n=1000), "regression", setting, 0, {"refit_cap_s": 90.0},
        lambda msg: None)
    # the tuned 16,384 features time out; the smaller models (the walk's count and the
    # halvings of the tuned one down to the floor, the smallest in one block of fewer
    # features) get a cap of their own and the largest is the final model
    smaller = [128, 256, 512, 1024, 2048, 4096, 8192]
    assert calls == [16384] + smaller
    assert final["n_features"] == 8192 and params["max_blocks"] == 32
    assert [c["n_features"] for c in curve] == smaller
    assert [c["max_blocks"] for c in curve[:3]] == [1, 1, 2]
    assert "could not be refit" in note


def test_refit_falls_back_to_the_largest_converged_model_when_the_tuned_size_fails(
        monkeypatch):
    # w8a: the tuned size could not be refit and the largest smaller one stopped
    # unconverged at the cap: the final model is the largest converged one
    _fake_fits(monkeypatch, unconverged={8192}, failing={16384})
    setting = {"gamma": 0.1, "C": 1.0, "loss": "logistic", "max_blocks": 64}
    params, final, curve, note = quality.refit_ours(
        SimpleNamespace(n=1000), "classification", setting, 0, {"refit_cap_s": 90.0},
        lambda msg: None)
    assert final["n_features"] == 4096 and final["converged"] and params["max_blocks"] == 16
    assert "the final model has 4096 features" in note


def test_a_size_whose_solver_needs_more_than_the_memory_cap_is_not_proposed():
    # w8a's 49,749 rows: 8,192 features fit newton-cg in the cap, 16,384 do not (9 GiB)
    n = 49_749
    assert quality.ours_params("classification", 0.1, {"C": 1.0}, "logistic", 32, n, 0)
    assert quality.ours_params("classification", 0.1, {"C": 1.0}, "logistic", 64, n, 0) is None
    # the estimator itself refuses that fit, naming the memory it needs
    assert quality.solver_memory("newton-cg", n, 16384, 1, 4) > quality.MEMORY_CAP
    # a float64 model's Nystrom B is counted in float64 (the landmarks' rounding gain
    # is not known before they are chosen): 90,000 rows x 8,192 fit as random
    # features (float32 for newton-cg), not as Nystrom's
    n = 90_000
    assert quality.ours_params("classification", 0.1, {"C": 1.0}, "logistic", 32, n, 0)
    assert quality.ours_params("classification", 0.1, {"C": 1.0}, "logistic", 32, n, 0,
                               kernel="nystrom") is None


def _fake_fits(monkeypatch, unconverged=(), failing=()):
    calls = []

    def fit(prep, task, params, cap_s):
        m = _features(params)
        calls.append((m, params["kernel"]))
        if m in failing:
            return {"failed": "ValueError: needs 9255 MiB", "timeout": False}
        warn = ["ConvergenceWarning: max_iter reached"] if m in unconverged else []
        return {"time_s": 1.0, "error": 5.0 / m, "solver": "newton-cg", "n_iter": 3,
                "warnings": warn}

    monkeypatch.setattr(quality, "capped_fit", fit)
    return calls


def test_refit_keeps_a_converged_smaller_model_over_an_unconverged_tuned_one(monkeypatch):
    calls = _fake_fits(monkeypatch, unconverged={4096})
    setting = {"gamma": 0.1, "C": 1.0, "loss": "squared", "max_blocks": 16}
    params, final, curve, note = quality.refit_ours(
        SimpleNamespace(n=1000), "classification", setting, 0, {"refit_cap_s": 90.0},
        lambda msg: None)
    assert [m for m, _ in calls] == [4096, 128, 256, 512, 1024, 2048]
    assert final["n_features"] == 2048 and final["converged"] and params["max_blocks"] == 8
    assert "stopped unconverged" in note


def test_refit_of_a_nystrom_model_grows_its_centres_when_the_cap_allows(monkeypatch):
    calls = _fake_fits(monkeypatch)
    setting = {"gamma": 0.1, "alpha_krr": 0.1, "loss": "squared", "max_blocks": 16,
               "kernel": "nystrom"}
    params, final, curve, note = quality.refit_ours(
        SimpleNamespace(n=1000), "regression", setting, 0, {"refit_cap_s": 90.0},
        lambda msg: None)
    # the growth is judged against what the tuned size left of the cap, before the
    # smaller models, which have a cap of their own
    grown = quality.NYSTROM_REFIT_GROWTH * 4096
    assert calls == [(m, "nystrom") for m in (4096, grown, 128, 256, 512, 1024, 2048)]
    assert final["n_features"] == grown and _features(params) == grown
    # predicted over what the tuned size left of the cap: not run, the tuned size stays
    calls.clear()
    params, final, curve, note = quality.refit_ours(
        SimpleNamespace(n=1000), "regression", setting, 0, {"refit_cap_s": 4.5},
        lambda msg: None)
    assert (grown, "nystrom") not in calls and final["n_features"] == 4096
    assert "not run" in note
    assert [m for m, _ in calls] == [4096, 128, 256, 512, 1024, 2048]  # their own 4.5 s


def test_refine_moves_gamma_while_validation_falls_then_tries_the_penalties(monkeypatch):
    d = 10
    gammas = [f / d for f in quality.GAMMA_FACTORS["classification"]]  # 0.5/d .. 4/d
    seen = []

    def fit(prep, task, params, cap_s):
        g, C = params["gamma"], 1.0 / (params["alpha"] * prep.n)
        seen.append((round(g * d, 6), round(C, 6), params["kernel"], params["max_blocks"]))
        # validation error: best at gamma = 2/d, and at C = 100 there
        err = abs(np.log2(g * d) - 1.0) + (0.0 if round(C) == 100 else 0.5)
        return {"time_s": 0.0, "error": err, "solver": "cholesky", "n_iter": 1, "warnings": []}

    monkeypatch.setattr(quality, "capped_fit", fit)
    prep = SimpleNamespace(n=500, d=d)
    top = {"gamma": gammas[0], "C": 1.0, "loss": "squared", "max_blocks": 16,
           "kernel": "nystrom", "error": 2.5, "time_s": 0.0}
    trials = []
    best, note = quality._refine("classification", prep, 0, "full", quality.Budget(60.0),
                                 top, trials)
    # narrower kernels first: 1/d improves, 2/d improves, 4/d does not: stop there; no
    # wider ones (0.5/d was the start); then the other penalties at 2/d, weakest first;
    # the penalty moved, so gamma again at C = 100 (narrower, then wider), which
    # improves nothing: done, no setting fitted twice
    assert [s[:2] for s in seen] == [(1.0, 1.0), (2.0, 1.0), (4.0, 1.0), (2.0, 100.0),
                                     (2.0, 10.0), (4.0, 100.0), (1.0, 100.0)]
    assert all(s[2:] == ("nystrom", 16) for s in seen) and len(trials) == 7
    assert (best["gamma"], best["C"]) == (2.0 / d, 100.0) and "7 fits" in note
    # nothing starts when the budget is spent
    seen.clear()
    spent = quality.Budget(0.0)
    best, _ = quality._refine("classification", prep, 0, "full", spent, top, [])
    assert seen == [] and best is top


def test_refine_walks_gamma_again_after_the_penalty_moves(monkeypatch):
    # usps-like: at the start's C = 1 no other gamma helps; at C = 100 the wider
    # 0.5/d wins, which only a second gamma walk finds
    d = 10
    seen = []

    def fit(prep, task, params, cap_s):
        g, C = round(params["gamma"] * d, 6), round(1.0 / (params["alpha"] * prep.n))
        seen.append((g, C))
        err = {(1.0, 100): 1.5, (0.5, 100): 1.0}.get((g, C), 3.0)
        return {"time_s": 0.0, "error": err, "solver": "cholesky", "n_iter": 1, "warnings": []}

    monkeypatch.setattr(quality, "capped_fit", fit)
    top = {"gamma": 1.0 / d, "C": 1.0, "loss": "squared", "max_blocks": 16,
           "kernel": "nystrom", "error": 2.0, "time_s": 0.0}
    best, _ = quality._refine("classification", SimpleNamespace(n=500, d=d), 0, "full",
                              quality.Budget(60.0), top, [])
    assert (best["gamma"], best["C"]) == (0.5 / d, 100.0)
    assert seen[:4] == [(2.0, 1), (0.5, 1), (1.0, 100), (1.0, 10)]
    assert (0.5, 100) in seen and len(seen) == len(set(seen))


def test_refit_climbs_the_ladder_at_every_size(monkeypatch):
    calls = []

    def fit(prep, task, params, cap_s):
        # converges in 3 Newton steps at every size: max_iter 1 and 2 stop short
        k = params.get("max_iter", 1000)
        calls.append((_features(params), k))
        warn = ["ConvergenceWarning: max_iter reached"] if k < 3 else []
        return {"time_s": 0.1, "error": 1.0 / k, "solver": "newton-cg", "n_iter": min(k, 3),
                "warnings": warn}

    monkeypatch.setattr(quality, "capped_fit", fit)
    setting = {"gamma": 0.1, "C": 1.0, "loss": "logistic", "max_blocks": 4}
    params, final, curve, note = quality.refit_ours(
        SimpleNamespace(n=1000), "classification", setting, 0, {"refit_cap_s": 90.0},
        lambda msg: None)
    # the tuned 1,024 features' final fit, then its rungs under its 3 iterations; then
    # each halving down to the floor up the ladder until a rung converges: max_iter 1, 2, 3
    assert calls == [(1024, 1000), (1024, 1), (1024, 2)] + [
        (m, k) for m in (128, 256, 512) for k in (1, 2, 3)]
    assert final["n_features"] == 1024 and final["max_iter"] == 1000 and final["converged"]
    assert sorted(c["max_iter"] for c in curve if c["n_features"] == 1024) == [1, 2, 1000]
    assert note is None


def test_refit_fits_the_final_model_before_the_rungs_of_the_curve(monkeypatch):
    # covtype_binary_sub20k: dual-cd converging after 500 epochs at 0.1 s an epoch; cold
    # rungs at 1 ... 256 epochs first would leave 56 of the 90 s, under the 100 s
    # predicted for max_iter=1000, and the final model unconverged
    calls = []

    def fit(prep, task, params, cap_s):
        k = params["max_iter"]
        calls.append((_features(params), k))
        if _features(params) < 4096:
            return {"time_s": 0.0, "error": 30.0, "solver": "dual-cd", "n_iter": k,
                    "warnings": []}
        n_iter = min(k, 500)
        assert 0.1 * n_iter <= cap_s
        return {"time_s": 0.1 * n_iter, "error": 20.0 - n_iter / 100, "solver": "dual-cd",
                "n_iter": n_iter,
                "warnings": [] if k > 500 else ["ConvergenceWarning: max_iter reached"]}

    monkeypatch.setattr(quality, "capped_fit", fit)
    setting = {"gamma": 0.1, "C": 10.0, "loss": "hinge", "max_blocks": 16}
    params, final, curve, note = quality.refit_ours(
        SimpleNamespace(n=1000), "classification", setting, 0, {"refit_cap_s": 90.0},
        lambda msg: None)
    assert final["n_features"] == 4096 and final["converged"] and final["n_iter"] == 500
    # 50 s for the final fit; the rungs 1 to 64 take 8.5 s, 256's predicted 25.6 s fits the
    # 31.5 s left; nothing is left for another
    assert [k for m, k in calls if m == 4096] == [1000, 1, 4, 16, 64, 256]
    assert len([c for c in curve if c["n_features"] == 4096]) == 6


def test_refit_of_a_squared_loss_solved_by_conjugate_gradients_loosens_its_tol(monkeypatch):
    # kin40k: the squared loss on 2,048 and 4,096 Nystrom centres is one Newton step of
    # conjugate gradients, whose iterations max_iter does not count; its cheaper points
    # are fits at a looser tol.  An exact (cholesky) solve has none.
    calls = []

    def fit(prep, task, params, cap_s):
        m, tol = _features(params), params.get("tol", quality.ESTIMATOR_TOL)
        calls.append((m, tol))
        solver = "newton-cg" if m >= 2048 else "cholesky"
        cost = m / 1024 * (1.0 if solver == "cholesky" else 1.0 + np.log10(1 / tol) / 4)
        return {"time_s": cost, "error": 1.0 / m + tol, "solver": solver, "n_iter": 1,
                "warnings": []}

    monkeypatch.setattr(quality, "capped_fit", fit)
    setting = {"gamma": 0.1, "alpha_krr": 0.1, "loss": "squared", "max_blocks": 16}
    params, final, curve, note = quality.refit_ours(
        SimpleNamespace(n=1000), "regression", setting, 0, {"refit_cap_s": 90.0},
        lambda msg: None)
    tol = quality.ESTIMATOR_TOL
    assert calls == [(4096, tol), (4096, 1e-2), (4096, 1e-3),
                     (128, tol), (256, tol), (512, tol), (1024, tol),
                     (2048, tol), (2048, 1e-2), (2048, 1e-3)]
    assert final["n_features"] == 4096 and final["tol"] == tol
    assert sorted(c["tol"] for c in curve if c["n_features"] == 2048) == [tol, 1e-3, 1e-2]
    # the fallback to a smaller model takes a fit at the estimators' tol, never a looser one
    calls.clear()

    def failing_top(prep, task, params, cap_s):
        if _features(params) == 4096:
            return {"failed": "over the 90 s cap", "timeout": True}
        return fit(prep, task, params, cap_s)

    monkeypatch.setattr(quality, "capped_fit", failing_top)
    params, final, curve, note = quality.refit_ours(
        SimpleNamespace(n=1000), "regression", setting, 0, {"refit_cap_s": 90.0},
        lambda msg: None)
    assert final["n_features"] == 2048 and final["tol"] == tol
    # too little of the cap left for the converged fit's time: no looser fit is run
    calls.clear()
    monkeypatch.setattr(quality, "capped_fit", fit)
    quality.refit_ours(SimpleNamespace(n=1000), "regression", setting, 0,
                       {"refit_cap_s": 6.0}, lambda msg: None)
    assert (4096, 1e-2) not in calls and (4096, tol) in calls


def test_the_cap_stops_the_fit_not_the_scoring():
    import time

    def slow_scoring(fitted):
        fitted()
        time.sleep(1.0)  # scoring after the fit: not capped
        return "scored"

    def slow_fit(fitted):
        time.sleep(5.0)
        fitted()
        return "scored"

    assert quality.run_capped(slow_scoring, 0.3) == ("ok", "scored")
    assert quality.run_capped(slow_fit, 0.3) == ("timeout", None)
    status, message = quality.run_capped(lambda fitted: 1 / 0, 5.0)
    assert status == "error" and "ZeroDivisionError" in message


def test_retime_exact_refits_the_cached_machines_and_recomputes_the_checks(data_dir, tmp_path):
    """A quick run's files made into a full run's (its tiny sets fit under every cap), then
    --retime-exact: the exact machine's fit is timed again, the first time kept, the checks
    follow the new time; a cache whose machine does not score its cached error is refused."""
    out, cache = tmp_path / "out", tmp_path / "exact.json"
    common = ["--data-dir", str(data_dir), "--output-dir", str(out), "--exact-cache", str(cache),
              "--no-plot", "--no-readme", "--datasets", "disc"]
    quality.main(common + ["--quick"])
    report = json.loads((out / "quality_quick.json").read_text())
    report["mode"] = "full"
    c = json.loads(cache.read_text())
    c["entries"] = {"disc": c["entries"]["disc@quick"]}
    cache.write_text(json.dumps(c))
    slow = dict(report["results"]["disc"]["exact"], fit_time_s=1e6)  # checks must follow
    report["results"]["disc"]["exact"] = slow
    (out / "quality.json").write_text(json.dumps(report))
    first = c["entries"]["disc"]["fit_time_s"]

    again = quality.main(common + ["--retime-exact"])
    exact = again["results"]["disc"]["exact"]
    assert exact["fit_time_s"] < 1e6 and exact["timed"] == again["exact_retimed"]["date"]
    ch = again["results"]["disc"]["checks"]
    assert ch["ours_time_to_exact_tol_s"] is not None  # ours learns the disc
    assert ch["ours_over_exact_time"] == pytest.approx(
        ch["ours_time_to_exact_tol_s"] / exact["fit_time_s"])
    entry = json.loads(cache.read_text())["entries"]["disc"]
    assert entry["fit_time_s_first"] == first and entry["fit_time_s"] == exact["fit_time_s"]
    assert "measured again on" in (out / "quality.md").read_text()

    c = json.loads(cache.read_text())
    c["entries"]["disc"]["test_error"] += 1.0
    cache.write_text(json.dumps(c))
    with pytest.raises(SystemExit, match="not the same model"):
        quality.main(common + ["--retime-exact"])


def test_tuning_passes_over_fits_that_stopped_unconverged(monkeypatch):
    # ijcnn1: hinge at C = 100 stopped at max_iter on the tuning rows with the lowest
    # validation error; it is recorded but the tuned model is the best converged fit
    d = 4

    def fit(prep, task, params, cap_s):
        C = round(1.0 / (params["alpha"] * prep.n))
        stuck = params["loss"] == "hinge" and C == 10
        err = 1.0 if stuck else 3.0 - (params["loss"] == "logistic") - 0.01 * C
        return {"time_s": 0.0, "error": err, "solver": params["solver"], "n_iter": 7,
                "warnings": ["ConvergenceWarning: max_iter reached"] if stuck else []}

    monkeypatch.setattr(quality, "capped_fit", fit)
    prep = SimpleNamespace(n=400, d=d, X_eval=np.zeros((100, d)))
    cfg = dict(quality.SETTINGS["quick"], tune_budget_s=60.0)
    best, info = quality.tune_ours("classification", prep, 0, "quick", cfg, 800,
                                   lambda msg: None, {"hinge_fallback": None,
                                                      "library_errors": []})
    stuck = [t for t in info["trials"] if not quality._converged(t)]
    assert stuck and all(t["loss"] == "hinge" and t["error"] == 1.0 for t in stuck)
    assert best["loss"] == "logistic" and best["error"] < 3.0 and quality._converged(best)
    # with no converged fit at all, the best unconverged one is still the tuned model
    monkeypatch.setattr(quality, "capped_fit", lambda prep, task, params, cap_s: dict(
        fit(prep, task, params, cap_s), warnings=["ConvergenceWarning: max_iter reached"]))
    best, _ = quality.tune_ours("classification", prep, 0, "quick", cfg, 800,
                                lambda msg: None, {"hinge_fallback": None,
                                                   "library_errors": []})
    assert best["error"] == 1.0 and best["loss"] == "hinge"
