"""FixedFeatureRegressor (SGD on fixed random features) against DSGRegressor and exact KRR.

On kin8nm, cadata and cpusmall (``--data-dir``), with X standardised on the
training split and y standardised (predictions mapped back, so RMSE is in
the target's units), every contender uses the Gaussian kernel with
``gamma = 1 / d`` (``gamma="scale"`` on standardised X):

* ``fixed_one_pass``: ``FixedFeatureRegressor()`` -- the paper's setting
  (c1.3): ``M = sqrt(n) log n`` features, batches of ``sqrt(n)`` rows,
  ``eta0 = 1``, one pass;
* ``fixed_multi_pass``: 16-row batches, up to 30 passes with early stopping
  (10 % validation rows, 5 passes of patience), the same ``M``;
* ``dsg_default``: ``DSGRegressor()`` (4096 features, 5 passes);
* ``krr``: exact ``KernelRidge`` with ``alpha`` chosen on a validation split
  (grid 1e-3 .. 1), refit on at most ``--krr-rows`` training rows.

Each stochastic contender runs with ``--seeds`` seeds (RMSE: mean, min and
max; time: median).  Two sweeps back the defaults documented on the
estimator: ``eta0`` in {0.25, 0.5, 1, 1.5} after one pass, and one pass on
raw against standardised targets.  BLAS is limited to one thread.

Run from the repository root::

    python -m benchmarks.fixed_features           # about 2 minutes on 2 busy cores
    python -m benchmarks.fixed_features --quick   # 2000-row subsamples, one seed
"""
import math
import time

import numpy as np
from sklearn.kernel_ridge import KernelRidge
from threadpoolctl import threadpool_limits

from onlinekernel import DSGRegressor, FixedFeatureRegressor

from ._common import (RESULTS_DIR, add_data_dir, argument_parser, load_average, load_dataset,
                      make_logger, report_header, write_json)

DATASETS = ("kin8nm", "cadata", "cpusmall")
KRR_ALPHAS = (1e-3, 1e-2, 1e-1, 1.0)
STEPS = (0.25, 0.5, 1.0, 1.5)


def _standardise(X, y, Xt):
    mu, sd = X.mean(axis=0), X.std(axis=0)
    sd[sd == 0] = 1.0
    return (X - mu) / sd, (Xt - mu) / sd, float(y.mean()), float(y.std())


def _rmse(pred, y):
    return float(np.sqrt(np.mean((pred - y) ** 2)))


def _run(make, X, y, Xt, yt, ym, ys, seeds, standardise_y=True):
    """Fit ``make(seed)`` per seed; RMSE in the target's units and fit time."""
    rmse, times, info = [], [], {}
    for seed in seeds:
        model = make(seed)
        t0 = time.perf_counter()
        model.fit(X, (y - ym) / ys if standardise_y else y)
        times.append(time.perf_counter() - t0)
        pred = model.predict(Xt)
        rmse.append(_rmse(pred * ys + ym if standardise_y else pred, yt))
        info = {k: getattr(model, k) for k in ("n_random_features_", "t_") if hasattr(model, k)}
        for k in ("batch_size_", "n_iter_", "best_epoch_"):
            if hasattr(model, k):
                info[k] = getattr(model, k)
    return {"rmse_mean": float(np.mean(rmse)), "rmse_min": min(rmse), "rmse_max": max(rmse),
            "rmse": rmse, "fit_s_median": float(np.median(times)), "fit_s": times, **info}


def _krr(X, y, Xt, yt, ym, ys, gamma, max_rows):
    rng = np.random.default_rng(0)
    rows = rng.permutation(X.shape[0])[:max_rows]
    Xs, ys_ = X[rows], (y[rows] - ym) / ys
    n_val = len(rows) // 5
    scores = {}
    for alpha in KRR_ALPHAS:  # choose alpha on a validation split of the rows used
        m = KernelRidge(alpha=alpha, kernel="rbf", gamma=gamma).fit(Xs[n_val:], ys_[n_val:])
        scores[alpha] = _rmse(m.predict(Xs[:n_val]), ys_[:n_val])
    alpha = min(scores, key=scores.get)
    t0 = time.perf_counter()
    m = KernelRidge(alpha=alpha, kernel="rbf", gamma=gamma).fit(Xs, ys_)
    fit_s = time.perf_counter() - t0
    return {"rmse_mean": _rmse(m.predict(Xt) * ys + ym, yt), "fit_s_median": fit_s,
            "alpha": alpha, "validation_rmse": {str(k): v for k, v in scores.items()},
            "n_train_used": len(rows), "subsampled": len(rows) < X.shape[0]}


def main(argv=None):
    parser = argument_parser(__doc__)
    add_data_dir(parser)
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--krr-rows", type=int, default=8000)
    parser.add_argument("--output", default=None)
    args = parser.parse_args(argv)
    log = make_logger()
    seeds = range(1 if args.quick else args.seeds)
    report = report_header("fixed_features", "quick" if args.quick else "full")
    report.update({"settings": {"seeds": list(seeds), "krr_rows": args.krr_rows,
                                "krr_alphas": KRR_ALPHAS, "steps": STEPS}, "datasets": {}})
    with threadpool_limits(1):
        for name in args.datasets:
            X, y, Xt, yt = load_dataset(name, args.data_dir)
            if args.quick:
                X, y = X[:2000], y[:2000]
            X, Xt, ym, ys = _standardise(X, y, Xt)
            n, d = X.shape
            gamma = 1.0 / d
            res = {"n_train": n, "n_test": Xt.shape[0], "d": d, "gamma": gamma, "y_std": ys,
                   "paper_M": math.ceil(math.sqrt(n) * math.log(n)),
                   "paper_batch": math.ceil(math.sqrt(n))}
            run = lambda make, **kw: _run(make, X, y, Xt, yt, ym, ys, seeds, **kw)  # noqa: E731
            res["fixed_one_pass"] = run(lambda s: FixedFeatureRegressor(random_state=s))
            log(f"{name}: one pass {res['fixed_one_pass']['rmse_mean']:.4f}")
            res["fixed_multi_pass"] = run(lambda s: FixedFeatureRegressor(
                batch_size=16, max_iter=30, early_stopping=True, random_state=s))
            log(f"{name}: multi-pass {res['fixed_multi_pass']['rmse_mean']:.4f}")
            res["dsg_default"] = run(lambda s: DSGRegressor(random_state=s))
            log(f"{name}: DSGRegressor {res['dsg_default']['rmse_mean']:.4f}")
            res["krr"] = _krr(X, y, Xt, yt, ym, ys, gamma, args.krr_rows)
            log(f"{name}: KRR {res['krr']['rmse_mean']:.4f}")
            res["step_sweep_one_pass"] = {
                str(eta): run(lambda s, eta=eta: FixedFeatureRegressor(eta0=eta, random_state=s))
                for eta in STEPS}
            res["raw_targets_one_pass"] = run(lambda s: FixedFeatureRegressor(random_state=s),
                                              standardise_y=False)
            report["datasets"][name] = res
    report["load_average_at_end"] = load_average()
    out = args.output or RESULTS_DIR / ("fixed_features_quick.json" if args.quick
                                        else "fixed_features.json")
    write_json(out, report)
    log(f"written {out}")
    for name, res in report["datasets"].items():
        cells = [f"{k} {res[k]['rmse_mean']:.4f} ({res[k]['fit_s_median']:.2f} s)"
                 for k in ("fixed_one_pass", "fixed_multi_pass", "dsg_default", "krr")]
        print(f"{name}: " + "; ".join(cells))
        print("   steps: " + ", ".join(f"{k}: {v['rmse_mean']:.4f}"
                                       for k, v in res["step_sweep_one_pass"].items())
              + f"; raw targets: {res['raw_targets_one_pass']['rmse_mean']:.4f}")
    return report


if __name__ == "__main__":
    main()
