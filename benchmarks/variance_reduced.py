"""SVRG and SARAH against SGD: objective gap against passes over the data, at the same features.

Issue 15's target: the variance-reduced solvers (``solver="svrg"`` and
``solver="sarah"``, :mod:`onlinekernel.solvers.variance_reduced`) reach the
solvers' tolerance (relative gradient norm ``tol``, 1e-4 by default) in
fewer passes over the data than plain SGD (``solver="sgd"``) on 3 datasets.

For each dataset (inputs standardised, regression targets too; a subset of
the training rows) one model's random features are fixed (``max_blocks *
block_size`` of them, the model's seed) and the regularised risk of
:class:`onlinekernel.solvers.Problem` is minimised on them by

* ``newton-cg`` to ``tol=1e-10``: the optimum ``J*``;
* ``sgd``: the estimator's own doubly stochastic epochs (its defaults for
  the loss; ``warm_start`` one epoch at a time, ``tol=None``), whose
  iterate is evaluated on the same problem after every epoch (the blocks
  not yet added count as zero coefficients);
* ``svrg`` and ``sarah`` from zero, with their defaults (centred
  coordinates, 16 rows per step), reporting after every epoch;
* for context, ``svrg-plain`` and ``sarah-plain``: the same in the plain
  coordinates (``centred=False``, the solvers before issue 15's step
  rule was revisited), for a third of SGD's epochs (about its passes).

For context, ``newton-cg``'s passes to ``tol`` are recorded too (products
with the whole feature matrix, two per pass).  Passes count row gradients
over ``n``: an SGD epoch is one, an SVRG or
SARAH epoch three (one full gradient, two gradients per row of the inner
steps; the full gradient is where the stopping rule is checked), and their
set-up (the mean row, the largest row norm, the power iterations on a
sample of rows) is counted too.  Recorded:
the relative objective gap ``(J - J*) / J*``, the relative gradient norm
``|grad J| / |grad J(0)|`` (the stopping criterion) and the time.  The
report says, per dataset, after how many passes each method first reaches
``tol`` (``None``: not within its budget) and whether SVRG and SARAH need
fewer than SGD: they do when they reach ``tol`` and SGD reaches it later,
or not at all within its budget while they reach it within that budget
(reaching it after more passes than SGD was given would compare nothing).

Writes ``results/variance_reduced.json`` (``--quick``:
``variance_reduced_quick.json``; ``--stem``: another name) and a figure with
one panel per dataset.  ``--datasets a9a cpusmall usps --stem
variance_reduced_more`` is the second run of ``benchmarks/README.md``.
"""
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from onlinekernel import DSGClassifier, DSGRegressor
from onlinekernel.solvers import FeatureOperator, Problem, solve_newton_cg, solve_sarah, solve_svrg

from ._common import (add_data_dir, add_output_dir, argument_parser, load_average, load_dataset,
                      make_logger, report_header, write_json)

# dataset: (task, loss); the first three are issue 15's run, the others a second one
DATASETS = {"ijcnn1": ("classification", "logistic"),
            "cadata": ("regression", "squared"),
            "letter": ("classification", "multinomial"),
            "a9a": ("classification", "logistic"),
            "cpusmall": ("regression", "squared"),
            "usps": ("classification", "multinomial")}
DEFAULT_DATASETS = ["ijcnn1", "cadata", "letter"]
TOL = 1e-4


def _standardise(X, y, regression):
    mean, std = X.mean(axis=0), X.std(axis=0)
    X = (X - mean) / np.where(std > 0, std, 1.0)
    if regression:
        y = (y - y.mean()) / y.std()
    return np.ascontiguousarray(X), y


def _estimator(task, loss, settings, **kw):
    common = dict(block_size=settings["block_size"], max_blocks=settings["max_blocks"],
                  alpha=settings["alpha"], random_state=0)
    if task == "regression":
        return DSGRegressor(loss=loss, normalize_y=False, **common, **kw)
    return DSGClassifier(loss="logistic" if loss == "multinomial" else loss, **common, **kw)


def _targets(est, y):
    """``(Y, K)``: the targets as the fitted estimator's loss sees them, K outputs.

    Real targets (the regressor, ``normalize_y=False``): one column.  Labels:
    the class index for a ``class_index`` loss (multinomial), else +-1
    margins, one column for two classes and one a class beyond.
    """
    encoding = est.loss_.target_encoding
    if encoding == "real":
        Y = np.asarray(y, dtype=np.float64).reshape(len(y), -1)
        return Y, Y.shape[1]
    classes = est.classes_
    if encoding == "class_index":
        return np.searchsorted(classes, y).astype(np.float64)[:, None], classes.size
    if classes.size == 2:
        return np.where(y == classes[1], 1.0, -1.0)[:, None], 1
    return np.where(np.asarray(y)[:, None] == classes[None, :], 1.0, -1.0), classes.size


def _problem(est, X, y):
    """The estimator's regularised risk on its full budget of features."""
    Y, K = _targets(est, y)
    op = FeatureOperator(est.feature_map_, est.seed_, est.n_blocks_, X, max_bytes=1 << 32)
    return Problem(op, est.loss_, Y, np.ones(X.shape[0]), est.alpha, est.fit_intercept, K)


def _model(est, M):
    """``(C, b)`` of a fitted estimator on ``M`` features (missing blocks: zero)."""
    coef = np.asarray(est.coef_, dtype=np.float64)
    if coef.ndim == 1:
        coef = coef[:, None]
    C = np.zeros((M, coef.shape[1]))
    C[:coef.shape[0]] = coef
    return C, np.asarray(est.intercept_, dtype=np.float64).reshape(-1)


def _first_pass_at(curve, tol):
    return next((pt["passes"] for pt in curve if pt["gradient_norm"] <= tol), None)


def _fewer_passes(vr, sgd, sgd_budget):
    """SVRG/SARAH reached tol after ``vr`` passes, before SGD (``sgd``; None: not
    within its ``sgd_budget`` passes, which then bounds ``vr``)."""
    if vr is None:
        return False
    return vr < sgd if sgd is not None else vr <= sgd_budget


def run_dataset(name, X, y, settings, log):
    task, loss = DATASETS.get(name, ("classification", "logistic"))
    if task == "classification" and np.unique(y).size > 2:
        loss = "multinomial"
    X, y = _standardise(X, y, task == "regression")
    ref_est = _estimator(task, loss, settings, solver="newton-cg", tol=1e-10).fit(X, y)
    problem = _problem(ref_est, X, y)
    C, b = _model(ref_est, problem.M)
    decision = (ref_est.predict(X) if task == "regression" else ref_est.decision_function(X))
    check = float(np.max(np.abs(problem.raw(C, b) - np.reshape(decision, (X.shape[0], -1)))))
    # newton-cg's passes: products with the whole feature matrix, two per pass
    products = {"n": 0}
    op, matvec, rmatvec = problem.features, problem.features.matvec, problem.features.rmatvec
    op.matvec = lambda C: products.__setitem__("n", products["n"] + 1) or matvec(C)
    op.rmatvec = lambda G: products.__setitem__("n", products["n"] + 1) or rmatvec(G)
    newton_curve = []
    t0 = time.perf_counter()
    ref = solve_newton_cg(problem, tol=1e-10, callback=lambda n, gradient_norm, **v: (
        newton_curve.append({"n_iter": n, "passes": products["n"] / 2,
                             "gradient_norm": gradient_norm})))
    newton_s = time.perf_counter() - t0
    del op.matvec, op.rmatvec
    f_star = ref.objective
    zero = np.zeros((problem.M, problem.K)), np.zeros(problem.K)
    g0 = Problem.norm(*problem.gradient(zero[0], problem.raw(*zero)))
    f0 = problem.value(zero[0], problem.raw(*zero))
    start = {"passes": 0.0, "gap": (f0 - f_star) / f_star, "gradient_norm": 1.0, "time_s": 0.0}
    res = {"n_train": X.shape[0], "d": X.shape[1], "loss": loss, "n_outputs": problem.K,
           "n_features": problem.M, "alpha": settings["alpha"], "objective_optimum": f_star,
           "newton_cg": {"n_iter": ref.n_iter, "time_s": newton_s,
                         "passes_to_tol": _first_pass_at(newton_curve, TOL),
                         "curve": newton_curve},
           "model_check_max_abs": check, "curves": {}}

    # SGD: the estimator's epochs, one fit call each
    sgd = _estimator(task, loss, settings, solver="sgd", max_iter=1, tol=None, warm_start=True)
    curve, t = [dict(start)], 0.0
    for epoch in range(1, settings["sgd_epochs"] + 1):
        t1 = time.perf_counter()
        sgd.fit(X, y)
        t += time.perf_counter() - t1
        C, b = _model(sgd, problem.M)
        U = problem.raw(C, b)
        f = problem.value(C, U)
        g = Problem.norm(*problem.gradient(C, U)) / g0
        curve.append({"passes": float(epoch), "gap": (f - f_star) / f_star,
                      "gradient_norm": g, "time_s": t})
    res["curves"]["sgd"] = curve
    log(f"{name}: sgd after {settings['sgd_epochs']} passes: gap {curve[-1]['gap']:.2e}, "
        f"gradient norm {curve[-1]['gradient_norm']:.2e}")

    # an epoch is three passes: the plain coordinates get SGD's budget of passes
    plain_epochs = settings["sgd_epochs"] // 3
    runs = [("svrg", solve_svrg, True, settings["vr_epochs"]),
            ("sarah", solve_sarah, True, settings["vr_epochs"]),
            ("svrg-plain", solve_svrg, False, plain_epochs),
            ("sarah-plain", solve_sarah, False, plain_epochs)]
    for method, solve, centred, epochs in runs:
        curve = [dict(start)]
        t1 = time.perf_counter()

        def record(n_iter, objective, gradient_norm, step, passes, curve=curve, t1=t1):
            curve.append({"passes": passes, "gap": (objective - f_star) / f_star,
                          "gradient_norm": gradient_norm, "step": step,
                          "time_s": time.perf_counter() - t1})

        sol = solve(problem, tol=settings["vr_tol"], max_iter=epochs, centred=centred,
                    callback=record)
        res["curves"][method] = curve
        log(f"{name}: {method} {sol.n_iter} epochs ({curve[-1]['passes']:.0f} passes, "
            f"{curve[-1]['time_s']:.1f} s): gap {curve[-1]['gap']:.2e}, gradient norm "
            f"{sol.gradient_norm:.2e}")
    problem.features.close()
    reached = {m: _first_pass_at(c, TOL) for m, c in res["curves"].items()}
    res["passes_to_tol"] = reached
    for m in ("svrg", "sarah"):
        res[f"{m}_fewer_passes_than_sgd"] = _fewer_passes(reached[m], reached["sgd"],
                                                          float(settings["sgd_epochs"]))
    return res


def plot(report, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(report["datasets"])
    fig, axes = plt.subplots(1, len(names), figsize=(4.6 * len(names), 3.8), squeeze=False)
    for ax, name in zip(axes[0], names):
        res = report["datasets"][name]
        for method, style in (("sgd", "C0-"), ("svrg", "C1-"), ("sarah", "C2-"),
                              ("svrg-plain", "C1--"), ("sarah-plain", "C2--")):
            c = res["curves"][method]
            gaps = [max(p["gap"], 1e-16) for p in c]
            ax.semilogy([p["passes"] for p in c], gaps, style, marker=".", ms=3, label=method)
            hit = res["passes_to_tol"][method]
            if hit is not None:
                ax.axvline(hit, color=style[:2], ls=":", lw=1)
        ax.set_title(f"{name} ({res['loss']}, n={res['n_train']}, M={res['n_features']})",
                     fontsize=9)
        ax.set_xlabel("passes over the data")
        ax.set_xlim(0, 1.05 * max(res["curves"]["sgd"][-1]["passes"],
                                  res["curves"]["svrg"][-1]["passes"],
                                  res["curves"]["sarah"][-1]["passes"]))
        ax.set_ylabel("(J - J*) / J*")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, title=f"dotted: |grad| <= {TOL:g} |grad_0|", title_fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    parser = argument_parser(__doc__)
    add_data_dir(parser)
    parser.add_argument("--datasets", nargs="+", default=DEFAULT_DATASETS)
    parser.add_argument("--rows", type=int, default=20_000, help="training rows used")
    add_output_dir(parser)
    parser.add_argument("--stem", default="variance_reduced",
                        help="name of the results files (another set of datasets)")
    args = parser.parse_args(argv)
    log = make_logger()
    settings = ({"rows": 1000, "block_size": 32, "max_blocks": 2, "alpha": 1e-3,
                 "sgd_epochs": 5, "vr_epochs": 20, "vr_tol": 1e-6} if args.quick else
                {"rows": args.rows, "block_size": 128, "max_blocks": 4, "alpha": 1e-4,
                 "sgd_epochs": 60, "vr_epochs": 400, "vr_tol": 1e-5})
    mode = "quick" if args.quick else "full"
    report = report_header("variance_reduced", mode)
    report.update({"settings": dict(settings, tol=TOL), "datasets": {}})
    with threadpool_limits(1):
        for name in args.datasets:
            X, y, _, _ = load_dataset(name, args.data_dir)
            rows = np.random.default_rng(0).permutation(X.shape[0])[:settings["rows"]]
            y = np.asarray(y)[rows]
            y = y.astype(np.float64) if DATASETS.get(name, ("",))[0] == "regression" else y
            report["datasets"][name] = run_dataset(name, X[rows], y, settings, log)
    report["load_average_at_end"] = load_average()
    report["targets"] = [
        {"target": f"{name}: {m}_fewer_passes_than_sgd", "met": res[f"{m}_fewer_passes_than_sgd"],
         "passes": res["passes_to_tol"]}
        for name, res in report["datasets"].items() for m in ("svrg", "sarah")]
    out_dir = Path(args.output_dir)
    stem = args.stem + ("_quick" if args.quick else "")
    path = write_json(out_dir / f"{stem}.json", report)
    plot(report, out_dir / f"{stem}.png")
    log(f"written {path} and {stem}.png")
    for name, res in report["datasets"].items():
        p = res["passes_to_tol"]
        print(f"{name}: passes to tol={TOL:g}: " + ", ".join(f"{m} {v}" for m, v in p.items())
              + f"; svrg fewer: {res['svrg_fewer_passes_than_sgd']}, "
              f"sarah fewer: {res['sarah_fewer_passes_than_sgd']}")
    return report


if __name__ == "__main__":
    main()
