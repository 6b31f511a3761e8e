"""The progress of passes over data on stderr, and the scores it shows (:class:`Score`)."""
import contextlib
import sys
import time

import numpy as np


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


class Score:
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


def progress_metric(running, epoch):
    """``(name, value)`` of a running :class:`Score` for the progress line of pass ``epoch``."""
    # Scoring a chunk before training on it is progressive validation only
    # while its rows are new: from the second epoch on they were trained on.
    name, value = running.primary()
    return (f"{'progressive' if epoch == 1 else 'running'} {name}", value)


def progress_from(args, err):
    """The :class:`Progress` on ``err`` that ``--quiet`` and ``--progress-every`` set."""
    return Progress(err, quiet=args.quiet, every=args.progress_every)
