"""Shrinking Gradient against Fixed-Random and DSG at equal budgets of feature evaluations.

The experiment of Livni, Carmon & Globerson (2017), section 6, in its shape:
three ways to learn a regression function from random features, one pass
over the data each (the online setting), compared at the same total number
of feature evaluations psi(x; w) during training:

* **Fixed-Random** (Rahimi & Recht): ``r`` features drawn once and evaluated
  on every point; a linear model on them by one pass of SGD (the paper's
  protocol) -- and, as a batch reference, by ridge least squares;
* **DSG** (Dai et al.): ``onlinekernel.DSGRegressor`` with one step per
  ``b`` rows, each adding a block of ``k`` fresh features that are from then
  on evaluated on every later point;
* **Shrinking Gradient**: ``onlinekernel.ShrinkingGradientRegressor``,
  ``m`` sampled (point, fresh feature) pairs per round.

A training pass over ``T`` points costs ``r T`` evaluations for Fixed-Random,
``k T (T/b + 1) / 2`` for DSG (step ``s`` evaluates the batch on all ``s k``
features so far) and ``2 m T`` for the Shrinking Gradient; the script picks
``r, k/b, m`` so that all three spend the budget ``N``.  Each method's step
size is chosen on a validation set from a small grid (the paper: "we explored
different initial step sizes and schedules"), and the test error of that
choice is reported: the mean squared error over the variance of the test
targets (1 - R^2).

Two settings:

* ``coordinates`` -- the paper's synthetic high-dimensional problem: inputs
  ``x in R^D`` (``D = 550 .. 800``) with i.i.d. standard normal entries
  clipped at 0, a random feature is a uniformly drawn coordinate
  (``psi(x; w) = sqrt(D) x_w``: the linear kernel), the target is
  ``y = a . x`` with ``a`` a random sparse combination of training points
  (so it lies in the kernel's space), ``T = 200`` < ``D``: a budget of
  ``T`` features per point cannot reveal every coordinate.  Inputs are
  scaled to ``k(x, x) ~ 1`` and targets to standard deviation 0.5.
* ``iln-sigmoid`` and ``iln-relu`` -- random units of an infinite layer
  network, the ``iln`` feature map (``sigma(w.x + b)``, ``w ~ N(0, I/d)``,
  ``b ~ N(0, 1)``), ``d = 50``, ``T = 500``; the target is a random network
  of 20 units of the same family with Gaussian output weights, standardised
  to standard deviation 0.5.  Sigmoid units have no closed-form kernel;
  for ReLU units the sweep goes on to ``8 T^2`` evaluations, and two
  references use the exact kernel: online gradient descent with exact inner
  products (what the Shrinking Gradient estimates, with the same steps and
  averaging) and kernel ridge regression.

The Shrinking Gradient's learned function is the average of its iterates,
``sum_i alpha_i Phi(x_i)``; its test predictions evaluate it on 8192
prediction features (``predict_blocks * block_size``, not counted in the
training budget, like the exact evaluation of the other two models), and,
for the record, on only ``r`` features -- the prediction cost of
Fixed-Random.

Run from the repository root (with ``nice -n 10`` on a shared machine)::

    python -m benchmarks.iln            # full run, about 4 minutes on 2 cores
    python -m benchmarks.iln --quick    # smoke run, well under a minute

The full run writes ``benchmarks/results/iln.json`` and ``iln.png``, the
quick run ``iln_quick.json`` and ``iln_quick.png``.
"""
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

import onlinekernel
from onlinekernel import DSGRegressor, FeatureMap, ShrinkingGradientRegressor, get_feature_map

from ._common import RESULTS_DIR, add_seed, argument_parser

METHODS = ("fixed_sgd", "fixed_ls", "dsg", "shrinking")
# References that use the closed-form kernel (where there is one): the
# Shrinking Gradient with exact inner products, and kernel ridge regression.
REFERENCES = ("exact_ogd", "exact_krr")
LABELS = {"fixed_sgd": "Fixed-Random (one-pass SGD)", "fixed_ls": "Fixed-Random (least squares)",
          "dsg": "DSG", "shrinking": "Shrinking Gradient",
          "exact_ogd": "exact-kernel OGD (reference)", "exact_krr": "kernel ridge (reference)"}
# Prediction features of the Shrinking Gradient's learned function.
SG_PREDICT_BLOCKS, SG_BLOCK = 32, 256


class Coordinates(FeatureMap):
    """psi(x; w) = sqrt(D) x_w with w uniform over the D coordinates: the linear kernel."""

    def param_size(self):
        return self.n_components

    def generate_params(self, seed, block):
        u = self.uniform(seed, block, 0, self.n_components)
        return np.minimum(np.floor(u * self.n_features_in), self.n_features_in - 1)

    def features(self, params, X):
        return np.sqrt(X.shape[1]) * X[:, params.astype(np.intp)]

    def kernel(self, X, Y):
        return np.asarray(X) @ np.asarray(Y).T


# --------------------------------------------------------------------------- #
# data
# --------------------------------------------------------------------------- #
def coordinates_problem(D, T, n_val, n_test, seed, support=10):
    """The paper's problem: clipped Gaussians, a target in the span of training points."""
    rng = np.random.default_rng(seed)
    X = np.maximum(rng.normal(size=(T + n_val + n_test, D)), 0.0) / np.sqrt(D / 2.0)
    chosen = rng.choice(T, size=support, replace=False)
    a = rng.normal(size=support) @ X[chosen]
    y = X @ a
    y = 0.5 * (y - y[:T].mean()) / y[:T].std()
    return _split(X, y, T, n_val)


def iln_problem(activation, d, T, n_val, n_test, seed, units=20):
    """A random network of ``units`` units of the iln family as the target."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(T + n_val + n_test, d))
    teacher = get_feature_map("iln", n_components=units, gamma=1.0 / d, activation=activation,
                              bias=1.0).bind(d)
    H = teacher.transform_block(int(rng.integers(2 ** 63)), 0, X)
    y = H @ rng.normal(size=units)
    y = 0.5 * (y - y[:T].mean()) / y[:T].std()
    return _split(X, y, T, n_val)


def _split(X, y, T, n_val):
    return (X[:T], y[:T]), (X[T:T + n_val], y[T:T + n_val]), (X[T + n_val:], y[T + n_val:])


# --------------------------------------------------------------------------- #
# budgets
# --------------------------------------------------------------------------- #
def budgets(N, T):
    """``r``, ``(k, b)`` and ``m`` spending ``N`` evaluations on ``T`` points, and their costs."""
    r = max(1, round(N / T))
    ratio = 2.0 * N / (T * T)  # k / b
    k, b = (max(1, round(ratio)), 1) if ratio >= 1 else (1, max(1, round(1 / ratio)))
    steps = -(-T // b)
    rows = np.full(steps, b)
    rows[-1] = T - b * (steps - 1)
    dsg_cost = int(np.sum(rows * k * np.arange(1, steps + 1)))
    m = max(1, round(N / (2 * T)))
    return {"r": r, "k": k, "b": b, "m": m,
            "cost": {"fixed": r * T, "dsg": dsg_cost, "shrinking": 2 * m * T}}


# --------------------------------------------------------------------------- #
# the three methods
# --------------------------------------------------------------------------- #
def _rel(pred, y):
    with np.errstate(over="ignore", invalid="ignore"):  # a diverged step size
        err = float(np.mean((pred - y) ** 2) / np.var(y))
    return err if np.isfinite(err) else float("inf")


def _block_features(fmap, seed, X):
    """Block 0's features of the bound map ``fmap`` on ``X``.

    A compiled map evaluates them itself; a Python :class:`FeatureMap`
    through its protocol (``generate_params``, then ``features``), as the
    solver's adapter calls it.
    """
    if isinstance(fmap, FeatureMap):
        return fmap.features(fmap.generate_params(seed, 0), X)
    return fmap.transform_block(seed, 0, X)


def _features(fmap, seed, X):
    return _block_features(fmap, seed, X) / np.sqrt(fmap.n_components)


def run_fixed(make_map, data, r, seed, etas):
    """One-pass SGD (last and averaged iterate) and ridge least squares on ``r``
    fixed features (numpy)."""
    (X, y), (Xv, yv), (Xt, yt) = data
    fmap = make_map(r).bind(X.shape[1])
    Z, Zv, Zt = (_features(fmap, seed, A) for A in (X, Xv, Xt))
    sgd = []
    T = X.shape[0]
    for eta in etas:
        w, b = np.zeros(r), 0.0
        w_sum, b_sum = np.zeros(r), 0.0
        with np.errstate(all="ignore"):
            for i in range(T):
                w_sum += w
                b_sum += b
                g = Z[i] @ w + b - y[i]
                w -= eta * g * Z[i]
                b -= eta * g
        for average, (wf, bf) in ((False, (w, b)), (True, (w_sum / T, b_sum / T))):
            with np.errstate(all="ignore"):
                pv, pt = Zv @ wf + bf, Zt @ wf + bf
            ok = np.isfinite(pv).all() and np.isfinite(pt).all()
            sgd.append({"eta": eta, "average": average,
                        "val": _rel(pv, yv) if ok else float("inf"),
                        "test": _rel(pt, yt) if ok else float("inf")})
    ls = []
    # ridge on centred features and targets: the intercept is not penalised;
    # the dual form when there are more features than rows
    mz, my = Z.mean(axis=0), y.mean()
    Zc, yc = Z - mz, y - my
    for lam in (1e-6, 1e-4, 1e-2, 1e-1, 1.0):
        if r <= T:
            w = np.linalg.solve(Zc.T @ Zc + lam * T * np.eye(r), Zc.T @ yc)
        else:
            w = Zc.T @ np.linalg.solve(Zc @ Zc.T + lam * T * np.eye(T), yc)
        b = my - mz @ w
        ls.append({"ridge": lam, "val": _rel(Zv @ w + b, yv), "test": _rel(Zt @ w + b, yt)})
    return sgd, ls


def run_dsg(kernel, data, k, b, seed, settings):
    """``DSGRegressor``: one pass, a block of ``k`` fresh features per step of ``b`` rows."""
    (X, y), (Xv, yv), (Xt, yt) = data
    out = []
    for eta, average in settings:
        model = DSGRegressor(kernel=kernel(k), batch_size=b, block_size=k, max_blocks=None,
                             solver="sgd", max_iter=1, tol=None, shuffle=False, alpha=0.0, learning_rate="constant",
                             eta0=eta, average=average, random_state=seed)
        with np.errstate(all="ignore"):
            model.fit(X, y)
            pv, pt = model.predict(Xv), model.predict(Xt)
        ok = np.isfinite(pv).all() and np.isfinite(pt).all()
        out.append({"eta0": eta, "average": average,
                    "val": _rel(pv, yv) if ok else float("inf"),
                    "test": _rel(pt, yt) if ok else float("inf")})
    return out


def _sg_readout(model, Xt, R, seed):
    """The learned average evaluated with only ``R`` random features (numpy)."""
    fmap = model.feature_map_
    base = getattr(fmap, "map_obj", fmap)  # a Python map runs through an adapter
    small = type(base)(**dict(base.get_params(), n_components=R)).bind(Xt.shape[1])
    Zs = _block_features(small, seed, model.support_vectors_)
    Zt = _block_features(small, seed, Xt)
    return model.dual_coef_ @ Zs @ Zt.T / R + model.intercept_[0]


def run_shrinking(kernel, data, m, r, seed, eta0s, B=1.0):
    (X, y), (Xv, yv), (Xt, yt) = data
    out = []
    for eta0 in eta0s:
        model = ShrinkingGradientRegressor(kernel=kernel(SG_BLOCK), n_estimates=m, B=B,
                                           eta0=eta0, block_size=SG_BLOCK,
                                           predict_blocks=SG_PREDICT_BLOCKS, shuffle=False,
                                           random_state=seed)
        t0 = time.perf_counter()
        model.fit(X, y)
        seconds = time.perf_counter() - t0
        pt = model.predict(Xt)
        row = {"eta0": eta0, "val": _rel(model.predict(Xv), yv), "test": _rel(pt, yt),
               "test_r_features": _rel(_sg_readout(model, Xt, r, seed + 1), yt),
               "shrinks": int(model.n_shrinks_), "fit_s": round(seconds, 3)}
        if hasattr(model.feature_map_, "kernel"):
            model.set_params(prediction="kernel")
            row["test_exact"] = _rel(model.predict(Xt), yt)
        out.append(row)
    return out


def run_exact(kernel, data, eta0s, B=1.0):
    """The references with the exact kernel: averaged online gradient descent
    (the Shrinking Gradient's rounds with exact inner products and no
    shrinking), and kernel ridge regression."""
    (X, y), (Xv, yv), (Xt, yt) = data
    T = X.shape[0]
    K, Kv, Kt = kernel(X, X), kernel(Xv, X), kernel(Xt, X)
    ogd = []
    for eta0 in eta0s:
        eta = eta0 * B / np.sqrt(T)
        alpha, b = np.zeros(T), 0.0
        alpha_sum, b_sum = np.zeros(T), 0.0
        for t in range(T):
            alpha_sum += alpha
            b_sum += b
            g = alpha[:t] @ K[:t, t] + b - y[t]
            alpha[t] = -eta * g
            b -= min(eta, 1.0) * g
        a, c = alpha_sum / T, b_sum / T
        ogd.append({"eta0": eta0, "val": _rel(Kv @ a + c, yv), "test": _rel(Kt @ a + c, yt)})
    krr = []
    for lam in (1e-6, 1e-4, 1e-3, 1e-2, 1e-1):
        a = np.linalg.solve(K + lam * T * np.eye(T), y - y.mean())
        krr.append({"ridge": lam, "val": _rel(Kv @ a + y.mean(), yv),
                    "test": _rel(Kt @ a + y.mean(), yt)})
    return ogd, krr


def _best(rows):
    return min(rows, key=lambda r: r["val"])


def run_config(setting, make_kernel, data, N, T, seed, grids):
    """Every method at budget ``N`` on one data set; returns the selected and all results."""
    bud = budgets(N, T)
    t0 = time.perf_counter()
    sgd, ls = run_fixed(make_kernel, data, bud["r"], seed, grids["fixed"])
    dsg = run_dsg(make_kernel, data, bud["k"], bud["b"], seed, grids["dsg"])
    sg = run_shrinking(make_kernel, data, bud["m"], bud["r"], seed, grids["shrinking"])
    grid = {"fixed_sgd": sgd, "fixed_ls": ls, "dsg": dsg, "shrinking": sg}
    probe = make_kernel(1)
    if hasattr(probe, "kernel"):
        grid["exact_ogd"], grid["exact_krr"] = run_exact(probe.kernel, data, grids["shrinking"])
    chosen = {k: _best(v) for k, v in grid.items()}
    return {"setting": setting, "budget": N, "T": T, "seed": seed, **bud,
            "test": {k: v["test"] for k, v in chosen.items()},
            "selected": chosen, "grid": grid,
            "seconds": round(time.perf_counter() - t0, 2)}


# --------------------------------------------------------------------------- #
# the experiment
# --------------------------------------------------------------------------- #
def plan(quick):
    if quick:
        return {"repeats": 1, "coord_T": 100, "coord_D": [300], "coord_budget_D": 300,
                "coord_budgets": [1.0, 2.0], "iln_T": 200, "iln_d": 20,
                "iln_budgets": {"sigmoid": [0.5, 2.0]}, "activations": ["sigmoid"], "n_val": 300,
                "n_test": 500}
    return {"repeats": 1, "coord_T": 200, "coord_D": [550, 600, 650, 700, 750, 800],
            "coord_budget_D": 800, "coord_budgets": [0.5, 1.0, 2.0], "iln_T": 500,
            "iln_d": 50, "iln_budgets": {"sigmoid": [0.25, 0.5, 1.0, 2.0],
                                         "relu": [0.25, 0.5, 1.0, 2.0, 8.0]},
            "activations": ["sigmoid", "relu"], "n_val": 500, "n_test": 2000}


# Step sizes, a factor of 4 apart: one-pass SGD on the fixed features (last
# and averaged iterate), DSG's constant step (averaged iterates, which beat
# the last iterate in every trial run), and the Shrinking Gradient's eta0
# (eta = eta0 B / sqrt(T), B = 1, averaged iterates as in the paper), which
# the exact-kernel OGD reference shares.
GRIDS = {"fixed": [1 / 16, 1 / 4, 1.0, 2.0],
         "dsg": [(e, True) for e in (1 / 64, 1 / 16, 1 / 4, 1.0)],
         "shrinking": [0.25, 1.0, 4.0, 16.0]}


def experiment(quick, seed=0, log=print):
    p = plan(quick)
    configs = []
    coords = lambda F: Coordinates(n_components=F)  # noqa: E731
    T = p["coord_T"]
    # the paper's figure: error against D at a budget of T^2, then against the budget
    jobs = [("coordinates", D, 1.0) for D in p["coord_D"]]
    jobs += [("coordinates", p["coord_budget_D"], f) for f in p["coord_budgets"] if f != 1.0]
    for rep in range(p["repeats"]):
        for setting, D, f in jobs:
            data = coordinates_problem(D, T, p["n_val"], p["n_test"], seed + 1000 * rep + D)
            res = run_config(setting, coords, data, f * T * T, T, seed + rep, GRIDS)
            res.update(D=D, budget_factor=f, repeat=rep)
            configs.append(res)
            log(_line(res))
    T, d = p["iln_T"], p["iln_d"]
    for activation in p["activations"]:
        def units(F, activation=activation):
            return get_feature_map("iln", n_components=F, gamma=1.0 / d, activation=activation,
                                   bias=1.0)
        for rep in range(p["repeats"]):
            data = iln_problem(activation, d, T, p["n_val"], p["n_test"], seed + 7 + rep)
            for f in p["iln_budgets"][activation]:
                res = run_config(f"iln-{activation}", units, data, f * T * T, T, seed + rep,
                                 GRIDS)
                res.update(D=d, budget_factor=f, repeat=rep)
                configs.append(res)
                log(_line(res))
    return p, configs


def _line(res):
    t = res["test"]
    return (f"{res['setting']:>12} D={res['D']:<4} N={res['budget_factor']:g} T^2 "
            f"(r={res['r']} k/b={res['k']}/{res['b']} m={res['m']})  "
            + "  ".join(f"{m}={t[m]:.3f}" for m in METHODS) + f"  [{res['seconds']:.1f}s]")


def summarize(configs):
    """Mean test error per setting, D and budget, and which online method wins."""
    groups = {}
    for c in configs:
        groups.setdefault((c["setting"], c["D"], c["budget_factor"]), []).append(c)
    rows = []
    for (setting, D, f), cs in sorted(groups.items()):
        mean = {m: float(np.mean([c["test"][m] for c in cs])) for m in METHODS + REFERENCES
                if m in cs[0]["test"]}
        online = {m: mean[m] for m in ("fixed_sgd", "dsg", "shrinking")}
        rows.append({"setting": setting, "D": D, "budget_factor": f,
                     "budget": cs[0]["budget"], "r": cs[0]["r"], "k": cs[0]["k"],
                     "b": cs[0]["b"], "m": cs[0]["m"], "repeats": len(cs),
                     "test_rel_mse": mean, "winner_one_pass": min(online, key=online.get),
                     "winner_random_features": min(
                         (m for m in METHODS), key=mean.get),
                     "shrinking_r_features": float(np.mean(
                         [c["selected"]["shrinking"]["test_r_features"] for c in cs]))})
    return rows


def targets(summary):
    """The claims the run checks, in the form ``benchmarks/run.py`` collects."""
    def fraction(rows, better, worse):
        return sum(r["test_rel_mse"][better] < r["test_rel_mse"][worse] for r in rows) / len(rows)

    coords = [r for r in summary if r["setting"] == "coordinates"]
    relu = sorted((r for r in summary if r["setting"] == "iln-relu"),
                  key=lambda r: r["budget_factor"])
    out = [{"id": "iln.shrinking_beats_dsg", "comparison": ">=", "threshold": 1.0,
            "value": fraction(summary, "shrinking", "dsg"),
            "description": "fraction of the configurations where the Shrinking Gradient's "
                           "test error is below DSG's at the same budget"}]
    if coords:
        wins = sum(r["winner_one_pass"] == "shrinking" for r in coords) / len(coords)
        out.append({"id": "iln.shrinking_best_one_pass_coordinates", "comparison": ">=",
                    "threshold": 1.0, "value": wins,
                    "description": "Livni et al.'s figure 1: the Shrinking Gradient has the "
                                   "lowest one-pass test error in their setting, at every D "
                                   "and budget (fraction of the configurations where it does)"})
    if len(relu) > 1:
        first, last = relu[0]["test_rel_mse"], relu[-1]["test_rel_mse"]
        out.append({"id": "iln.shrinking_improves_with_budget_relu", "comparison": "<",
                    "threshold": first["shrinking"], "value": last["shrinking"],
                    "description": f"the Shrinking Gradient's test error at "
                                   f"{relu[-1]['budget_factor']:g} T^2 evaluations is below "
                                   f"its error at {relu[0]['budget_factor']:g} T^2 (ReLU units; "
                                   f"exact-kernel OGD: {last.get('exact_ogd', float('nan')):.3f})"})
    for t in out:
        v, th = t["value"], t["threshold"]
        t["status"] = "pass" if (v >= th if t["comparison"] == ">=" else v < th) else "fail"
    return out


def plot(summary, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    settings = sorted({r["setting"] for r in summary})
    panels = []
    for s in settings:
        rows = [r for r in summary if r["setting"] == s]
        if s == "coordinates":
            panels.append((s, "D", [r for r in rows if r["budget_factor"] == 1.0]))
            Dmax = max(r["D"] for r in rows)
            panels.append((s, "budget", [r for r in rows if r["D"] == Dmax]))
        else:
            panels.append((s, "budget", rows))
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6), squeeze=False)
    for i, (ax, (s, axis, rows)) in enumerate(zip(axes[0], panels)):
        key = (lambda r: r["D"]) if axis == "D" else (lambda r: r["budget_factor"])
        rows = sorted(rows, key=key)
        xs = [key(r) for r in rows]
        for m, style in zip(METHODS + REFERENCES, ("o-", "s:", "^-", "D-", "x--", "+--")):
            if m in rows[0]["test_rel_mse"]:
                ax.plot(xs, [r["test_rel_mse"][m] for r in rows], style, label=LABELS[m],
                        **({"color": "gray", "alpha": 0.7} if m in REFERENCES else {}))
        if axis == "budget":
            ax.set_xscale("log", base=2)
            ax.set_xlabel("feature evaluations / T^2")
            title = f"{s}" + (f", D={rows[0]['D']}" if s == "coordinates" else "")
        else:
            ax.set_xlabel("input dimension D (budget T^2)")
            title = s
        ax.set_yscale("log")
        ax.set_ylabel("test MSE / Var(y)")
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3, which="both")
        if i == 0 or s == "iln-relu":
            ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    ap = argument_parser(__doc__, "smoke run on small problems")
    add_seed(ap)
    ap.add_argument("--output", type=Path, default=None, help="JSON path")
    ap.add_argument("--png", type=Path, default=None, help="figure path")
    args = ap.parse_args(argv)
    name = "iln_quick" if args.quick else "iln"
    out = args.output or RESULTS_DIR / f"{name}.json"
    png = args.png or out.with_suffix(".png")
    start = time.perf_counter()
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    p, configs = experiment(args.quick, args.seed, log=lambda s: print(s, flush=True))
    summary = summarize(configs)
    report = {
        "benchmark": "iln",
        "description": __doc__.split("\n\n")[0],
        "machine": {"platform": platform.platform(), "python": platform.python_version(),
                    "numpy": np.__version__, "onlinekernel": onlinekernel.__version__,
                    "cpu_count": os.cpu_count(), "load_average_start": load,
                    "load_average_end": os.getloadavg() if load else None},
        "plan": p, "grids": GRIDS, "sg_prediction_features": SG_PREDICT_BLOCKS * SG_BLOCK,
        "metric": "test MSE / Var(y_test), step size chosen on a validation set",
        "summary": summary, "targets": targets(summary), "configs": configs,
        "wall_seconds": round(time.perf_counter() - start, 1),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(report, indent=1))
    os.replace(tmp, out)
    plot(summary, png)
    cols = METHODS + REFERENCES
    print(f"\n{'setting':>12} {'D':>4} {'N/T^2':>6}  " + " ".join(f"{m:>10}" for m in cols)
          + "  winner (one pass)")
    for r in summary:
        print(f"{r['setting']:>12} {r['D']:>4} {r['budget_factor']:>6g}  "
              + " ".join(f"{r['test_rel_mse'][m]:>10.4f}" if m in r["test_rel_mse"]
                         else f"{'-':>10}" for m in cols)
              + f"  {r['winner_one_pass']}")
    for t in report["targets"]:
        print(f"{t['status']:>4}  {t['id']}: {t['value']:.3f} ({t['comparison']} "
              f"{t['threshold']:.3f})")
    print(f"\nwrote {out} and {png} in {report['wall_seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
