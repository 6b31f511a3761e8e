r"""Nystrom features against Gaussian random Fourier features at equal M, same estimator.

On each dataset, the test error and the fit time of the same estimator --
:class:`onlinekernel.DSGRegressor` (squared loss) for regression,
:class:`onlinekernel.DSGClassifier` with ``loss="squared"`` (one ridge
output per class) for classification, both with ``solver="cholesky"``, the
exact ridge optimum on the features -- with ``M`` features of

* ``rff``: the ``gaussian`` map (random Fourier features);
* ``nystrom``: the ``nystrom`` map with the Gaussian base kernel and
  uniformly chosen landmarks;
* ``nystrom-kmeans++`` and ``nystrom-leverage``: the same with landmarks by
  k-means++ seeding and by approximate ridge leverage scores.

Everything else is equal: ``gamma="scale"`` (the same value for every map,
as it comes from the data), the budget ``n_components=M`` in blocks of
``block_size``, the seed, and ``alpha`` chosen for each map on the same
validation split (the last 20 % of the training rows) from the same grid,
then refitted on all training rows.  Datasets: ``letter``, ``usps``,
``fashion_mnist`` (classification, test error rate) and ``cadata``,
``kin40k`` (regression, test RMSE in units of the training target's
standard deviation); inputs standardised on the training split, at most
``--max-train`` training and 10,000 test rows (seeded random subsets,
kept in the file's order).  Fit times are of the final fit on one thread
(BLAS included), the landmark choice included for Nystrom.

Run from the repository root::

    python -m benchmarks.nystrom           # M = 1024, 12,000 training rows, about 10 minutes
    python -m benchmarks.nystrom --quick   # M = 128, 1,000 rows, two alphas
"""
import numpy as np

from onlinekernel import DSGClassifier, DSGRegressor

from ._common import make_logger, report_header, write_results
from .elm_wrks import error, fit_quiet, parse_args, run_datasets

DATASETS = ("letter", "usps", "cadata", "kin40k", "fashion_mnist")
ALPHAS = (1e-7, 1e-5, 1e-3, 1e-1)
# method -> the map's kernel and kernel_params
METHODS = {
    "rff": ("gaussian", None),
    "nystrom": ("nystrom", {"sampling": "uniform"}),
    "nystrom-kmeans++": ("nystrom", {"sampling": "kmeans++"}),
    "nystrom-leverage": ("nystrom", {"sampling": "leverage"}),
}


def make(regression, kernel, kernel_params, M, block_size, alpha, seed=0):
    """The benchmark's estimator with the given map and alpha."""
    common = dict(kernel=kernel, kernel_params=kernel_params, gamma="scale", n_components=M,
                  block_size=block_size, alpha=alpha, solver="cholesky", random_state=seed)
    if regression:
        return DSGRegressor(**common)
    return DSGClassifier(loss="squared", **common)


def run_dataset(name, X, y, Xt, yt, regression, M, block_size, alphas, log):
    n_val = max(1, X.shape[0] // 5)
    Xa, ya, Xv, yv = X[:-n_val], y[:-n_val], X[-n_val:], y[-n_val:]
    rows = []
    for method, (kernel, kernel_params) in METHODS.items():
        validation = {}
        for a in alphas:
            model = make(regression, kernel, kernel_params, M, block_size, a)
            fit_quiet(model, Xa, ya)
            validation[str(a)] = error(model, Xv, yv, regression)
        best = alphas[int(np.argmin([validation[str(a)] for a in alphas]))]
        model = make(regression, kernel, kernel_params, M, block_size, best)
        seconds, converged = fit_quiet(model, X, y)
        row = {"method": method, "kernel": kernel, "kernel_params": kernel_params,
               "n_features": int(model.n_random_features_), "gamma": float(model.gamma_),
               "alpha": best, "validation_error": validation,
               "test_error": error(model, Xt, yt, regression), "fit_time_s": seconds,
               "solver": model.solver_, "converged": converged}
        rows.append(row)
        log(f"{name}: {method:17s} alpha={best:g} test "
            f"{'RMSE' if regression else 'error'} {row['test_error']:.4f} fit {seconds:.2f}s")
    by = {r["method"]: r for r in rows}
    return {"dataset": name, "task": "regression" if regression else "classification",
            "metric": "RMSE (std units)" if regression else "error rate",
            "n_train": int(X.shape[0]), "n_test": int(Xt.shape[0]), "n_inputs": int(X.shape[1]),
            "results": rows,
            # below 1: Nystrom (uniform landmarks) has the lower test error
            "nystrom_over_rff": by["nystrom"]["test_error"] / by["rff"]["test_error"]}


def summary(datasets):
    """On how many datasets each Nystrom variant beats RFF, and the ratios."""
    out = {}
    for method in METHODS:
        if method == "rff":
            continue
        ratios = {}
        for res in datasets:
            by = {r["method"]: r for r in res["results"]}
            ratios[res["dataset"]] = by[method]["test_error"] / by["rff"]["test_error"]
        out[method] = {"test_error_over_rff": ratios,
                       "beats_rff_on": sorted(k for k, v in ratios.items() if v < 1.0)}
    return out


def markdown(report):
    s = report["settings"]
    lines = [f"# Nystrom against random Fourier features ({report['mode']})", "",
             f"M = {s['n_features']} features (blocks of {s['block_size']}) for every map; "
             f"Gaussian kernel with `gamma=\"scale\"`; ridge by `solver=\"cholesky\"` "
             f"(DSGRegressor, DSGClassifier with `loss=\"squared\"`), `alpha` chosen on a 20 % "
             f"validation split from {list(s['alphas'])}, then refitted; at most "
             f"{s['max_train']} training rows (standardised); one thread.  Regression: test "
             f"RMSE in units of the training target's std; classification: test error rate.",
             "",
             "| dataset | method | alpha | test error | / rff | fit time (s) |",
             "|---|---|---:|---:|---:|---:|"]
    for res in report["datasets"]:
        rff = {r["method"]: r for r in res["results"]}["rff"]["test_error"]
        for r in res["results"]:
            lines.append(f"| {res['dataset']} ({res['metric']}) | {r['method']} | "
                         f"{r['alpha']:g} | {r['test_error']:.4f} | "
                         f"{r['test_error'] / rff:.3f} | {r['fit_time_s']:.2f} |")
    lines.append("")
    for method, row in report["summary"].items():
        lines.append(f"- {method} beats rff on {len(row['beats_rff_on'])} of "
                     f"{len(report['datasets'])} datasets: {', '.join(row['beats_rff_on']) or '-'}")
    return "\n".join(lines)


def main(argv=None):
    args = parse_args(__doc__, argv, DATASETS, "--block-size")
    log = make_logger()
    M = args.n_features or (128 if args.quick else 1024)
    # two blocks: block j evaluates the kernel at the landmarks of blocks 0..j
    block_size = args.block_size or max(1, M // 2)
    max_train = args.max_train or (1000 if args.quick else 12_000)
    alphas = ALPHAS[1:3] if args.quick else ALPHAS
    report = report_header("nystrom", "quick" if args.quick else "full")
    report["settings"] = {"n_features": M, "block_size": block_size, "max_train": max_train,
                          "max_test": 10_000, "alphas": alphas, "gamma": "scale",
                          "solver": "cholesky", "methods": METHODS}
    run_datasets(args, report, max_train, lambda *data: run_dataset(
        *data, M, block_size, alphas, log), max_test=10_000)
    report["summary"] = summary(report["datasets"])
    write_results(report, args.output_dir, args.quick, markdown, log)
    return report


if __name__ == "__main__":
    main()
