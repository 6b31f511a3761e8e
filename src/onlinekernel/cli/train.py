"""``onlinekernel train``: train a model by streaming a file through ``partial_fit``.

A first pass over the file (:func:`_scan`) finds what must be known before
training: the class labels, the width of an svmlight file, the scaling of
``--standardize``.  Then passes of ``partial_fit`` over the chunks, in file
order, until scikit-learn's stopping rule (:class:`_Stopper`) holds or for
``--epochs N``; held-out rows (``--holdout``) are never trained on.
"""
import argparse
import os
import time

import numpy as np

from onlinekernel.cli import options
from onlinekernel.cli.modelfiles import SCALING_SUFFIX
from onlinekernel.cli.options import UsageError
from onlinekernel.cli.progress import Score, progress_from, progress_metric
from onlinekernel.io.files import check_writable
from onlinekernel.io.readers import (
    InputError, convert_labels, detect_format, holdout_mask, kind_of_classes, label_kind)

# Held-out rows up to this size are kept in memory and scored after
# training; beyond it they are scored by one more pass over the file.
_HOLDOUT_BYTES = 64 * 2 ** 20

# --average's choices: the estimators' ``average`` values
_AVERAGES = {"uniform": True, "polynomial": "polynomial", "off": False}

_HYPER = ("kernel", "gamma", "alpha", "batch_size", "block_size", "max_model_bytes",
          "learning_rate", "eta0", "t0")


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
    elif args.average is not None:
        params["average"] = _AVERAGES[args.average]
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
    score = Score(task)
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



def run(args, out, err):
    """Train, report on stdout and write the model file; return the exit status."""
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
    progress = progress_from(args, err)
    fmt = detect_format(args.input) if args.format == "auto" else args.format
    source = options.open_input(args, args.input, "required",
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
        running = Score(task)
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
                progress.update(rows, chunk.done, progress_metric(running, epoch))
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
            progress.update(rows, chunk.done, progress_metric(running, epoch))
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
            scored, value = progress_metric(running, epoch)
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


def add_parser(subparsers):
    """The ``train`` command's options."""
    from onlinekernel.solvers.schedules import SCHEDULES

    train = subparsers.add_parser(
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
    options.add_input_options(train, train=True)
    m = train.add_argument_group(
        "model", "Options left unset keep the defaults of DSGClassifier (classification) or "
                 "DSGRegressor (regression).")
    m.add_argument("--task", choices=("classify", "regress"),
                   help="default: regress if --loss is a regression loss, else classify")
    m.add_argument("--classes", metavar="A,B,...",
                   help="all class labels (default: read from the file in a first pass)")
    m.add_argument("--loss", help="a registered loss (see 'onlinekernel plugins')")
    m.add_argument("--loss-param", type=options.assignment, action="append",
                   metavar="NAME=VALUE",
                   help="a loss parameter (repeatable), e.g. delta=2.0")
    m.add_argument("--kernel", help="a registered feature map (default gaussian)")
    m.add_argument("--kernel-param", type=options.assignment, action="append",
                   metavar="NAME=VALUE",
                   help="a feature-map parameter (repeatable), e.g. pairs=true")
    m.add_argument("--gamma", type=options.gamma, help="bandwidth, or 'scale' (default)")
    m.add_argument("--alpha", type=options.alpha,
                   help="regularisation strength, or 'auto': chosen on held-out rows where "
                        "fit runs a batch solver (the regressors' default)")
    m.add_argument("--batch-size", type=options.positive_int, metavar="ROWS",
                   help="rows per training step")
    m.add_argument("--block-size", type=options.positive_int, metavar="N",
                   help="random features per block")
    m.add_argument("--max-blocks", type=options.max_blocks, default=argparse.SUPPRESS,
                   metavar="N",
                   help="feature budget in blocks ('none': unbounded)")
    m.add_argument("--max-model-bytes", type=options.positive_int, metavar="BYTES",
                   help="cap on the learned state in bytes: with --max-blocks none the model "
                        "grows with the rows up to it")
    m.add_argument("--learning-rate", choices=tuple(SCHEDULES), help="step schedule")
    m.add_argument("--eta0", type=float, help="initial step")
    m.add_argument("--t0", type=float, help="time scale of the step decay, in steps")
    m.add_argument("--average", nargs="?", const="uniform", choices=tuple(_AVERAGES),
                   help="predict with an average of the iterates: 'uniform' (their mean, "
                        "Polyak-Ruppert; the option alone), 'polynomial' (the late ones "
                        "weigh most: the classifier's default) or 'off' (the last iterate: "
                        "the regressor's default)")
    m.add_argument("--average-start", type=options.nonnegative_int, metavar="STEP",
                   help="average only the iterates after step STEP (implies --average)")
    m.add_argument("--seed", type=options.seed, default=0,
                   help="seed of the model and the holdout (default 0)")
    r = train.add_argument_group(
        "training",
        "Passes over the file stop by scikit-learn's rule, as fit does: when the score "
        "(accuracy or R2) has not improved by --tol for --n-iter-no-change passes in a row, "
        "or after --max-iter passes.  The score is the holdout's (with --holdout, as "
        "SGDClassifier's early_stopping scores validation_fraction), else the progressive "
        "one.")
    r.add_argument("--max-iter", type=options.positive_int, default=argparse.SUPPRESS,
                   metavar="N",
                   help=f"most passes over the file (default {_STOPPING['max_iter']})")
    r.add_argument("--tol", type=options.tol, default=argparse.SUPPRESS,
                   help=f"least gain of the score that counts as an improvement (default "
                        f"{_STOPPING['tol']:g}, SGDClassifier's); 'none': all --max-iter passes")
    r.add_argument("--n-iter-no-change", type=options.positive_int, default=argparse.SUPPRESS,
                   metavar="N", help=f"passes without improvement before stopping (default "
                                     f"{_STOPPING['n_iter_no_change']})")
    r.add_argument("--epochs", type=options.positive_int, default=argparse.SUPPRESS,
                   metavar="N",
                   help="exactly N passes: disables the stopping rule (the same as --max-iter "
                        "N --tol none)")
    r.add_argument("--holdout", type=options.fraction, default=0.0, metavar="FRACTION",
                   help="hold out this fraction of the rows: the stopping rule scores them "
                        "after each pass, and their score is reported")
    r.add_argument("--progressive", type=options.unit, default=0.1, metavar="FRACTION",
                   help="fraction of each chunk scored before training on it, for the "
                        "progress line and, without --holdout, the stopping rule (default "
                        "0.1; 1: every row; 0: none)")
    r.add_argument("--standardize", action=argparse.BooleanOptionalAction, default=None,
                   help="scale features to zero mean, unit variance, with the scaling stored "
                        "in the model file (default: on for regression, off for "
                        "classification)")
    return train

