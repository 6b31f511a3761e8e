"""A distributed fit on Dask: 1-worker against 2-worker LocalCluster time, same model.

Issue 13's target: with 2 workers of 1 thread each a ``fit`` on a dask array
of covtype_binary runs at least 1.6x as fast as with 1 worker.

The training rows (inputs standardised with the training mean and standard
deviation) become a dask array of ``--partitions`` row partitions, persisted
on a ``LocalCluster`` of ``processes=True`` workers with one thread each
(their BLAS on one thread too: dask's nanny sets ``OMP_NUM_THREADS=1``); the
loading is not timed.  ``DSGClassifier(**MODELS[model]).fit`` is timed on a
1-worker cluster and on a 2-worker cluster, and in the benchmark's own
process on the numpy arrays (one thread) for reference.  Recorded: the three
times, the speed-up (1-worker time / 2-worker time), the test error of each
model and the largest difference of their decision functions (the fits are
the same model up to the order of floating-point sums).

Models:

* ``ridge`` (default): the squared loss on the +-1 labels by ``cholesky``:
  one distributed pass that sums each partition's ``Phi^T Phi`` (``M x M``)
  and ``Phi^T y`` on its worker, then one ``M x M`` solve on the client;
* ``logistic``: the logistic loss by ``newton-cg`` for a fixed number of
  Newton steps (``tol=None``; unpreconditioned conjugate gradients, as a
  distributed fit runs them): each CG iteration sends the ``M`` direction
  coefficients to every partition and gets back its ``M``-vector of the
  Hessian product.

On a machine shared with other jobs the ratio is noisy: the report carries
the load average at the start and at the end.

Writes ``results/dask_fit.json`` (``--quick``: ``dask_fit_quick.json``).
"""
import importlib
import time

import numpy as np

from ._common import (add_data_dir, add_output_dir, argument_parser, load_average, load_dataset,
                      report_header, write_json)

MODELS = {
    "ridge": {"loss": "squared", "solver": "cholesky", "alpha": 1e-6},
    "logistic": {"loss": "logistic", "solver": "newton-cg", "alpha": 1e-6, "tol": None,
                 "max_iter": 3},
}


def _classifier(model, n_components, seed):
    from onlinekernel import DSGClassifier
    return DSGClassifier(**MODELS[model], n_components=n_components, dtype="float64",
                         max_memory=2 ** 28, random_state=seed)


def timed_cluster_fit(workers, X, y, partitions, model, n_components, seed):
    """``(seconds, fitted model)`` of the fit on a LocalCluster of ``workers`` 1-thread processes."""
    import dask.array as da
    from distributed import Client, LocalCluster, wait
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           dashboard_address=None)
    rows = -(-X.shape[0] // partitions)
    with cluster, Client(cluster) as client:
        Xd = da.from_array(X, chunks=(rows, X.shape[1]))
        yd = da.from_array(y, chunks=rows)
        Xd, yd = client.persist([Xd, yd])
        wait([Xd, yd])
        client.run(importlib.import_module, "onlinekernel")  # the workers' imports, untimed
        est = _classifier(model, n_components, seed)
        t0 = time.perf_counter()
        est.fit(Xd, yd)
        seconds = time.perf_counter() - t0
    return seconds, est


def timed_local_fit(X, y, model, n_components, seed):
    from threadpoolctl import threadpool_limits
    est = _classifier(model, n_components, seed)
    with threadpool_limits(1):
        t0 = time.perf_counter()
        est.fit(X, y)
        return time.perf_counter() - t0, est


def run(dataset, data_dir, rows, partitions, model, n_components, seed=0, log=print):
    X, y, Xt, yt = load_dataset(dataset, data_dir)
    if rows is not None and rows < X.shape[0]:
        X, y = X[:rows], y[:rows]
    mean, std = X.mean(axis=0), X.std(axis=0)
    std[std == 0] = 1.0
    X, Xt = (X - mean) / std, (Xt - mean) / std
    result = {"dataset": dataset, "rows": int(X.shape[0]), "features": int(X.shape[1]),
              "test_rows": int(Xt.shape[0]), "partitions": partitions, "model": model,
              "params": {**MODELS[model], "n_components": n_components}}
    fits = {}
    for name, fit in (("local_1_thread", lambda: timed_local_fit(X, y, model, n_components,
                                                                  seed)),
                      ("dask_1_worker", lambda: timed_cluster_fit(1, X, y, partitions, model,
                                                                  n_components, seed)),
                      ("dask_2_workers", lambda: timed_cluster_fit(2, X, y, partitions, model,
                                                                   n_components, seed))):
        seconds, est = fit()
        fits[name] = est
        error = float(np.mean(est.predict(Xt) != yt))
        result[name] = {"seconds": round(seconds, 3), "test_error": error,
                        "solver": est.solver_}
        log(f"{dataset} {model}: {name} {seconds:.2f} s, test error {100 * error:.2f} %")
    ref = fits["local_1_thread"].decision_function(Xt)
    result["max_abs_decision_difference"] = {
        name: float(np.max(np.abs(fits[name].decision_function(Xt) - ref)))
        for name in ("dask_1_worker", "dask_2_workers")}
    result["speedup_2_vs_1_worker"] = round(result["dask_1_worker"]["seconds"]
                                            / result["dask_2_workers"]["seconds"], 3)
    log(f"speed-up, 2 workers against 1: {result['speedup_2_vs_1_worker']:.2f}x "
        f"(target >= 1.6x)")
    return result


def main(argv=None):
    parser = argument_parser(__doc__, "2,000 rows and 256 features: seconds, for the smoke test")
    add_data_dir(parser)
    parser.add_argument("--dataset", default="covtype_binary")
    parser.add_argument("--rows", type=int, default=None, help="training rows used (all)")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--model", choices=sorted(MODELS), default="ridge")
    parser.add_argument("--n-components", type=int, default=1024)
    add_output_dir(parser)
    args = parser.parse_args(argv)
    rows, M = (2000, 256) if args.quick else (args.rows, args.n_components)
    report = report_header("dask_fit", "quick" if args.quick else "full")
    report["result"] = run(args.dataset, args.data_dir, rows, args.partitions, args.model, M)
    report["target_speedup"] = 1.6
    report["load_average_at_end"] = load_average()
    stem = "dask_fit" + ("_quick" if args.quick else "")
    path = write_json(f"{args.output_dir}/{stem}.json", report)
    print(f"wrote {path}")
    return report


if __name__ == "__main__":
    main()
