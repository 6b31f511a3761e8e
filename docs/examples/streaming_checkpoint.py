"""A long-running stream that checkpoints its model and resumes where it stopped.

The service reads mini-batches from a replayable source (here a seeded
generator: batch ``i`` is the same rows every time, as a message-queue
offset would be), trains with ``partial_fit`` and, every ``--every``
batches, saves the model with ``model.save`` under a name holding the number
of batches consumed.  ``model.save`` writes atomically (a temporary file,
flushed, then renamed), so a checkpoint is either complete or absent; only
the latest ``--keep`` checkpoints are kept.

Stop it at any time -- Ctrl-C writes a last checkpoint, a crash loses at
most ``--every`` batches -- and run the same command again: it loads the
latest readable checkpoint with ``onlinekernel.load`` and continues from the
batch after it.  The model it ends with is the model of a run that never
stopped, bit for bit (tests/integrations/test_river.py checks it)::

    python docs/examples/streaming_checkpoint.py --dir /tmp/ok-stream --batches 2000
"""
import argparse
import os
import re
import sys
import time

import numpy as np

import onlinekernel

BATCH = 64            # rows per mini-batch of the stream
CLASSES = [0, 1]      # partial_fit needs every class at the first call
HOLDOUT = 2 ** 32 - 1  # index of a batch the stream never reaches: the holdout set
_CHECKPOINT = re.compile(r"^model-(\d{9})\.okm$")
# what a save interrupted by a crash leaves behind (see modelfile.save)
_LEFTOVER = re.compile(r"^\.model-\d{9}\.okm\..*\.tmp$")


def batch(i, seed=0, rows=BATCH):
    """Mini-batch ``i`` of the stream: a disk in 4 dimensions, not linearly separable."""
    rng = np.random.default_rng([seed, i])
    X = rng.normal(size=(rows, 4))
    y = (np.hypot(X[:, 0], X[:, 1]) < 1.1).astype(int)
    return X, y


def new_model(seed=0):
    """The model a fresh run starts from."""
    return onlinekernel.DSGClassifier(loss="logistic", random_state=seed)


def checkpoints(directory):
    """The checkpoints in ``directory`` as ``(batches consumed, path)``, oldest first."""
    found = []
    for name in os.listdir(directory):
        m = _CHECKPOINT.match(name)
        if m:
            found.append((int(m.group(1)), os.path.join(directory, name)))
    return sorted(found)


def save_checkpoint(model, directory, keep):
    """Save ``model`` (atomically) and delete all but the latest ``keep`` checkpoints."""
    done = model.samples_seen_ // BATCH
    path = os.path.join(directory, f"model-{done:09d}.okm")
    model.save(path)
    for _, old in checkpoints(directory)[:-keep]:
        os.remove(old)
    return path


def resume(directory, log=print):
    """The latest checkpoint that loads, or ``None``; damaged ones are skipped."""
    for name in os.listdir(directory):
        if _LEFTOVER.match(name):
            os.remove(os.path.join(directory, name))
    for _, path in reversed(checkpoints(directory)):
        try:
            model = onlinekernel.load(path)
        except onlinekernel.ModelFileError as exc:
            log(f"skipping {os.path.basename(path)}: {exc}")
            continue
        log(f"resuming from {os.path.basename(path)}")
        return model
    return None


def main(directory, n_batches, *, every=50, keep=3, seed=0, stop_after=None, log=print):
    """Train on batches ``0 .. n_batches - 1``, resuming from ``directory`` if it has checkpoints.

    Parameters
    ----------
    directory : str
        Where the checkpoints live (created if needed).
    n_batches : int
        Length of the stream, in batches.
    every : int
        Batches between checkpoints.
    keep : int
        Checkpoints kept.
    seed : int
        Seed of the stream and of the model.
    stop_after : int or None
        Stop without a final checkpoint after this many batches of this run,
        as a crash would (for tests).
    log : callable
        Where progress lines go.

    Returns
    -------
    DSGClassifier
        The model at the end of this run.
    """
    os.makedirs(directory, exist_ok=True)
    model = resume(directory, log) or new_model(seed)
    start = getattr(model, "samples_seen_", 0) // BATCH
    X_hold, y_hold = batch(HOLDOUT, seed, rows=1024)
    t0, done_here = time.perf_counter(), 0
    try:
        for i in range(start, n_batches):
            if stop_after is not None and done_here >= stop_after:
                log(f"stopping before batch {i + 1} without a checkpoint (simulated crash)")
                return model
            X, y = batch(i, seed)
            model.partial_fit(X, y, classes=CLASSES)
            done_here += 1
            if (i + 1) % every == 0 or i + 1 == n_batches:
                path = save_checkpoint(model, directory, keep)
                rate = done_here * BATCH / (time.perf_counter() - t0)
                log(f"batch {i + 1}/{n_batches}  holdout accuracy "
                    f"{model.score(X_hold, y_hold):.3f}  {rate:,.0f} samples/s  "
                    f"saved {os.path.basename(path)}")
    except KeyboardInterrupt:
        # partial_fit is transactional: an interrupted call left the model as
        # it was before it, and samples_seen_ says which batch comes next
        if hasattr(model, "samples_seen_"):
            path = save_checkpoint(model, directory, keep)
            log(f"interrupted: saved {os.path.basename(path)}")
        raise SystemExit(130) from None
    return model


def _parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--dir", required=True, help="checkpoint directory")
    p.add_argument("--batches", type=int, default=2000, help="stream length in batches")
    p.add_argument("--every", type=int, default=50, help="batches between checkpoints")
    p.add_argument("--keep", type=int, default=3, help="checkpoints kept")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


if __name__ == "__main__":
    args = _parse(sys.argv[1:])
    main(args.dir, args.batches, every=args.every, keep=args.keep, seed=args.seed)
