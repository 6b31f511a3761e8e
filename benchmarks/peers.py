"""Peers benchmark: onlinekernel against scikit-learn and River, side by side.

Every contender learns a Gaussian-kernel classifier in one pass over the same
rows, in the same order (one seeded permutation, shared), with the same
bandwidth ``gamma`` and, for onlinekernel and scikit-learn, the same final
number of random features ``M = block_size * max_blocks`` (default 4096):

* ``onlinekernel``: ``DSGClassifier.partial_fit`` on chunks of
  ``--chunk-rows`` rows (hinge loss, one doubly stochastic step per
  ``batch_size = 64`` rows), in float64 and float32 through the estimator's
  ``dtype`` parameter (when this build has it);
* ``sklearn``: ``RBFSampler(n_components=M, gamma)`` transforms each batch,
  then ``SGDClassifier(loss="hinge").partial_fit`` learns on it, with X cast
  to float64 or float32 (the pipeline keeps that dtype), for every batch size
  of ``--sk-batch-sizes``.  The *best* batch size of each dtype is the
  fastest among those whose accuracy is within ``--accuracy-slack`` of the
  most accurate one; the targets compare with it, and all are reported;
* ``river``: ``compose.Pipeline(feature_extraction.RBFSampler,
  linear_model.LogisticRegression())`` (River's default optimiser) with
  ``learn_one`` on dictionaries, on the first ``--river-samples`` rows of
  the pass only.  River's sampler draws ``n_components`` features *per input
  coordinate* (``cos(x_i w_ij + b_j)``: an additive kernel, with
  ``d * n_components`` outputs) in pure Python, so it gets
  ``n_components = ceil(--river-features / d)`` (about 1024 outputs) and a
  few thousand samples.

Datasets: ijcnn1 (``ijcnn1.npz`` from ``--data-dir``, gamma 1) and
*shells32* (synthetic: ``x ~ N(0, I_32)``, the label says whether
``||x||^2`` is above its median, 2 % of the labels flipped; gamma 1/32).

Measured, with BLAS limited to ``--blas-threads`` threads (default 1) for
everyone:

1. training throughput (samples/s of one pass, median over ``--repeats``, default 3;
   the contenders run interleaved and in reverse order every other repeat,
   so that they see the same machine load) and test accuracy after the pass
   (on ``--test-rows`` rows of the test set; River on ``--river-test-rows``);
2. time to accuracy: test accuracy (``--curve-test-rows`` rows) after each
   chunk against the training wall time so far (evaluation not timed), for
   both onlinekernel dtypes, the best scikit-learn batch size of each dtype
   and River;
3. the latency of single-sample updates at ``d = 100`` with the full
   4096-feature budget: ``DSGClassifier.partial_fit`` of one row,
   ``SGDClassifier.partial_fit`` of ``RBFSampler(4096).transform`` of that
   row, and River's ``learn_one`` with about 4096 outputs
   (``n_components = ceil(4096 / 100)``); median and 90th percentile,
   contenders interleaved in rounds.

Targets (pass/fail with the figures in the JSON, under ``targets``): one-pass
training throughput >= 5x the scikit-learn pipeline's best batch size at the
same M and dtype, with equal or better test accuracy
(``--accuracy-tolerance``, default 0); single-sample update >= 5x faster than
scikit-learn's in the same dtype and >= 20x faster than River's.

Outputs: ``benchmarks/results/peers.json``, ``peers_time_to_accuracy.png``
and ``peers_throughput.png`` (``peers_quick*`` with ``--quick``).

Run from the repository root::

    python -m benchmarks.peers            # full run: 6-15 minutes on 2 busy cores
    python -m benchmarks.peers --quick    # smoke run on subsamples: about a minute

``--ok-param NAME=VALUE`` and ``--sk-param NAME=VALUE`` override the two
libraries' settings (``OK_PARAMS``, ``SK_SGD_PARAMS``; the defaults are the
settings of ``first_benchmark.py``, with ``shuffle=False`` for the SGD).
"""
import argparse
import json
import math
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np
from sklearn.kernel_approximation import RBFSampler
from sklearn.linear_model import SGDClassifier
from threadpoolctl import threadpool_limits

from onlinekernel import DSGClassifier

from ._common import (add_blas_threads, add_budget, add_data_dir, add_output, add_seed,
                      argument_parser, load_average, make_logger, non_negative_int,
                      parse_int_list, positive_int, report_header, timed_compiled_steps,
                      write_json)
from .first_benchmark import load_ijcnn1, make_shells  # the same data

CLASSES = np.array([-1, 1])
DTYPES = ("float64", "float32")

# The one-pass configuration: preconditioned block updates on batches of 32
# with eta0 = 2 * batch_size (one pass over ijcnn1, test accuracy: plain
# defaults 91.9 %, precondition 97.5 %, this 97.8 %; measured when the
# benchmark was set up, before any peers run).
OK_PARAMS = {"loss": "hinge", "kernel": "gaussian", "alpha": 1e-5, "batch_size": 32,
             "learning_rate": "inverse", "eta0": 64.0, "t0": 100.0, "fit_intercept": True,
             "precondition": True}
LATENCY_OK_OVERRIDES = {"precondition": False, "batch_size": 64, "eta0": 512.0}
# shuffle=False: SGDClassifier.partial_fit would otherwise reorder the rows of
# each batch, so that the batch size changed the model (by several points of
# accuracy after one pass) and the rows' order differed from the other
# contenders'.  Without it the batch size changes only the speed.
SK_SGD_PARAMS = {"loss": "hinge", "alpha": 1e-5, "learning_rate": "optimal",
                 "fit_intercept": True, "shuffle": False}


def estimator_capabilities():
    """Which optional ``DSGClassifier`` parameters this build has (``dtype``, ``n_jobs``)."""
    params = DSGClassifier().get_params()
    return {"dtype": "dtype" in params, "n_jobs": "n_jobs" in params}


# --------------------------------------------------------------------------- #
# the contenders, behind one interface
# --------------------------------------------------------------------------- #
class OnlineKernel:
    """``DSGClassifier`` trained by ``partial_fit`` on whole chunks."""

    library = "onlinekernel"

    def __init__(self, dtype, params, caps):
        self.dtype = dtype
        self.key = f"onlinekernel/{dtype}"
        self.params = dict(params)
        if caps["dtype"]:
            self.params["dtype"] = dtype
        if caps["n_jobs"]:
            self.params["n_jobs"] = 1  # one thread, like every peer
        self.model = None

    def prepare(self, X):
        return np.ascontiguousarray(X, dtype=self.dtype)

    def start(self):
        self.model = DSGClassifier(**self.params)

    def learn(self, X, y):
        self.model.partial_fit(X, y, classes=CLASSES)

    def predict(self, X, chunk=4096):
        return np.concatenate([self.model.predict(X[s:s + chunk])
                               for s in range(0, X.shape[0], chunk)])

    def describe(self):
        return {"library": self.library, "dtype": self.dtype, "estimator": "DSGClassifier",
                "params": self.params}


class Sklearn:
    """``RBFSampler`` + ``SGDClassifier.partial_fit``, batch by batch, in one dtype."""

    library = "sklearn"

    def __init__(self, dtype, batch_rows, n_components, gamma, seed, sgd_params=SK_SGD_PARAMS):
        self.dtype = dtype
        self.batch_rows = batch_rows
        self.key = f"sklearn/{dtype}/batch{batch_rows}"
        self.sampler_params = {"n_components": n_components, "gamma": gamma,
                               "random_state": seed}
        self.sgd_params = dict(sgd_params, random_state=seed)
        self.sampler = self.sgd = None
        self.d = None

    def prepare(self, X):
        self.d = X.shape[1]
        return np.ascontiguousarray(X, dtype=self.dtype)

    def start(self):
        # RBFSampler.fit only draws the random weights, in X's dtype.
        self.sampler = RBFSampler(**self.sampler_params).fit(np.zeros((1, self.d), self.dtype))
        self.sgd = SGDClassifier(**self.sgd_params)

    def learn(self, X, y):
        b = self.batch_rows
        for s in range(0, X.shape[0], b):
            self.sgd.partial_fit(self.sampler.transform(X[s:s + b]), y[s:s + b],
                                 classes=CLASSES)

    def predict(self, X, chunk=4096):
        # chunked: the transformed test set (n x M) need not fit in memory
        return np.concatenate([self.sgd.predict(self.sampler.transform(X[s:s + chunk]))
                               for s in range(0, X.shape[0], chunk)])

    def describe(self):
        return {"library": self.library, "dtype": self.dtype, "batch_rows": self.batch_rows,
                "pipeline": "RBFSampler + SGDClassifier.partial_fit",
                "sampler": self.sampler_params, "sgd": self.sgd_params}


class River:
    """River's ``RBFSampler | LogisticRegression`` with ``learn_one`` on dicts."""

    library = "river"

    def __init__(self, n_components, gamma, seed):
        self.dtype = "float64"  # Python floats
        self.key = "river"
        self.n_components = n_components
        self.gamma = gamma
        self.seed = seed
        self.model = None
        self.d = None

    def prepare(self, X):
        self.d = X.shape[1]
        return [dict(enumerate(row)) for row in np.asarray(X, dtype=np.float64).tolist()]

    def start(self):
        from river import compose, feature_extraction, linear_model
        self.model = compose.Pipeline(
            feature_extraction.RBFSampler(gamma=self.gamma, n_components=self.n_components,
                                          seed=self.seed),
            linear_model.LogisticRegression())

    def learn(self, X, y):
        learn_one = self.model.learn_one
        for x, label in zip(X, y.tolist()):
            learn_one(x, label == 1)

    def predict(self, X, chunk=None):
        predict_one = self.model.predict_one
        return np.array([1 if predict_one(x) else -1 for x in X])

    def describe(self):
        return {"library": self.library, "dtype": "Python float",
                "pipeline": "compose.Pipeline(feature_extraction.RBFSampler, "
                            "linear_model.LogisticRegression())",
                "n_components_per_coordinate": self.n_components,
                "output_features": self.n_components * (self.d or 0), "gamma": self.gamma,
                "optimizer": "River's default (SGD, lr 0.01)"}


def one_pass(contender, X, y, chunk_rows, evaluate=None):
    """Train a fresh model on one pass; returns (training seconds, curve).

    With ``evaluate`` (a function of the contender returning an accuracy),
    the accuracy after each chunk goes into the curve as
    ``[seconds so far, samples so far, accuracy]``; evaluation is not timed.
    """
    curve = []
    t_train = 0.0
    t0 = time.perf_counter()
    contender.start()
    t_train += time.perf_counter() - t0
    n = len(y)
    for s in range(0, n, chunk_rows):
        t0 = time.perf_counter()
        contender.learn(X[s:s + chunk_rows], y[s:s + chunk_rows])
        t_train += time.perf_counter() - t0
        if evaluate is not None:
            curve.append([t_train, min(n, s + chunk_rows), evaluate(contender)])
    return t_train, curve


def accuracy(contender, X, y):
    return float(np.mean(contender.predict(X) == y))


# --------------------------------------------------------------------------- #
# training throughput, accuracy, time to accuracy
# --------------------------------------------------------------------------- #
def pick_best(entries, slack):
    """The best of one dtype's scikit-learn batch sizes.

    The fastest among those whose accuracy is within ``slack`` of the most
    accurate one.  ``SGDClassifier.partial_fit`` updates row by row and, with
    ``shuffle=False``, in the rows' order, so every batch size gives the same
    model and this is the fastest; the rule still holds if the settings
    change.

    >>> pick_best({"b64": {"accuracy": 0.90, "train_samples_per_s": 10.0},
    ...            "b256": {"accuracy": 0.95, "train_samples_per_s": 5.0},
    ...            "b1024": {"accuracy": 0.948, "train_samples_per_s": 8.0}}, slack=0.005)
    'b1024'
    """
    top = max(e["accuracy"] for e in entries.values())
    near = {k: e for k, e in entries.items() if e["accuracy"] >= top - slack}
    return max(near, key=lambda k: near[k]["train_samples_per_s"])


def bench_dataset(name, X_train, y_train, X_test, y_test, gamma, cfg, caps, log):
    n, d = X_train.shape
    M = cfg["n_random_features"]
    perm = np.random.default_rng(cfg["seed"]).permutation(n)
    X_pass, y_pass = X_train[perm], y_train[perm]
    # Fixed, seeded test subsets: the whole test set takes minutes to transform
    # for the scikit-learn pipelines.
    rng = np.random.default_rng(cfg["seed"] + 1)
    test_idx = np.sort(rng.permutation(X_test.shape[0])[:cfg["test_rows"]])
    X_te, y_te = X_test[test_idx], y_test[test_idx]
    X_cu, y_cu = X_te[:cfg["curve_test_rows"]], y_te[:cfg["curve_test_rows"]]
    n_river = min(n, cfg["river_samples"])
    X_te_river, y_te_river = X_te[:cfg["river_test_rows"]], y_te[:cfg["river_test_rows"]]
    river_nc = max(1, math.ceil(cfg["river_features"] / d))

    contenders = []
    for dt in DTYPES:
        if dt == "float32" and not caps["dtype"]:
            continue
        contenders.append(OnlineKernel(dt, dict(cfg["onlinekernel"], gamma=gamma), caps))
        for b in cfg["sk_batch_sizes"]:
            contenders.append(Sklearn(dt, b, M, gamma, cfg["seed"], cfg["sklearn_sgd"]))
    if cfg["river"]:
        contenders.append(River(river_nc, gamma, cfg["seed"]))
    # Inputs converted once per dtype / format, outside every timed region.
    prepared = {}
    for c in contenders:
        key = (c.library == "river", c.dtype)
        if key not in prepared:
            if c.library == "river":
                prepared[key] = (c.prepare(X_pass[:n_river]), c.prepare(X_te_river),
                                 c.prepare(X_te_river[:cfg["curve_test_rows"]]))
            else:
                prepared[key] = (c.prepare(X_pass), c.prepare(X_te), c.prepare(X_cu))
        else:
            c.prepare(X_pass[:1])  # sets d
    data = {c.key: prepared[(c.library == "river", c.dtype)] for c in contenders}

    res = {c.key: dict(c.describe(), train_time_s=[], n_train_samples=int(n_river)
                       if c.library == "river" else int(n)) for c in contenders}
    for rep in range(cfg["repeats"]):
        order = contenders if rep % 2 == 0 else contenders[::-1]
        for c in order:
            X_tr_c, X_te_c, _ = data[c.key]
            y_tr_c = y_pass[:n_river] if c.library == "river" else y_pass
            t, _ = one_pass(c, X_tr_c, y_tr_c, cfg["chunk_rows"])
            r = res[c.key]
            r["train_time_s"].append(t)
            msg = (f"  {name} rep {rep + 1}/{cfg['repeats']} {c.key:28s} "
                   f"{len(y_tr_c) / t:10,.0f} samples/s")
            if rep == 0:
                y_te_c = y_te_river if c.library == "river" else y_te
                r["accuracy"] = accuracy(c, X_te_c, y_te_c)
                r["test_rows"] = int(len(y_te_c))
                msg += f"  acc {r['accuracy']:.4f}"
            log(msg)
    for r in res.values():
        r["train_time_median_s"] = float(np.median(r["train_time_s"]))
        r["train_samples_per_s"] = r["n_train_samples"] / r["train_time_median_s"]

    best = {}
    for dt in DTYPES:
        entries = {k: r for k, r in res.items() if r["library"] == "sklearn" and r["dtype"] == dt}
        if entries:
            key = pick_best(entries, cfg["accuracy_slack"])
            best[dt] = {"key": key, "batch_rows": entries[key]["batch_rows"],
                        "train_samples_per_s": entries[key]["train_samples_per_s"],
                        "accuracy": entries[key]["accuracy"]}

    # Time to accuracy: one instrumented pass of each onlinekernel dtype, the
    # best scikit-learn batch size of each dtype, and River.
    log(f"  {name}: time-to-accuracy passes")
    for c in contenders:
        if c.library == "sklearn" and c.key not in {b["key"] for b in best.values()}:
            continue
        X_tr_c, _, X_cu_c = data[c.key]
        y_tr_c, y_cu_c = ((y_pass[:n_river], y_cu[:len(X_cu_c)]) if c.library == "river"
                          else (y_pass, y_cu))
        chunk = (max(1, n_river // cfg["river_curve_points"]) if c.library == "river"
                 else cfg["chunk_rows"])
        _, curve = one_pass(c, X_tr_c, y_tr_c, chunk,
                            evaluate=lambda m, X=X_cu_c, y=y_cu_c: accuracy(m, X, y))
        res[c.key]["curve"] = curve
        res[c.key]["curve_test_rows"] = int(len(y_cu_c))

    ratios = {}
    for dt in DTYPES:
        ok = res.get(f"onlinekernel/{dt}")
        if ok is None or dt not in best:
            continue
        sk = res[best[dt]["key"]]
        ratios[dt] = {
            "versus": best[dt]["key"],
            "train_samples_per_s": ok["train_samples_per_s"] / sk["train_samples_per_s"],
            # within one repeat the two ran minutes apart at most: the spread of
            # these shows how much the machine's load moved the figure above
            "train_samples_per_s_by_repeat": [
                (ok["n_train_samples"] / a) / (sk["n_train_samples"] / b)
                for a, b in zip(ok["train_time_s"], sk["train_time_s"])],
            "accuracy_difference": ok["accuracy"] - sk["accuracy"],
        }
        if "river" in res:
            ratios[dt]["train_samples_per_s_over_river"] = (
                ok["train_samples_per_s"] / res["river"]["train_samples_per_s"])
    return {"n_train": int(n), "n_test": int(X_test.shape[0]), "n_features_in": int(d),
            "gamma": float(gamma), "test_rows": int(len(y_te)),
            "positive_rate_test_rows": float(np.mean(y_te == 1)),
            "contenders": res, "sklearn_best": best,
            "ratios_onlinekernel_over_peer": ratios}


# --------------------------------------------------------------------------- #
# single-sample update latency
# --------------------------------------------------------------------------- #
def measure_latency(cfg, caps, log=print):
    """Latency of one-row updates with a full budget, every contender interleaved.

    Each model first learns ``warm_rows`` rows (for onlinekernel: enough
    steps to fill ``max_blocks`` blocks); then the contenders take turns, in
    ``rounds`` rounds (order reversed every other round), each timing its
    share of single-row updates on fresh rows.
    """
    d, M = cfg["latency_d"], cfg["n_random_features"]
    updates, river_updates, rounds = (cfg["latency_updates"], cfg["river_latency_updates"],
                                      cfg["latency_rounds"])
    # One-row updates run the plain step (no preconditioning: a one-row batch
    # has no cross-talk for it to remove, and its solves would be pure
    # overhead per update).
    ok_params = dict(cfg["onlinekernel"], gamma=1.0 / d, **LATENCY_OK_OVERRIDES)
    warm = 2 * ok_params["batch_size"] * ok_params["max_blocks"]
    n_rows = warm + updates + river_updates + 1
    X, y, _, _ = make_shells(n_rows, 0, d=d, seed=cfg["seed"])
    X_warm, y_warm = X[:warm], y[:warm]
    X_up, y_up = X[warm:], y[warm:]

    contenders = {}
    for dt in DTYPES:
        if dt == "float32" and not caps["dtype"]:
            continue
        ok = OnlineKernel(dt, ok_params, caps)
        ok.start()
        Xw = ok.prepare(X_warm)
        ok.model.partial_fit(Xw, y_warm, classes=CLASSES)
        if ok.model.n_random_features_ != M:
            raise RuntimeError(f"warm-up left {ok.model.n_random_features_} features, not {M}")
        rows = [ok.prepare(X_up[i:i + 1]) for i in range(updates)]
        contenders[ok.key] = (lambda i, m=ok.model, rows=rows: m.partial_fit(rows[i],
                                                                               y_up[i:i + 1]),
                              updates, ok.describe())
        sampler = RBFSampler(n_components=M, gamma=1.0 / d, random_state=cfg["seed"])
        sampler.fit(np.zeros((1, d), dt))
        sgd = SGDClassifier(**dict(cfg["sklearn_sgd"], random_state=cfg["seed"]))
        sgd.partial_fit(sampler.transform(X_warm.astype(dt)), y_warm, classes=CLASSES)
        rows = [np.ascontiguousarray(X_up[i:i + 1], dtype=dt) for i in range(updates)]
        contenders[f"sklearn/{dt}"] = (
            lambda i, s=sampler, g=sgd, rows=rows: g.partial_fit(s.transform(rows[i]),
                                                                 y_up[i:i + 1]),
            updates, {"library": "sklearn", "dtype": dt,
                      "pipeline": f"RBFSampler({M}).transform(row) + "
                                  f"SGDClassifier.partial_fit"})
    if cfg["river"] and river_updates:
        rv = River(max(1, math.ceil(M / d)), 1.0 / d, cfg["seed"])
        rv.start()
        rv.learn(rv.prepare(X_warm[:cfg["river_latency_warm"]]),
                 y_warm[:cfg["river_latency_warm"]])
        rows = rv.prepare(X_up[:river_updates])
        labels = (y_up[:river_updates] == 1).tolist()
        contenders["river"] = (lambda i, m=rv.model, rows=rows: m.learn_one(rows[i],
                                                                             labels[i]),
                               river_updates, rv.describe())

    times = {k: [] for k in contenders}
    done = {k: 0 for k in contenders}
    keys = list(contenders)
    for rnd in range(rounds):
        for k in (keys if rnd % 2 == 0 else keys[::-1]):
            fn, total, _ = contenders[k]
            share = total // rounds + (1 if rnd < total % rounds else 0)
            for i in range(done[k], done[k] + share):
                t0 = time.perf_counter()
                fn(i)
                times[k].append(time.perf_counter() - t0)
            done[k] += share
    out = {"d": d, "n_random_features": M, "warm_rows": warm, "rounds": rounds,
           "contenders": {}}
    for k, (_, total, desc) in contenders.items():
        t = np.array(times[k]) * 1e6
        out["contenders"][k] = dict(desc, updates=int(total),
                                    median_us=float(np.median(t)),
                                    p90_us=float(np.percentile(t, 90)),
                                    updates_per_s=float(1e6 / np.median(t)))
        log(f"  latency {k:18s} median {np.median(t):10.1f} us  p90 "
            f"{np.percentile(t, 90):10.1f} us  ({total} updates)")
    c = out["contenders"]
    out["ratios_peer_over_onlinekernel"] = {}
    for dt in DTYPES:
        ok = c.get(f"onlinekernel/{dt}")
        if ok is None:
            continue
        r = {"sklearn": c[f"sklearn/{dt}"]["median_us"] / ok["median_us"]}
        if "river" in c:
            r["river"] = c["river"]["median_us"] / ok["median_us"]
        out["ratios_peer_over_onlinekernel"][dt] = r
    out["onlinekernel_split"] = latency_split(X_warm, y_warm, X_up[:updates], y_up[:updates],
                                              ok_params, caps)
    return out


def latency_split(X_warm, y_warm, X_up, y_up, params, caps):
    """Split a float64 one-row ``partial_fit`` into the compiled steps and the Python around.

    Diagnostic (not used by the targets): times the compiled steps with
    :func:`benchmarks._common.timed_compiled_steps` for one run of updates.
    """
    ok = OnlineKernel("float64", params, caps)
    ok.start()
    ok.model.partial_fit(X_warm, y_warm, classes=CLASSES)
    rows = [np.ascontiguousarray(X_up[i:i + 1]) for i in range(X_up.shape[0])]
    with timed_compiled_steps() as spent:
        t0 = time.perf_counter()
        for i, row in enumerate(rows):
            ok.model.partial_fit(row, y_up[i:i + 1])
        total = time.perf_counter() - t0
    if spent is None:
        return {"available": False, "reason": "onlinekernel.estimators._base has no "
                                              "module-level train_steps to time"}
    if not spent[0]:
        return {"available": False, "reason": "partial_fit did not call the module-level "
                                              "train_steps"}
    n = len(rows)
    return {"available": True, "updates": n, "mean_total_us": 1e6 * total / n,
            "mean_compiled_train_steps_us": 1e6 * spent[0] / n,
            "mean_python_overhead_us": 1e6 * (total - spent[0]) / n,
            "share_python_overhead": (total - spent[0]) / total}


# --------------------------------------------------------------------------- #
# targets
# --------------------------------------------------------------------------- #
def _target(tid, description, status, value, threshold, unit, **detail):
    return dict({"id": tid, "description": description, "status": status, "value": value,
                 "threshold": threshold, "unit": unit}, **detail)


def evaluate_targets(results, latency, caps, cfg):
    """Pass/fail of every target, with its figures.

    ``status`` is ``"pass"``, ``"fail"`` or ``"not available"`` (a variant
    this build cannot run, such as float32 before the ``dtype`` parameter).
    """
    out = []
    ratio_min = cfg["target_throughput_ratio"]
    tol = cfg["accuracy_tolerance"]
    for name, r in results.items():
        for dt in DTYPES:
            tid = f"peers.{name}.{dt}.train_throughput_vs_sklearn"
            desc = (f"{name}, {dt}: one-pass training throughput >= {ratio_min:g}x the "
                    f"scikit-learn pipeline's (best batch size, same M and dtype) with equal "
                    f"or better test accuracy")
            q = r["ratios_onlinekernel_over_peer"].get(dt)
            if q is None:
                why = ("DSGClassifier has no dtype parameter in this build"
                       if dt == "float32" and not caps["dtype"] else "not measured")
                out.append(_target(tid, desc, "not available", None, ratio_min, "x",
                                   reason=why))
                continue
            ok_acc = r["contenders"][f"onlinekernel/{dt}"]["accuracy"]
            sk_acc = r["sklearn_best"][dt]["accuracy"]
            passed = q["train_samples_per_s"] >= ratio_min and ok_acc >= sk_acc - tol
            out.append(_target(
                tid, desc, "pass" if passed else "fail", q["train_samples_per_s"], ratio_min,
                "x", versus=q["versus"],
                ratio_by_repeat=q.get("train_samples_per_s_by_repeat"),
                accuracy_onlinekernel=ok_acc,
                accuracy_sklearn=sk_acc, accuracy_difference=ok_acc - sk_acc,
                accuracy_tolerance=tol,
                onlinekernel_samples_per_s=r["contenders"][f"onlinekernel/{dt}"]
                ["train_samples_per_s"],
                sklearn_samples_per_s=r["sklearn_best"][dt]["train_samples_per_s"]))
    if latency is not None:
        ratios = latency["ratios_peer_over_onlinekernel"]
        for peer, need in (("sklearn", cfg["target_latency_sklearn"]),
                           ("river", cfg["target_latency_river"])):
            for dt in DTYPES:
                tid = f"peers.latency.{dt}.vs_{peer}"
                desc = (f"single-sample update ({dt}, d = {latency['d']}, "
                        f"{latency['n_random_features']} features) >= {need:g}x faster than "
                        f"{peer}")
                q = ratios.get(dt, {}).get(peer)
                if q is None:
                    why = ("DSGClassifier has no dtype parameter in this build"
                           if dt == "float32" and not caps["dtype"] else f"{peer} not measured")
                    out.append(_target(tid, desc, "not available", None, need, "x", reason=why))
                    continue
                peer_key = f"sklearn/{dt}" if peer == "sklearn" else "river"
                c = latency["contenders"]
                out.append(_target(
                    tid, desc, "pass" if q >= need else "fail", q, need, "x",
                    onlinekernel_median_us=c[f"onlinekernel/{dt}"]["median_us"],
                    peer_median_us=c[peer_key]["median_us"]))
    return out


# --------------------------------------------------------------------------- #
# plots and tables
# --------------------------------------------------------------------------- #
LABELS = {"onlinekernel": "onlinekernel", "sklearn": "sklearn RBFSampler+SGD", "river": "River"}
COLORS = {"onlinekernel/float64": "#1f77b4", "onlinekernel/float32": "#6baed6",
          "sklearn/float64": "#d62728", "sklearn/float32": "#fc9272", "river": "#2ca02c"}


def _label(key, r):
    if r["library"] == "sklearn":
        return f"sklearn {r['dtype']} (batch {r['batch_rows']})"
    if r["library"] == "river":
        return f"River ({r['output_features']} features, {r['n_train_samples']} samples)"
    return f"onlinekernel {r['dtype']}"


def _color(key):
    # "sklearn/float64/batch256" -> "sklearn/float64"
    return COLORS.get("/".join(key.split("/")[:2]), "0.5")


def plot(report, paths):
    """Time-to-accuracy curves and throughput bars as PNG files.

    Returns the paths written, or a note when matplotlib is missing.
    """
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return {"written": [], "note": "matplotlib is not installed (pip install '.[bench]')"}
    results = report["results"]
    names = list(results)
    fig, axes = plt.subplots(1, len(names), figsize=(6.4 * len(names), 5.4), squeeze=False)
    for ax, name in zip(axes[0], names):
        for key, r in results[name]["contenders"].items():
            if "curve" not in r:
                continue
            cu = np.array(r["curve"])
            ax.plot(cu[:, 0], 100 * cu[:, 2], marker="o", ms=3, color=_color(key),
                    ls="--" if r["library"] == "river" else "-", label=_label(key, r))
        ax.set_xscale("log")
        ax.set_xlabel("training wall time (s, one pass)")
        ax.set_ylabel("test accuracy (%)")
        ax.set_title(f"{name}: accuracy after each chunk")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
    fig.suptitle(f"Time to accuracy, M = {report['settings']['n_random_features']} random "
                 f"features, BLAS threads {report['settings']['blas_threads']}")
    fig.tight_layout()
    fig.savefig(paths["time_to_accuracy"], dpi=110)
    plt.close(fig)

    lat = report.get("latency")
    n_panels = len(names) + (1 if lat else 0)
    fig, axes = plt.subplots(1, n_panels, figsize=(5.6 * n_panels, 5.0), squeeze=False)
    for ax, name in zip(axes[0], names):
        items = list(results[name]["contenders"].items())
        vals = [r["train_samples_per_s"] for _, r in items]
        ax.barh(range(len(items)), vals, color=[_color(k) for k, _ in items])
        ax.set_yticks(range(len(items)))
        ax.set_yticklabels([_label(k, r).replace(" features, ", " f., ") for k, r in items],
                           fontsize=8)
        for i, v in enumerate(vals):
            ax.text(v, i, f" {v:,.0f}", va="center", fontsize=7)
        ax.set_xlim(0, 1.25 * max(vals))  # room for the labels
        ax.invert_yaxis()
        ax.set_xlabel("training samples/s (one pass)")
        ax.set_title(f"{name}: training throughput")
    if lat:
        ax = axes[0][-1]
        items = list(lat["contenders"].items())
        vals = [r["median_us"] for _, r in items]
        ax.barh(range(len(items)), vals, color=[_color(k) for k, _ in items])
        ax.set_yticks(range(len(items)))
        ax.set_yticklabels(list(lat["contenders"]), fontsize=8)
        for i, v in enumerate(vals):
            ax.text(v, i, f" {v:,.0f} us", va="center", fontsize=7)
        ax.set_xlim(0, 1.25 * max(vals))
        ax.invert_yaxis()
        ax.set_xlabel("median latency (us; lower is better)")
        ax.set_title(f"one-row update, d = {lat['d']}, M = {lat['n_random_features']}")
    fig.tight_layout()
    fig.savefig(paths["throughput"], dpi=110)
    plt.close(fig)
    return {"written": [str(paths["time_to_accuracy"]), str(paths["throughput"])]}


def markdown_tables(report):
    """The run's figures as markdown tables (printed, and kept in the JSON)."""
    lines = ["| dataset | contender | samples/s (one pass) | test accuracy | ratio ok / this |",
             "|---|---|---|---|---|"]
    for name, r in report["results"].items():
        best_keys = {b["key"] for b in r["sklearn_best"].values()}
        for key, c in r["contenders"].items():
            ok = r["contenders"].get(f"onlinekernel/{c['dtype']}") or \
                r["contenders"].get("onlinekernel/float64")
            ratio = ("" if c["library"] == "onlinekernel" or ok is None
                     else f"{ok['train_samples_per_s'] / c['train_samples_per_s']:.2f}x")
            mark = " **(best)**" if key in best_keys else ""
            lines.append(f"| {name} | {_label(key, c)}{mark} | {c['train_samples_per_s']:,.0f} | "
                         f"{100 * c['accuracy']:.2f} % ({c['test_rows']} rows) | {ratio} |")
    lat = report.get("latency")
    if lat:
        lines += ["", f"Single-row update, d = {lat['d']}, {lat['n_random_features']} features:",
                  "", "| contender | median (us) | p90 (us) | updates |", "|---|---|---|---|"]
        for key, c in lat["contenders"].items():
            lines.append(f"| {key} | {c['median_us']:,.1f} | {c['p90_us']:,.1f} | "
                         f"{c['updates']} |")
    lines += ["", "| target | value | threshold | status |", "|---|---|---|---|"]
    for t in report["targets"]:
        v = "n/a" if t["value"] is None else f"{t['value']:.2f}{t['unit']}"
        lines.append(f"| {t['id']} | {v} | {t['threshold']:g}{t['unit']} | {t['status']} |")
    return "\n".join(lines)


# --------------------------------------------------------------------------- #
# main
# --------------------------------------------------------------------------- #
def _param(text):
    """``NAME=VALUE`` -> ``(NAME, VALUE)``, VALUE read as JSON when it parses (else a string)."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    try:
        return name.strip(), json.loads(value)
    except ValueError:
        return name.strip(), value


def parse_args(argv=None):
    p = argument_parser(__doc__, "smoke run: 8000 ijcnn1 / 8000 synthetic training rows, one "
                                 "repeat, fewer River samples and updates")
    add_data_dir(p, "folder holding ijcnn1.npz")
    p.add_argument("--datasets", nargs="+", choices=("ijcnn1", "shells32"),
                   default=["ijcnn1", "shells32"], help="datasets to run (default: both)")
    add_output(p, "peers", "; the PNG files go beside it")
    p.add_argument("--no-plots", action="store_true", help="do not draw the PNG files")
    p.add_quick_option("--repeats", 3, 1, "timed one-pass repeats per contender")
    add_budget(p)
    p.add_argument("--chunk-rows", type=positive_int, default=4096,
                   help="rows per partial_fit call of onlinekernel, and per accuracy point of "
                        "the time-to-accuracy curves (default: %(default)s)")
    p.add_argument("--sk-batch-sizes", type=parse_int_list, default=[64, 256, 1024, 4096],
                   help="scikit-learn batch sizes to try, comma-separated (default: "
                        "64,256,1024,4096)")
    p.add_argument("--ok-param", type=_param, action="append", default=[], metavar="NAME=VALUE",
                   help="override a DSGClassifier parameter (repeatable), e.g. alpha=1e-5")
    p.add_argument("--sk-param", type=_param, action="append", default=[], metavar="NAME=VALUE",
                   help="override an SGDClassifier parameter (repeatable), e.g. alpha=1e-4")
    p.add_argument("--gamma-ijcnn1", type=float, default=1.0,
                   help="RBF gamma on ijcnn1 (default: %(default)s; shells32 uses 1/32)")
    p.add_quick_option("--train-rows", None, 8000, "ijcnn1 training rows",
                       shown=("all 49990", 8000))
    p.add_quick_option("--synthetic-train", 50_000, 8000, "shells32 training rows")
    p.add_quick_option("--synthetic-test", 10_000, 4000, "shells32 test rows")
    p.add_quick_option("--test-rows", 20_000, 4000, "test rows scored after the pass")
    p.add_quick_option("--curve-test-rows", 2000, 1000, "test rows scored after each chunk")
    p.add_argument("--no-river", action="store_true", help="leave River out")
    p.add_quick_option("--river-samples", 3000, 300, "rows River learns")
    p.add_argument("--river-features", type=positive_int, default=1024,
                   help="River's output features: n_components = ceil(this / d) per input "
                        "coordinate (default: %(default)s)")
    p.add_quick_option("--river-test-rows", 1000, 300, "test rows River is scored on")
    p.add_argument("--latency-d", type=positive_int, default=100,
                   help="input dimension of the single-row update latency (default: "
                        "%(default)s)")
    p.add_quick_option("--latency-updates", 1000, 200,
                       "timed one-row updates per onlinekernel and sklearn variant")
    p.add_quick_option("--river-latency-updates", 100, 20, "timed River learn_one calls",
                       type=non_negative_int)
    p.add_argument("--accuracy-slack", type=float, default=0.005,
                   help="best sklearn batch size: the fastest within this accuracy of the most "
                        "accurate one (default: %(default)s)")
    p.add_argument("--accuracy-tolerance", type=float, default=0.0,
                   help="the throughput target passes when onlinekernel's accuracy is at least "
                        "sklearn's minus this (default: %(default)s)")
    add_blas_threads(p)
    add_seed(p, "models, the row order and the synthetic data")
    return p.parse_args(argv)


def main(argv=None):
    """Run the benchmark; write the JSON (and PNG) files and return the report."""
    args = parse_args(argv)
    started = time.perf_counter()
    # now: the extension in memory is the one loaded at the start
    header = report_header("peers", "quick" if args.quick else "full", argv)
    caps = estimator_capabilities()
    log = make_logger(started)

    M = args.block_size * args.max_blocks
    cfg = {
        "mode": "quick" if args.quick else "full",
        "seed": args.seed,
        "repeats": args.repeats,
        "blas_threads": args.blas_threads if args.blas_threads > 0 else "library default",
        "n_random_features": M,
        "chunk_rows": args.chunk_rows,
        "onlinekernel": dict(OK_PARAMS, block_size=args.block_size, max_blocks=args.max_blocks,
                             random_state=args.seed, **dict(args.ok_param)),
        "sklearn_sgd": dict(SK_SGD_PARAMS, **dict(args.sk_param)),
        "sk_batch_sizes": args.sk_batch_sizes,
        "test_rows": args.test_rows,
        "curve_test_rows": args.curve_test_rows,
        "river": not args.no_river,
        "river_samples": args.river_samples,
        "river_features": args.river_features,
        "river_test_rows": args.river_test_rows,
        "river_curve_points": 8,
        "latency_d": args.latency_d,
        "latency_updates": args.latency_updates,
        "river_latency_updates": 0 if args.no_river else args.river_latency_updates,
        "river_latency_warm": 50,
        "latency_rounds": 5,
        "accuracy_slack": args.accuracy_slack,
        "accuracy_tolerance": args.accuracy_tolerance,
        "target_throughput_ratio": 5.0,
        "target_latency_sklearn": 5.0,
        "target_latency_river": 20.0,
        "estimator_parameters_available": caps,
        "notes": [
            "All contenders see the same rows in the same seeded order; River only the first "
            "river_samples of them.",
            "onlinekernel: partial_fit on chunks of chunk_rows rows, X already in the "
            "contender's dtype (dtype parameter of DSGClassifier); sklearn: each batch is "
            "transformed by the fitted RBFSampler, then SGDClassifier.partial_fit, X and the "
            "sampler in the contender's dtype; River: learn_one on dicts (converted before "
            "timing).",
            "River's RBFSampler draws n_components features per input coordinate "
            "(cos(x_i w_ij + b_j), an additive kernel with d * n_components outputs) in pure "
            "Python: it gets n_components = ceil(river_features / d) and river_samples rows, "
            "so its accuracy is that of a model trained on far fewer rows.",
            "Throughputs are medians over the repeats; the contenders run interleaved, in "
            "reverse order every other repeat. Accuracies are from the first repeat, on a "
            "fixed seeded subset of test_rows test rows (River: its first river_test_rows).",
            "Time-to-accuracy curves come from a separate instrumented pass per contender "
            "(same seed, so the same model); evaluation after each chunk is not timed.",
            "Latency: one-row updates with the budget full (warm_rows learned first), "
            "contenders interleaved in rounds; River with n_components = ceil(M / d) so that "
            "its width is about M.",
        ],
    }
    if not caps["dtype"]:
        log("DSGClassifier has no dtype parameter in this build: the float32 onlinekernel "
            "variants are recorded as not available")
    log(f"mode {cfg['mode']}: M = {M}, {args.repeats} repeat(s), sklearn batch sizes "
        f"{args.sk_batch_sizes}, BLAS threads {cfg['blas_threads']}")

    datasets = {}
    if "ijcnn1" in args.datasets:
        X_tr, y_tr, X_te, y_te = load_ijcnn1(args.data_dir, "peers")
        if args.train_rows is not None and args.train_rows < X_tr.shape[0]:
            keep = np.sort(np.random.default_rng(args.seed).permutation(X_tr.shape[0])
                           [:args.train_rows])
            X_tr, y_tr = X_tr[keep], y_tr[keep]
        datasets["ijcnn1"] = (X_tr, y_tr, X_te, y_te, args.gamma_ijcnn1,
                              {"source": str(Path(args.data_dir) / "ijcnn1.npz"),
                               "training_rows_used": int(X_tr.shape[0])})
    if "shells32" in args.datasets:
        Xs_tr, ys_tr, Xs_te, ys_te = make_shells(args.synthetic_train, args.synthetic_test,
                                                 d=32, noise=0.02, seed=args.seed)
        datasets["shells32"] = (Xs_tr, ys_tr, Xs_te, ys_te, 1.0 / 32,
                                {"generator": "make_shells: x ~ N(0, I_32), y = +1 iff "
                                              "||x||^2 > median, 2% labels flipped (Bayes "
                                              "accuracy 98%)", "seed": args.seed})
    cfg["datasets"] = {k: dict(v[5], gamma=v[4]) for k, v in datasets.items()}

    limit = threadpool_limits(args.blas_threads) if args.blas_threads > 0 else nullcontext()
    results = {}
    with limit:
        for name, (X_tr, y_tr, X_te, y_te, gamma, _) in datasets.items():
            log(f"{name}: {X_tr.shape[0]} x {X_tr.shape[1]} training rows, gamma {gamma:g}")
            results[name] = bench_dataset(name, X_tr, y_tr, X_te, y_te, gamma, cfg, caps, log)
        log(f"single-row update latency at d = {args.latency_d}")
        latency = measure_latency(cfg, caps, log)

    report = {
        **header,
        "settings": cfg,
        "results": results,
        "latency": latency,
    }
    report["targets"] = evaluate_targets(results, latency, caps, cfg)
    stem = args.output.with_suffix("")
    paths = {"time_to_accuracy": Path(f"{stem}_time_to_accuracy.png"),
             "throughput": Path(f"{stem}_throughput.png")}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    report["figures"] = ({"written": [], "note": "--no-plots"} if args.no_plots
                         else plot(report, paths))
    report["markdown"] = markdown_tables(report)
    report["load_average_at_end"] = load_average()
    report["wall_time_s"] = time.perf_counter() - started
    write_json(args.output, report)  # atomic: never a half-written results file

    print()
    print(report["markdown"])
    split = latency["onlinekernel_split"]
    if split["available"]:
        print(f"\nonlinekernel one-row partial_fit (float64): {split['mean_total_us']:.0f} us "
              f"on average, {split['mean_compiled_train_steps_us']:.0f} us in the compiled "
              f"steps, {split['mean_python_overhead_us']:.0f} us of Python around them")
    if report["figures"].get("note"):
        print(f"plots: {report['figures']['note']}")
    print(f"wrote {args.output} in {report['wall_time_s']:.0f} s")
    return report


if __name__ == "__main__":
    main()
