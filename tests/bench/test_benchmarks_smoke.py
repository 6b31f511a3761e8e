"""Smoke tests of benchmarks/limits.py and benchmarks/speed.py at tiny sizes.

They run every measurement of the two scripts end to end (a few hundred
rows, a few milliseconds per timing) so that the scripts cannot rot, and
check the reports they write; the figures themselves are not judged here.
"""
import doctest
import importlib
import json
import math

import numpy as np
import pytest

from benchmarks import _common as common
from benchmarks import limits, speed


def _has_matplotlib():
    try:
        importlib.import_module("matplotlib")
    except ImportError:
        return False
    return True


def test_pair_limit_formula():
    # 2 (d + 1) flops at the GEMM rate plus one cosine: 1 ns + 1 ns per pair
    assert limits.pair_limit_from_rates(15, 32e9, 1e9) == pytest.approx(5e8)
    # a faster cosine can never push the limit past the GEMM alone
    assert limits.pair_limit_from_rates(127, 64e9, 1e12) < 64e9 / 256


def test_measure_limits_tiny():
    lim = limits.measure_limits(dims=(4, 8), dtypes=("float32", "float64"), threads=(1, 2),
                                repeats=2, target_seconds=0.002, square_n=64)
    assert len(lim["pair_limit"]) == 2 * 2 * 2
    for rec in lim["pair_limit"]:
        g = next(r for r in lim["gemm"]["records"] if r["kind"] == "tile"
                 and r["dtype"] == rec["dtype"] and r["threads"] == rec["threads"]
                 and r["d"] == rec["d"])
        c = next(r for r in lim["cosine"]["reference"] if r["dtype"] == rec["dtype"]
                 and r["threads"] == rec["threads"])
        for sfx in ("", "_cpu"):
            assert rec["gemm_gflops" + sfx] == g["gflops" + sfx] > 0
            assert rec["cos_gelem_per_s" + sfx] == c["gelem_per_s" + sfx] > 0
            expected = 1.0 / (2 * (rec["d"] + 1) / (g["gflops" + sfx] * 1e9)
                              + 1 / (c["gelem_per_s" + sfx] * 1e9))
            assert rec["pairs_per_s" + sfx] == pytest.approx(expected)
        for clock, key in (("wall", "pairs_per_s"), ("cpu", "pairs_per_s_cpu")):
            assert limits.pair_limit(lim, rec["dtype"], rec["d"], rec["threads"],
                                     clock) == rec[key]
        assert len(g["gflops_samples"]) == len(g["gflops_cpu_samples"]) == 2
    squares = [r for r in lim["gemm"]["records"] if r["kind"] == "square"]
    assert {(r["dtype"], r["threads"]) for r in squares} == {
        (dt, t) for dt in ("float32", "float64") for t in (1, 2)}
    ours = lim["cosine"]["onlinekernel"]
    assert [r["dtype"] for r in ours] == ["float32", "float64"]
    assert all(r["gelem_per_s"] > 0 and r["computes_in"] in ("float32", "float64") for r in ours)
    native = lim["native"]
    if native["libmvec"]:
        assert lim["cosine"]["method"] == "libmvec" and native["vector_symbols"]
    else:
        assert lim["cosine"]["method"] in ("numpy.cos", "onlinekernel.core.streams.cos_tile")
    with pytest.raises(KeyError):
        limits.pair_limit(lim, "float64", 5)
    with pytest.raises(ValueError, match="clock"):
        limits.pair_limit(lim, "float64", 4, clock="cycles")
    json.dumps(lim)  # the report is plain JSON


def test_measure_limits_without_a_compiler(monkeypatch):
    # no C helper: GEMM through numpy.matmul, cosine from numpy or cos_tile
    monkeypatch.setattr(limits, "native_helper", lambda: (None, {
        "compiler": "none", "attempts": [], "libmvec": False, "vector_symbols": []}))
    lim = limits.measure_limits(dims=(4,), dtypes=("float32", "float64"), threads=(1, 2),
                                repeats=1, target_seconds=0.002, square_n=32)
    assert lim["gemm"]["method"].startswith("numpy.matmul")
    assert lim["cosine"]["method"] in ("numpy.cos", "onlinekernel.core.streams.cos_tile")
    assert len(lim["notes"]) == 4 and all("no libmvec" in n for n in lim["notes"])
    for rec in lim["pair_limit"]:
        assert rec["pairs_per_s"] > 0 and rec["pairs_per_s_cpu"] > 0


def test_measure_limits_rejects_bad_arguments():
    with pytest.raises(ValueError, match="dtype"):
        limits.measure_limits(dims=(4,), dtypes=("float16",))
    with pytest.raises(ValueError, match=">= 1"):
        limits.measure_limits(dims=(0,))


def test_limits_script_writes_json(tmp_path):
    out = tmp_path / "limits.json"
    report = limits.main(["--quick", "--dims", "4", "--repeats", "1", "--square", "0",
                          "--output", str(out)])
    saved = json.loads(out.read_text())
    assert saved["benchmark"] == "limits" and saved["mode"] == "quick"
    assert saved["limits"]["pair_limit"] == report["limits"]["pair_limit"]
    assert saved["machine"]["cpu_count"] >= 1 and "formula" in saved["limits"]


@pytest.fixture(scope="module")
def speed_run(tmp_path_factory):
    """speed.py end to end at tiny sizes: (report returned, report written, folder)."""
    folder = tmp_path_factory.mktemp("speed")
    out = folder / "speed_tiny.json"
    report = speed.main([
        "--quick", "--rows", "300", "--repeats", "2", "--dims", "4", "--cache-dims", "3",
        "--sweep-d", "4", "--sweep-features", "256,512", "--sweep-rows", "300",
        "--latency-d", "4", "--latency-updates", "40", "--latency-window", "10",
        "--square", "0", "--limits-seconds", "0.002", "--no-plots", "--output", str(out)])
    return report, json.loads(out.read_text()), folder


def test_speed_script_tiny(speed_run):
    report, saved, _ = speed_run
    assert saved["benchmark"] == "speed"
    caps = speed.capabilities()
    dtypes = ["float32", "float64"] if caps["dtype"] else ["float64"]
    preds = saved["prediction"]["records"]
    assert {(r["dtype"], r["n_jobs"]) for r in preds} == {
        (dt, n) for dt in dtypes for n in ((1, 2) if caps["n_jobs"] else (1,))}
    for r in preds:
        assert r["rows"] == 300 and r["n_features"] == 4096
        assert r["pairs_per_s"] == pytest.approx(300 * 4096 / r["seconds_median"])
        assert r["pairs_per_cpu_s"] == pytest.approx(300 * 4096 / r["cpu_seconds_median"])
        assert r["fraction_of_pair_limit"] == pytest.approx(
            r["pairs_per_cpu_s"] / r["pair_limit_cpu"])
        assert r["pair_limit_cpu"] == max(
            limits.pair_limit(run, r["dtype"], 4, 1, "cpu") for run in saved["limits"]["runs"])
        # n_jobs and the cache change the speed, never the scores
        assert r["max_abs_difference_to_n_jobs_1"] < 1e-4
        if r["n_jobs"] == 2:
            # calls of a few clock ticks give no per-thread estimate
            assert r["speedup_with_a_core_per_thread"] is None
            assert r["speedup_over_n_jobs_1"] > 0 and r["cpu_seconds_over_n_jobs_1"] > 0
    for r in saved["cache"]["records"]:
        assert r["max_abs_difference"] < 1e-4
        assert r["blocks_in_cache"]["regenerated"] in (0, None)
    # every target has a verdict, or says why it has none
    targets = saved["targets"]
    assert targets and all(t["pass"] in (True, False, None) for t in targets)
    for t in targets:
        if t["pass"] is None:
            assert t["reason"]
        else:
            assert math.isfinite(t["measured"])
            assert t["pass"] == (t["measured"] >= t["threshold"] if t["comparison"] == ">="
                                 else t["measured"] <= t["threshold"])
    lat = saved["latency"]["records"]
    for clock in ("cpu", "wall"):
        assert [w["updates"] for w in lat[0][clock]["windows"]] == [10] * 4
    assert lat[0]["samples_seen_at_end"] == 64 * 16 + 40
    assert {t["clock"] for t in targets} <= {"cpu", "wall"}
    sweep = saved["sweep"]["records"]
    assert {r["n_features"] for r in sweep} == {256, 512}
    assert saved["plots"] == [] and saved["plots_skipped"] == "--no-plots"
    assert report["targets_summary"] == saved["targets_summary"]


def test_speed_plots(speed_run):
    _, saved, folder = speed_run
    files, why = speed.make_plots(saved, "tiny", folder)
    # PNG files when matplotlib is there, the reason when it is not
    if _has_matplotlib():
        assert why is None and len(files) == 3
        for path in files:
            assert path.read_bytes()[:4] == b"\x89PNG"
    else:
        assert files == [] and "matplotlib" in why


def test_speed_build_model_fills_the_budget():
    clf = speed.build_model(3, n_features=512)
    assert clf.n_random_features_ == 512
    if not speed.capabilities()["dtype"]:
        with pytest.raises(speed.Unsupported, match="dtype"):
            speed.build_model(3, n_features=512, dtype="float32")
    with pytest.raises(ValueError, match="multiple of 256"):
        speed.build_model(3, n_features=300)


def test_speed_arguments_are_checked():
    with pytest.raises(SystemExit):
        speed.parse_args(["--latency-updates", "10", "--latency-window", "10"])
    with pytest.raises(SystemExit):
        speed.parse_args(["--sweep-features", "300"])


def test_busiest_thread_seconds():
    assert common.busiest_thread_seconds({"1": 1.0, "2": 0.5}, {"1": 1.25, "2": 1.0,
                                                              "3": 0.125}) == 0.5
    assert common.busiest_thread_seconds(None, {"1": 1.0}) is None


def test_common_helpers(tmp_path):
    t = common.time_call(lambda: None, repeats=3, warmup=1)
    assert len(t["samples_s"]) == 3 and t["median_s"] >= 0
    with pytest.raises(ValueError):
        common.time_call(lambda: None, repeats=0)
    path = common.write_json(tmp_path / "sub" / "r.json", {"a": [1, 2]})
    assert json.loads(path.read_text()) == {"a": [1, 2]}
    with pytest.raises(FileNotFoundError, match="--data-dir"):
        common.load_dataset("no_such_dataset", tmp_path)
    np.savez(tmp_path / "tiny.npz", X_train=np.ones((2, 3), np.float32), y_train=[0, 1],
             X_test=np.zeros((1, 3)), y_test=[1])
    X, y, Xt, yt = common.load_dataset("tiny", tmp_path)
    assert X.dtype == np.float64 and X.flags.c_contiguous and Xt.shape == (1, 3)
    with pytest.raises(ValueError):
        common.parse_int_list("16,x")


@pytest.mark.parametrize("module", [common, limits, speed], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    tests = finder.find(module, module.__name__, globs=vars(module).copy())
    assert any(t.examples for t in tests)
    for test in tests:
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
