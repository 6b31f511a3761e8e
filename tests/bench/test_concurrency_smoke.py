"""Smoke test of benchmarks/concurrency.py: one trainer and predictors on one model (seconds)."""
from benchmarks import concurrency


def test_quick_run_measures_both_sides_and_finds_no_torn_prediction(tmp_path):
    report = concurrency.main(["--quick", "--seconds", "0.5", "--predictors", "2",
                               "--output-dir", str(tmp_path)])
    r = report["result"]
    assert r["trainer alone"]["trainer_rows_per_s"] > 0
    assert r["trainer alone"]["predictor_rows_per_s"] == []
    assert len(r["predictors alone"]["predictor_rows_per_s"]) == 2
    both = r["both"]
    assert both["trainer_rows_per_s"] > 0 and min(both["predictor_rows_per_s"]) > 0
    s = both["semantics"]
    assert s["predictions_checked"] > 0 and s["models_published"] > 1
    assert s["torn_predictions"] == 0
    assert (tmp_path / "concurrency_quick.md").read_text().startswith("# Concurrency")

