"""The ``onlinekernel`` command line.

``onlinekernel demo`` (or ``python -m onlinekernel demo``) trains a kernel
classifier on the bundled UCI Letter Recognition data and prints accuracy,
time and model size next to a linear baseline.
"""
import argparse
import sys
import time

import numpy as np

__all__ = ["main"]


def _demo(args, out):
    from sklearn.linear_model import SGDClassifier

    from onlinekernel import DSGClassifier
    from onlinekernel.datasets import LETTER_CITATION, load_letter

    X_train, y_train, X_test, y_test = load_letter()
    print(f"UCI Letter Recognition: {X_train.shape[0]} training rows, {X_test.shape[0]} test "
          f"rows, {X_train.shape[1]} features, 26 classes", file=out)
    print(f"  ({LETTER_CITATION})", file=out)

    t = time.perf_counter()
    linear = SGDClassifier(random_state=0).fit(X_train, y_train)
    t_lin = time.perf_counter() - t
    acc_lin = linear.score(X_test, y_test)

    model = DSGClassifier(gamma=3.0, learning_rate="inverse", eta0=512.0, t0=100.0,
                          n_epochs=1, warm_start=True, random_state=args.seed)
    t = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        model.fit(X_train, y_train)
        rate = epoch * X_train.shape[0] / (time.perf_counter() - t)
        print(f"  epoch {epoch}/{args.epochs}: {rate:,.0f} samples/s, "
              f"{model.n_random_features_} random features", file=out, flush=True)
    t_dsg = time.perf_counter() - t
    acc_dsg = model.score(X_test, y_test)
    size = model.coef_.nbytes + model.intercept_.nbytes

    print("", file=out)
    print(f"{'model':<38}{'test accuracy':>14}{'train time':>12}{'size':>12}", file=out)
    print(f"{'linear SGDClassifier (scikit-learn)':<38}{acc_lin:>14.4f}{t_lin:>11.2f}s"
          f"{linear.coef_.nbytes + linear.intercept_.nbytes:>11,d}B", file=out)
    print(f"{'onlinekernel DSGClassifier (RBF)':<38}{acc_dsg:>14.4f}{t_dsg:>11.2f}s"
          f"{size:>11,d}B", file=out)
    return 0


def _parser():
    parser = argparse.ArgumentParser(prog="onlinekernel", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="train on the bundled Letter data and report")
    demo.add_argument("--epochs", type=int, default=5, help="passes over the data (default 5)")
    demo.add_argument("--seed", type=int, default=0, help="model seed (default 0)")
    demo.set_defaults(run=_demo)
    return parser


def main(argv=None, out=None):
    """Run the command line; returns the exit status."""
    out = sys.stdout if out is None else out
    args = _parser().parse_args(argv)
    try:
        return args.run(args, out)
    except (ValueError, TypeError, OSError) as exc:
        print(f"onlinekernel: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
