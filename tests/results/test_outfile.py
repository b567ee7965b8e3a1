"""Files written for the user appear whole or not at all (issue 28, item 12): outfile.py
writes beside the target under a random name made exclusively and renames it into place
only when complete; `bundle` stages its wheels the same way."""
from __future__ import annotations

import os
import stat

import pytest

from manybench import bundle as bundle_mod
from manybench.outfile import check, replacing


def test_a_failed_write_leaves_the_old_file_and_no_temporary_one(tmp_path):
    target = tmp_path / "report.html"
    target.write_text("yesterday")
    with pytest.raises(RuntimeError):
        with replacing(target) as f:
            f.write("half of tod")
            raise RuntimeError("the disk filled")
    assert target.read_text() == "yesterday" and os.listdir(tmp_path) == ["report.html"]
    with replacing(target) as f:
        f.write("today")
    assert target.read_text() == "today" and os.listdir(tmp_path) == ["report.html"]


def test_the_temporary_name_is_random_and_made_exclusively(tmp_path, monkeypatch):
    """A name another user could guess and plant (a link to a file of theirs, say) is never
    opened: each try is a new random name, O_EXCL | O_NOFOLLOW."""
    seen: list[str] = []
    real_open = os.open

    def spy(path, flags, mode=0o777, **kw):
        seen.append(os.fspath(path))
        assert flags & os.O_EXCL and flags & os.O_NOFOLLOW
        return real_open(path, flags, mode, **kw)

    monkeypatch.setattr(os, "open", spy)
    for _ in range(2):
        with replacing(tmp_path / "x.csv") as f:
            f.write("a")
    assert len(set(seen)) == 2 and all(len(os.path.basename(s)) > len(".x.csv..tmp") + 15
                                       for s in seen)


def test_a_planted_temporary_name_is_passed_over(tmp_path, monkeypatch):
    victim = tmp_path / "victim"
    victim.write_text("precious")
    names = iter(["planted", "planted", "fresh"])
    monkeypatch.setattr("manybench.outfile.secrets.token_hex", lambda n: next(names))
    (tmp_path / ".x.csv.planted.tmp").symlink_to(victim)
    with replacing(tmp_path / "x.csv") as f:
        f.write("data")
    assert victim.read_text() == "precious" and (tmp_path / "x.csv").read_text() == "data"


def test_an_existing_files_mode_is_kept_and_a_new_one_follows_the_umask(tmp_path):
    old = tmp_path / "old"
    old.write_text("x")
    old.chmod(0o600)
    with replacing(old) as f:
        f.write("y")
    assert stat.S_IMODE(old.stat().st_mode) == 0o600
    mask = os.umask(0o022)
    try:
        with replacing(tmp_path / "new") as f:
            f.write("z")
    finally:
        os.umask(mask)
    assert stat.S_IMODE((tmp_path / "new").stat().st_mode) == 0o644


def test_check_writes_nothing(tmp_path):
    target = tmp_path / "x"
    target.write_text("kept")
    check(target)
    check(tmp_path / "new")
    assert target.read_text() == "kept" and os.listdir(tmp_path) == ["x"]
    with pytest.raises(IsADirectoryError):
        check(tmp_path)
    with pytest.raises(FileNotFoundError):
        check(tmp_path / "no" / "such")


def test_a_device_is_written_in_place(tmp_path):
    with replacing("/dev/null") as f:
        f.write("gone")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_bundle_that_fails_leaves_the_older_bundles_files(tmp_path, monkeypatch):
    out = tmp_path / "wheels"
    out.mkdir()
    (out / "manybench-0.1.0-py3-none-any.whl").write_bytes(b"the good wheel")

    def pip(*args, env=None):          # pip writes half a wheel, then the disk is full
        where = args[args.index("-w") + 1]
        with open(os.path.join(where, "manybench-0.1.0-py3-none-any.whl"), "wb") as f:
            f.write(b"the go")
        raise bundle_mod.BundleError("pip wheel failed:\nNo space left on device")

    monkeypatch.setattr(bundle_mod, "_pip", pip)
    monkeypatch.setattr(bundle_mod, "source_tree", lambda given=None: tmp_path)
    monkeypatch.setattr(bundle_mod.shutil, "copytree", lambda *a, **k: None)
    with pytest.raises(bundle_mod.BundleError):
        bundle_mod.bundle(str(out))
    assert os.listdir(out) == ["manybench-0.1.0-py3-none-any.whl"]
    assert (out / "manybench-0.1.0-py3-none-any.whl").read_bytes() == b"the good wheel"
