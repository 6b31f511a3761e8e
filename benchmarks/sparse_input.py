"""Sparse benchmark: CSR input against densifying first, on w8a.

The question of the sparse-input issue: does a fit on a high-dimensional
sparse data set (w8a from ``../shared/data``: 49,749 x 300, 3.9 % of the
entries non-zero, the LIBSVM set that ships as svmlight) run at least 3x
faster from its CSR matrix than from the same rows densified first?  In one
run, on the same model (``DSGClassifier(random_state=0, n_jobs=1)``, the
defaults: 4,096 random features, ``solver="auto"``):

* **fit**: ``fit(X_csr)`` against ``fit(X_csr.toarray())`` (the conversion
  counted: that is what a user without sparse support does);
* **feature matrix**: the part of that fit which sees X -- the float32
  feature matrix the default solver (``newton-cg``) builds once and then
  iterates on (``FeatureOperator``); the rest of the fit (Newton steps,
  conjugate gradients and the preconditioner on the kept features) does not
  depend on the input dimension, and ``solver_rest_s`` reports it;
* **fit, solver="sgd"**: the doubly stochastic solver, ``--sgd-epochs``
  epochs (default 1), which regenerates every block's features from X on
  every mini-batch and on every epoch's objective;
* **one pass of partial_fit**: the stream in chunks of ``--chunk-rows`` rows,
  each chunk CSR against each chunk densified;
* **predict**: ``decision_function`` of the test rows, CSR against dense;
* **features**: the fitted model's random features of every training row
  (``transform_block`` of each block: the projection and the cosine alone,
  which the solvers' other work does not dilute), CSR against dense rows.

Each pair runs interleaved ``--repeats`` times (the order reversed every
other repeat, so both see the same machine load) and reports the median wall
time, the ratio dense / sparse, and that both give the same model (largest
coefficient difference) and test accuracy.  BLAS is limited to one thread.

Run from the repository root::

    python -m benchmarks.sparse_input            # w8a: a few minutes
    python -m benchmarks.sparse_input --quick    # 3,000 rows, 1 repeat: seconds

Writes ``benchmarks/results/sparse.json`` and ``sparse.md``
(``sparse_quick.*`` with ``--quick``) and prints a table.
"""
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from onlinekernel import DSGClassifier
from onlinekernel.solvers import FeatureOperator, feature_dtype

from ._common import (add_data_dir, add_output_dir, argument_parser, load_dataset, report_header,
                      write_results)

TARGET_FIT_RATIO = 3.0


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def _fit(X, y, densify):
    model = DSGClassifier(random_state=0, n_jobs=1)
    return model.fit(X.toarray() if densify else X, y)


def _fit_sgd(X, y, densify, epochs):
    model = DSGClassifier(random_state=0, n_jobs=1, solver="sgd", max_iter=epochs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a few epochs do not converge: timing only
        return model.fit(X.toarray() if densify else X, y)


def _feature_matrix(model, X, densify):
    """The feature matrix the default fit builds (its dtype, all blocks, kept)."""
    dtype = feature_dtype(model.solver_, np.float64, model.tol)
    op = FeatureOperator(model.feature_map_, model.seed_, model.n_blocks_,
                         X.toarray() if densify else X, max_bytes=1 << 62, dtype=dtype)
    Phi = op.dense()
    op.close()
    return Phi


def _markdown(report):
    lines = [f"# Sparse input: {report['dataset']} {report['shape'][0]:,} x "
             f"{report['shape'][1]}, density {report['density']:.4f}", "",
             "| | sparse s | dense s | dense / sparse |", "|---|---:|---:|---:|"]
    for key, e in report["results"].items():
        lines.append(f"| {key} | {e['sparse_s']:.2f} | {e['dense_s']:.2f} | "
                     f"{e['ratio_dense_over_sparse']:.2f} |")
    lines.append("")
    for t in report["targets"]:
        lines.append(f"* {t['name']}: {t['measured']:.2f} -> {'met' if t['met'] else 'MISSED'}")
    return "\n".join(lines)


def _stream(X, y, chunk, densify):
    model = DSGClassifier(random_state=0, n_jobs=1)
    classes = np.unique(y)
    for r0 in range(0, X.shape[0], chunk):
        Xc = X[r0:r0 + chunk]
        model.partial_fit(Xc.toarray() if densify else Xc, y[r0:r0 + chunk], classes=classes)
    return model


def _pair(name, run, repeats, log):
    """Median times of ``run(densify)`` for sparse and dense, interleaved."""
    times = {"sparse": [], "dense": []}
    models = {}
    for r in range(repeats):
        order = ("sparse", "dense") if r % 2 == 0 else ("dense", "sparse")
        for kind in order:
            t, models[kind] = _timed(lambda: run(kind == "dense"))
            times[kind].append(t)
            log(f"{name} {kind}: {t:.2f} s")
    med = {k: float(np.median(v)) for k, v in times.items()}
    return {"sparse_s": med["sparse"], "dense_s": med["dense"],
            "samples_s": times, "ratio_dense_over_sparse": med["dense"] / med["sparse"]}, models


def main(argv=None):
    ap = argument_parser(__doc__, "3,000 rows, one repeat")
    add_data_dir(ap)
    ap.add_argument("--dataset", default="w8a")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--chunk-rows", type=int, default=1000)
    ap.add_argument("--sgd-epochs", type=int, default=1)
    add_output_dir(ap, "--out-dir")
    args = ap.parse_args(argv)
    started = time.perf_counter()

    def log(msg):
        print(f"[{time.perf_counter() - started:7.1f}s] {msg}", flush=True)

    X, y, Xt, yt = load_dataset(args.dataset, args.data_dir)
    repeats = args.repeats
    if args.quick:
        X, y, Xt, yt, repeats = X[:3000], y[:3000], Xt[:1000], yt[:1000], 1
    Xs, Xts = sp.csr_matrix(X), sp.csr_matrix(Xt)
    density = Xs.nnz / (X.shape[0] * X.shape[1])
    log(f"{args.dataset}: {X.shape[0]:,} x {X.shape[1]}, density {density:.4f}")
    report = report_header("sparse", "quick" if args.quick else "full")
    report.update({"dataset": args.dataset, "shape": list(X.shape), "density": density,
                   "repeats": repeats, "chunk_rows": args.chunk_rows})
    with threadpool_limits(1, user_api="blas"):
        fit, fits = _pair("fit", lambda dense: _fit(Xs, y, dense), repeats, log)
        fitted = fits["sparse"]
        fmat, fmats = _pair("feature matrix", lambda dense: _feature_matrix(fitted, Xs, dense),
                            repeats, log)
        sgd, sgds = _pair("fit sgd", lambda dense: _fit_sgd(Xs, y, dense, args.sgd_epochs),
                          repeats, log)
        stream, streams = _pair("one pass of partial_fit",
                                lambda dense: _stream(Xs, y, args.chunk_rows, dense),
                                repeats, log)
        model = fits["sparse"]
        pred, preds = _pair("predict",
                            lambda dense: model.decision_function(Xt if dense else Xts),
                            repeats, log)
        fmap, blocks = model.feature_map_, model.n_blocks_
        feats, feat_out = _pair(
            "features",
            lambda dense: [fmap.transform_block(model.seed_, j, X if dense else Xs)
                           for j in range(blocks)], repeats, log)
    fmat["identical"] = bool(np.array_equal(fmats["sparse"], fmats["dense"]))
    fmat["dtype"] = str(fmats["sparse"].dtype)
    for kind in ("sparse", "dense"):
        fmat[f"solver_rest_{kind}_s"] = fit[f"{kind}_s"] - fmat[f"{kind}_s"]
    fmat["share_of_dense_fit"] = fmat["dense_s"] / fit["dense_s"]
    fmat["best_possible_fit_ratio"] = fit["dense_s"] / fmat["solver_rest_sparse_s"]
    sgd["epochs"] = args.sgd_epochs
    for entry, models in ((fit, fits), (stream, streams), (sgd, sgds)):
        entry["max_coef_difference"] = float(np.max(np.abs(models["sparse"].coef_
                                                           - models["dense"].coef_)))
        entry["test_accuracy"] = {k: float(np.mean(m.predict(Xt) == yt))
                                  for k, m in models.items()}
    pred["max_output_difference"] = float(np.max(np.abs(preds["sparse"] - preds["dense"])))
    feats["identical"] = all(np.array_equal(a, b)
                             for a, b in zip(feat_out["sparse"], feat_out["dense"]))
    fit["solver"] = fits["sparse"].solver_
    report["results"] = {"fit": fit, "feature_matrix": fmat, "fit_sgd": sgd,
                         "one_pass_partial_fit": stream, "predict": pred, "features": feats}
    report["targets"] = [{
        "name": f"sparse fit >= {TARGET_FIT_RATIO}x faster than densifying first",
        "measured": fit["ratio_dense_over_sparse"],
        "met": fit["ratio_dense_over_sparse"] >= TARGET_FIT_RATIO}, {
        "name": f"sparse fit (solver='sgd', {args.sgd_epochs} epoch(s)) >= "
                f"{TARGET_FIT_RATIO}x faster than densifying first",
        "measured": sgd["ratio_dense_over_sparse"],
        "met": sgd["ratio_dense_over_sparse"] >= TARGET_FIT_RATIO}]
    write_results(report, args.out_dir, args.quick, _markdown, log)
    print(f"\n{'':24s} {'sparse s':>9s} {'dense s':>9s} {'dense/sparse':>13s}")
    for key, entry in report["results"].items():
        print(f"{key:24s} {entry['sparse_s']:9.2f} {entry['dense_s']:9.2f} "
              f"{entry['ratio_dense_over_sparse']:13.2f}")
    print(f"fit: same model to {fit['max_coef_difference']:.1e}, test accuracy "
          f"{fit['test_accuracy']}")
    print(f"default fit: the feature matrix is {fmat['share_of_dense_fit']:.0%} of the dense "
          f"fit; the rest (solver on kept features) {fmat['solver_rest_sparse_s']:.2f} s sparse, "
          f"{fmat['solver_rest_dense_s']:.2f} s dense: ratio at most "
          f"{fmat['best_possible_fit_ratio']:.2f} with free sparse features")
    for t in report["targets"]:
        print(f"target {t['name']}: {t['measured']:.2f} -> {'met' if t['met'] else 'MISSED'}")
    return report


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
