"""Smoke test of benchmarks/compare_builds.py: one build against itself."""
import json

from benchmarks import compare_builds


def test_a_build_against_itself_computes_the_same(tmp_path, capsys):
    # the same interpreter on both sides: the checksums must agree (a seeded
    # model is the same in two processes), and the report has a ratio per workload
    assert compare_builds.main(["--quick", "--before", compare_builds.sys.executable,
                                "--output-dir", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "compare_builds_quick.json").read_text())
    row = report["workloads"]["predict"]
    assert row["same_outputs"] is True
    assert row["before_s"] > 0 and row["after_s"] > 0 and row["ratio"] > 0
    assert report["clock"] == "cpu" and report["blas_threads"] == "1"
    assert "| predict |" in (tmp_path / "compare_builds_quick.md").read_text()
    assert "after / before" in capsys.readouterr().out
