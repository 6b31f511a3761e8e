r"""Extreme learning machines and weighted random kitchen sinks against the exact ridge solver and SGD.

At the same number of random features ``M`` on each dataset, the test error
and fit time of

* ``ELM``: :class:`onlinekernel.ExtremeLearningMachineRegressor` /
  ``Classifier`` (random ReLU units, ``kernel="iln"``; ridge output layer by
  Cholesky; ``alpha`` chosen on a validation split);
* ``WRKS``: :class:`onlinekernel.WeightedKitchenSinksRegressor` /
  ``Classifier`` (Gaussian random Fourier features; weights in the
  L-infinity ball ``|c_k| <= radius / M`` of Rahimi & Recht 2008, fitted by
  accelerated projected gradient; ``radius`` chosen on the validation split;
  squared loss for regression, logistic / multinomial for classification);
* ``ridge``: ``DSGRegressor`` / ``DSGClassifier(loss="squared")`` with the
  Gaussian map and ``solver="cholesky"`` (``alpha`` chosen on the validation
  split): the exact kernel ridge optimum on the same features;
* ``SGD``: the same estimators with ``solver="sgd"`` at their defaults
  (the library's default loss: squared for regression, logistic /
  multinomial for classification), ``max_iter`` epochs at most.

Datasets: ``cadata`` and ``kin8nm`` (regression, test RMSE in units of the
training target's standard deviation) and ``ijcnn1`` (binary, test error
rate).  Inputs are standardised on the training split; at most
``--max-train`` training rows and 20,000 test rows are used (seeded random
subsets, kept in the file's order); the last 20 % of the training rows are
the validation split for the parameter choices, after which each model is
refitted on all of them.  Fit times are of the final fit (one thread, BLAS
included).

Run from the repository root::

    python -m benchmarks.elm_wrks           # M = 1024, 8,000 training rows, about 5 minutes
    python -m benchmarks.elm_wrks --quick   # M = 128, 1,000 rows, two parameter values
"""
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from onlinekernel import (DSGClassifier, DSGRegressor, ExtremeLearningMachineClassifier,
                          ExtremeLearningMachineRegressor, WeightedKitchenSinksClassifier,
                          WeightedKitchenSinksRegressor)

from ._common import (add_data_dir, add_output_dir, argument_parser, load_dataset, make_logger,
                      report_header, write_results)

DATASETS = ("cadata", "kin8nm", "ijcnn1")
REGRESSION = ("cadata", "kin8nm", "kin40k", "cpusmall", "abalone", "protein", "power_plant",
              "concrete", "energy_heating")
ALPHAS = (1e-7, 1e-5, 1e-3)
RADII = (3.0, 10.0, 30.0, 100.0)
METHODS = ("ELM", "WRKS", "ridge", "SGD")


def prepare(name, data_dir, max_train, max_test=20_000):
    """Standardised training (first ``max_train`` rows) and test splits, and the task."""
    X, y, Xt, yt = load_dataset(name, data_dir)
    # seeded subsets, in the file's order
    rows = np.sort(np.random.default_rng(0).permutation(X.shape[0])[:max_train])
    test = np.sort(np.random.default_rng(1).permutation(Xt.shape[0])[:max_test])
    X, y, Xt, yt = X[rows], y[rows], Xt[test], yt[test]
    mu, sd = X.mean(axis=0), X.std(axis=0)
    sd[sd == 0] = 1.0
    X, Xt = (X - mu) / sd, (Xt - mu) / sd
    regression = name in REGRESSION or y.dtype.kind == "f"
    if regression:
        ym, ys = y.mean(), y.std()
        y, yt = (y - ym) / ys, (yt - ym) / ys
    return X, y, Xt, yt, regression


def error(model, X, y, regression):
    """Test RMSE (regression, standardised targets) or error rate (classification)."""
    pred = model.predict(X)
    if regression:
        return float(np.sqrt(np.mean((pred - y) ** 2)))
    return float(np.mean(pred != y))


def factories(regression, M, max_iter_sgd, wrks_iter, seed=0):
    """Each method's model for a value of its tuned parameter (None: not tuned)."""
    if regression:
        elm, wrks, dsg, ridge = (ExtremeLearningMachineRegressor, WeightedKitchenSinksRegressor,
                                 DSGRegressor, {})
    else:  # the ridge classifier: one squared-loss output per class
        elm, wrks, dsg, ridge = (ExtremeLearningMachineClassifier, WeightedKitchenSinksClassifier,
                                 DSGClassifier, {"loss": "squared"})
    common = {"n_components": M, "block_size": min(256, M), "random_state": seed}
    return {
        "ELM": (lambda a: elm(**common, alpha=a), ALPHAS, "alpha"),
        "WRKS": (lambda r: wrks(**common, radius=r, max_iter=wrks_iter, tol=1e-4), RADII,
                 "radius"),
        "ridge": (lambda a: dsg(**ridge, **common, alpha=a, solver="cholesky"), ALPHAS, "alpha"),
        "SGD": (lambda _: dsg(**common, solver="sgd", max_iter=max_iter_sgd), (None,), None),
    }


def fit_quiet(model, X, y):
    """Fit, recording (not printing) a ConvergenceWarning; returns (seconds, converged)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        t0 = time.perf_counter()
        model.fit(X, y)
        seconds = time.perf_counter() - t0
    return seconds, not any(issubclass(w.category, ConvergenceWarning) for w in caught)


def run_dataset(name, X, y, Xt, yt, regression, M, grid, max_iter_sgd, wrks_iter, log):
    n_val = max(1, X.shape[0] // 5)
    Xa, ya, Xv, yv = X[:-n_val], y[:-n_val], X[-n_val:], y[-n_val:]
    rows = []
    for method, (make, values, pname) in factories(regression, M, max_iter_sgd,
                                                   wrks_iter).items():
        values = values if pname is None else values[:grid]
        validation = {}
        if len(values) > 1:
            for v in values:
                model = make(v)
                fit_quiet(model, Xa, ya)
                validation[str(v)] = error(model, Xv, yv, regression)
            best = values[int(np.argmin([validation[str(v)] for v in values]))]
        else:
            best = values[0]
        model = make(best)
        seconds, converged = fit_quiet(model, X, y)
        row = {"method": method, "estimator": type(model).__name__,
               "loss": getattr(model.loss_, "name", str(model.loss_)),
               "kernel": model.kernel if isinstance(model.kernel, str) else str(model.kernel),
               "n_features": int(model.n_random_features_), "parameter": pname,
               "value": best, "validation_error": validation,
               "test_error": error(model, Xt, yt, regression), "fit_time_s": seconds,
               "solver": model.solver_, "n_iter": int(model.n_iter_),
               "converged": converged}
        if method == "WRKS":
            bound = model.radius / model.n_random_features_
            row["max_abs_coef_over_bound"] = float(np.abs(model.coef_).max() / bound)
        rows.append(row)
        log(f"{name}: {method:5s} {pname or '-'}={best} test "
            f"{'RMSE' if regression else 'error'} {row['test_error']:.4f} "
            f"fit {seconds:.2f}s ({model.solver_}, {row['n_iter']} iterations"
            f"{'' if converged else ', not converged'})")
    return {"dataset": name, "task": "regression" if regression else "classification",
            "metric": "RMSE (std units)" if regression else "error rate",
            "n_train": int(X.shape[0]), "n_test": int(Xt.shape[0]), "n_inputs": int(X.shape[1]),
            "results": rows}


def markdown(report):
    s = report["settings"]
    lines = [f"# ELM and weighted random kitchen sinks against ridge and SGD ({report['mode']})",
             "",
             f"M = {s['n_features']} random features for every method; at most "
             f"{s['max_train']} training rows (standardised); one thread.  Regression: test "
             f"RMSE in units of the training target's std; classification: test error rate.  "
             f"ELM: ReLU units (`iln`, `bias='auto'`), ridge output; WRKS: Gaussian features, weights in "
             f"`|c|_inf <= radius / M`; ridge: Gaussian features, `solver=\"cholesky\"`; "
             f"SGD: Gaussian features, `solver=\"sgd\"` (at most {s['max_iter_sgd']} epochs).  "
             f"`alpha` / `radius` chosen on a 20 % validation split, then refitted.",
             "",
             "| dataset | method | loss | tuned | test error | fit time (s) | iterations |",
             "|---|---|---|---|---:|---:|---:|"]
    for res in report["datasets"]:
        for r in res["results"]:
            tuned = "-" if r["parameter"] is None else f"{r['parameter']}={r['value']:g}"
            it = f"{r['n_iter']}{'' if r['converged'] else ' (not converged)'}"
            lines.append(f"| {res['dataset']} ({res['metric']}) | {r['method']} | {r['loss']} "
                         f"| {tuned} | {r['test_error']:.4f} | {r['fit_time_s']:.2f} | {it} |")
    return "\n".join(lines)


def parse_args(doc, argv, datasets, *options):
    """The options of this script and of ``nystrom.py``: ``--data-dir``,
    ``--datasets``, ``--n-features``, the integer ``options`` (default None),
    ``--max-train``, ``--quick`` and ``--output-dir``."""
    parser = argument_parser(doc)
    add_data_dir(parser)
    parser.add_argument("--datasets", nargs="+", default=list(datasets))
    for option in ("--n-features", *options, "--max-train"):
        parser.add_argument(option, type=int, default=None)
    add_output_dir(parser)
    return parser.parse_args(argv)


def run_datasets(args, report, max_train, run, **prepare_kw):
    """``run(name, X, y, Xt, yt, regression)`` on each prepared dataset, one BLAS thread;
    then the report's files."""
    report["datasets"] = []
    with threadpool_limits(1):
        for name in args.datasets:
            X, y, Xt, yt, regression = prepare(name, args.data_dir, max_train, **prepare_kw)
            report["datasets"].append(run(name, X, y, Xt, yt, regression))


def main(argv=None):
    args = parse_args(__doc__, argv, DATASETS)
    log = make_logger()
    M = args.n_features or (128 if args.quick else 1024)
    max_train = args.max_train or (1000 if args.quick else 8000)
    grid = 2 if args.quick else len(RADII)
    max_iter_sgd = 5 if args.quick else 30
    wrks_iter = 200 if args.quick else 2000
    report = report_header("elm_wrks", "quick" if args.quick else "full")
    report["settings"] = {"n_features": M, "max_train": max_train, "alphas": ALPHAS[:grid],
                          "radii": RADII[:grid], "max_iter_sgd": max_iter_sgd,
                          "wrks_max_iter": wrks_iter}
    run_datasets(args, report, max_train, lambda *data: run_dataset(
        *data, M, grid, max_iter_sgd, wrks_iter, log))
    write_results(report, args.output_dir, args.quick, markdown, log)
    return report


if __name__ == "__main__":
    main()
