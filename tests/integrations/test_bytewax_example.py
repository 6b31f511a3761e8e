"""The Bytewax example (examples/bytewax_stream): a killed dataflow resumes exactly.

The dataflow runs in a child process, as in production.  One run goes
through the stream without stopping; others are killed with SIGKILL in the
middle of the stream (no clean-up, no last snapshot) and started again on
the same state directory.  The model a resumed dataflow ends with must be
the uninterrupted run's, bit for bit, and it must have learned every row of
the stream exactly once: its ledger (a hash chain of the rows learned, in
order, snapshotted with the model), its rows-learned counter and the
model's own ``samples_seen_`` all say so, and the prediction file holds
each row once, in order, with the uninterrupted run's predictions.
"""
import importlib.util
import json
import re
import signal
import subprocess
import sys
from pathlib import Path

from datetime import timedelta

import numpy as np
import pytest

pytest.importorskip("bytewax")
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="kills the dataflow with SIGKILL")

from bytewax.recovery import RecoveryConfig, init_db_dir  # noqa: E402
from bytewax.testing import run_main  # noqa: E402

import onlinekernel  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "bytewax_stream" / "dataflow.py"
ROWS = 2000              # 62 mini-batches of 32 rows and a last one of 16
SNAPSHOT_INTERVAL = 0.02  # seconds: several snapshots before each kill
TIMEOUT = 120


def _example():
    spec = importlib.util.spec_from_file_location("bytewax_stream_dataflow", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _start(state, kill_after_row=None):
    cmd = [sys.executable, str(EXAMPLE), "--state", str(state), "--rows", str(ROWS),
           "--snapshot-interval", str(SNAPSHOT_INTERVAL)]
    if kill_after_row is not None:
        cmd += ["--kill-after-row", str(kill_after_row)]
    # the state directory as working directory: the source tree must not be
    # on the path (it would shadow the installed, compiled package)
    return subprocess.Popen(cmd, cwd=state, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _finish(proc, killed=False):
    out, err = proc.communicate(timeout=TIMEOUT)
    expected = -signal.SIGKILL if killed else 0
    assert proc.returncode == expected, f"exit status {proc.returncode}:\n{out}\n{err}"
    return err


def _rows_written(state):
    path = state / "predictions.csv"
    if not path.exists():
        return []
    return [int(line.split(",")[0]) for line in path.read_text().splitlines()]


def _assert_same_model_and_rows(state, reference):
    module = _example()
    a = onlinekernel.load(reference / "model.okm")
    b = onlinekernel.load(state / "model.okm")
    assert b.coef_.dtype == np.float64
    assert np.array_equal(a.coef_, b.coef_)
    assert np.array_equal(a.intercept_, b.intercept_)
    X = np.vstack([module.stream_row(i, seed=1)[1] for i in range(500)])
    assert np.array_equal(a.predict_proba(X), b.predict_proba(X))
    assert (state / "model.okm").read_bytes() == (reference / "model.okm").read_bytes()
    # every row learned once, in the order of the stream
    ledger = json.loads((state / "ledger.json").read_text())
    assert ledger == {"rows_learned": ROWS, "next_row": ROWS, "samples_seen": ROWS,
                      "ledger_sha256": module.expected_ledger(ROWS)}
    assert b.samples_seen_ == ROWS
    # every prediction written once, in order, and the same as without the kills
    assert _rows_written(state) == list(range(ROWS))
    assert (state / "predictions.csv").read_bytes() == \
        (reference / "predictions.csv").read_bytes()


def _run_here(state, log):
    """Run the dataflow in this process to the end of the stream (no kill)."""
    recovery = state / "recovery"
    if not recovery.exists():
        recovery.mkdir(parents=True)
        init_db_dir(recovery, 1)
    flow = _example().build_flow(state, ROWS, log=log)
    run_main(flow, epoch_interval=timedelta(seconds=SNAPSHOT_INTERVAL),
             recovery_config=RecoveryConfig(recovery))


def test_killed_dataflow_resumes_to_the_uninterrupted_model(tmp_path):
    state, reference = tmp_path / "killed", tmp_path / "uninterrupted"
    state.mkdir()
    reference.mkdir()
    kill_rows = [700, 1400]
    # the first run to be killed goes on in a child process while this
    # process runs the same dataflow through the stream without stopping
    first = _start(state, kill_after_row=kill_rows[0])
    log = []
    _run_here(reference, log.append)
    assert log == []  # started afresh

    written, errs = [], []
    for i, row in enumerate(kill_rows):
        proc = first if i == 0 else _start(state, kill_after_row=row)
        errs.append(_finish(proc, killed=True))
        assert "Traceback" not in errs[-1], errs[-1]
        # killed mid-stream: no model written, the predictions stop before
        # the end, each row at most once
        assert not (state / "model.okm").exists()
        written.append(_rows_written(state))
        assert written[-1] == list(range(len(written[-1])))
        assert len(written[-1]) < ROWS
    errs.append(_finish(_start(state)))

    # each restart resumed from a snapshot taken mid-stream, not from the
    # start, and replayed the rows read after it; the second run, killed
    # too, had taken snapshots of its own
    starts = [int(m) for err in errs for m in re.findall(r"resuming the stream at row (\d+)", err)]
    assert len(starts) == 2, errs
    assert 0 < starts[0] <= kill_rows[0] + 1, starts
    assert starts[0] < starts[1] <= kill_rows[1] + 1, starts
    _assert_same_model_and_rows(state, reference)

    # started again after the end of the stream, it learns nothing more
    log = []
    _run_here(state, log.append)
    assert log == [f"resuming the stream at row {ROWS}"]
    _assert_same_model_and_rows(state, reference)


def test_learner_refuses_a_row_out_of_order(tmp_path):
    module = _example()
    learner = module.OnlineLearner(None, tmp_path)
    learner.on_batch([module.stream_row(0)])
    with pytest.raises(RuntimeError, match="row 2 reached the learner, which expected row 1"):
        learner.on_batch([module.stream_row(2)])


def test_learner_refuses_to_resume_with_another_batch_size(tmp_path):
    module = _example()
    learner = module.OnlineLearner(None, tmp_path, batch_size=32)
    learner.on_batch([module.stream_row(i) for i in range(40)])
    snapshot = learner.snapshot()
    with pytest.raises(ValueError, match="started with --batch-size 32, not 16"):
        module.OnlineLearner(snapshot, tmp_path, batch_size=16)
    resumed = module.OnlineLearner(snapshot, tmp_path, batch_size=32)
    assert resumed.pending_ids == list(range(32, 40))
    assert module.dumps(resumed.model) == module.dumps(learner.model)
