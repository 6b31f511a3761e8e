"""First benchmark: DSGClassifier against RBFSampler + SGDClassifier, side by side.

Both models use the same Gaussian kernel bandwidth ``gamma`` and the same
final number of random features ``M = block_size * max_blocks``, the hinge
loss, and see the same rows in the same order (one seeded permutation per
pass, shared by both):

* ``onlinekernel``: ``DSGClassifier.partial_fit`` on chunks of rows (one
  doubly stochastic step per ``batch_size`` rows; the features are
  regenerated from the model's seed, never stored);
* ``scikit-learn``: ``RBFSampler(n_components=M, gamma)`` transforms each
  mini-batch (float64), then ``SGDClassifier.partial_fit`` learns on it.

Datasets: ijcnn1 (from ``--data-dir``) and a synthetic 32-dimensional
problem where a linear model is at chance level.  Measured: test accuracy
after each pass, training samples/s and prediction samples/s (medians over
repeats, the two libraries alternating within each repeat, so that both see
the same machine load), and the onlinekernel/scikit-learn throughput ratios.
A profile pass splits onlinekernel's training time into the prediction half
of each step, the rest of the compiled step (gradient and update) and the
Python overhead of ``partial_fit``.

The main measurement runs with BLAS limited to ``--blas-threads`` threads
(default 1) for both libraries; a short diagnostic also times prediction
with the BLAS libraries' default thread count.

Run from the repository root::

    python -m benchmarks.first_benchmark            # full run (1.5-3 minutes)
    python -m benchmarks.first_benchmark --quick    # smoke run on subsamples
"""
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np
from sklearn.kernel_approximation import RBFSampler
from sklearn.linear_model import SGDClassifier
from threadpoolctl import threadpool_info, threadpool_limits

from onlinekernel import DSGClassifier

from ._common import (add_blas_threads, add_budget, add_data_dir, add_output, add_seed,
                      argument_parser, load_average, load_dataset, make_logger, positive_int,
                      report_header, timed_compiled_steps, write_json)

CLASSES = np.array([-1, 1])


# --------------------------------------------------------------------------- #
# data
# --------------------------------------------------------------------------- #
def load_ijcnn1(data_dir, script="first_benchmark"):
    """ijcnn1's splits; a missing file stops ``script`` with a message."""
    try:
        # Both libraries get float64, C-contiguous data (scikit-learn's default dtype);
        # the conversion happens here, outside every timed region.
        X, y, Xt, yt = load_dataset("ijcnn1", data_dir)
    except FileNotFoundError as exc:
        raise SystemExit(f"{script}: {exc}") from None
    return X, y.astype(np.int64), Xt, yt.astype(np.int64)


def make_shells(n_train, n_test, d=32, noise=0.02, seed=0):
    """Two concentric shells in ``d`` dimensions, with ``noise`` of the labels flipped.

    ``x ~ N(0, I_d)`` and ``y = +1`` when ``||x||^2`` exceeds the median of
    ``||x||^2`` (balanced classes).  The Bayes accuracy is ``1 - noise``; any
    linear classifier is at chance (the classes are rotation invariant).
    """
    rng = np.random.default_rng(seed)
    n = n_train + n_test
    X = rng.normal(size=(n, d))
    r2 = np.einsum("ij,ij->i", X, X)
    y = np.where(r2 > np.median(r2), 1, -1)
    flip = rng.random(n) < noise
    y[flip] = -y[flip]
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


# --------------------------------------------------------------------------- #
# the two contenders, behind one small interface
# --------------------------------------------------------------------------- #
class OnlineKernelRunner:
    name = "onlinekernel"

    def __init__(self, params, chunk_rows):
        self.params = params
        self.chunk_rows = chunk_rows
        self.model = DSGClassifier(**params)

    def train_pass(self, X, y):
        c = self.chunk_rows
        for s in range(0, X.shape[0], c):
            self.model.partial_fit(X[s:s + c], y[s:s + c], classes=CLASSES)
        return {}

    def predict(self, X, chunk):
        return np.concatenate([self.model.predict(X[s:s + chunk])
                               for s in range(0, X.shape[0], chunk)])

    def n_features(self):
        return int(self.model.n_random_features_)

    def intercept(self):
        return float(self.model.intercept_[0])


class SklearnRunner:
    name = "sklearn"

    def __init__(self, sampler_params, sgd_params, batch_rows):
        self.sampler = RBFSampler(**sampler_params)
        self.sgd = SGDClassifier(**sgd_params)
        self.batch_rows = batch_rows
        self.fitted_sampler = False

    def train_pass(self, X, y):
        if not self.fitted_sampler:
            # RBFSampler.fit only draws the random weights (it reads X's width).
            self.sampler.fit(X[:1])
            self.fitted_sampler = True
        b = self.batch_rows
        t_transform = t_fit = 0.0
        for s in range(0, X.shape[0], b):
            t0 = time.perf_counter()
            Z = self.sampler.transform(X[s:s + b])
            t1 = time.perf_counter()
            self.sgd.partial_fit(Z, y[s:s + b], classes=CLASSES)
            t2 = time.perf_counter()
            t_transform += t1 - t0
            t_fit += t2 - t1
        return {"transform_s": t_transform, "partial_fit_s": t_fit}

    def predict(self, X, chunk):
        # Chunked: the full transformed test set would not fit in memory (n x M doubles).
        return np.concatenate([self.sgd.predict(self.sampler.transform(X[s:s + chunk]))
                               for s in range(0, X.shape[0], chunk)])

    def n_features(self):
        return int(self.sampler.n_components)

    def intercept(self):
        return float(self.sgd.intercept_[0])


def make_runner(name, gamma, cfg):
    if name == "onlinekernel":
        return OnlineKernelRunner(dict(cfg["onlinekernel"], gamma=gamma),
                                  cfg["onlinekernel_chunk_rows"])
    return SklearnRunner(dict(cfg["sklearn_sampler"], gamma=gamma), cfg["sklearn_sgd"],
                         cfg["sklearn_batch_rows"])


# --------------------------------------------------------------------------- #
# measurement
# --------------------------------------------------------------------------- #
def timed(fn, *args):
    t0 = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t0


def linear_baseline(X_passes, y_passes, X_test, y_test, cfg):
    """Hinge-loss SGD on the raw features, one pass (context: how nonlinear is the task)."""
    sgd = SGDClassifier(**cfg["sklearn_sgd"])
    X, y = X_passes[0], y_passes[0]
    b = cfg["sklearn_batch_rows"]
    for s in range(0, X.shape[0], b):
        sgd.partial_fit(X[s:s + b], y[s:s + b], classes=CLASSES)
    return float(sgd.score(X_test, y_test))


def bench_dataset(name, X_train, y_train, X_test, y_test, gamma, cfg, log):
    n, d = X_train.shape
    passes, repeats = cfg["passes"], cfg["repeats"]
    # One shared permutation per pass: both libraries see the same stream.
    perms = [np.random.default_rng(cfg["order_seed"] + p).permutation(n) for p in range(passes)]
    X_passes = [np.ascontiguousarray(X_train[pm]) for pm in perms]
    y_passes = [y_train[pm] for pm in perms]
    pchunk = cfg["predict_chunk_rows"]
    # Prediction is timed on the first rows of the test set (every repeat);
    # accuracy is measured once per pass on the whole test set.
    n_timed = min(cfg["predict_timing_rows"], X_test.shape[0])
    libs = ("onlinekernel", "sklearn")
    res = {lib: {"train_time_s": [], "predict_time_s": [], "accuracy_by_pass": [],
                 "intercept_by_pass": [], "train_time_by_pass_s": [], "train_breakdown_s": []}
           for lib in libs}
    models = {}
    for rep in range(repeats):
        order = libs if rep % 2 == 0 else libs[::-1]
        for lib in order:
            runner = make_runner(lib, gamma, cfg)
            extra, t_train = timed(runner.train_pass, X_passes[0], y_passes[0])
            pred, t_pred = timed(runner.predict, X_test[:n_timed], pchunk)
            r = res[lib]
            r["train_time_s"].append(t_train)
            r["predict_time_s"].append(t_pred)
            if extra:
                r["train_breakdown_s"].append(extra)
            msg = (f"  {name} rep {rep + 1}/{repeats} {lib:12s} train {t_train:6.2f}s "
                   f"({n / t_train:8.0f}/s)  predict {t_pred:6.2f}s ({n_timed / t_pred:8.0f}/s)")
            if rep == 0:
                # Accuracy on the whole test set: the rows past the timed slice, untimed.
                if n_timed < X_test.shape[0]:
                    pred = np.concatenate([pred, runner.predict(X_test[n_timed:], pchunk)])
                acc = float(np.mean(pred == y_test))
                msg += f"  acc {acc:.4f}  intercept {runner.intercept():+.3f}"
            log(msg)
            if rep == 0:
                r["accuracy_by_pass"].append(acc)
                r["intercept_by_pass"].append(runner.intercept())
                r["train_time_by_pass_s"].append(t_train)
                for p in range(1, passes):
                    _, t_p = timed(runner.train_pass, X_passes[p], y_passes[p])
                    acc_p = float(np.mean(runner.predict(X_test, pchunk) == y_test))
                    r["accuracy_by_pass"].append(acc_p)
                    r["intercept_by_pass"].append(runner.intercept())
                    r["train_time_by_pass_s"].append(t_p)
                    log(f"  {name}   pass {p + 1}/{passes} {lib:12s} train {t_p:6.2f}s  "
                        f"acc {acc_p:.4f}  intercept {runner.intercept():+.3f}")
                models[lib] = runner
    out = {"n_train": int(n), "n_test": int(X_test.shape[0]), "n_features_in": int(d),
           "predict_timing_rows": int(n_timed),
           "gamma": float(gamma), "positive_rate_train": float(np.mean(y_train == 1)),
           "linear_baseline_accuracy_1pass": linear_baseline(X_passes, y_passes, X_test, y_test,
                                                              cfg)}
    for lib in libs:
        r = res[lib]
        t_tr, t_pr = float(np.median(r["train_time_s"])), float(np.median(r["predict_time_s"]))
        r.update({
            "n_random_features": models[lib].n_features(),
            "accuracy_1pass": r["accuracy_by_pass"][0],
            "train_time_median_s": t_tr,
            "train_samples_per_s": n / t_tr,
            "predict_time_median_s": t_pr,
            "predict_samples_per_s": n_timed / t_pr,
        })
        if r["train_breakdown_s"]:
            tf = float(np.median([b["transform_s"] for b in r["train_breakdown_s"]]))
            pf = float(np.median([b["partial_fit_s"] for b in r["train_breakdown_s"]]))
            r["train_share_transform"] = tf / (tf + pf)
            r["train_share_partial_fit"] = pf / (tf + pf)
        else:
            del r["train_breakdown_s"]
        out[lib] = r
    ok, sk = out["onlinekernel"], out["sklearn"]
    out["ratios_onlinekernel_over_sklearn"] = {
        "train_samples_per_s": ok["train_samples_per_s"] / sk["train_samples_per_s"],
        "predict_samples_per_s": ok["predict_samples_per_s"] / sk["predict_samples_per_s"],
        "accuracy_1pass_difference": ok["accuracy_1pass"] - sk["accuracy_1pass"],
        "accuracy_last_pass_difference": ok["accuracy_by_pass"][-1] - sk["accuracy_by_pass"][-1],
    }
    return out, models, X_passes[0], y_passes[0]


def profile_onlinekernel(X, y, gamma, cfg, rounds):
    """Where one pass of onlinekernel training spends its time.

    Each round trains one pass with ``train_steps`` wrapped by a timer (the
    compiled steps versus the Python around them: validation, target
    encoding, state copies), then replays the prediction half of every step
    — ``decision_function`` of each ``batch_size``-row batch with all the
    model's blocks, which is what a step computes before its gradient (plus
    the public call's input checks) — on the trained model.  The rest of the
    compiled time is the gradient half (features evaluated a second time,
    the transposed product, the updates).
    Times are the minima over the rounds (the least disturbed by other load).
    """
    totals, steps, replays = [], [], []
    for _ in range(rounds):
        runner = make_runner("onlinekernel", gamma, cfg)
        with timed_compiled_steps() as spent:
            _, total = timed(runner.train_pass, X, y)
        if spent is None:
            break
        m = runner.model
        B = m.batch_size
        t0 = time.perf_counter()
        for s in range(0, X.shape[0], B):
            m.decision_function(X[s:s + B])
        replays.append(time.perf_counter() - t0)
        totals.append(total)
        steps.append(spent[0])
    if not steps or not all(steps):
        return {"available": False,
                "reason": "onlinekernel.estimators._base did not call its module-level "
                          "train_steps, so the compiled time could not be separated"}
    total = min(totals)
    overhead = float(np.median([a - b for a, b in zip(totals, steps)]))
    t_pred = min(replays)
    compiled = total - overhead
    return {
        "available": True,
        "what": "one pass over the ijcnn1 training rows (same order and parameters as above)",
        "rounds": rounds,
        "train_pass_s": total,
        "python_overhead_s": overhead,
        "compiled_train_steps_s": compiled,
        "predict_half_s": t_pred,
        "gradient_and_update_s": compiled - t_pred,
        "share_python_overhead": overhead / total,
        "share_predict_half": t_pred / total,
        "share_gradient_and_update": (compiled - t_pred) / total,
        "per_round": {"train_pass_s": totals, "compiled_train_steps_s": steps,
                      "predict_half_replay_s": replays},
        "method": ("train_pass_s: min over rounds; python_overhead_s: median over rounds of the "
                   "time outside train_steps; predict_half_s: min over rounds of "
                   "decision_function replayed on every batch_size-row batch at the full budget (the first "
                   "max_blocks steps have fewer blocks, so this slightly over-estimates it); "
                   "gradient_and_update_s: the remainder of the compiled time"),
    }


def default_threads_predict(models, X_test, rows, cfg):
    """Prediction speed with the BLAS libraries' own default thread count."""
    X = X_test[:rows]
    out = {"rows": int(X.shape[0])}
    with threadpool_limits(limits=None):
        for lib, runner in models.items():
            _, t = timed(runner.predict, X, cfg["predict_chunk_rows"])
            out[f"{lib}_predict_samples_per_s"] = X.shape[0] / t
    out["blas_threads"] = [{"library": Path(i.get("filepath", "")).name,
                            "num_threads": i.get("num_threads")} for i in threadpool_info()]
    return out


# --------------------------------------------------------------------------- #
# reporting
# --------------------------------------------------------------------------- #
def markdown_table(results, passes):
    multi = f"acc {passes} passes: ok / sk | " if passes > 1 else ""
    hdr = (f"| dataset | n_train | M | acc 1 pass: ok / sk | {multi}linear 1 pass | "
           "train samples/s: ok / sk (ratio) | predict samples/s: ok / sk (ratio) |")
    lines = [hdr, "|" + "---|" * (hdr.count("|") - 1)]
    for name, r in results.items():
        ok, sk, ratio = r["onlinekernel"], r["sklearn"], r["ratios_onlinekernel_over_sklearn"]
        last = (f"{100 * ok['accuracy_by_pass'][-1]:.2f} % / "
                f"{100 * sk['accuracy_by_pass'][-1]:.2f} % | ") if passes > 1 else ""
        lines.append(
            f"| {name} | {r['n_train']} | {ok['n_random_features']} | "
            f"{100 * ok['accuracy_1pass']:.2f} % / {100 * sk['accuracy_1pass']:.2f} % | {last}"
            f"{100 * r['linear_baseline_accuracy_1pass']:.2f} % | "
            f"{ok['train_samples_per_s']:,.0f} / {sk['train_samples_per_s']:,.0f} "
            f"({ratio['train_samples_per_s']:.2f}x) | "
            f"{ok['predict_samples_per_s']:,.0f} / {sk['predict_samples_per_s']:,.0f} "
            f"({ratio['predict_samples_per_s']:.2f}x) |")
    return "\n".join(lines)


# --------------------------------------------------------------------------- #
# main
# --------------------------------------------------------------------------- #
def parse_args(argv=None):
    p = argument_parser(__doc__, "smoke run: 10000 train / 10000 test rows of ijcnn1, "
                                 "20000 / 5000 synthetic rows, one repeat")
    add_data_dir(p, "folder holding ijcnn1.npz")
    add_output(p, "first_benchmark")
    p.add_quick_option("--repeats", 2, 1, "timed one-pass repeats per library; the libraries "
                       "alternate which one runs first, so an even count is balanced")
    p.add_argument("--passes", type=positive_int, default=2,
                   help="passes over the data for the accuracy-by-pass figures "
                        "(default: %(default)s)")
    add_budget(p)
    p.add_argument("--gamma-ijcnn1", type=float, default=1.0,
                   help="RBF gamma on ijcnn1 (default: %(default)s; shells32 uses 1/32)")
    p.add_quick_option("--synthetic-train", 100_000, 20_000, "synthetic training rows")
    p.add_quick_option("--synthetic-test", 20_000, 5_000, "synthetic test rows")
    add_blas_threads(p, "the main measurement")
    add_seed(p, "models, the data orders and the synthetic data")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    started = time.perf_counter()
    # now: the extension in memory is the one loaded at the start
    header = report_header("first_benchmark", "quick" if args.quick else "full")
    log = make_logger(started)

    X_tr, y_tr, X_te, y_te = load_ijcnn1(args.data_dir)
    n_syn_train, n_syn_test = args.synthetic_train, args.synthetic_test
    if args.quick:
        sub = np.random.default_rng(args.seed)
        tr = np.sort(sub.choice(X_tr.shape[0], 10_000, replace=False))
        te = np.sort(sub.choice(X_te.shape[0], 10_000, replace=False))
        X_tr, y_tr, X_te, y_te = X_tr[tr], y_tr[tr], X_te[te], y_te[te]
    syn_d, syn_noise = 32, 0.02
    Xs_tr, ys_tr, Xs_te, ys_te = make_shells(n_syn_train, n_syn_test, d=syn_d, noise=syn_noise,
                                             seed=args.seed)
    M = args.block_size * args.max_blocks
    cfg = {
        "mode": "quick" if args.quick else "full",
        "repeats": args.repeats,
        "passes": args.passes,
        "order_seed": args.seed,
        "blas_threads": args.blas_threads if args.blas_threads > 0 else "library default",
        "n_random_features": M,
        "loss": "hinge (both)",
        "onlinekernel": {
            "loss": "hinge", "kernel": "gaussian", "alpha": 1e-6, "batch_size": 64,
            "block_size": args.block_size, "max_blocks": args.max_blocks,
            "learning_rate": "inverse", "eta0": 512.0, "t0": 100.0, "fit_intercept": True,
            "precondition": False, "random_state": args.seed,
        },
        "onlinekernel_chunk_rows": 4096,
        "sklearn_sampler": {"n_components": M, "random_state": args.seed},
        "sklearn_sgd": {"loss": "hinge", "alpha": 1e-5, "learning_rate": "optimal",
                        "fit_intercept": True, "random_state": args.seed},
        "sklearn_batch_rows": 256,
        "sklearn_dtype": "float64",
        "predict_chunk_rows": 4096,
        "predict_timing_rows": 20_000,
        "notes": [
            "Rows are fed in a seeded permutation per pass, the same for both libraries.",
            "onlinekernel: partial_fit on chunks of onlinekernel_chunk_rows rows; each chunk "
            "runs one doubly stochastic step per batch_size rows (first max_blocks steps add "
            "a block each, later steps update all blocks).",
            "sklearn: each batch of sklearn_batch_rows rows is transformed by the fitted "
            "RBFSampler, then SGDClassifier.partial_fit (which updates sample by sample).",
            "Training time covers the partial_fit loop (and the transforms for sklearn); "
            "prediction time covers predict on the first predict_timing_rows rows of the test "
            "set, in chunks of predict_chunk_rows rows (transform + predict for sklearn); "
            "accuracy is on the whole test set.",
            "Throughputs are medians over the repeats; the libraries alternate order in "
            "each repeat.",
        ],
        "datasets": {
            "ijcnn1": {"source": str(Path(args.data_dir) / "ijcnn1.npz"),
                       "subsample": "10000 train / 10000 test rows" if args.quick else None,
                       "gamma": args.gamma_ijcnn1},
            "shells32": {"generator": "make_shells: x ~ N(0, I_32), y = +1 iff ||x||^2 > "
                                      "median, 2% labels flipped (Bayes accuracy 98%)",
                         "d": syn_d, "label_noise": syn_noise, "seed": args.seed,
                         "gamma": 1.0 / syn_d},
        },
    }
    log(f"mode {cfg['mode']}: M = {M} random features, {args.repeats} repeat(s), "
        f"{args.passes} pass(es), BLAS threads {cfg['blas_threads']}")

    limit = threadpool_limits(args.blas_threads) if args.blas_threads > 0 else nullcontext()
    results = {}
    with limit:
        results["ijcnn1"], ij_models, ij_X, ij_y = bench_dataset(
            "ijcnn1", X_tr, y_tr, X_te, y_te, args.gamma_ijcnn1, cfg, log)
        results["shells32"], _, _, _ = bench_dataset(
            "shells32", Xs_tr, ys_tr, Xs_te, ys_te, 1.0 / syn_d, cfg, log)
        log("profile: onlinekernel training time split")
        profile = profile_onlinekernel(ij_X, ij_y, args.gamma_ijcnn1, cfg,
                                       rounds=1 if args.quick else 2)
    log("diagnostic: prediction with default BLAS threads")
    diag = default_threads_predict(ij_models, X_te, 4096, cfg)

    report = {
        **header,
        "load_average_at_end": load_average(),
        "settings": cfg,
        "results": results,
        "onlinekernel_profile": profile,
        "default_blas_threads_predict_ijcnn1": diag,
        "wall_time_s": time.perf_counter() - started,
    }
    write_json(args.output, report)

    print()
    print(f"ok = onlinekernel DSGClassifier, sk = scikit-learn RBFSampler + SGDClassifier; "
          f"throughputs are medians of {args.repeats} repeat(s), BLAS threads "
          f"{cfg['blas_threads']}")
    print(markdown_table(results, args.passes))
    print()
    if profile["available"]:
        print(f"onlinekernel training time on ijcnn1: "
              f"{100 * profile['share_predict_half']:.0f} % prediction half of the steps, "
              f"{100 * profile['share_gradient_and_update']:.0f} % gradient and update, "
              f"{100 * profile['share_python_overhead']:.0f} % Python overhead")
    else:
        print(f"onlinekernel training time split unavailable: {profile['reason']}")
    for name, r in results.items():
        if "train_share_transform" in r["sklearn"]:
            print(f"sklearn training time on {name}: "
                  f"{100 * r['sklearn']['train_share_transform']:.0f} % RBFSampler.transform, "
                  f"{100 * r['sklearn']['train_share_partial_fit']:.0f} % "
                  f"SGDClassifier.partial_fit")
    print(f"prediction with default BLAS threads (ijcnn1, {diag['rows']} rows): "
          f"onlinekernel {diag['onlinekernel_predict_samples_per_s']:,.0f}/s, "
          f"sklearn {diag['sklearn_predict_samples_per_s']:,.0f}/s")
    print(f"wrote {args.output} in {report['wall_time_s']:.0f} s")


if __name__ == "__main__":
    main()
