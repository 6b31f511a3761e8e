"""Smoke test of benchmarks/streams.py: one-row latency and the adapter (seconds)."""
import json

import pytest
from benchmarks import streams as streams_bench

pytest.importorskip("river")


def test_quick_run_writes_results(tmp_path):
    report = streams_bench.main(["--quick", "--rows", "20", "--adapter-rows", "40",
                                 "--no-prequential", "--out-dir", str(tmp_path)])
    saved = json.loads((tmp_path / "streams_quick.json").read_text())
    assert saved["benchmark"] == "streams" and saved["mode"] == "quick"
    for kind in ("learn", "predict"):
        entry = report["latency"][kind]
        for system in ("onlinekernel", "scikit-learn"):
            assert entry[system]["median_us"] > 0 and entry[system]["median_cpu_us"] >= 0
        assert entry["ratio_sklearn_over_ours"] > 0
    assert report["latency"]["one_row_predictions_bit_identical_to_batch"]
    assert report["adapter"]["rows"] == 40 and report["adapter"]["n_random_features"] == 4096
    assert [t["name"][:12] for t in saved["targets"]] == ["one-row part", "one-row pred",
                                                          ">= 10,000 ro"]


def test_the_prequential_table_runs_on_short_streams(log=print):
    out = streams_bench.prequential(60, lambda msg: None)
    assert set(out) == {"RandomRBFDrift", "Hyperplane", "Phishing"}
    for entry in out.values():
        assert len(entry["models"]) == 9
        assert all(0.0 <= m["accuracy"] <= 1.0 for m in entry["models"].values())
        river = {k for k in entry["models"] if k.startswith("River")}
        assert set(entry["our_speed_ratio_to"]) == river
        assert set(entry["ours"]) == {"onlinekernel RiverClassifier",
                                      "onlinekernel RiverNormaClassifier",
                                      "onlinekernel RiverNormaClassifier (budget 4096)",
                                      "onlinekernel RiverMultiKernelClassifier",
                                      streams_bench.STREAM_MODEL_4096}
        assert all(set(o["speed_ratio_to"]) == river for o in entry["ours"].values())


def test_the_4096_model_has_4096_stored_rows_per_kernel_expert():
    experts = streams_bench._experts_4096()
    kernels = [e for e in experts if e.get("kernel") != "linear"]
    assert kernels and all(e["budget"] == 4096 for e in kernels)
    assert all("budget" not in e for e in experts if e.get("kernel") == "linear")
