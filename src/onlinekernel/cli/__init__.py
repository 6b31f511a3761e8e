"""The ``onlinekernel`` command line: train, predict, evaluate, plugins, demo.

Usage (``python -m onlinekernel ...`` works the same)::

    onlinekernel demo                       # Letter data: kernel vs linear model
    onlinekernel train data.csv --holdout 0.1 -o model.okm
    onlinekernel train data.csv --target label --loss logistic --gamma 0.5 \\
        --kernel-param pairs=true --chunk-size 50000 --epochs 2 -o model.okm
    onlinekernel train house.csv --task regress      # writes house.okm
    onlinekernel train a9a.libsvm --n-features 123 -o a9a.okm
    onlinekernel predict model.okm new.csv -o predictions.txt
    onlinekernel predict model.okm new.csv --proba -o probabilities.csv
    onlinekernel evaluate model.okm test.csv
    onlinekernel plugins --json

**Input.**  CSV (also gzipped), npz and svmlight/LIBSVM files, by suffix
(``.csv``, ``.tsv``, ``.npz``, ``.svm``, ``.svmlight``, ``.libsvm``) or else
by content; ``--format`` overrides.  Files are read in chunks of
``--chunk-size`` rows (default 10000), so they may be larger than memory.
A CSV header row is optional: the first row is a header when one of its
feature fields is not a number (``--header yes/no`` overrides); the target is
``--target`` (a column name or index) or else the last column; ``predict``
leaves out a target column only when ``--target`` names it (a CSV with one
column more than the model's features is refused otherwise).  An npz file
gives arrays ``X``/``y`` or else ``X_train``/``y_train`` to ``train`` and
``X_test``/``y_test`` to ``predict`` and ``evaluate`` (``--npz-keys`` names
others).  svmlight indices are 1-based unless ``--zero-based``; the number of
features is ``--n-features`` or else the largest index in the file.  See
:mod:`onlinekernel.io.readers`.

**Training** streams each chunk through ``partial_fit`` in file order
(shuffle a file that is sorted by target), in passes over the file that stop
by scikit-learn's rule: when the score has not improved by ``--tol``
(default 1e-3) for ``--n-iter-no-change`` passes in a row (default 5), or
after ``--max-iter`` passes (default 1000).  ``--epochs N`` instead trains
exactly ``N`` passes (``--max-iter N --tol none``).  Before that, one cheap
pass over the file is made when something must be known in advance: the
class labels of a classifier (unless ``--classes`` lists them; for CSV this
pass reads only the target column), the width of an svmlight file without
``--n-features``, and the feature means and deviations for
``--standardize``.  The task is ``--task``, or regression when ``--loss`` is
a loss for real targets, or classification.  ``--seed`` (default 0) seeds the
model and the holdout, so a command trains the same model every time;
training from a file gives exactly the model that ``partial_fit`` on the same
chunks gives in Python.  Without ``-o`` the model is written to the input's
name with ``.okm`` in the working directory (``data.csv``: ``data.okm``),
which is said on stderr; an existing file of that name is never replaced
(the command stops before training).

* ``--holdout F`` holds out a fraction ``F`` of the rows, chosen by a hash of
  the row index and the seed (the same rows on every epoch and every run).
  They are never trained on; they are scored after each pass for the
  stopping rule (as scikit-learn's ``early_stopping`` scores its
  ``validation_fraction``) and reported after training: accuracy for
  classification, R² and RMSE for regression (from memory when they fit in
  64 MiB, else by one more pass over the file).  Without a holdout, the
  stopping rule uses the progressive metric below.
* The progress on stderr shows rows read, rows per second and the
  *progressive* metric: every 10th row of a chunk (``--progressive`` sets
  the fraction) is scored by the model before it is trained on the chunk --
  an out-of-sample estimate during the first epoch; in later epochs, shown as
  the *running* metric, the rows were trained on before.  On a terminal with
  tqdm installed (the ``progress`` extra: ``pip install ".[progress]"``)
  each pass is a progress bar with the time left; otherwise a plain line is
  written every ``--progress-every`` chunks and at the end of each pass.
  ``--quiet`` hides the progress; the summary on stdout stays.
* ``--standardize`` (the default for regression; ``--no-standardize`` turns
  it off) scales every feature to zero mean and unit variance using the
  training rows of the first pass.  ``gamma='scale'`` assumes comparable
  feature scales: on cadata the default regressor reaches a test R² of 0.72
  with it, 0.28 without.  For classification it is off by default, as it
  helped on some data sets (magic04, letter) and hurt on others (usps, a9a).
  The scaling is part of the model (its ``input_scaling`` parameter) and of
  its file: ``predict``, ``evaluate`` and ``onlinekernel.load``'s model apply
  it by themselves.  (Older versions wrote it beside the model as
  ``MODEL.scaling.npz``; ``predict`` and ``evaluate`` still apply such a file
  to a model without a scaling of its own, and training to ``-o MODEL``
  removes it.)

**Models** are written with ``model.save(path)`` and read with
:func:`onlinekernel.load` (see :mod:`onlinekernel.io.modelfile`).

**Errors** are one line on stderr, ``onlinekernel: error: ...`` naming the
file and line where there is one, with exit status 2 for bad usage, input or
model files (1 for anything unexpected; ``--traceback`` shows its
traceback).

Examples
--------
>>> import os, shutil, tempfile
>>> import numpy as np
>>> from onlinekernel.cli import main
>>> tmp = tempfile.mkdtemp()
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(600, 2))
>>> y = (np.hypot(X[:, 0], X[:, 1]) < 1.0).astype(int)
>>> np.savetxt(os.path.join(tmp, "ring.csv"), np.column_stack([X, y]), delimiter=",",
...            header="x1,x2,inside", comments="", fmt="%.6g")
>>> main(["train", os.path.join(tmp, "ring.csv"), "--chunk-size", "200", "--holdout", "0.2",
...       "--epochs", "3", "--quiet", "-o", os.path.join(tmp, "ring.okm")])  # doctest: +ELLIPSIS
trained DSGClassifier on 480 rows (3 epochs) in ...
running accuracy ... on 50 rows (epoch 3: rows trained on in earlier epochs)
holdout accuracy 0.9... on 120 rows
model written to .../ring.okm (... bytes)
0
>>> main(["evaluate", os.path.join(tmp, "ring.okm"), os.path.join(tmp, "ring.csv"),
...       "--quiet"])  # doctest: +ELLIPSIS
accuracy 0.9... on 600 rows
0
>>> shutil.rmtree(tmp)
"""
import contextlib
import os
import sys
import traceback
import warnings

from onlinekernel.cli import demo, evaluate, plugins, predict, train
from onlinekernel.cli.modelfiles import SCALING_SUFFIX  # noqa: F401 (onlinekernel.cli's names)
from onlinekernel.cli.options import Parser, UsageError  # noqa: F401
from onlinekernel.cli.progress import Progress
from onlinekernel.cli.train import _STOPPING, _Stopper  # noqa: F401

__all__ = ["main", "Progress"]

# The commands, in the order of ``onlinekernel --help``: modules with
# ``add_parser(subparsers)`` (returns the command's parser) and
# ``run(args, out, err)`` (returns the exit status).
COMMANDS = (train, predict, evaluate, plugins, demo)

_USAGE_ERROR = 2


def _parser():
    from onlinekernel._version import __version__

    # the module docstring is reST; --help shows plain text
    parser = Parser(prog="onlinekernel", description=__doc__.splitlines()[0].replace("``", ""),
                    epilog="See 'onlinekernel COMMAND --help'.")
    parser.add_argument("--version", action="version", version=f"onlinekernel {__version__}")
    parser.add_argument("--traceback", action="store_true",
                        help="show the traceback of unexpected errors")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(sub).set_defaults(run=command.run)
    return parser


def _one_line(exc):
    if isinstance(exc, OSError) and exc.strerror:
        # the message without its "[Errno 2]"
        return exc.strerror if exc.filename is None else f"{exc.filename}: {exc.strerror}"
    text = str(exc).strip() or type(exc).__name__
    return " ".join(text.split())  # one line, whatever the exception put in its message


def main(argv=None, out=None):
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit status.

    Output goes to ``out`` (default stdout), progress and errors to stderr.
    """
    out = sys.stdout if out is None else out
    err = sys.stderr
    args = None

    def show(message, category, filename, lineno, file=None, line=None):
        print(f"onlinekernel: warning: {' '.join(str(message).split())}", file=err)

    with warnings.catch_warnings():
        warnings.showwarning = show
        try:
            args = _parser().parse_args(argv)
            return args.run(args, out, err)
        except SystemExit as exc:  # --help, --version
            return exc.code if isinstance(exc.code, int) else 0
        except KeyboardInterrupt:
            Progress.break_line()
            print("onlinekernel: interrupted", file=err)
            return 130
        except BrokenPipeError:
            # the reader of our output went away (``| head``): stop quietly
            with contextlib.suppress(OSError):
                sys.stdout = open(os.devnull, "w")
            return 1
        except (ValueError, TypeError, LookupError, OSError) as exc:
            # bad usage, input, model file, plugin name or parameter
            Progress.break_line()
            if args is not None and args.traceback:
                traceback.print_exc(file=err)
            print(f"onlinekernel: error: {_one_line(exc)}", file=err)
            return _USAGE_ERROR
        except Exception as exc:
            Progress.break_line()
            if args is not None and args.traceback:
                traceback.print_exc(file=err)
            print(f"onlinekernel: error: {type(exc).__name__}: {_one_line(exc)} (an unexpected "
                  f"error; rerun with --traceback for details)", file=err)
            return 1


if __name__ == "__main__":
    sys.exit(main())
