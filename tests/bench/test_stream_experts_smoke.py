"""Smoke test of benchmarks/stream_experts.py: experts alone, mixtures, the class (seconds)."""
import json

import pytest
from benchmarks import stream_experts as bench

pytest.importorskip("river")


def test_quick_run_computes_the_class_rule(tmp_path):
    report = bench.main(["--quick", "--stream-rows", "120", "--out-dir", str(tmp_path)])
    saved = json.loads((tmp_path / "stream_experts_quick.json").read_text())
    assert saved["benchmark"] == "stream_experts" and saved["settings"]["stream_rows"] == 120
    for name, entry in report["streams"].items():
        assert set(entry["experts"]) == set(bench.EXPERTS)
        assert len(entry["mixtures"]) == (len(bench.SETS) * len(bench.LEARNING_RATES)
                                          * len(bench.DECAYS))
        # the mixture computed from the experts' guesses is the class's own vote
        assert entry["computed_equals_class"], name
    assert "| defaults | 1 | 0.999 |" in (tmp_path / "stream_experts_quick.md").read_text()


def test_hedge_follows_the_expert_without_mistakes():
    rows = [({}, y) for y in "abababab"]
    right, wrong = list("abababab"), list("babababa")
    # no guess before the first label, the first label before the second (two
    # misses); then the vote, which the right expert wins from its first hit
    assert bench.hedge_accuracy([right, wrong], rows, 1.0, 1.0) == 6 / 8
    assert bench.hedge_accuracy([wrong, right], rows, 1.0, 1.0) == 6 / 8  # the tie: "a", met first
    assert bench.hedge_accuracy([wrong, wrong], rows, 1.0, 1.0) == 0.0
