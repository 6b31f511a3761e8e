"""Smoke test of benchmarks/stream_defaults.py: every candidate on every stream (seconds)."""
import json

import pytest
from benchmarks import stream_defaults as bench

pytest.importorskip("river")


def test_quick_run_writes_every_candidate_on_every_stream(tmp_path):
    report = bench.main(["--quick", "--stream-rows", "80", "--out-dir", str(tmp_path)])
    saved = json.loads((tmp_path / "stream_defaults_quick.json").read_text())
    assert saved["benchmark"] == "stream_defaults" and saved["mode"] == "quick"
    assert set(report["streams"]) == {"RandomRBFDrift", "Hyperplane", "Phishing", "SEA",
                                      "Agrawal", "imbalanced"}
    for name, entry in report["streams"].items():
        assert entry["rows"] == (1250 if name == "Phishing" else 80)
        assert set(entry["accuracy"]) == set(bench.CANDIDATES)
        assert all(0.0 <= a <= 1.0 for a in entry["accuracy"].values())
    table_rows = (tmp_path / "stream_defaults_quick.md").read_text().count("\n| ")
    assert table_rows == 1 + len(bench.CANDIDATES)


def test_the_imbalanced_stream_has_its_stated_share_of_positives():
    labels = [y for _, y in bench.imbalanced_stream(20000)]
    assert abs(sum(labels) / len(labels) - 0.12) < 0.01
