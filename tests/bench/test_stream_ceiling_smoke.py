"""Smoke test of benchmarks/stream_ceiling.py: every family refit on Phishing (seconds)."""
import json

import numpy as np
import pytest
from benchmarks import stream_ceiling as bench

pytest.importorskip("river")


def test_quick_run_scores_every_family(tmp_path):
    report = bench.main(["--quick", "--out-dir", str(tmp_path)])
    saved = json.loads((tmp_path / "stream_ceiling_quick.json").read_text())
    assert saved["benchmark"] == "stream_ceiling" and saved["every"] == 250
    assert saved["rows"] == 1250
    assert set(report["families"]) == {"SVC, Gaussian kernel", "SVC, Laplacian kernel",
                                       "LogisticRegression", "RandomForestClassifier"}
    for entry in report["families"].values():
        assert entry["best"] in entry["all"]
        assert 0.5 < entry["accuracy"] <= 1.0  # better than guessing on Phishing
    assert "| SVC, Laplacian kernel |" in (tmp_path / "stream_ceiling_quick.md").read_text()


def test_refits_predict_each_row_before_seeing_it():
    """A model that memorises its training rows scores only what the majority and
    the past tell it: here labels alternate in blocks, so refits on the past miss."""
    from sklearn.dummy import DummyClassifier

    X = np.zeros((40, 1))
    y = np.repeat([0, 1, 0, 1], 10)
    acc = bench.prequential_refits(lambda: DummyClassifier(strategy="most_frequent"), X, y,
                                   10)
    # block 1: no label seen (predicts 0, right); block 2: 0s seen, predicts 0 (wrong);
    # block 3: tie 10/10 -> 0 (right); block 4: 20 zeros vs 10 ones -> 0 (wrong)
    assert acc == 0.5
