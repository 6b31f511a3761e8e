"""Online kernel learning in a Bytewax dataflow that survives being killed.

A Bytewax dataflow reads a stream of labelled rows, scores every row with
the current model before learning from it (test-then-train: the prediction
is written to ``predictions.csv``) and trains a
:class:`~onlinekernel.DSGClassifier` with ``partial_fit`` on mini-batches
of ``--batch-size`` rows.

Bytewax's recovery makes a killed dataflow resume where it left off.  At
the end of every epoch (``--snapshot-interval`` seconds) each stateful step
hands Bytewax a snapshot, and Bytewax writes the snapshots of one epoch
together to its recovery database:

* the source: the index of the next row to read (as a message-queue offset
  would be);
* the learner: the model as the bytes of a model file
  (:func:`onlinekernel.io.modelfile.dumps`, which :func:`~onlinekernel.io.modelfile.loads`
  turns back into the same model, bit for bit), the rows scored but not
  yet learned (the partly filled mini-batch), and a ledger of the rows
  learned;
* the prediction file: its length (Bytewax's ``FileSink`` truncates the
  file to it on resume, so no prediction is written twice).

Killed, even with ``kill -9``, and started again with the same command, the
dataflow restores the last complete epoch and replays the rows read after
it: the model it ends with is the model of a run that never stopped, bit
for bit, and every row of the stream is learned exactly once
(``tests/integrations/test_bytewax_example.py`` checks both).  At the end of a finite
stream it learns the rows left in the last, partly filled mini-batch and
writes ``model.okm`` (``onlinekernel.load`` reads it) and ``ledger.json``::

    pip install "onlinekernel[stream]"
    python examples/bytewax_stream/dataflow.py --state /tmp/ok-bytewax --rows 200000
    # Ctrl-C or kill -9 it, then run the same command again: it resumes

``--state`` is the dataflow's directory: ``recovery/`` (Bytewax's recovery
database, created on the first run), ``predictions.csv``, and at the end
``model.okm`` and ``ledger.json``.  The same dataflow also runs under
Bytewax's own runner, with the recovery database initialised first::

    cd examples/bytewax_stream   # not the repository root: its source tree would shadow
                                 # the installed package
    mkdir -p /tmp/ok-bytewax/recovery && python -m bytewax.recovery /tmp/ok-bytewax/recovery 1
    python -m bytewax.run "dataflow:build_flow('/tmp/ok-bytewax')" -r /tmp/ok-bytewax/recovery -s 1 -b 0
"""
import argparse
import hashlib
import json
import os
import signal
import sys
from datetime import timedelta
from pathlib import Path

import numpy as np

try:
    import bytewax.operators as op
    from bytewax.connectors.files import FileSink
    from bytewax.dataflow import Dataflow
    from bytewax.inputs import FixedPartitionedSource, StatefulSourcePartition
    from bytewax.operators import StatefulBatchLogic
    from bytewax.recovery import RecoveryConfig, init_db_dir
    from bytewax.run import cli_main
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        f"this example needs Bytewax ({exc}): pip install 'onlinekernel[stream]' "
        f"(or pip install bytewax)") from None

import onlinekernel
from onlinekernel.io.modelfile import dumps, loads

N_FEATURES = 4
CLASSES = [0, 1]            # partial_fit needs every class at the first call
MODEL_KEY = "model"         # one key: one model, on one worker
_NO_ROWS = hashlib.sha256(b"onlinekernel bytewax ledger").digest()


# --------------------------------------------------------------------------- #
# the stream
# --------------------------------------------------------------------------- #
def stream_row(i, seed=0):
    """Row ``i`` of the stream: ``(i, x, y)``, the same every time it is read.

    A disk in 4 dimensions (not linearly separable).  Seeding by ``(seed, i)``
    makes the stream replayable from any offset, as a message queue is.
    """
    rng = np.random.default_rng([seed, i])
    x = rng.normal(size=N_FEATURES)
    return i, x, int(np.hypot(x[0], x[1]) < 1.1)


class _StreamPartition(StatefulSourcePartition):
    def __init__(self, start, n_rows, seed, batch, log):
        self._next = start
        self._n_rows = n_rows
        self._seed = seed
        self._batch = batch
        if start:
            log(f"resuming the stream at row {start}")

    def next_batch(self):
        if self._n_rows is not None and self._next >= self._n_rows:
            raise StopIteration()
        stop = self._next + self._batch
        if self._n_rows is not None:
            stop = min(stop, self._n_rows)
        rows = [stream_row(i, self._seed) for i in range(self._next, stop)]
        self._next = stop
        return rows

    def snapshot(self):
        # the next row to read, not the last one read: a resumed partition
        # must not return a row that next_batch already returned
        return self._next


class SeededStream(FixedPartitionedSource):
    """Rows ``0, 1, ...`` of :func:`stream_row`, read in batches, resumable.

    Parameters
    ----------
    n_rows : int or None
        Length of the stream; ``None`` streams for ever.
    seed : int
        Seed of the stream.
    batch : int
        Rows handed to the dataflow per read.
    log : callable
        Where the resume message goes.
    """

    def __init__(self, n_rows, seed=0, batch=64, log=print):
        self.n_rows, self.seed, self.batch, self.log = n_rows, seed, batch, log

    def list_parts(self):
        return ["rows"]

    def build_part(self, step_id, for_part, resume_state):
        return _StreamPartition(resume_state or 0, self.n_rows, self.seed, self.batch,
                                self.log)


# --------------------------------------------------------------------------- #
# the learner
# --------------------------------------------------------------------------- #
def new_model(seed=0):
    """The model a fresh dataflow starts from."""
    return onlinekernel.DSGClassifier(loss="logistic", random_state=seed)


def _ledger_step(ledger, i):
    """The ledger after learning row ``i``: a hash chain of the rows in order."""
    return hashlib.sha256(ledger + int(i).to_bytes(8, "little")).digest()


def expected_ledger(n_rows):
    """The ledger of a model that learned rows ``0 .. n_rows - 1`` once each, in order."""
    ledger = _NO_ROWS
    for i in range(n_rows):
        ledger = _ledger_step(ledger, i)
    return ledger.hex()


class OnlineLearner(StatefulBatchLogic):
    """Test-then-train on a stream: score each row, then learn it in a mini-batch.

    Rows are scored by the model as it is when they arrive and buffered;
    every ``batch_size`` rows, one ``partial_fit`` learns the buffer.  The
    predictions therefore do not depend on how Bytewax groups rows into
    batches or epochs, only on the order of the rows (the compiled
    prediction sums each row in a fixed order, alone or in a batch).

    Parameters
    ----------
    resume_state : dict or None
        A snapshot returned by :meth:`snapshot`, or ``None`` for a new model.
    state_dir : pathlib.Path
        Where ``model.okm`` and ``ledger.json`` are written at the end of
        the stream.
    batch_size : int
        Rows per ``partial_fit``.
    seed : int
        Seed of a new model.
    log_every : int or None
        Report the progressive accuracy every ``log_every`` rows.
    log : callable
        Where the reports go.
    """

    def __init__(self, resume_state, state_dir, batch_size=32, seed=0, log_every=None,
                 log=print):
        self.state_dir = Path(state_dir)
        self.batch_size = batch_size
        self.log_every, self.log = log_every, log
        self.settings = {"batch_size": batch_size, "seed": seed}
        if resume_state is None:
            self.model = new_model(seed)
            self.pending_ids, self.pending_X, self.pending_y = [], [], []
            self.next_row, self.rows_learned, self.ledger = 0, 0, _NO_ROWS
            self.correct = 0
        else:
            s = resume_state
            for name, value in s["settings"].items():
                # another step size or stream would continue into another
                # model than the one the snapshot's run would have trained
                if self.settings[name] != value:
                    option = "--" + name.replace("_", "-")
                    raise ValueError(
                        f"the dataflow in {self.state_dir} was started with {option} {value}, "
                        f"not {self.settings[name]}: resume it with {option} {value}, or "
                        f"start afresh in another --state directory")
            model = s["model"]
            self.model = new_model(seed) if model is None else loads(model, "the snapshot")
            self.pending_ids = list(s["pending_ids"])
            self.pending_X = [np.array(x) for x in s["pending_X"]]
            self.pending_y = list(s["pending_y"])
            self.next_row, self.rows_learned, self.ledger = (
                s["next_row"], s["rows_learned"], s["ledger"])
            self.correct = s["correct"]

    def _fitted(self):
        return hasattr(self.model, "classes_")

    def _learn_pending(self):
        self.model.partial_fit(np.vstack(self.pending_X), np.array(self.pending_y),
                               classes=CLASSES)
        for i in self.pending_ids:
            self.ledger = _ledger_step(self.ledger, i)
        self.rows_learned += len(self.pending_ids)
        self.pending_ids, self.pending_X, self.pending_y = [], [], []

    def on_batch(self, values):
        out = []
        start = 0
        while start < len(values):
            # rows up to the next training step are scored by the same model,
            # in one call
            chunk = values[start:start + self.batch_size - len(self.pending_ids)]
            start += len(chunk)
            X = np.vstack([x for _, x, _ in chunk])
            proba = (self.model.predict_proba(X)[:, 1] if self._fitted()
                     else np.full(len(chunk), 0.5))  # no model before the first step
            for (i, x, y), p in zip(chunk, proba):
                if i != self.next_row:
                    # the source replays exactly the rows after the restored
                    # snapshot: anything else is a lost or a repeated row
                    raise RuntimeError(
                        f"row {i} reached the learner, which expected row {self.next_row}: "
                        f"the stream lost or repeated rows (does {self.state_dir} hold "
                        f"the recovery database of another dataflow?)")
                self.next_row += 1
                self.pending_ids.append(i)
                self.pending_X.append(x)
                self.pending_y.append(y)
                out.append((i, y, float(p)))
                self.correct += int((p > 0.5) == bool(y))
                if self.log_every and self.next_row % self.log_every == 0:
                    # progressive accuracy: each row scored before it was learned
                    self.log(f"row {self.next_row:,}: progressive accuracy "
                             f"{self.correct / self.log_every:.4f} on the last "
                             f"{self.log_every:,} rows")
                    self.correct = 0
            if len(self.pending_ids) == self.batch_size:
                self._learn_pending()
        return out, StatefulBatchLogic.RETAIN

    def on_eof(self):
        # the end of a finite stream: learn the last, partly filled
        # mini-batch and write the model (the write is atomic)
        if self.pending_ids:
            self._learn_pending()
        if self._fitted():
            self.model.save(self.state_dir / "model.okm")
            summary = {"rows_learned": self.rows_learned, "next_row": self.next_row,
                       "samples_seen": int(self.model.samples_seen_),
                       "ledger_sha256": self.ledger.hex()}
            tmp = self.state_dir / ".ledger.json.tmp"
            tmp.write_text(json.dumps(summary, indent=1) + "\n")
            os.replace(tmp, self.state_dir / "ledger.json")
        return [], StatefulBatchLogic.RETAIN

    def snapshot(self):
        # Bytewax pickles the snapshot after this returns, while the learner
        # goes on: everything in it is a copy (the model as model-file bytes)
        return {
            "settings": dict(self.settings),
            "model": dumps(self.model) if self._fitted() else None,
            "pending_ids": list(self.pending_ids),
            "pending_X": [x.copy() for x in self.pending_X],
            "pending_y": list(self.pending_y),
            "next_row": self.next_row,
            "rows_learned": self.rows_learned,
            "ledger": self.ledger,
            "correct": self.correct,
        }


# --------------------------------------------------------------------------- #
# the dataflow
# --------------------------------------------------------------------------- #
def _kill_at(row):
    """An inspector that kills this process, as ``kill -9`` would, after scoring ``row``."""
    def inspector(step_id, item):
        _, (i, _, _) = item
        if i == row:
            # no clean-up, no last snapshot: what an out-of-memory kill or a
            # lost machine leaves behind
            os.kill(os.getpid(), signal.SIGKILL)
    return inspector


def build_flow(state_dir, rows=200_000, *, seed=0, batch_size=32, read_batch=64,
               log_every=None, kill_after_row=None, log=print):
    """The dataflow: read the stream, score and learn each row, write the predictions.

    Parameters
    ----------
    state_dir : str or os.PathLike
        Directory of ``predictions.csv`` and, at the end of the stream,
        ``model.okm`` and ``ledger.json`` (created if needed).
    rows : int or None, default=200_000
        Length of the stream; ``None`` streams for ever.
    seed : int, default=0
        Seed of the stream and of the model.
    batch_size : int, default=32
        Rows per ``partial_fit``.  Part of the state: resume with the value
        the dataflow started with.
    read_batch : int, default=64
        Rows the source hands over per read.  Not part of the model: it may
        change between runs.
    log_every : int or None, default=None
        Report the progressive accuracy every ``log_every`` rows.
    kill_after_row : int or None, default=None
        Kill the process with SIGKILL after scoring this row (POSIX only;
        to test recovery).
    log : callable, default=print
        Where progress messages go.

    Returns
    -------
    bytewax.dataflow.Dataflow
    """
    state_dir = Path(state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    flow = Dataflow("onlinekernel_stream")
    rows_in = op.input("stream", flow, SeededStream(rows, seed, read_batch, log))
    keyed = op.key_on("one_model", rows_in, lambda _: MODEL_KEY)
    scored = op.stateful_batch(
        "learn", keyed,
        lambda resume: OnlineLearner(resume, state_dir, batch_size=batch_size, seed=seed,
                                     log_every=log_every, log=log))
    if kill_after_row is not None:
        op.inspect("kill", scored, _kill_at(kill_after_row))
    lines = op.map_value("format", scored, lambda r: f"{r[0]},{r[1]},{r[2]!r}")
    op.output("predictions", lines, FileSink(state_dir / "predictions.csv"))
    return flow


def run(state_dir, rows=200_000, *, snapshot_interval=1.0, **kwargs):
    """Run the dataflow to the end of the stream, resuming from ``state_dir`` if it was stopped.

    Parameters
    ----------
    state_dir : str or os.PathLike
        The dataflow's directory; its ``recovery/`` database is created on
        the first run.
    rows : int or None, default=200_000
        Length of the stream.
    snapshot_interval : float, default=1.0
        Seconds between snapshots (Bytewax's epoch length).  A restart
        replays at most the rows of the last unfinished epoch.
    **kwargs
        Passed to :func:`build_flow`.
    """
    state_dir = Path(state_dir)
    recovery = state_dir / "recovery"
    if not recovery.exists():
        # one partition is enough for one process; Bytewax refuses to start
        # on a directory without initialised partitions
        recovery.mkdir(parents=True)
        init_db_dir(recovery, 1)
    flow = build_flow(state_dir, rows, **kwargs)
    cli_main(flow, epoch_interval=timedelta(seconds=snapshot_interval),
             recovery_config=RecoveryConfig(recovery))


def _parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--state", required=True, help="the dataflow's directory")
    p.add_argument("--rows", type=int, default=200_000,
                   help="stream length in rows (0: for ever)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batch-size", type=int, default=32, help="rows per partial_fit")
    p.add_argument("--snapshot-interval", type=float, default=1.0,
                   help="seconds between snapshots")
    p.add_argument("--log-every", type=int, default=20_000,
                   help="rows between progress reports (0: none)")
    p.add_argument("--kill-after-row", type=int, default=None,
                   help="kill this process with SIGKILL after scoring this row (for tests)")
    return p.parse_args(argv)


def _interrupted(exc):
    """Whether ``exc`` is a Ctrl-C, which Bytewax wraps in its own error."""
    while exc is not None:
        if isinstance(exc, KeyboardInterrupt):
            return True
        exc = exc.__cause__
    return False


if __name__ == "__main__":
    args = _parse(sys.argv[1:])
    try:
        run(args.state, args.rows or None, snapshot_interval=args.snapshot_interval,
            seed=args.seed, batch_size=args.batch_size, log_every=args.log_every or None,
            kill_after_row=args.kill_after_row,
            log=lambda msg: print(msg, file=sys.stderr))
    except (KeyboardInterrupt, Exception) as exc:
        if not _interrupted(exc):
            raise
        # nothing to save: the last epoch's snapshots are in the recovery
        # database, as after a kill
        print(f"interrupted: run the same command to resume from the last snapshot in "
              f"{args.state}", file=sys.stderr)
        raise SystemExit(130) from None
