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
import argparse
import contextlib
import csv
import hashlib
import json
import os
import pickle
import sys
import tempfile
import time
import traceback
import warnings

import numpy as np

from onlinekernel.io.files import check_writable, replacing
from onlinekernel.io.readers import (
    InputError, convert_labels, detect_format, holdout_mask, kind_of_classes, label_kind,
    open_source)

__all__ = ["main", "Progress"]

_USAGE_ERROR = 2
SCALING_SUFFIX = ".scaling.npz"
# Held-out rows up to this size are kept in memory and scored after
# training; beyond it they are scored by one more pass over the file.
_HOLDOUT_BYTES = 64 * 2 ** 20


class UsageError(ValueError):
    """Bad command-line usage (exit status 2)."""


# ---------------------------------------------------------------------- #
# progress and metrics
# ---------------------------------------------------------------------- #
def _tqdm():
    """tqdm's progress bar class, or None when tqdm (the ``progress`` extra) is not installed."""
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


class Progress:
    """Progress of passes over data, written to a text stream (stderr).

    On a terminal, with tqdm installed (the ``progress`` extra),
    each pass is a tqdm bar: rows, rows per second, the time left and the
    metric.  Otherwise (not a terminal, or no tqdm) one plain line is written
    every ``every`` updates and at the end of each pass, with no carriage
    returns, so logs stay short and readable.

    Parameters
    ----------
    stream : text stream, default=sys.stderr
    quiet : bool, default=False
        Write nothing.
    every : int, default=10
        Updates (chunks) per line when there is no bar.
    tty : bool, optional
        Override the terminal detection (``stream.isatty()``).

    Attributes
    ----------
    tty : bool
        Whether ``stream`` is taken for a terminal.
    bar : bool
        Whether passes are shown as tqdm bars.

    Examples
    --------
    >>> import io
    >>> from onlinekernel.cli import Progress
    >>> out = io.StringIO()
    >>> p = Progress(out, every=2)
    >>> p.start("epoch 1/1")
    >>> for k in range(1, 4):
    ...     p.update(1000 * k, done=k / 3, metric=("progressive accuracy", 0.9))
    >>> p.finish()
    >>> print(out.getvalue())  # doctest: +ELLIPSIS
    epoch 1/1   67% | 2,000 rows | ... rows/s | progressive accuracy 0.9000
    epoch 1/1  100% | 3,000 rows | ... rows/s | progressive accuracy 0.9000
    <BLANKLINE>
    """

    _unfinished = None  # the instance whose bar is still open (closed before an error message)

    def __init__(self, stream=None, *, quiet=False, every=10, tty=None):
        self.stream = sys.stderr if stream is None else stream
        self.quiet = quiet
        self.every = max(1, int(every))
        if tty is None:
            try:
                tty = bool(self.stream.isatty())
            except (AttributeError, ValueError):
                tty = False
        self.tty = tty
        self._tqdm = _tqdm() if tty and not quiet else None
        self.bar = self._tqdm is not None
        self._bar = None
        self._text = None

    def start(self, label, total=None):
        """Begin a pass named ``label`` (``"epoch 1/3"``, ``"holdout"``...) of ``total`` rows.

        Without ``total`` (the first pass over a file), the bar estimates it
        from the fraction of the file read.
        """
        self._close()
        self._label = label
        self._total = total
        self._t0 = time.perf_counter()
        self._updates = 0
        self._shown = -1
        self._text = None
        if self.bar and not self.quiet:
            self._bar = self._tqdm(total=total, desc=label, unit=" rows", unit_scale=True,
                                   file=self.stream, leave=True, mininterval=0.1,
                                   dynamic_ncols=True)
            Progress._unfinished = self

    def update(self, rows, done=None, metric=None):
        """Report ``rows`` read so far, the fraction ``done`` and ``metric=(name, value)``."""
        if self.quiet:
            return
        self._updates += 1
        shown = metric is not None and metric[1] is not None
        if self._bar is not None:
            if self._total is None and done:
                self._bar.total = max(rows, int(round(rows / done)))  # for the time left
            if shown:
                self._bar.set_postfix_str(f"{metric[0]} {metric[1]:.4f}", refresh=False)
            self._bar.update(rows - self._bar.n)
            return
        elapsed = max(time.perf_counter() - self._t0, 1e-9)
        parts = [f"{self._label}  {done:4.0%}" if done is not None else self._label,
                 f"{rows:,d} rows", f"{rows / elapsed:,.0f} rows/s"]
        if shown:
            parts.append(f"{metric[0]} {metric[1]:.4f}")
        self._text = " | ".join(parts)
        if self._updates % self.every == 0:
            self.stream.write(self._text + "\n")
            self._shown = self._updates
            self.stream.flush()

    def finish(self):
        """End the pass: its last state stays on screen."""
        if self._bar is not None:
            self._bar.total = self._bar.n  # the pass is complete, whatever was estimated
            self._bar.refresh()
            self._close()
            return
        if self.quiet or self._text is None:
            return
        if self._shown != self._updates:
            self.stream.write(self._text + "\n")
        self.stream.flush()
        self._text = None

    def _close(self):
        bar, self._bar = self._bar, None
        if Progress._unfinished is self:
            Progress._unfinished = None
        if bar is not None:
            bar.close()

    @classmethod
    def break_line(cls):
        """Close a bar left open on a terminal (before an error message)."""
        p = cls._unfinished
        if p is not None:
            with contextlib.suppress(OSError, ValueError):
                p._close()

    def note(self, text):
        """A one-line message (not part of a pass)."""
        if self.quiet:
            return
        if self._bar is not None:
            self._tqdm.write(text, file=self.stream)  # above the bar, which is redrawn
        else:
            self.stream.write(text + "\n")
        self.stream.flush()


class _Score:
    """Accuracy (classification) or R² and RMSE (regression), accumulated over chunks."""

    def __init__(self, task):
        self.task = task
        self.n = 0
        self.correct = 0
        self.mean = 0.0
        self.m2 = 0.0   # sum of squared deviations of y (Chan's merge, one chunk at a time)
        self.sse = 0.0

    def add(self, y, pred):
        nb = len(y)
        if nb == 0:
            return
        if self.task == "classify":
            self.correct += int(np.count_nonzero(np.asarray(pred) == np.asarray(y)))
        else:
            y = np.asarray(y, dtype=np.float64)
            mb = float(y.mean())
            n = self.n + nb
            delta = mb - self.mean
            self.m2 += float(((y - mb) ** 2).sum()) + delta * delta * self.n * nb / n
            self.mean += delta * nb / n
            self.sse += float(((y - np.asarray(pred, dtype=np.float64)) ** 2).sum())
        self.n += nb

    def accuracy(self):
        return self.correct / self.n if self.n else None

    def r2(self):
        return 1.0 - self.sse / self.m2 if self.n and self.m2 > 0 else None

    def rmse(self):
        return float(np.sqrt(self.sse / self.n)) if self.n else None

    def primary(self):
        """``(name, value)`` for the progress line."""
        if self.task == "classify":
            return "accuracy", self.accuracy()
        return "R2", self.r2()

    def as_dict(self):
        if self.task == "classify":
            return {"rows": self.n, "accuracy": self.accuracy()}
        return {"rows": self.n, "r2": self.r2(), "rmse": self.rmse()}

    def describe(self):
        fmt = (lambda v: "n/a" if v is None else f"{v:.4f}")
        if self.task == "classify":
            return f"accuracy {fmt(self.accuracy())} on {self.n:,d} rows"
        return f"R2 {fmt(self.r2())}, RMSE {fmt(self.rmse())} on {self.n:,d} rows"


# ---------------------------------------------------------------------- #
# option parsing helpers
# ---------------------------------------------------------------------- #
class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _value(text):
    """A ``NAME=VALUE`` value: bool, None, int, float or else the string."""
    low = text.strip().lower()
    if low in ("true", "yes"):
        return True
    if low in ("false", "no"):
        return False
    if low == "none":
        return None
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def _assignment(text):
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name.strip(), _value(value)


def _number_or(word):
    """An argument type taking a number, or ``word`` as it is."""
    def parse(text):
        if text == word:
            return text
        try:
            return float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected {word!r} or a number, got {text!r}") from None
    parse.__name__ = f"number or {word!r}"
    return parse


_gamma = _number_or("scale")
_alpha = _number_or("auto")


def _max_blocks(text):
    if text.lower() == "none":
        return None
    return _positive_int(text)  # 0 is refused, as the estimators refuse it


def _ranged(convert, ok, expected):
    """An argparse type: ``convert(text)`` if ``ok`` holds for it, else "expected ..." as the error."""
    def parse(text):
        try:
            v = convert(text)
        except ValueError:
            v = None
        if v is None or not ok(v):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return v
    return parse


_nonnegative_int = _ranged(int, lambda v: v >= 0, "an integer >= 0")
_positive_int = _ranged(int, lambda v: v >= 1, "a positive integer")
_fraction = _ranged(float, lambda v: 0.0 <= v < 1.0, "a fraction in [0, 1)")
_unit = _ranged(float, lambda v: 0.0 <= v <= 1.0, "a fraction in [0, 1]")
_seed = _ranged(int, lambda v: 0 <= v < 2 ** 32, "an integer in [0, 2**32)")
_tol_number = _ranged(float, lambda v: 0.0 <= v < float("inf"), "a number >= 0 or 'none'")


def _tol(text):
    return None if text.lower() == "none" else _tol_number(text)


def _add_input_options(p, train=False):
    g = p.add_argument_group("input")
    g.add_argument("--format", choices=("auto", "csv", "npz", "svmlight"), default="auto",
                   help="input format (default: from the suffix, else the content)")
    g.add_argument("--chunk-size", type=_positive_int, default=10000, metavar="ROWS",
                   help="rows read at a time (default 10000)")
    g.add_argument("--target", metavar="COLUMN",
                   help="CSV target column: name or index (default: the last column)")
    g.add_argument("--header", choices=("auto", "yes", "no"), default="auto",
                   help="whether the CSV's first row is a header (default: auto)")
    g.add_argument("--delimiter", metavar="CHAR",
                   help="CSV field delimiter (default ',', tab for .tsv)")
    if train:
        g.add_argument("--n-features", type=_positive_int, metavar="N",
                       help="svmlight: number of features (default: largest index in the file)")
    g.add_argument("--zero-based", action="store_true",
                   help="svmlight feature indices start at 0 (LIBSVM's start at 1)")
    g.add_argument("--npz-keys", metavar="X,Y",
                   help="npz array names (default X,y, else X_train,y_train for train and "
                        "X_test,y_test for predict and evaluate)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    p.add_argument("--progress-every", type=_positive_int, default=10, metavar="CHUNKS",
                   help="when stderr is not a terminal, a progress line every CHUNKS chunks "
                        "(default 10)")


def _open(args, path, labels, n_features=None, split="train"):
    return open_source(path, args.format, labels=labels, n_features=n_features,
                       target=args.target, header=args.header, delimiter=args.delimiter,
                       zero_based=args.zero_based, keys=args.npz_keys, split=split)


def _progress(args, err):
    return Progress(err, quiet=args.quiet, every=args.progress_every)


# ---------------------------------------------------------------------- #
# train
# ---------------------------------------------------------------------- #
_HYPER = ("kernel", "gamma", "alpha", "batch_size", "block_size", "learning_rate", "eta0", "t0")


def _build_model(args):
    from onlinekernel import DSGClassifier, DSGRegressor, registry

    loss = args.loss
    if args.loss_param:
        if loss is None:
            raise UsageError("--loss-param needs --loss")
        loss = registry.get_loss(loss, **dict(args.loss_param))
    task = args.task
    if task is None:
        encoding = None
        if loss is not None:
            obj = registry.get_loss(loss) if isinstance(loss, str) else loss
            encoding = obj.target_encoding
        task = "regress" if encoding == "real" else "classify"
    if args.classes is not None and task == "regress":
        raise UsageError("--classes applies to classification only")
    params = {k: getattr(args, k) for k in _HYPER if getattr(args, k) is not None}
    if hasattr(args, "max_blocks"):
        params["max_blocks"] = args.max_blocks
    if args.average_start is not None:
        params["average"] = args.average_start
    elif args.average:
        params["average"] = True
    if loss is not None:
        params["loss"] = loss
    if args.kernel_param:
        params["kernel_params"] = dict(args.kernel_param)
    Model = DSGClassifier if task == "classify" else DSGRegressor
    model = Model(random_state=args.seed, **params)
    # Reject a bad name or value now, not after a first pass over a big file.
    model.check_params()
    kernel = model.kernel
    accepted = registry.available_feature_maps()[kernel]["parameters"]
    fixed = {"n_components": "--block-size", "gamma": "--gamma"}
    for name in dict(args.kernel_param or {}):
        if name in fixed:
            raise UsageError(f"set the kernel's {name} with {fixed[name]}, not --kernel-param")
    trial = {k: v for k, v in dict(args.kernel_param or {}).items()}
    if "gamma" in accepted and not isinstance(model.gamma, str):
        trial["gamma"] = model.gamma
    registry.get_feature_map(kernel, **trial)  # invalid names or values raise here
    return model, task


def _scan(source, args, progress, need_classes, need_stats):
    """One pass for what must be known before training: classes, width, moments, rows."""
    width = source.n_features
    labels = set()
    moments = _Moments() if need_stats else None
    features = need_stats or source.n_features is None
    chunks = (source.chunks(args.chunk_size, features=features) if source.format == "csv"
              else source.chunks(args.chunk_size))
    progress.start("first pass")
    rows = 0
    for chunk in chunks:
        rows += chunk.X.shape[0]
        if need_classes:
            _refuse_missing_labels(chunk, source.path)
            labels.update(np.unique(chunk.y).tolist())
        if source.n_features is None:
            width = max(width or 0, chunk.X.shape[1])
        if moments is not None:
            keep = ~holdout_mask(chunk.start, chunk.X.shape[0], args.holdout, args.seed)
            moments.add(chunk.X[keep])
        progress.update(rows, chunk.done)
    progress.finish()
    if rows == 0:
        raise InputError(f"{source.path}: no data rows")
    if source.n_features is None:
        if not width:
            raise InputError(f"{source.path}: no features in the file (every line is empty or "
                             f"has only a label)")
        source.n_features = width
    classes = None
    if need_classes:
        classes = np.array(sorted(labels))
    scaling = None
    if moments is not None:
        if moments.n == 0:
            raise InputError(f"{source.path}: no training rows to standardize with")
        scaling = moments.scaling(source.n_features)
    return classes, scaling, rows


def _refuse_missing_labels(chunk, path):
    """A NaN or empty label is a missing one, never a class of its own."""
    y = np.asarray(chunk.y)
    if y.dtype.kind in "US":
        missing = np.isin(np.char.lower(np.char.strip(y.astype(str))), ("nan", ""))
    elif y.dtype.kind == "f":
        missing = np.isnan(y)
    else:
        return
    if missing.any():
        i = int(np.flatnonzero(missing)[0])
        raise InputError(f"{path} {chunk.where(i)}: the label {str(y[i])!r} is missing (NaN "
                         f"or empty), not a class; drop the row")


class _Moments:
    """Per-column mean and variance over chunks (Chan et al.'s pairwise update).

    A chunk narrower than the others (svmlight rows without the last
    features) is padded with zeros, which is what its missing entries are.
    """

    def __init__(self):
        self.n = 0
        self.mean = np.zeros(0)
        self.m2 = np.zeros(0)

    def add(self, X):
        nb = X.shape[0]
        if nb == 0:
            return
        d = max(X.shape[1], self.mean.shape[0])
        X = np.pad(X, ((0, 0), (0, d - X.shape[1])))
        self.mean = np.pad(self.mean, (0, d - self.mean.shape[0]))
        self.m2 = np.pad(self.m2, (0, d - self.m2.shape[0]))
        mb = X.mean(axis=0)
        n = self.n + nb
        delta = mb - self.mean
        self.m2 = self.m2 + ((X - mb) ** 2).sum(axis=0) + delta ** 2 * (self.n * nb / n)
        self.mean = self.mean + delta * (nb / n)
        self.n = n

    def scaling(self, d):
        mean = np.pad(self.mean, (0, d - self.mean.shape[0]))
        std = np.sqrt(np.pad(self.m2, (0, d - self.m2.shape[0])) / self.n)
        # a constant column is centred but not scaled
        return mean, np.where(std > 0, std, 1.0)


def _classes_from_option(text, source):
    raw = [c.strip() for c in text.split(",")]
    if len(raw) < 2 or not all(raw):
        raise UsageError(f"--classes needs at least two comma-separated labels, got {text!r}")
    raw = np.array(raw)
    dtype = getattr(source, "y_dtype", None)  # npz targets keep their stored type
    if dtype is not None:
        try:
            return np.unique(raw.astype(dtype))
        except ValueError:
            raise UsageError(f"--classes {text!r} does not match the {dtype} targets of "
                             f"{source.path}") from None
    return np.unique(convert_labels(raw, label_kind(raw), None, "--classes"))


# scikit-learn's stopping rule on a validation score, with its defaults: those
# of SGDClassifier and SGDRegressor (max_iter and n_iter_no_change are also
# DSGClassifier's and DSGRegressor's; their tol of 1e-4 applies to a loss).
# On cadata (--task regress --holdout 0.2), tol=1e-4 took 83 passes (36 s) for a
# holdout R2 of 0.733, tol=1e-3 18 passes (10 s) for 0.719.
_STOPPING = {"max_iter": 1000, "tol": 1e-3, "n_iter_no_change": 5}


def _stopping_rule(args):
    """``(max_iter, tol, n_iter_no_change)`` of ``train``; ``tol=None``: ``max_iter`` passes.

    ``--epochs N`` is ``max_iter=N, tol=None``, and is refused together with
    an option of the stopping rule.
    """
    given = {k: getattr(args, k) for k in _STOPPING if hasattr(args, k)}
    if hasattr(args, "epochs"):
        if given:
            names = ", ".join("--" + k.replace("_", "-") for k in given)
            raise UsageError(f"--epochs {args.epochs} trains exactly {args.epochs} passes, "
                             f"without the stopping rule that {names} set; give one or the "
                             f"other (--epochs N is --max-iter N --tol none)")
        return args.epochs, None, _STOPPING["n_iter_no_change"]
    rule = {**_STOPPING, **given}
    return rule["max_iter"], rule["tol"], rule["n_iter_no_change"]


class _Stopper:
    """scikit-learn's ``n_iter_no_change`` rule on a score to maximise (accuracy, R²).

    As ``SGDClassifier`` and ``SGDRegressor`` with ``early_stopping`` treat
    their validation score: a pass improves when its score is at least the
    best one so far plus ``tol``; the rule holds after ``n_iter_no_change``
    passes in a row without improvement.  An undefined score (``None``: R²
    of a constant target) is no improvement.
    """

    def __init__(self, tol, n_iter_no_change):
        self.tol = tol
        self.patience = n_iter_no_change
        self.best = None
        self.best_epoch = 0
        self.stalled = 0

    def add(self, epoch, value):
        """Record the score after pass ``epoch``; True when the rule holds."""
        if value is not None and (self.best is None or value >= self.best + self.tol):
            self.stalled = 0
        else:
            self.stalled += 1
        if value is not None and (self.best is None or value > self.best):
            self.best, self.best_epoch = value, epoch
        return self.stalled >= self.patience


def _score_holdout(model, task, kept, source, args, kind, progress):
    """The model's score on the held-out rows: from memory (``kept``), else by a pass."""
    score = _Score(task)
    if kept is not None:
        for X, y in kept:
            score.add(y, model.predict(X))
        return score
    what = "label" if task == "classify" else "target"
    progress.start("holdout")
    rows = 0
    for chunk in source.chunks(args.chunk_size):
        rows += chunk.X.shape[0]
        mask = holdout_mask(chunk.start, chunk.X.shape[0], args.holdout, args.seed)
        if mask.any():
            y = convert_labels(chunk.y, kind, chunk, args.input, what)[mask]
            score.add(y, model.predict(chunk.X[mask]))
        progress.update(rows, chunk.done, None)
    progress.finish()
    return score


def _train(args, out, err):
    max_iter, tol, patience = _stopping_rule(args)
    stride = _stride(args.progressive)
    if tol is not None and args.holdout == 0 and not stride:
        raise UsageError("the stopping rule needs a score: hold out rows with --holdout, or "
                         "keep --progressive above 0; or train a fixed number of passes with "
                         "--epochs N")
    default_output = not args.output
    if default_output:
        # a trained model is never thrown away: INPUT's name with .okm, here,
        # but never over an existing file
        args.output = _default_model_path(args.input)
        if os.path.lexists(args.output):
            raise UsageError(f"no -o given, and the default model file {args.output} exists; "
                             f"choose where to write the model with -o")
    check_writable(args.output)  # before the training it would otherwise lose
    model, task = _build_model(args)
    standardize = task == "regress" if args.standardize is None else args.standardize
    progress = _progress(args, err)
    fmt = detect_format(args.input) if args.format == "auto" else args.format
    source = _open(args, args.input, "required",
                   n_features=args.n_features if fmt == "svmlight" else None)
    if args.n_features is not None and source.n_features != args.n_features:
        raise InputError(f"{args.input}: {source.n_features} features, not the "
                         f"{args.n_features} of --n-features")
    classes = None
    kind = "float"
    if task == "classify" and args.classes is not None:
        classes = _classes_from_option(args.classes, source)
        kind = "native" if source.format == "npz" else kind_of_classes(classes)
    need_classes = task == "classify" and classes is None
    scaling = None
    if need_classes or standardize or source.n_features is None:
        raw, scaling, rows = _scan(source, args, progress, need_classes, standardize)
        if need_classes:
            # text labels that are all integers become integers, and so on
            kind = label_kind(raw)
            classes = np.unique(convert_labels(raw, kind, None, args.input))
    if task == "classify" and classes.shape[0] < 2:
        raise InputError(f"{args.input}: a single class {classes.tolist()}; a classifier "
                         f"needs at least two")
    if task == "classify" and need_classes:
        _refuse_continuous_target(args, rows, kind, classes)
    if scaling is not None:
        # the scaling is part of the model (and of its file): it scales every X itself
        model.set_params(input_scaling=scaling)

    fit_kwargs = {"classes": classes} if task == "classify" else {}
    what = "label" if task == "classify" else "target"
    t0 = time.perf_counter()
    trained = held = 0
    running = None
    kept, kept_bytes = [], 0  # the held-out rows, while they fit in _HOLDOUT_BYTES
    stopper = None if tol is None else _Stopper(tol, patience)
    converged = False
    held_score = None  # the holdout's score after the last pass, when the rule needed it
    total = None  # rows in the file, once read
    for epoch in range(1, max_iter + 1):
        running = _Score(task)
        progress.start(f"epoch {epoch}" if stopper else f"epoch {epoch}/{max_iter}", total)
        rows = 0
        for chunk in source.chunks(args.chunk_size):
            n = chunk.X.shape[0]
            rows += n
            y = convert_labels(chunk.y, kind, chunk, args.input, what)
            X = chunk.X
            out_mask = holdout_mask(chunk.start, n, args.holdout, args.seed)
            if out_mask.any():
                if epoch == 1:
                    held += int(out_mask.sum())
                    if kept is not None:
                        kept.append((X[out_mask], y[out_mask]))
                        kept_bytes += kept[-1][0].nbytes + kept[-1][1].nbytes
                        if kept_bytes > _HOLDOUT_BYTES:
                            kept = None  # too many: scored by one more pass instead
                X, y = X[~out_mask], y[~out_mask]
            if X.shape[0] == 0:
                progress.update(rows, chunk.done, _metric(running, epoch))
                continue
            if stride and hasattr(model, "_coef"):
                # progressive validation on every stride-th row, before training on it
                running.add(y[::stride], model.predict(X[::stride]))
            try:
                model.partial_fit(X, y, **fit_kwargs)
            except ValueError as exc:
                raise InputError(f"{args.input} {chunk.where()}: {exc}") from None
            if epoch == 1:
                trained += X.shape[0]
            progress.update(rows, chunk.done, _metric(running, epoch))
        progress.finish()
        total = rows
        if rows == 0:
            raise InputError(f"{args.input}: no data rows")
        if not hasattr(model, "_coef"):
            raise InputError(f"{args.input}: every row is held out (--holdout {args.holdout}); "
                             f"there is nothing to train on")
        if stopper is None:
            continue
        # the stopping rule scores the holdout (scikit-learn's early_stopping),
        # else the rows scored before each chunk was trained on
        if held:
            held_score = _score_holdout(model, task, kept, source, args, kind, progress)
            name, value = held_score.primary()
            scored = f"holdout {name}"
        elif stride:
            scored, value = _metric(running, epoch)
            name = running.primary()[0]
        else:
            raise InputError(f"{args.input}: no row was held out (too few rows for --holdout "
                             f"{args.holdout}) and --progressive is 0: the stopping rule has "
                             f"no score; train a fixed number of passes with --epochs N")
        converged = stopper.add(epoch, value)
        progress.note(f"epoch {epoch}: {scored} {_fmt(value)}"
                      + (f"; no gain of tol={tol:g} for {stopper.stalled} of {patience} "
                         f"epochs (best {_fmt(stopper.best)}, epoch {stopper.best_epoch})"
                         if stopper.stalled else ""))
        if converged:
            break
    epochs = epoch
    seconds = time.perf_counter() - t0

    print(f"trained {type(model).__name__} on {trained:,d} rows ({epochs} epoch"
          f"{'s' if epochs > 1 else ''}) in {seconds:.2f} s "
          f"({trained * epochs / max(seconds, 1e-9):,.0f} rows/s); "
          f"{model.n_random_features_:,d} random features", file=out)
    if stopper is not None:
        rule = scored if held else f"running {name}"  # the first epoch's is progressive
        if converged:
            print(f"stopped after epoch {epochs}: the {rule} has not improved by tol={tol:g} "
                  f"for {patience} epochs (best {_fmt(stopper.best)} after epoch "
                  f"{stopper.best_epoch})", file=out)
        else:
            print(f"stopped at --max-iter {max_iter} epochs before the stopping rule held "
                  f"(the {rule} gained tol={tol:g} within the last {patience} epochs); raise "
                  f"--max-iter to train longer", file=out)
    if running is not None and running.n:
        if epochs == 1:
            print(f"progressive {running.describe()}", file=out)
        else:
            print(f"running {running.describe()} (epoch {epochs}: rows trained on in "
                  f"earlier epochs)", file=out)
    if args.holdout > 0:
        if held == 0:
            print("holdout: no rows were held out (the file is too small for this fraction)",
                  file=out)
        else:
            if held_score is None:
                held_score = _score_holdout(model, task, kept, source, args, kind, progress)
            print(f"holdout {held_score.describe()}", file=out)
    if default_output:
        print(f"onlinekernel: no -o given; writing the model to {args.output}", file=err)
    model.save(args.output)
    sidecar = args.output + SCALING_SUFFIX
    if os.path.exists(sidecar):
        os.remove(sidecar)  # an older version's scaling file, of the model replaced
    extra = "; the feature scaling is stored in it" if scaling is not None else ""
    print(f"model written to {args.output} ({os.path.getsize(args.output):,d} bytes)"
          f"{extra}", file=out)
    return 0


def _fmt(value):
    return "n/a" if value is None else f"{value:.4f}"


# An inferred classification with more distinct numeric labels than this
# many, and than this share of the rows, is refused as a regression target
# (cadata's prices: 3,675 values in 20,640 rows; MNIST: 10 in 60,000).
_MAX_INFERRED_CLASSES = 100
_MAX_CLASS_SHARE = 0.05


def _refuse_continuous_target(args, rows, kind, classes):
    """Refuse labels that are a continuous target rather than classes (non-zero exit)."""
    numeric = kind in ("int", "float") or (kind == "native" and classes.dtype.kind in "iuf")
    if not numeric:
        return
    values = classes.astype(np.float64)
    if np.any(values != np.round(values)):
        raise UsageError(f"{args.input}: the target holds non-integer numbers (e.g. "
                         f"{values[values != np.round(values)][0]:g}): a continuous target, "
                         f"not class labels; train a regressor with --task regress")
    if (args.task is None and classes.shape[0] > _MAX_INFERRED_CLASSES
            and classes.shape[0] > _MAX_CLASS_SHARE * rows):
        raise UsageError(f"{args.input}: the target has {classes.shape[0]:,d} distinct integer "
                         f"values in {rows:,d} rows, which looks like a continuous target "
                         f"(a price, a count), not class labels; pass --task regress, or "
                         f"--task classify to train a classifier with one class per value")


def _default_model_path(path):
    """``INPUT``'s file name without its data suffixes, with ``.okm``, in the working directory."""
    name = os.path.basename(path)
    for suffix in (".gz", ".csv", ".tsv", ".npz", ".svm", ".svmlight", ".libsvm", ".txt"):
        if name.lower().endswith(suffix) and len(name) > len(suffix):
            name = name[:-len(suffix)]
    return name + ".okm"


def _stride(fraction):
    """Score every ``stride``-th row for a progressive-validation ``fraction`` (0: none)."""
    return 0 if fraction <= 0 else max(1, int(round(1.0 / fraction)))


def _metric(running, epoch):
    # Scoring a chunk before training on it is progressive validation only
    # while its rows are new: from the second epoch on they were trained on.
    name, value = running.primary()
    return (f"{'progressive' if epoch == 1 else 'running'} {name}", value)


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _load_scaling(model_path, model):
    """An older version's ``MODEL.scaling.npz``, for a model without a scaling of its own."""
    path = model_path + SCALING_SUFFIX
    if model.get_params().get("input_scaling") is not None or not os.path.exists(path):
        return None
    n_features = model.n_features_in_
    try:
        with np.load(path, allow_pickle=False) as d:
            mean, scale, sha = d["mean"], d["scale"], str(d["model_sha256"])
    except (OSError, ValueError, KeyError, EOFError) as exc:
        raise InputError(f"{path}: not a readable scaling file ({exc})") from None
    if sha != _sha256(model_path):
        raise InputError(f"{path} belongs to another model file than {model_path} (it was "
                         f"written for an earlier model); delete it, or retrain with "
                         f"--standardize")
    if mean.shape != (n_features,) or scale.shape != (n_features,) or not (scale > 0).all():
        raise InputError(f"{path}: the scaling does not fit the model's {n_features} features")
    return mean, scale


# ---------------------------------------------------------------------- #
# predict / evaluate
# ---------------------------------------------------------------------- #
def _load_model(path):
    import onlinekernel

    if not os.path.exists(path):
        raise InputError(f"{path}: no such model file")
    return onlinekernel.load(path)


def _task_of(model, path):
    from sklearn.base import is_classifier, is_regressor

    if is_classifier(model):
        return "classify"
    if is_regressor(model) and model.__dict__.get("_n_outputs", 1) == 1:
        return "regress"
    raise UsageError(f"{path}: evaluate scores classifiers and single-output regressors; this "
                     f"is a {type(model).__name__} (use predict)")


@contextlib.contextmanager
def _output(path, out):
    """``out`` for ``None`` or ``"-"``; else a file that appears at ``path`` only when complete."""
    if path is None or path == "-":
        yield out
        return
    with replacing(path, text=True) as fh:
        yield fh


def _predict(args, out, err):
    model = _load_model(args.model)
    progress = _progress(args, err)
    if args.proba and not hasattr(model, "predict_proba"):
        name = getattr(model.loss_, "name", "?")
        raise UsageError(f"{args.model}: the model's loss ({name}) gives no probabilities; "
                         f"train with --loss logistic for --proba")
    scaling = _load_scaling(args.model, model)
    if scaling is not None:
        progress.note(f"onlinekernel: applying the feature scaling in {args.model}"
                      f"{SCALING_SUFFIX}")
    source = _open(args, args.input, "optional", n_features=model.n_features_in_, split="test")
    if source.n_features != model.n_features_in_:
        raise InputError(f"{args.input}: {source.n_features} features, but the model takes "
                         f"{model.n_features_in_}")
    progress.start("predict")
    rows = 0
    with _output(args.output, out) as fh:
        writer = None
        if args.proba:
            writer = csv.writer(fh, lineterminator="\n")
            writer.writerow([str(c) for c in model.classes_])
        for chunk in source.chunks(args.chunk_size):
            X = chunk.X if scaling is None else (chunk.X - scaling[0]) / scaling[1]
            if args.proba:
                writer.writerows(model.predict_proba(X).tolist())
            else:
                pred = model.predict(X)
                if pred.ndim == 2:  # several outputs per row (e.g. quantiles): CSV rows
                    csv.writer(fh, lineterminator="\n").writerows(pred.tolist())
                elif pred.size:
                    fh.write("\n".join(map(str, pred.tolist())) + "\n")
            rows += chunk.X.shape[0]
            progress.update(rows, chunk.done)
    progress.finish()
    return 0


def _evaluate(args, out, err):
    model = _load_model(args.model)
    progress = _progress(args, err)
    task = _task_of(model, args.model)
    scaling = _load_scaling(args.model, model)
    if scaling is not None:
        progress.note(f"onlinekernel: applying the feature scaling in {args.model}"
                      f"{SCALING_SUFFIX}")
    source = _open(args, args.input, "required", n_features=model.n_features_in_, split="test")
    kind = kind_of_classes(model.classes_) if task == "classify" else "float"
    what = "label" if task == "classify" else "target"
    score = _Score(task)
    progress.start("evaluate")
    rows = 0
    for chunk in source.chunks(args.chunk_size):
        y = convert_labels(chunk.y, kind, chunk, args.input, what)
        X = chunk.X if scaling is None else (chunk.X - scaling[0]) / scaling[1]
        score.add(y, model.predict(X))
        rows += chunk.X.shape[0]
        progress.update(rows, chunk.done, score.primary())
    progress.finish()
    if score.n == 0:
        raise InputError(f"{args.input}: no data rows")
    if args.json:
        print(json.dumps(score.as_dict()), file=out)
    else:
        print(score.describe(), file=out)
    return 0


# ---------------------------------------------------------------------- #
# plugins
# ---------------------------------------------------------------------- #
def _plugins(args, out, err):
    import onlinekernel

    tables = {"losses": onlinekernel.available_losses(),
              "feature_maps": onlinekernel.available_feature_maps()}
    if args.json:
        print(json.dumps(tables, indent=2, sort_keys=True, default=repr), file=out)
        return 0
    for title, key in (("losses", "losses"), ("feature maps", "feature_maps")):
        rows = [(name, ", ".join(f"{k}={v!r}" for k, v in info["parameters"].items()) or "-",
                 f"{info['distribution']} ({info['plugin']})")
                for name, info in tables[key].items()]
        print(f"{title}:", file=out)
        w0 = max((len(r[0]) for r in rows), default=0)
        w1 = max((len(r[1]) for r in rows), default=0)
        for name, params, origin in rows:
            print(f"  {name:<{w0}}  {params:<{w1}}  {origin}", file=out)
    return 0


# ---------------------------------------------------------------------- #
# demo
# ---------------------------------------------------------------------- #
def _demo(args, out, err):
    from sklearn.linear_model import SGDClassifier

    from onlinekernel import DSGClassifier
    from onlinekernel.datasets import LETTER_CITATION, load_letter

    X_train, y_train, X_test, y_test = load_letter()
    print(f"UCI Letter Recognition: {X_train.shape[0]} training rows, {X_test.shape[0]} test "
          f"rows, {X_train.shape[1]} features, 26 classes", file=out)
    print(f"  ({LETTER_CITATION})", file=out)
    out.flush()  # before the progress on stderr

    t = time.perf_counter()
    linear = SGDClassifier(random_state=0).fit(X_train, y_train)
    t_lin = time.perf_counter() - t
    acc_lin = linear.score(X_test, y_test)

    # streamed epochs of partial_fit; the hinge loss's steps suit this data best
    # (test accuracy 95.0 % against 94.1 % for the logistic default)
    model = DSGClassifier(loss="hinge", gamma=3.0, random_state=args.seed)
    classes = np.unique(y_train)
    chunk = 1024  # a multiple of batch_size: chunking does not change the steps
    n = X_train.shape[0]
    progress = Progress(err, quiet=args.quiet, every=-(-n // chunk))
    rng = np.random.default_rng(args.seed)
    t_dsg = 0.0
    for epoch in range(1, args.epochs + 1):
        order = rng.permutation(n)  # each epoch in a new order, as fit(shuffle=True) does
        running = _Score("classify")
        progress.start(f"epoch {epoch}/{args.epochs}")
        for start in range(0, n, chunk):
            idx = order[start:start + chunk]
            if not progress.quiet and hasattr(model, "_coef"):
                sample = idx[::10]  # as train's default --progressive 0.1
                running.add(y_train[sample], model.predict(X_train[sample]))
            t = time.perf_counter()
            model.partial_fit(X_train[idx], y_train[idx], classes=classes)
            t_dsg += time.perf_counter() - t
            progress.update(start + idx.shape[0], (start + idx.shape[0]) / n,
                            _metric(running, epoch))
        progress.finish()
    acc_dsg = model.score(X_test, y_test)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "letter.okm")
        model.save(path)
        size = os.path.getsize(path)
    size_lin = len(pickle.dumps(linear))

    print("", file=out)
    print(f"{'model':<38}{'test accuracy':>14}{'train time':>12}{'file size':>12}", file=out)
    print(f"{'linear SGDClassifier (scikit-learn)':<38}{acc_lin:>14.4f}{t_lin:>11.2f}s"
          f"{size_lin:>11,d}B", file=out)
    print(f"{'onlinekernel DSGClassifier (RBF)':<38}{acc_dsg:>14.4f}{t_dsg:>11.2f}s"
          f"{size:>11,d}B", file=out)
    print(f"({model.n_random_features_:,d} random features; the train time excludes the "
          f"progressive scoring;\n sizes: the pickled linear model, the kernel model's file)",
          file=out)
    return 0


# ---------------------------------------------------------------------- #
# parser and main
# ---------------------------------------------------------------------- #
def _parser():
    from onlinekernel.solvers.schedules import SCHEDULES
    from onlinekernel._version import __version__

    # the module docstring is reST; --help shows plain text
    parser = _Parser(prog="onlinekernel", description=__doc__.splitlines()[0].replace("``", ""),
                     epilog="See 'onlinekernel COMMAND --help'.")
    parser.add_argument("--version", action="version", version=f"onlinekernel {__version__}")
    parser.add_argument("--traceback", action="store_true",
                        help="show the traceback of unexpected errors")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    train = sub.add_parser(
        "train", help="train a model on a CSV, npz or svmlight file",
        description="Train a kernel model by streaming a file through partial_fit, chunk by "
                    "chunk in file order, in passes until scikit-learn's stopping rule holds "
                    "(see 'training' below).  A first pass over the file is made when needed: "
                    "for the class labels (unless --classes), the width of an svmlight file "
                    "(unless --n-features) and the scaling of --standardize.")
    train.add_argument("input", metavar="INPUT", help="training data (CSV, npz, svmlight)")
    train.add_argument("-o", "--output", metavar="MODEL",
                       help="write the model file here (load with onlinekernel.load; default: "
                            "INPUT's name with .okm in the working directory, never over an "
                            "existing file)")
    _add_input_options(train, train=True)
    m = train.add_argument_group(
        "model", "Options left unset keep the defaults of DSGClassifier (classification) or "
                 "DSGRegressor (regression).")
    m.add_argument("--task", choices=("classify", "regress"),
                   help="default: regress if --loss is a regression loss, else classify")
    m.add_argument("--classes", metavar="A,B,...",
                   help="all class labels (default: read from the file in a first pass)")
    m.add_argument("--loss", help="a registered loss (see 'onlinekernel plugins')")
    m.add_argument("--loss-param", type=_assignment, action="append", metavar="NAME=VALUE",
                   help="a loss parameter (repeatable), e.g. delta=2.0")
    m.add_argument("--kernel", help="a registered feature map (default gaussian)")
    m.add_argument("--kernel-param", type=_assignment, action="append", metavar="NAME=VALUE",
                   help="a feature-map parameter (repeatable), e.g. pairs=true")
    m.add_argument("--gamma", type=_gamma, help="bandwidth, or 'scale' (default)")
    m.add_argument("--alpha", type=_alpha,
                   help="regularisation strength, or 'auto': chosen on held-out rows where "
                        "fit runs a batch solver (the regressors' default)")
    m.add_argument("--batch-size", type=_positive_int, metavar="ROWS",
                   help="rows per training step")
    m.add_argument("--block-size", type=_positive_int, metavar="N",
                   help="random features per block")
    m.add_argument("--max-blocks", type=_max_blocks, default=argparse.SUPPRESS, metavar="N",
                   help="feature budget in blocks ('none': unbounded)")
    m.add_argument("--learning-rate", choices=tuple(SCHEDULES), help="step schedule")
    m.add_argument("--eta0", type=float, help="initial step")
    m.add_argument("--t0", type=float, help="time scale of the step decay, in steps")
    m.add_argument("--average", action="store_true",
                   help="predict with the average of the iterates (Polyak-Ruppert)")
    m.add_argument("--average-start", type=_nonnegative_int, metavar="STEP",
                   help="average only the iterates after step STEP (implies --average)")
    m.add_argument("--seed", type=_seed, default=0, help="seed of the model and the holdout "
                   "(default 0)")
    r = train.add_argument_group(
        "training",
        "Passes over the file stop by scikit-learn's rule, as fit does: when the score "
        "(accuracy or R2) has not improved by --tol for --n-iter-no-change passes in a row, "
        "or after --max-iter passes.  The score is the holdout's (with --holdout, as "
        "SGDClassifier's early_stopping scores validation_fraction), else the progressive "
        "one.")
    r.add_argument("--max-iter", type=_positive_int, default=argparse.SUPPRESS, metavar="N",
                   help=f"most passes over the file (default {_STOPPING['max_iter']})")
    r.add_argument("--tol", type=_tol, default=argparse.SUPPRESS,
                   help=f"least gain of the score that counts as an improvement (default "
                        f"{_STOPPING['tol']:g}, SGDClassifier's); 'none': all --max-iter passes")
    r.add_argument("--n-iter-no-change", type=_positive_int, default=argparse.SUPPRESS,
                   metavar="N", help=f"passes without improvement before stopping (default "
                                     f"{_STOPPING['n_iter_no_change']})")
    r.add_argument("--epochs", type=_positive_int, default=argparse.SUPPRESS, metavar="N",
                   help="exactly N passes: disables the stopping rule (the same as --max-iter "
                        "N --tol none)")
    r.add_argument("--holdout", type=_fraction, default=0.0, metavar="FRACTION",
                   help="hold out this fraction of the rows: the stopping rule scores them "
                        "after each pass, and their score is reported")
    r.add_argument("--progressive", type=_unit, default=0.1, metavar="FRACTION",
                   help="fraction of each chunk scored before training on it, for the "
                        "progress line and, without --holdout, the stopping rule (default "
                        "0.1; 1: every row; 0: none)")
    r.add_argument("--standardize", action=argparse.BooleanOptionalAction, default=None,
                   help="scale features to zero mean, unit variance, with the scaling stored "
                        "in the model file (default: on for regression, off for "
                        "classification)")
    train.set_defaults(run=_train)

    predict = sub.add_parser("predict", help="write the predictions of a model for a file",
                             description="Write one prediction per input row.")
    predict.add_argument("model", metavar="MODEL", help="a model file")
    predict.add_argument("input", metavar="INPUT", help="data (a CSV target column only with --target naming it)")
    predict.add_argument("-o", "--output", metavar="OUT", help="output file (default stdout)")
    predict.add_argument("--proba", action="store_true",
                         help="class probabilities as CSV, one column per class")
    _add_input_options(predict)
    predict.set_defaults(run=_predict)

    evaluate = sub.add_parser("evaluate", help="score a model on a labelled file",
                              description="Print accuracy (classifiers) or R2 and RMSE "
                                          "(regressors) on a labelled file.")
    evaluate.add_argument("model", metavar="MODEL", help="a model file")
    evaluate.add_argument("input", metavar="INPUT", help="labelled data")
    evaluate.add_argument("--json", action="store_true", help="print the metrics as JSON")
    _add_input_options(evaluate)
    evaluate.set_defaults(run=_evaluate)

    plugins = sub.add_parser("plugins", help="list the registered losses and feature maps",
                             description="List every registered loss and feature map with "
                                         "its parameters (defaults) and distribution.")
    plugins.add_argument("--json", action="store_true", help="machine-readable output")
    plugins.set_defaults(run=_plugins)

    demo = sub.add_parser("demo", help="train on the bundled Letter data and report",
                          description="Train on UCI Letter Recognition and compare with a "
                                      "linear model.")
    demo.add_argument("--epochs", type=_positive_int, default=5,
                      help="passes over the data (default 5)")
    demo.add_argument("--seed", type=_seed, default=0, help="model seed (default 0)")
    demo.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    demo.set_defaults(run=_demo)
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
