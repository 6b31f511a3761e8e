r"""Structured Gaussian maps (``sorf``, ``fastfood``) against the ``gaussian`` map at d = 784.

Three measurements on ``fashion_mnist`` (rows divided by 255, d = 784,
padded to p = 1024 by the structured maps), all in one run so the ratios
share the machine's load:

1. **Regenerate + transform** -- the per-block cost a stochastic step pays
   when the block is not cached: ``transform_block(seed, block, X)`` draws
   the block's parameters from ``(seed, block)`` and evaluates its
   ``M = 4096`` features on a batch of rows (64, the estimators'
   ``batch_size``, and 256).  The parameter generation alone is timed too.
   Median over ``--repeats`` calls, blocks ``0 .. repeats - 1``.
2. **Test error and predict time** of the same estimator for the three maps:
   ``DSGClassifier(loss="squared", solver="cholesky", block_size=1024,
   max_blocks=4)`` (M = 4096 features, one-vs-rest least squares solved
   exactly, ``gamma="scale"``, ``random_state=0``), fitted on a seeded
   subsample of ``--train-rows`` training rows (20,000 of 60,000 by default,
   to keep the run near ten minutes on one core) and scored on the 10,000
   test rows; the predict time is the median of ``--repeats`` calls of
   ``predict`` on the test rows.
3. **Kernel approximation error vs M** (the ``kernel_approximation.py``
   measure): the mean squared error of the estimate of
   :math:`\exp(-\gamma\|x - y\|^2)` over ``--pairs`` held-out pairs of test
   rows, averaged over ``--seeds`` blocks, for M = 256 .. 4096, with
   ``gamma = 1 / (d Var X)`` (what ``gamma="scale"`` gives).

Targets (issue 15): at d = 784 and M = 4096, regenerate + transform and
predict at least 3x faster than the ``gaussian`` map (ratios gaussian time /
map time, the 64-row batch for the first), and test error within 0.3
percentage points of it.  BLAS and the estimators run on one thread.

Run from the repository root::

    python -m benchmarks.structured_maps           # about 10 minutes on one core
    python -m benchmarks.structured_maps --quick   # 3,000 training rows, fewer sizes and seeds
"""
import time

import numpy as np
from threadpoolctl import threadpool_limits

from onlinekernel import DSGClassifier, get_feature_map

from ._common import (add_data_dir, add_output_dir, argument_parser, load_dataset, make_logger,
                      parse_int_list, report_header, time_call, write_results)
from .kernel_approximation import approximation_mse, held_out_pairs

MAPS = ("gaussian", "sorf", "fastfood")
STRUCTURED = MAPS[1:]
BATCHES = (64, 256)
SIZES = (256, 512, 1024, 2048, 4096)
MIN_SPEEDUP, MAX_ERROR_GAP_PP = 3.0, 0.3


def prepare(name, data_dir):
    """Pixels scaled to [0, 1], labels, and gamma = 1 / (d Var X) of the training rows."""
    X, y, Xt, yt = load_dataset(name, data_dir)
    X, Xt = X / 255.0, Xt / 255.0
    return X, y, Xt, yt, 1.0 / (X.shape[1] * float(X.var()))


def step_costs(X, gamma, M, batches, repeats):
    """Median seconds of generate and of generate + transform of one M-feature block."""
    out = {}
    for name in MAPS:
        fmap = get_feature_map(name, n_components=M, gamma=gamma).bind(X.shape[1])
        blocks = iter(range(10 ** 6))
        cell = {"param_size": int(fmap.param_size),
                "generate": time_call(lambda: fmap.generate_block(7, next(blocks)), repeats,
                                      warmup=1)}
        for b in batches:
            rows = np.ascontiguousarray(X[:b])
            cell[f"regenerate_transform_{b}"] = time_call(
                lambda: fmap.transform_block(7, next(blocks), rows), repeats, warmup=1)
        out[name] = cell
    return out


def estimator_runs(X, y, Xt, yt, M, repeats, log):
    """Test error (%) and predict time of the same estimator for each map (M features)."""
    out = {}
    for name in MAPS:
        model = DSGClassifier(loss="squared", kernel=name, solver="cholesky", block_size=M // 4,
                              max_blocks=4, random_state=0, n_jobs=1)
        t0 = time.perf_counter()
        model.fit(X, y)
        fit_s = time.perf_counter() - t0
        err = 100.0 * float(np.mean(model.predict(Xt) != yt))
        pred = time_call(lambda: model.predict(Xt), repeats)
        out[name] = {"test_error_pct": err, "fit_s": fit_s, "predict": pred,
                     "gamma": float(model.gamma_)}
        log(f"{name}: test error {err:.2f} %, fit {fit_s:.1f} s, predict "
            f"{pred['median_s']:.3f} s")
    return out


def approximation(Xt, gamma, sizes, seeds, n_pairs, log):
    """Mean squared kernel error over held-out pairs, by map and M."""
    A, B = held_out_pairs(Xt, n_pairs)
    out = {}
    for m in sizes:
        cell = {}
        for name in MAPS:
            mse = [approximation_mse(name, {}, m, gamma, A, B, s)[0] for s in seeds]
            cell[name] = {"mse_mean": float(np.mean(mse)), "mse": mse}
        cell["ratios"] = {f"{k} / gaussian": cell[k]["mse_mean"] / cell["gaussian"]["mse_mean"]
                          for k in STRUCTURED}
        out[str(m)] = cell
        log(f"M={m}: " + ", ".join(f"{k} {cell[k]['mse_mean']:.3e}" for k in MAPS))
    return out


def targets_of(steps, fits, batch):
    targets = []
    for name in STRUCTURED:
        for what, g, s in (
                (f"regenerate_transform_{batch}",
                 steps["gaussian"][f"regenerate_transform_{batch}"]["median_s"],
                 steps[name][f"regenerate_transform_{batch}"]["median_s"]),
                ("predict", fits["gaussian"]["predict"]["median_s"],
                 fits[name]["predict"]["median_s"])):
            targets.append({"target": f"speedup[{what}: gaussian / {name}]", "value": g / s,
                            "threshold": MIN_SPEEDUP, "passed": bool(g / s >= MIN_SPEEDUP)})
        gap = fits[name]["test_error_pct"] - fits["gaussian"]["test_error_pct"]
        targets.append({"target": f"test_error_gap_pp[{name} - gaussian]", "value": gap,
                        "threshold": MAX_ERROR_GAP_PP,
                        "passed": bool(abs(gap) <= MAX_ERROR_GAP_PP)})
    return targets


def markdown(report):
    s, f = report["steps"], report["estimator"]
    lines = [f"# Structured Gaussian maps at d = {report['settings']['d']}, "
             f"M = {report['settings']['M']}", "",
             f"Mode {report['mode']}; {report['settings']['train_rows']} training rows, "
             f"{report['settings']['test_rows']} test rows of {report['settings']['dataset']}; "
             "times are medians in seconds (one thread).", "",
             "| map | params / block | generate | regen + transform 64 rows | "
             "regen + transform 256 rows | fit | predict | test error % |",
             "|---|---|---|---|---|---|---|---|"]
    for k in MAPS:
        lines.append(f"| {k} | {s[k]['param_size']} | {s[k]['generate']['median_s']:.4f} | "
                     f"{s[k]['regenerate_transform_64']['median_s']:.4f} | "
                     f"{s[k]['regenerate_transform_256']['median_s']:.4f} | "
                     f"{f[k]['fit_s']:.1f} | {f[k]['predict']['median_s']:.3f} | "
                     f"{f[k]['test_error_pct']:.2f} |")
    lines += ["", "| target | value | threshold | passed |", "|---|---|---|---|"]
    lines += [f"| {t['target']} | {t['value']:.3f} | {t['threshold']} | {t['passed']} |"
              for t in report["targets"]]
    lines += ["", "Kernel approximation MSE over held-out pairs:", "",
              "| M | " + " | ".join(MAPS) + " | " + " | ".join(f"{k} / gaussian"
                                                            for k in STRUCTURED) + " |",
              "|---" * (1 + len(MAPS) + len(STRUCTURED)) + "|"]
    for m, c in report["approximation"].items():
        lines.append(f"| {m} | " + " | ".join(f"{c[k]['mse_mean']:.3e}" for k in MAPS) + " | "
                     + " | ".join(f"{v:.3f}" for v in c["ratios"].values()) + " |")
    return "\n".join(lines)


def main(argv=None):
    parser = argument_parser(__doc__)
    add_data_dir(parser)
    parser.add_argument("--dataset", default="fashion_mnist")
    parser.add_argument("--train-rows", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--components", type=int, default=4096,
                        help="M, the features of the timed block and of the estimator "
                             "(a multiple of 4: four blocks of M / 4)")
    parser.add_argument("--sizes", type=parse_int_list, default=None,
                        help="comma-separated numbers of features for the approximation "
                             "error (default 256,...,4096)")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--pairs", type=int, default=2000)
    add_output_dir(parser)
    args = parser.parse_args(argv)
    log = make_logger()
    train_rows = 3000 if args.quick else args.train_rows
    sizes = args.sizes or ([256, 1024] if args.quick else list(SIZES))
    seeds = list(range(2 if args.quick else args.seeds))
    n_pairs = 300 if args.quick else args.pairs
    repeats = 2 if args.quick else args.repeats
    report = report_header("structured_maps", "quick" if args.quick else "full")
    X, y, Xt, yt, gamma = prepare(args.dataset, args.data_dir)
    rows = np.sort(np.random.default_rng(0).choice(len(X), min(train_rows, len(X)),
                                                   replace=False))
    Xs, ys = np.ascontiguousarray(X[rows]), y[rows]
    M = args.components
    if M < 4 or M % 4:
        parser.error(f"--components must be a positive multiple of 4, got {M}")
    report["settings"] = {"dataset": args.dataset, "d": X.shape[1], "M": M,
                          "train_rows": len(rows), "test_rows": len(Xt), "repeats": repeats,
                          "batches": list(BATCHES), "sizes": sizes, "seeds": seeds,
                          "pairs": n_pairs, "gamma_approximation": gamma}
    with threadpool_limits(1):
        report["steps"] = step_costs(Xs, gamma, M, BATCHES, repeats)
        for k in MAPS:
            log(f"{k}: generate {report['steps'][k]['generate']['median_s']:.4f} s, "
                f"regenerate + transform 64 rows "
                f"{report['steps'][k]['regenerate_transform_64']['median_s']:.4f} s")
        report["estimator"] = estimator_runs(Xs, ys, Xt, yt, M, repeats, log)
        report["approximation"] = approximation(Xt, gamma, sizes, seeds, n_pairs, log)
    report["targets"] = targets_of(report["steps"], report["estimator"], BATCHES[0])
    for t in report["targets"]:
        log(f"{t['target']}: {t['value']:.3f} (threshold {t['threshold']}, "
            f"{'passed' if t['passed'] else 'FAILED'})")
    write_results(report, args.output_dir, args.quick, markdown, log)
    return report


if __name__ == "__main__":
    main()
