"""The command line: train / predict / evaluate / plugins / demo, streaming readers, errors.

Every file is generated in ``tmp_path``; chunk sizes are smaller than the
files so that every run streams several chunks.  Models are small (few
blocks of few features) to keep the tests fast, except where a metric is
checked for being sensible.
"""
import gzip
import io
import json
import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest
from sklearn.metrics import r2_score

import onlinekernel
from onlinekernel import DSGClassifier, DSGRegressor
from onlinekernel.io.readers import InputError, detect_format, holdout_mask, open_source
from onlinekernel.cli import Progress, main

from conftest import load_dataset, needs_data

SMALL = ["--block-size", "32", "--max-blocks", "4", "--batch-size", "16"]


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path, monkeypatch):
    # train without -o writes INPUT.okm into the working directory
    monkeypatch.chdir(tmp_path)


# ---------------------------------------------------------------------- #
# data
# ---------------------------------------------------------------------- #
def _ring(n=800, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = (np.hypot(X[:, 0], X[:, 1]) < 1.0).astype(int)
    return X, y


def _three(n=900, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.array(["low", "mid", "high"])[np.digitize(X[:, 0] + 0.5 * X[:, 1] ** 2, [-0.3, 0.6])]
    return X, y


def _wave(n=800, seed=2):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, size=(n, 3))
    y = np.sin(X[:, 0]) + 0.3 * X[:, 1] ** 2 + 0.05 * rng.normal(size=n)
    return X, y


def _write_csv(path, X, y, header=True, names=None):
    d = X.shape[1]
    names = names or [f"x{j}" for j in range(d)] + ["target"]
    with open(path, "w") as fh:
        if header:
            fh.write(",".join(names) + "\n")
        for row, t in zip(X.tolist(), np.asarray(y).tolist()):
            fh.write(",".join(repr(v) for v in row) + f",{t}\n")  # repr: exact round trip
    return str(path)


def _write_svmlight(path, X, y, zero_based=False):
    off = 0 if zero_based else 1
    with open(path, "w") as fh:
        fh.write("# generated for the tests\n")
        for row, t in zip(X.tolist(), np.asarray(y).tolist()):
            feats = " ".join(f"{j + off}:{v!r}" for j, v in enumerate(row) if v != 0.0)
            fh.write(f"{t!r} {feats}\n")
    return str(path)


def _run(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _holdout_line(out, name):
    m = re.search(rf"^holdout {name} ([0-9.]+)", out, re.M)
    assert m, out
    return float(m.group(1))


# ---------------------------------------------------------------------- #
# train / predict / evaluate round trips
# ---------------------------------------------------------------------- #
def test_train_csv_binary_holdout_predict_evaluate(tmp_path, capsys):
    X, y = _ring()
    data = _write_csv(tmp_path / "ring.csv", X, y)
    model_path = tmp_path / "ring.okm"
    code, out, err = _run(["train", data, "--chunk-size", 150, "--holdout", 0.25,
                           "-o", model_path], capsys)
    assert code == 0, err
    assert 0.85 < _holdout_line(out, "accuracy") <= 1.0
    n_held = int(re.search(r"^holdout accuracy [0-9.]+ on ([0-9,]+) rows$", out, re.M).group(1))
    assert n_held == holdout_mask(0, len(y), 0.25, seed=0).sum()
    assert f"model written to {model_path}" in out

    model = onlinekernel.load(model_path)
    assert isinstance(model, DSGClassifier) and model.classes_.tolist() == [0, 1]
    code, out, err = _run(["predict", model_path, data, "--chunk-size", 100,
                           "--target", "target", "-o", tmp_path / "pred.txt"], capsys)
    assert code == 0, err
    pred = np.loadtxt(tmp_path / "pred.txt", dtype=int)
    np.testing.assert_array_equal(pred, model.predict(X))

    code, out, err = _run(["evaluate", model_path, data, "--json", "--chunk-size", 100], capsys)
    assert code == 0, err
    result = json.loads(out)
    assert result == {"rows": len(y), "accuracy": pytest.approx(model.score(X, y), abs=1e-12)}


@pytest.mark.parametrize("passes", [["--epochs", "1"], ["--epochs", "3"], []])
def test_training_from_csv_equals_partial_fit_in_python(tmp_path, capsys, passes):
    X, y = _ring(n=500, seed=5)
    data = _write_csv(tmp_path / "d.csv", X, y, header=False)
    code, out, err = _run(["train", data, "--chunk-size", 96, "--seed", 7, "--quiet",
                           "-o", tmp_path / "m.okm"] + passes + SMALL, capsys)
    assert code == 0, err
    cli_model = onlinekernel.load(tmp_path / "m.okm")
    epochs = int(re.search(r"\((\d+) epochs?\)", out).group(1))
    if passes:
        assert epochs == int(passes[1])
    else:  # the stopping rule: at least n_iter_no_change + 1 passes
        assert epochs >= 6 and "stopped after epoch" in out

    py = DSGClassifier(random_state=7, block_size=32, max_blocks=4, batch_size=16)
    for _ in range(epochs):
        for start in range(0, len(y), 96):
            py.partial_fit(X[start:start + 96], y[start:start + 96], classes=[0, 1])
    np.testing.assert_array_equal(cli_model.coef_, py.coef_)
    np.testing.assert_array_equal(cli_model.decision_function(X), py.decision_function(X))
    np.testing.assert_array_equal(cli_model.predict(X), py.predict(X))


def test_train_npz_multiclass_string_labels(tmp_path, capsys):
    X, y = _three()
    data = tmp_path / "three.npz"
    np.savez_compressed(data, X_train=X, y_train=y, X_test=X[:200], y_test=y[:200])
    model_path = tmp_path / "three.okm"
    code, out, err = _run(["train", data, "--chunk-size", 200, "--holdout", 0.2, "--epochs", 2,
                           "--loss", "logistic", "-o", model_path], capsys)
    assert code == 0, err
    assert "(2 epochs)" in out
    assert _holdout_line(out, "accuracy") > 0.75   # three classes: chance is about 0.33
    model = onlinekernel.load(model_path)
    assert model.classes_.tolist() == ["high", "low", "mid"]
    assert model.loss_.name == "multinomial"

    # evaluate and predict read the test split by default, never the training rows
    for keys in ([], ["--npz-keys", "X_test,y_test"]):
        code, out, err = _run(["evaluate", model_path, data, *keys, "--json"], capsys)
        assert code == 0, err
        assert json.loads(out) == {"rows": 200, "accuracy": pytest.approx(
            model.score(X[:200], y[:200]), abs=1e-12)}

    code, out, err = _run(["predict", model_path, data, "--proba", "--chunk-size", 128,
                           "-o", tmp_path / "p.csv"], capsys)
    assert code == 0, err
    lines = (tmp_path / "p.csv").read_text().splitlines()
    assert lines[0] == "high,low,mid"
    proba = np.array([[float(v) for v in line.split(",")] for line in lines[1:]])
    np.testing.assert_array_equal(proba, model.predict_proba(X[:200]))

    # a file with only a training split is scored only when asked for by name
    only_train = tmp_path / "train_only.npz"
    np.savez(only_train, X_train=X, y_train=y)
    code, out, err = _run(["evaluate", model_path, only_train], capsys)
    assert code != 0 and "only the training split 'X_train'" in err and "--npz-keys" in err
    code, out, err = _run(["evaluate", model_path, only_train, "--npz-keys", "X_train,y_train",
                           "--json"], capsys)
    assert code == 0 and json.loads(out)["rows"] == len(y)


def test_train_svmlight_regression(tmp_path, capsys):
    X, y = _wave()
    X[:, 2] = np.where(X[:, 2] > 0, X[:, 2], 0.0)  # sparse: about half the entries absent
    data = _write_svmlight(tmp_path / "wave.svm", X, y)
    model_path = tmp_path / "wave.okm"
    code, out, err = _run(["train", data, "--chunk-size", 150, "--holdout", 0.2,
                           "--task", "regress", "-o", model_path], capsys)
    assert code == 0, err
    r2 = float(re.search(r"holdout R2 ([-0-9.]+), RMSE ([0-9.]+)", out).group(1))
    assert r2 > 0.6
    model = onlinekernel.load(model_path)
    assert isinstance(model, DSGRegressor) and model.n_features_in_ == 3  # width from the file

    code, out, err = _run(["predict", model_path, data, "--chunk-size", 128], capsys)
    assert code == 0, err
    np.testing.assert_array_equal(np.array(out.split(), dtype=float), model.predict(X))
    code, out, err = _run(["evaluate", model_path, data, "--json"], capsys)
    result = json.loads(out)
    pred = model.predict(X)
    assert result["r2"] == pytest.approx(r2_score(y, pred), rel=1e-9)
    assert result["rmse"] == pytest.approx(np.sqrt(np.mean((y - pred) ** 2)), rel=1e-9)


def test_holdout_scored_from_memory_or_by_another_pass_alike(tmp_path, capsys, monkeypatch):
    X, y = _wave(n=400)
    data = _write_csv(tmp_path / "w.csv", X, y)
    argv = ["train", data, "--task", "regress", "--holdout", 0.3, "--chunk-size", 64,
            "-o", tmp_path / "m.okm"] + SMALL
    code, kept, err = _run(argv, capsys)
    assert code == 0 and "holdout  100%" not in err
    monkeypatch.setattr("onlinekernel.cli.train._HOLDOUT_BYTES", 0)
    code, reread, err = _run(argv, capsys)
    assert code == 0 and "holdout  100% | 400 rows" in err
    line = re.compile(r"^holdout R2 .*$", re.M)
    assert line.search(kept).group(0) == line.search(reread).group(0)


def test_svmlight_qid_comments_and_unlabelled_lines(tmp_path, capsys):
    path = tmp_path / "q.svm"
    path.write_text("# a comment line\n1 qid:3 1:0.5 3:-2 # trailing\n\n-1 qid:3 2:1e-3\n")
    chunks = list(open_source(str(path), n_features=3).chunks(10))
    np.testing.assert_array_equal(chunks[0].X, [[0.5, 0.0, -2.0], [0.0, 1e-3, 0.0]])
    assert chunks[0].y.tolist() == ["1", "-1"] and chunks[0].lines.tolist() == [2, 4]
    unlabelled = tmp_path / "u.svm"
    unlabelled.write_text("1:0.5 3:-2\n2:1\n")
    chunk = next(open_source(str(unlabelled), labels="optional", n_features=3).chunks(10))
    assert chunk.y is None and chunk.X.tolist() == [[0.5, 0.0, -2.0], [0.0, 1.0, 0.0]]
    with pytest.raises(InputError, match=r"u\.svm line 1: no label"):
        next(open_source(str(unlabelled), n_features=3).chunks(10))


def test_svmlight_zero_based_and_n_features(tmp_path, capsys):
    X, y = _ring(n=300)
    data = _write_svmlight(tmp_path / "r.txt", X, y, zero_based=True)  # detected by content
    assert detect_format(data) == "svmlight"
    code, out, err = _run(["train", data, "--zero-based", "--n-features", 5, "--quiet",
                           "-o", tmp_path / "m.okm"] + SMALL, capsys)
    assert code == 0, err
    model = onlinekernel.load(tmp_path / "m.okm")
    assert model.n_features_in_ == 5
    wide = np.hstack([X, np.zeros((300, 3))])
    code, out, err = _run(["predict", tmp_path / "m.okm", data, "--zero-based"], capsys)
    np.testing.assert_array_equal(np.array(out.split(), dtype=float), model.predict(wide))


def test_regression_loss_implies_regression_and_loss_params(tmp_path, capsys):
    X, y = _wave(n=300)
    data = _write_csv(tmp_path / "w.csv", X, y)
    code, out, err = _run(["train", data, "--loss", "huber", "--loss-param", "delta=0.5",
                           "--kernel", "laplacian", "--gamma", "0.3", "--average-start", 3,
                           "--quiet", "-o", tmp_path / "m.okm"] + SMALL, capsys)
    assert code == 0, err
    model = onlinekernel.load(tmp_path / "m.okm")
    assert isinstance(model, DSGRegressor) and model.average == 3
    assert model.loss_.get_params() == {"delta": 0.5}
    assert model.feature_map_.name == "laplacian" and model.gamma_ == 0.3


def test_kernel_params_and_estimator_options_reach_the_model(tmp_path, capsys):
    X, y = _ring(n=300)
    data = _write_csv(tmp_path / "r.csv", X, y)
    code, out, err = _run(["train", data, "--kernel-param", "pairs=true", "--alpha", 1e-4,
                           "--learning-rate", "invsqrt", "--eta0", 2.0, "--t0", 10,
                           "--average", "--max-blocks", "none", "--quiet", "--epochs", 1,
                           "-o", tmp_path / "m.okm"] + SMALL[:2] + SMALL[4:], capsys)
    assert code == 0, err
    model = onlinekernel.load(tmp_path / "m.okm")
    params = model.get_params()
    assert params["kernel_params"] == {"pairs": True}
    assert (params["alpha"], params["learning_rate"], params["eta0"], params["t0"],
            params["average"], params["max_blocks"]) == (1e-4, "invsqrt", 2.0, 10.0, True, None)
    assert model.n_blocks_ == -(-300 // 16) * 1  # unbounded: one block per step
    assert model.feature_map_.get_params()["pairs"] is True


@pytest.mark.parametrize("option, average", [([], "polynomial"), (["--average"], True),
                                             (["--average", "polynomial"], "polynomial"),
                                             (["--average", "off"], False)])
def test_average_option_chooses_the_average(option, average, tmp_path, capsys):
    X, y = _ring(n=300)
    data = _write_csv(tmp_path / "r.csv", X, y)
    code, out, err = _run(["train", data, *option, "--quiet", "--epochs", 1,
                           "-o", tmp_path / "m.okm"] + SMALL, capsys)
    assert code == 0, err
    model = onlinekernel.load(tmp_path / "m.okm")
    assert model.average == average and bool(model.n_averaged_) is (average is not False)


def test_average_option_rejects_an_unknown_average(tmp_path, capsys):
    X, y = _ring(n=300)
    data = _write_csv(tmp_path / "r.csv", X, y)
    code, out, err = _run(["train", data, "--average", "median", "-o", tmp_path / "m.okm"],
                          capsys)
    assert code == 2 and "invalid choice: 'median'" in err
    assert not (tmp_path / "m.okm").exists()


def test_a_growing_model_under_a_byte_cap(tmp_path, capsys):
    X, y = _ring(n=300)
    data = _write_csv(tmp_path / "r.csv", X, y)
    # 32 features a block, one output, float64: 512 bytes a block; 5 blocks
    code, out, err = _run(["train", data, "--max-blocks", "none", "--max-model-bytes", 2600,
                           "--quiet", "--epochs", 1, "-o", tmp_path / "m.okm"]
                          + SMALL[:2] + SMALL[4:], capsys)
    assert code == 0, err
    model = onlinekernel.load(tmp_path / "m.okm")
    assert model.get_params()["max_model_bytes"] == 2600 and model.n_blocks_ == 5
    code, out, err = _run(["train", data, "--max-model-bytes", "0"], capsys)
    assert code == 2 and "argument --max-model-bytes: expected a positive integer" in err


def test_csv_variants_header_detection_target_and_gzip(tmp_path, capsys):
    X, y = _three(n=400)
    # target first, by name, no trailing target column; gzipped; semicolons
    path = tmp_path / "t.csv.gz"
    with gzip.open(path, "wt") as fh:
        fh.write("label;a;b;c\n")
        for row, t in zip(X.tolist(), y):
            fh.write(f"{t};" + ";".join(repr(v) for v in row) + "\n")
    code, out, err = _run(["train", path, "--target", "label", "--delimiter", ";",
                           "--chunk-size", 128, "-o", tmp_path / "m.okm"] + SMALL, capsys)
    assert code == 0, err
    model = onlinekernel.load(tmp_path / "m.okm")
    assert model.n_features_in_ == 3 and model.classes_.tolist() == ["high", "low", "mid"]
    # headerless file with string labels: the label column is not a number, but the
    # features of the first row are, so that row is data
    plain = _write_csv(tmp_path / "p.csv", X, y, header=False)
    source = open_source(plain)
    assert not source.has_header and source.n_features == 3
    assert sum(c.X.shape[0] for c in source.chunks(100)) == 400
    numeric = _write_csv(tmp_path / "n.csv", X, np.arange(400), header=False)
    source = open_source(numeric, target="0", header="no")
    first = next(source.chunks(1))
    assert first.y.tolist() == [repr(float(X[0, 0]))]
    np.testing.assert_array_equal(first.X, [[X[0, 1], X[0, 2], 0.0]])


def test_npz_streaming_reads_row_blocks_of_any_layout(tmp_path):
    X = np.arange(60, dtype=np.float32).reshape(20, 3)
    y = np.arange(20)
    for name, save, Xs in (("c.npz", np.savez_compressed, X),
                           ("f.npz", np.savez, np.asfortranarray(X)),
                           ("s.npz", np.savez, X.astype(">f8"))):
        save(tmp_path / name, X=Xs, y=y)
        chunks = list(open_source(str(tmp_path / name)).chunks(7))
        assert [c.X.shape[0] for c in chunks] == [7, 7, 6]
        np.testing.assert_array_equal(np.vstack([c.X for c in chunks]), X)
        np.testing.assert_array_equal(np.concatenate([c.y for c in chunks]), y)
        assert chunks[-1].done == 1.0


def test_holdout_is_a_deterministic_hash_of_row_and_seed():
    whole = holdout_mask(0, 10000, 0.1, seed=3)
    pieces = np.concatenate([holdout_mask(s, 333, 0.1, seed=3) for s in range(0, 10000, 333)])
    np.testing.assert_array_equal(whole, pieces[:10000])
    assert 0.085 < whole.mean() < 0.115
    assert (holdout_mask(0, 10000, 0.1, seed=4) != whole).any()
    assert not holdout_mask(0, 100, 0.0, seed=0).any()


def test_standardize_stores_the_scaling_in_the_model(tmp_path, capsys):
    X, y = _ring(n=600)
    Xs = X * [1000.0, 0.001] + [5000.0, -3.0]  # wildly different scales
    data = _write_csv(tmp_path / "s.csv", Xs, y)
    model_path = tmp_path / "s.okm"
    # two passes over 480 rows: enough steps for the ring whatever the defaults
    code, out, err = _run(["train", data, "--standardize", "--holdout", 0.2, "--chunk-size", 100,
                           "--epochs", 2, "-o", model_path], capsys)
    assert code == 0, err
    assert _holdout_line(out, "accuracy") > 0.85
    assert "the feature scaling is stored in it" in out
    assert sorted(os.listdir(tmp_path)) == ["s.csv", "s.okm"]  # no file beside the model

    # onlinekernel.load's model applies the scaling by itself
    model = onlinekernel.load(model_path)
    mean, scale = model.input_scaling
    train_rows = ~holdout_mask(0, 600, 0.2, seed=0)
    np.testing.assert_allclose(mean, Xs[train_rows].mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(scale, Xs[train_rows].std(axis=0), rtol=1e-12)
    assert model.score(Xs, y) > 0.85
    code, out, err = _run(["predict", model_path, data, "--target", "-1"], capsys)
    assert code == 0 and "scaling" not in err
    np.testing.assert_array_equal(np.array(out.split(), dtype=int), model.predict(Xs))
    # the same model as partial_fit on the same chunks in Python, given the scaling
    ref = DSGClassifier(random_state=0, input_scaling=(mean, scale))
    for _ in range(2):
        for start in range(0, 600, 100):
            keep = train_rows[start:start + 100]
            ref.partial_fit(Xs[start:start + 100][keep], y[start:start + 100][keep],
                            classes=[0, 1])
    np.testing.assert_array_equal(ref.decision_function(Xs), model.decision_function(Xs))


def test_an_older_scaling_file_is_still_applied_or_removed(tmp_path, capsys):
    X, y = _ring(n=300)
    Xs = X * [1000.0, 0.001] + [5000.0, -3.0]
    data = _write_csv(tmp_path / "s.csv", Xs, y)
    mean, scale = Xs.mean(axis=0), Xs.std(axis=0)
    model_path = tmp_path / "old.okm"
    model = DSGClassifier(random_state=0, max_blocks=2).fit((Xs - mean) / scale, y)
    model.save(model_path)
    sidecar = str(model_path) + ".scaling.npz"
    import hashlib
    np.savez(sidecar, mean=mean, scale=scale,
             model_sha256=hashlib.sha256(model_path.read_bytes()).hexdigest())
    code, out, err = _run(["predict", model_path, data, "--target", "-1"], capsys)
    assert code == 0 and "applying the feature scaling" in err
    np.testing.assert_array_equal(np.array(out.split(), dtype=int),
                                  model.predict((Xs - mean) / scale))
    # retraining to the same path removes it (the new model keeps its own scaling)
    code, _, err = _run(["train", data, "--quiet", "--standardize", "-o", model_path] + SMALL,
                        capsys)
    assert code == 0 and not os.path.exists(sidecar)


def test_classes_option_and_unknown_label(tmp_path, capsys):
    X, y = _ring(n=200)
    data = _write_csv(tmp_path / "r.csv", X, y)
    code, _, err = _run(["train", data, "--classes", "0,1,2", "--quiet",
                         "-o", tmp_path / "m.okm"] + SMALL, capsys)
    assert code == 0, err
    assert onlinekernel.load(tmp_path / "m.okm").classes_.tolist() == [0, 1, 2]
    code, _, err = _run(["train", data, "--classes", "0,2", "--chunk-size", 50] + SMALL, capsys)
    assert code == 2
    assert re.match(r"onlinekernel: error: .*r\.csv lines 2-\d+: labels \[1\] are not in "
                    r"classes", err)


# ---------------------------------------------------------------------- #
# progress
# ---------------------------------------------------------------------- #
def test_progress_on_stderr_and_quiet(tmp_path, capsys):
    X, y = _ring(n=400)
    data = _write_csv(tmp_path / "r.csv", X, y)
    code, out, err = _run(["train", data, "--chunk-size", 50, "--progress-every", 2,
                           "--epochs", 1] + SMALL, capsys)
    assert code == 0
    assert "\r" not in err  # not a terminal: plain lines only
    lines = err.splitlines()
    assert lines[0].startswith("first pass")
    epoch = [line for line in lines if line.startswith("epoch 1/1")]
    assert len(epoch) == 4  # 8 chunks, a line every 2
    assert re.search(r"epoch 1/1  100% \| 400 rows \| [0-9,]+ rows/s \| progressive accuracy "
                     r"0\.\d{4}$", epoch[-1])
    assert "progressive accuracy" in out
    code, out, err = _run(["train", data, "--chunk-size", 50, "--quiet", "--epochs", 1,
                           "-o", "q.okm"] + SMALL, capsys)
    assert code == 0 and err == "" and "progressive accuracy" in out
    # the stopping rule's notes after each pass are progress too
    code, out, err = _run(["train", data, "--chunk-size", 50, "--quiet", "-o", "q2.okm"] + SMALL,
                          capsys)
    assert code == 0 and err == "" and "stopped after epoch" in out
    code, out, err = _run(["train", data, "--chunk-size", 50, "--progressive", 0, "--epochs", 1,
                           "-o", "p.okm"] + SMALL, capsys)
    assert code == 0 and "progressive" not in out and "progressive" not in err


class _Terminal(io.StringIO):
    """A text stream that says it is a terminal."""

    def isatty(self):
        return True


def test_progress_is_a_tqdm_bar_with_rate_and_eta_on_a_terminal():
    stream = io.StringIO()
    p = Progress(stream, tty=True)
    assert p.bar
    p.start("epoch 1")  # no total yet: estimated from the fraction of the file read
    p.update(10, 0.25)
    time.sleep(0.15)  # tqdm redraws at most ten times a second
    p.update(20, 0.5, ("progressive accuracy", 0.5))
    p.finish()
    p.start("epoch 2", total=40)
    p.update(40, 1.0, ("running accuracy", 0.75))
    p.finish()
    text = stream.getvalue()
    assert text.startswith("\repoch 1") and text.endswith("\n") and text.count("\n") == 2
    first, second = text.split("\n")[:2]
    # rows, rate and the time left (elapsed<left), and the metric
    assert re.search(r"\repoch 1:\s+50%.*20\.0/40\.0 \[\d\d:\d\d<\d\d:\d\d, .* rows/s, "
                     r"progressive accuracy 0\.5000\]", first), first
    assert re.search(r"\repoch 1: 100%.*20\.0/20\.0", first), first  # finished: complete
    assert re.search(r"\repoch 2: 100%.*40\.0/40\.0 .*running accuracy 0\.7500", second)


def test_progress_without_tqdm_is_plain_lines_on_a_terminal(monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # ``import tqdm`` raises ImportError
    stream = _Terminal()
    p = Progress(stream, every=2)
    assert p.tty and not p.bar
    p.start("epoch 1/1")
    for k in range(1, 4):
        p.update(10 * k, k / 3, ("progressive accuracy", 0.5))
    p.finish()
    text = stream.getvalue()
    assert "\r" not in text
    assert re.fullmatch(r"epoch 1/1   67% \| 20 rows \| [0-9,]+ rows/s \| progressive accuracy "
                        r"0\.5000\nepoch 1/1  100% \| 30 rows \| [0-9,]+ rows/s \| progressive "
                        r"accuracy 0\.5000\n", text), text


@pytest.mark.parametrize("tqdm", [True, False])
def test_train_on_a_terminal(tmp_path, capsys, monkeypatch, tqdm):
    X, y = _ring(n=400)
    data = _write_csv(tmp_path / "r.csv", X, y)
    if not tqdm:
        monkeypatch.setitem(sys.modules, "tqdm", None)
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    code, out, _ = _run(["train", data, "--chunk-size", 50, "--epochs", 2, "--holdout", 0.2,
                         "-o", "m.okm"] + SMALL, capsys)
    assert code == 0
    assert "model written to m.okm" in out and "holdout accuracy" in out
    err = terminal.getvalue()
    if tqdm:
        for label in ("first pass", "epoch 1/2", "epoch 2/2"):
            assert re.search(rf"\r{label}: 100%.*\[\d\d:\d\d<\d\d:\d\d, .* rows/s", err), err
        assert "progressive accuracy" in err and "running accuracy" in err
    else:
        assert "\r" not in err
        assert re.search(r"^epoch 2/2  100% \| 400 rows \| [0-9,]+ rows/s \| running accuracy",
                         err, re.M), err
    # an error in the middle of a pass: the bar ends, the error is a line of its own
    lines = open(data).read().splitlines()
    lines[300] = "1.0,oops,1"
    (tmp_path / "bad.csv").write_text("\n".join(lines) + "\n")
    terminal.seek(0)
    terminal.truncate()
    code, out, _ = _run(["train", tmp_path / "bad.csv", "--chunk-size", 50, "--epochs", 1,
                         "-o", "bad.okm"] + SMALL, capsys)
    err = terminal.getvalue()
    assert code == 2 and not (tmp_path / "bad.okm").exists()
    assert err.endswith("\n") and err.splitlines()[-1].startswith(
        "onlinekernel: error: "), repr(err)
    assert "bad.csv line 301: column 'x1' is 'oops'" in err.splitlines()[-1]


# ---------------------------------------------------------------------- #
# plugins and demo
# ---------------------------------------------------------------------- #
def test_plugins_lists_builtins_with_parameters_and_distribution(capsys):
    code, out, err = _run(["plugins"], capsys)
    assert code == 0
    assert re.search(r"^  gaussian +n_components=256, gamma=1\.0, pairs=False +onlinekernel ",
                     out, re.M)
    assert re.search(r"^  hinge +- +onlinekernel \(builtin_losses\)$", out, re.M)
    assert re.search(r"^  orf +n_components=256, gamma=1\.0, pairs=False +onlinekernel ", out, re.M)
    assert re.search(r"^  sorf +n_components=256, gamma=1\.0, pairs=False, row_norms='chi' "
                     r"+onlinekernel ", out, re.M)
    assert re.search(r"^  fastfood +n_components=256, gamma=1\.0, pairs=False +onlinekernel ",
                     out, re.M)
    assert re.search(r"^  matern +n_components=256, gamma=1\.0, nu=1\.5 +onlinekernel ", out,
                     re.M)
    assert re.search(r"^  isotropic_cauchy +n_components=256, gamma=1\.0 +onlinekernel ", out,
                     re.M)
    code, out, err = _run(["plugins", "--json"], capsys)
    tables = json.loads(out)
    for name in ("hinge", "squared_hinge", "logistic", "multinomial", "squared", "huber",
                 "epsilon_insensitive", "quantile"):
        assert tables["losses"][name]["distribution"] == "onlinekernel"
    for name in ("gaussian", "laplacian", "matern", "isotropic_cauchy", "orf", "sorf",
                 "fastfood", "arccos", "poly_sketch"):
        assert tables["feature_maps"][name]["distribution"] == "onlinekernel"
    assert tables["losses"]["huber"]["parameters"] == {"delta": None}
    assert tables["feature_maps"]["poly_sketch"]["parameters"]["degree"] == 3
    assert tables["feature_maps"]["matern"]["parameters"] == {"n_components": 256, "gamma": 1.0,
                                                              "nu": 1.5}
    assert set(tables["losses"]) == set(onlinekernel.available_losses())


def test_demo_runs_and_reports(capsys):
    code, out, err = _run(["demo", "--epochs", "1"], capsys)
    assert code == 0, err
    kernel = re.search(r"onlinekernel DSGClassifier \(RBF\) +([0-9.]+) +([0-9.]+)s +([0-9,]+)B",
                       out)
    linear = re.search(r"linear SGDClassifier \(scikit-learn\) +([0-9.]+)", out)
    assert float(kernel.group(1)) > 0.85 > 0.75 > float(linear.group(1))
    size = int(kernel.group(3).replace(",", ""))
    # the coefficients (their average and the iterate) plus a small header
    assert 2 * 4096 * 26 * 8 < size < 2 * 4096 * 26 * 8 + 65536
    assert "epoch 1/1  100% | 15,000 rows" in err and "progressive accuracy" in err


# ---------------------------------------------------------------------- #
# errors: one line, exit status 2, nothing changed
# ---------------------------------------------------------------------- #
def _error_cases(tmp):
    X, y = _ring(n=60)
    good = _write_csv(tmp / "good.csv", X, y)
    model = tmp / "good.okm"
    DSGClassifier(loss="hinge", random_state=0, block_size=8, max_blocks=2).fit(X, y).save(model)
    lines = open(good).read().splitlines()
    lines[45] += ",7"  # a later chunk with an extra column
    (tmp / "cols.csv").write_text("\n".join(lines) + "\n")
    lines = open(good).read().splitlines()
    lines[52] = lines[52].replace(lines[52].split(",")[1], "abc", 1)
    (tmp / "text.csv").write_text("\n".join(lines) + "\n")
    (tmp / "nan.csv").write_text("a,b,t\n1,2,0\n1,nan,1\n")
    (tmp / "zero.svm").write_text("1 1:0.5\n0 0:1.0 2:3\n")
    (tmp / "bad.svm").write_text("1 1:0.5\n0 2=1.0\n")
    (tmp / "junk.npz").write_bytes(b"not a zip archive at all")
    np.savez(tmp / "nokey.npz", A=X)
    data = model.read_bytes()
    (tmp / "corrupt.okm").write_bytes(data[:200] + bytes([data[200] ^ 1]) + data[201:])
    (tmp / "truncated.okm").write_bytes(data[:-100])
    (tmp / "three.csv").write_text("a,b,c,d,t\n1,2,3,4,0\n")
    (tmp / "two.csv").write_text("1,2\n3,4\n")
    return {
        "missing file": (["train", tmp / "nope.csv"], r"nope\.csv: no such file"),
        "missing model": (["predict", tmp / "nope.okm", good], r"nope\.okm: no such model file"),
        "later chunk has more columns": (["train", tmp / "cols.csv", "--chunk-size", 10],
                                         r"cols\.csv line 46: 4 fields, expected 3"),
        "non-numeric value": (["train", tmp / "text.csv", "--chunk-size", 10],
                              r"text\.csv line 53: column 'x1' is 'abc', not a number"),
        "not finite": (["train", tmp / "nan.csv"],
                       r"nan\.csv line 3: column 'b' is nan, not a finite number"),
        "index 0 in a 1-based file": (["train", tmp / "zero.svm"],
                                      r"zero\.svm line 2: feature index 0 is out of range"),
        "bad svmlight token": (["train", tmp / "bad.svm"], r"line 2: '2=1\.0' is not a feature"),
        "not an npz file": (["train", tmp / "junk.npz"], r"junk\.npz: not a readable npz file"),
        "npz without X": (["train", tmp / "nokey.npz"], r"no array 'X' or 'X_train'"),
        "wrong format forced": (["train", good, "--format", "npz"], r"not a readable npz file"),
        "unknown loss": (["train", good, "--loss", "nonsense"],
                         r"unknown loss 'nonsense'; registered losses: .*hinge"),
        "unknown kernel": (["train", good, "--kernel", "nonsense"],
                           r"unknown feature map 'nonsense'"),
        "bad kernel parameter": (["train", good, "--kernel-param", "colour=3"],
                                 r"invalid parameters for feature map 'gaussian'"),
        "corrupt model file": (["predict", tmp / "corrupt.okm", good], r"corrupt\.okm"),
        "truncated model file": (["evaluate", tmp / "truncated.okm", good], r"truncated"),
        "not a model file": (["predict", good, good], r"not an onlinekernel model file"),
        "feature count differs from the model": (
            ["predict", model, tmp / "three.csv"], r"5 columns, but the model takes 2 features"),
        "evaluate without a target": (["evaluate", model, tmp / "two.csv"],
                                      r"two\.csv: 2 columns, as many as the model's features: "
                                      r"the target column is missing"),
        "evaluate label type": (["evaluate", model, tmp / "text.csv", "--target", "x1"],
                                r"label 'abc' is not a finite number|is not an integer"),
        "no probabilities": (["predict", model, good, "--proba"], r"gives no probabilities"),
        "target not in header": (["train", good, "--target", "colour"],
                                 r"no column 'colour' in the header"),
        "option for another format": (["train", good, "--zero-based"],
                                      r"--zero-based does not apply"),
        "bad option value": (["train", good, "--chunk-size", "many"],
                             r"argument --chunk-size: expected a positive integer"),
        "unknown command": (["fly"], r"invalid choice: 'fly'"),
        "a zero budget": (["train", good, "--max-blocks", "0"],
                          r"argument --max-blocks: expected a positive integer"),
        "regression classes": (["train", good, "--task", "regress", "--classes", "0,1"],
                               r"--classes applies to classification only"),
        "fixed passes and a stopping rule": (
            ["train", good, "--epochs", "2", "--tol", "0.01", "--max-iter", "9"],
            r"--epochs 2 trains exactly 2 passes, without the stopping rule that --max-iter, "
            r"--tol set; give one or the other"),
        "no score to stop by": (["train", good, "--progressive", "0"],
                                r"the stopping rule needs a score: hold out rows with --holdout"),
        "a negative tol": (["train", good, "--tol", "-1"],
                           r"argument --tol: expected a number >= 0 or 'none', got '-1'"),
    }


@pytest.fixture(scope="module")
def error_dir(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("errors")
    return tmp, _error_cases(tmp)


ERROR_CASES = [
    "missing file", "missing model", "later chunk has more columns", "non-numeric value",
    "not finite", "index 0 in a 1-based file", "bad svmlight token", "not an npz file",
    "npz without X", "wrong format forced", "unknown loss", "unknown kernel",
    "bad kernel parameter", "corrupt model file", "truncated model file", "not a model file",
    "feature count differs from the model", "evaluate without a target", "evaluate label type",
    "no probabilities", "target not in header", "option for another format",
    "bad option value", "unknown command", "regression classes", "a zero budget",
    "fixed passes and a stopping rule", "no score to stop by", "a negative tol"]


@pytest.mark.parametrize("case", ERROR_CASES)
def test_errors_are_one_line_with_status_2(case, error_dir, capsys):
    tmp, cases = error_dir
    argv, pattern = cases[case]
    out_model = tmp / "never.okm"
    if argv[0] == "train":
        argv = argv + ["-o", out_model]
    code, out, err = _run(argv, capsys)
    assert code == 2
    # progress lines may come first; the error is the last line and the only one
    lines = err.splitlines()
    assert err.endswith("\n") and lines[-1].startswith("onlinekernel: error: "), err
    assert sum("error" in line for line in lines) == 1, err
    assert re.search(pattern, lines[-1]), err
    assert "Traceback" not in err
    assert not out_model.exists()


def test_failed_predict_leaves_no_output_file(tmp_path, capsys):
    X, y = _ring(n=300)
    data = _write_csv(tmp_path / "r.csv", X, y)
    DSGClassifier(random_state=0, block_size=8, max_blocks=2).fit(X, y).save(tmp_path / "m.okm")
    lines = open(data).read().splitlines()
    lines[250] = "1.0,oops,1"
    (tmp_path / "bad.csv").write_text("\n".join(lines) + "\n")
    code, _, err = _run(["predict", tmp_path / "m.okm", tmp_path / "bad.csv", "--chunk-size", 100,
                         "--target", "target", "-o", tmp_path / "pred.txt"], capsys)
    assert code == 2 and "bad.csv line 251: column 'x1' is 'oops'" in err
    assert sorted(os.listdir(tmp_path)) == ["bad.csv", "m.okm", "r.csv"]


def test_error_cases_are_all_tested(error_dir):
    tmp, cases = error_dir
    assert sorted(ERROR_CASES) == sorted(cases)


def test_subprocess_exit_status_and_stderr(tmp_path):
    # one real process (importing the package takes seconds on a busy machine)
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    # cwd outside the repository: ``-m`` puts the cwd first on sys.path, and the
    # source tree (no compiled modules) must not shadow the installed package
    bad = subprocess.run([sys.executable, "-m", "onlinekernel", "train", str(tmp_path / "no.csv")],
                         capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)
    assert bad.returncode == 2
    assert bad.stderr == f"onlinekernel: error: {tmp_path / 'no.csv'}: no such file\n"


# ---------------------------------------------------------------------- #
# a continuous target is not class labels
# ---------------------------------------------------------------------- #
def _prices(tmp_path, decimals=0):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 3))
    y = np.round(100000 + 30000 * X[:, 0] + 5000 * rng.normal(size=500), decimals)
    return _write_csv(tmp_path / "prices.csv", X, y if decimals else y.astype(int)), y


def test_integer_prices_are_refused_as_classes_unless_asked_for(tmp_path, capsys):
    data, y = _prices(tmp_path)
    model_path = tmp_path / "m.okm"
    code, out, err = _run(["train", data, "-q", "-o", model_path], capsys)
    assert code != 0 and not model_path.exists()
    n = len(np.unique(y))
    assert (f"the target has {n:,d} distinct integer values in 500 rows, which looks like a "
            f"continuous target") in err and "--task regress" in err
    assert len(err.strip().splitlines()) == 1
    code, out, err = _run(["train", data, "-q", "--task", "regress", "-o", model_path], capsys)
    assert code == 0, err
    assert isinstance(onlinekernel.load(model_path), DSGRegressor)
    # asked for explicitly, one class per value is what the user gets
    code, out, err = _run(["train", data, "-q", "--task", "classify", *SMALL,
                           "-o", model_path], capsys)
    assert code == 0, err
    assert onlinekernel.load(model_path).classes_.shape == (n,)


def test_predict_never_takes_an_extra_column_for_the_target_by_guess(tmp_path, capsys):
    X, y = _ring(n=200)
    data = _write_csv(tmp_path / "r.csv", X, y)
    model = DSGClassifier(random_state=0, block_size=8, max_blocks=2).fit(X, y)
    model.save(tmp_path / "m.okm")
    code, out, err = _run(["predict", tmp_path / "m.okm", data, "-q"], capsys)
    assert code != 0 and out == ""
    assert "3 columns, one more than the model's 2 features" in err and "--target" in err
    for target in ("target", "2", "-1"):
        code, out, err = _run(["predict", tmp_path / "m.okm", data, "-q", "--target", target],
                              capsys)
        assert code == 0, err
        np.testing.assert_array_equal(np.array(out.split(), dtype=int), model.predict(X))


def test_non_integer_targets_are_never_classes(tmp_path, capsys):
    data, _ = _prices(tmp_path, decimals=2)
    for task in ([], ["--task", "classify"]):
        code, out, err = _run(["train", data, "-q", *task, "-o", tmp_path / "m.okm"], capsys)
        assert code != 0
        assert "non-integer numbers" in err and "--task regress" in err
    assert not (tmp_path / "m.okm").exists()


def test_train_without_output_writes_a_default_file_and_never_over_one(tmp_path, capsys):
    X, y = _ring(n=200)
    data = _write_csv(tmp_path / "ring.csv", X, y)
    code, out, err = _run(["train", data, "-q"] + SMALL, capsys)
    assert code == 0, err
    # said on stderr, even with --quiet (it is where the model went, not progress)
    assert err == "onlinekernel: no -o given; writing the model to ring.okm\n"
    assert "model written to ring.okm" in out
    first = (tmp_path / "ring.okm").read_bytes()
    assert isinstance(onlinekernel.load(tmp_path / "ring.okm"), DSGClassifier)
    # refused before training (no progress, no summary), the file left as it was
    code, out, err = _run(["train", data] + SMALL, capsys)
    assert code == 2 and out == ""
    assert err == ("onlinekernel: error: no -o given, and the default model file ring.okm "
                   "exists; choose where to write the model with -o\n")
    assert (tmp_path / "ring.okm").read_bytes() == first
    assert sorted(os.listdir(tmp_path)) == ["ring.csv", "ring.okm"]


def test_train_into_a_missing_directory_fails_before_training(tmp_path, capsys):
    X, y = _ring(n=200)
    data = _write_csv(tmp_path / "ring.csv", X, y)
    code, out, err = _run(["train", data, "-o", tmp_path / "nowhere" / "m.okm"] + SMALL, capsys)
    assert code == 2 and out == ""
    # one line, and no progress line before it: nothing was read or trained
    assert err == (f"onlinekernel: error: cannot write to {tmp_path / 'nowhere' / 'm.okm'}: the "
                   f"directory {tmp_path / 'nowhere'} does not exist\n")
    assert sorted(os.listdir(tmp_path)) == ["ring.csv"]


# ---------------------------------------------------------------------- #
# passes: scikit-learn's stopping rule, or --epochs
# ---------------------------------------------------------------------- #
def test_stopping_rule_defaults_are_scikit_learns():
    from sklearn.linear_model import SGDClassifier, SGDRegressor

    from onlinekernel.cli import _STOPPING
    for est in (DSGClassifier(), DSGRegressor()):
        assert (_STOPPING["max_iter"], _STOPPING["n_iter_no_change"]) == (
            est.max_iter, est.n_iter_no_change)
    # the CLI's rule scores accuracy or R2, as SGD's early_stopping does, with its tol
    assert _STOPPING["tol"] == SGDClassifier().tol == SGDRegressor().tol


def test_stopper_follows_scikit_learns_rule():
    from onlinekernel.cli import _Stopper

    # SGDClassifier(early_stopping=True): no improvement when score < best + tol
    stopper = _Stopper(tol=0.01, n_iter_no_change=2)
    held = [stopper.add(e, v) for e, v in enumerate([0.5, 0.6, 0.605, 0.61], start=1)]
    assert held == [False, False, False, True]
    assert (stopper.best, stopper.best_epoch) == (0.61, 4)  # the best, even if gained < tol
    stopper = _Stopper(tol=0.0, n_iter_no_change=2)
    assert [stopper.add(e, v) for e, v in enumerate([None, 0.5, 0.5, None, 0.4], 1)] == [
        False, False, False, False, True]  # an undefined score is no improvement


def test_passes_stop_by_the_holdout_score(tmp_path, capsys):
    X, y = _ring(n=400)
    data = _write_csv(tmp_path / "r.csv", X, y)
    base = ["train", data, "--holdout", 0.25, "--chunk-size", 100, "-o", "m.okm"] + SMALL
    code, out, err = _run(base, capsys)
    assert code == 0, err
    epochs = int(re.search(r"\((\d+) epochs\)", out).group(1))
    m = re.search(r"^stopped after epoch (\d+): the holdout accuracy has not improved by "
                  r"tol=0\.001 for 5 epochs \(best (0\.\d{4}) after epoch (\d+)\)$", out, re.M)
    assert m and int(m.group(1)) == epochs and epochs >= 6, out
    assert epochs - int(m.group(3)) <= 5
    # the holdout is scored after every pass, on stderr
    notes = re.findall(r"^epoch (\d+): holdout accuracy (0\.\d{4})", err, re.M)
    assert [int(e) for e, _ in notes] == list(range(1, epochs + 1))
    assert max(v for _, v in notes) == m.group(2)
    assert f"holdout accuracy {notes[-1][1]} on " in out  # the last model's score

    code, out, err = _run(base + ["--n-iter-no-change", 1, "--tol", 0.5], capsys)
    assert code == 0 and "(2 epochs)" in out and "for 1 epochs" in out
    code, out, err = _run(base + ["--max-iter", 3], capsys)
    assert code == 0 and "(3 epochs)" in out
    assert ("stopped at --max-iter 3 epochs before the stopping rule held (the holdout accuracy "
            "gained tol=0.001 within the last 5 epochs); raise --max-iter") in out
    for fixed in (["--epochs", 4], ["--max-iter", 4, "--tol", "none"]):
        code, out, err = _run(base + fixed, capsys)
        assert code == 0 and "(4 epochs)" in out and "stopped" not in out, out
        assert "epoch 4/4" in err and "epoch 1: holdout" not in err


def test_passes_stop_by_the_progressive_score_without_a_holdout(tmp_path, capsys):
    X, y = _wave(n=300)
    data = _write_csv(tmp_path / "w.csv", X, y)
    code, out, err = _run(["train", data, "--task", "regress", "--chunk-size", 50,
                           "--n-iter-no-change", 2, "-o", "m.okm"] + SMALL, capsys)
    assert code == 0, err
    assert re.search(r"^stopped after epoch \d+: the running R2 has not improved by tol=0\.001 "
                     r"for 2 epochs", out, re.M), out
    assert re.search(r"^epoch 1: progressive R2 ", err, re.M)
    assert re.search(r"^epoch 2: running R2 ", err, re.M)


def test_regression_standardizes_by_default(tmp_path, capsys):
    X, y = _wave(n=300)
    Xs = X * [1000.0, 1.0, 0.001]
    data = _write_csv(tmp_path / "w.csv", Xs, y)
    common = ["--chunk-size", 100, "--epochs", 1, "-q"] + SMALL
    code, out, err = _run(["train", data, "--task", "regress", "-o", "on.okm"] + common, capsys)
    assert code == 0 and "the feature scaling is stored in it" in out
    mean, scale = onlinekernel.load("on.okm").input_scaling
    np.testing.assert_allclose(scale, Xs.std(axis=0), rtol=1e-12)
    code, out, err = _run(["train", data, "--task", "regress", "--no-standardize",
                           "-o", "off.okm"] + common, capsys)
    assert code == 0 and onlinekernel.load("off.okm").input_scaling is None
    ring = _write_csv(tmp_path / "r.csv", *_ring(n=300))
    code, out, err = _run(["train", ring, "-o", "c.okm"] + common, capsys)
    assert code == 0 and onlinekernel.load("c.okm").input_scaling is None  # classification


# ---------------------------------------------------------------------- #
# issue 16, items 4 and 5 on real data: cadata end to end
# ---------------------------------------------------------------------- #
@needs_data("cadata")
def test_cadata_regression_from_the_command_line(tmp_path, capsys):
    X_train, y_train, X_test, y_test = load_dataset("cadata")
    data = tmp_path / "cadata.npz"  # a subset: the test stays fast
    np.savez(data, X_train=X_train[:4000], y_train=y_train[:4000], X_test=X_test[:1000],
             y_test=y_test[:1000])
    # integer prices are not taken for 3,000 classes
    code, out, err = _run(["train", data, "-q"], capsys)
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert "looks like a continuous target" in err and not (tmp_path / "cadata.okm").exists()
    # default options (the features are standardised for regression), and Huber
    for loss, model in ((["--task", "regress"], "sq.okm"), (["--loss", "huber"], "hu.okm")):
        code, out, err = _run(["train", data, *loss, "--holdout", 0.2, "-q", "-o", model],
                              capsys)
        assert code == 0, err
        assert float(re.search(r"^holdout R2 ([-0-9.]+)", out, re.M).group(1)) > 0.6, out
        # evaluate reads the test split of an npz file by default
        code, out, err = _run(["evaluate", model, data, "--json", "-q"], capsys)
        result = json.loads(out)
        assert code == 0 and result["rows"] == 1000 and result["r2"] > 0.6, result
        reg = onlinekernel.load(model)
        assert result["r2"] == pytest.approx(reg.score(X_test[:1000], y_test[:1000]), abs=1e-9)

    # predict refuses a CSV whose extra column would be taken for the target by guess,
    # in one line, and leaves an existing output file as it was
    csv_path = _write_csv(tmp_path / "test.csv", X_test[:300], y_test[:300])
    (tmp_path / "pred.txt").write_text("old predictions\n")
    code, out, err = _run(["predict", "sq.okm", csv_path, "-q", "-o", "pred.txt"], capsys)
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("onlinekernel: error: ")
    assert "9 columns, one more than the model's 8 features" in err and "--target" in err
    assert (tmp_path / "pred.txt").read_text() == "old predictions\n"
    code, out, err = _run(["predict", "sq.okm", csv_path, "-q", "--target", "target",
                           "-o", "new.txt"], capsys)
    assert code == 0, err
    np.testing.assert_allclose(np.loadtxt(tmp_path / "new.txt"),
                               onlinekernel.load("sq.okm").predict(X_test[:300]), rtol=1e-12)


@pytest.mark.parametrize("label, message", [("nan", "the label 'nan' is missing"),
                                            ("NaN", "the label 'NaN' is missing"),
                                            ("", "the target is empty")])
def test_a_missing_label_is_refused_not_made_a_class(tmp_path, capsys, label, message):
    X, y = _ring(n=100)
    lines = _write_csv(tmp_path / "r.csv", X, y)
    text = open(lines).read().splitlines()
    text[40] = text[40].rsplit(",", 1)[0] + "," + label
    (tmp_path / "bad.csv").write_text("\n".join(text) + "\n")
    code, out, err = _run(["train", tmp_path / "bad.csv", "-q", "-o", tmp_path / "m.okm"], capsys)
    assert code != 0 and not (tmp_path / "m.okm").exists()
    assert f"bad.csv line 41: {message}" in err


@pytest.mark.parametrize("command", [[], ["train"], ["predict"], ["evaluate"], ["plugins"],
                                     ["demo"]])
def test_help_is_plain_text(command, capsys):
    assert main(command + ["--help"]) == 0
    out = capsys.readouterr().out
    assert "usage: onlinekernel" in out
    assert not re.search(r"``|:class:|:func:|:mod:|^\s*\.\. ", out, re.M), out
