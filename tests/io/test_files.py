"""Output files: complete or absent, never a device replaced, errors that name the path."""
import os
import stat

import numpy as np
import pytest

import onlinekernel
from onlinekernel import DSGClassifier
from onlinekernel.io.files import replacing
from onlinekernel.cli import main


@pytest.fixture(scope="module")
def model():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    return DSGClassifier(max_blocks=1, block_size=16, random_state=0).fit(X, X[:, 0] > 0)


def test_save_into_a_directory_names_it_and_leaves_nothing(model, tmp_path):
    with pytest.raises(IsADirectoryError, match=rf"cannot write to {tmp_path}: it is a "
                                                r"directory"):
        model.save(tmp_path)
    assert os.listdir(tmp_path) == []


def test_save_into_a_missing_directory_names_the_directory(model, tmp_path):
    with pytest.raises(FileNotFoundError, match=rf"the directory {tmp_path / 'nope'} does "
                                                r"not exist"):
        model.save(tmp_path / "nope" / "m.okm")


@pytest.mark.skipif(not os.path.exists("/dev/null"), reason="needs /dev/null")
def test_a_device_is_written_into_never_replaced(model):
    model.save("/dev/null")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_device_reports_the_error_and_stays_a_device(model):
    with pytest.raises(OSError, match="No space left"):
        model.save("/dev/full")
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_a_symbolic_link_is_followed_and_kept(model, tmp_path):
    target = tmp_path / "real.okm"
    target.write_bytes(b"old")
    link = tmp_path / "link.okm"
    link.symlink_to(target)
    model.save(link)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert onlinekernel.load(target).get_params() == model.get_params()
    assert sorted(os.listdir(tmp_path)) == ["link.okm", "real.okm"]


def test_a_failed_write_keeps_the_old_content(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("old")
    with pytest.raises(RuntimeError, match="midway"):
        with replacing(path, text=True) as f:
            f.write("new, partly")
            raise RuntimeError("midway")
    assert path.read_text() == "old"
    assert os.listdir(tmp_path) == ["out.txt"]


def test_cli_train_into_a_missing_directory_fails_before_training(tmp_path, capsys):
    data = tmp_path / "d.csv"
    data.write_text("a,b,y\n" + "".join(f"{i % 7},{i % 5},{i % 2}\n" for i in range(40)))
    code = main(["train", str(data), "-o", str(tmp_path / "missing" / "m.okm")])
    out, err = capsys.readouterr()
    assert code != 0
    assert f"the directory {tmp_path / 'missing'} does not exist" in err
    assert len(err.strip().splitlines()) == 1 and out == ""  # nothing trained or printed


@pytest.mark.skipif(not os.path.exists("/dev/null"), reason="needs /dev/null")
def test_cli_predict_to_dev_null_keeps_the_device(model, tmp_path, capsys):
    model.save(tmp_path / "m.okm")
    data = tmp_path / "d.csv"
    data.write_text("a,b\n1,2\n3,4\n")
    code = main(["predict", str(tmp_path / "m.okm"), str(data), "-o", "/dev/null"])
    assert code == 0, capsys.readouterr().err
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
