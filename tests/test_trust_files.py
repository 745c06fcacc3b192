"""`-o` never loses a user's file: only a missing or empty folder or a dycl package is written."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from conftest import MODELS, ROOT

MODEL = os.path.join(MODELS, "c_if_else.py")


def dycl(*args, cwd=ROOT):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "dycl.cli", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=600, env=env)


def _tree(folder) -> dict:
    """Every file under `folder` (hidden ones too) with its bytes."""
    found = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(root, name)
            found[os.path.relpath(path, folder)] = None if os.path.isdir(path) else open(path, "rb").read()
    return found


@pytest.fixture
def project(tmp_path):
    """A user's project folder: a model file and notes."""
    folder = tmp_path / "project"
    folder.mkdir()
    shutil.copy(MODEL, folder / "m.py")
    (folder / "notes.txt").write_text("my notes\n")
    return folder


def test_convert_into_the_current_project_folder_deletes_nothing(project):
    before = _tree(project)
    proc = dycl("convert", "m.py", "-o", ".", "--check", "2", cwd=project)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == (
        "error: -o: . is the current folder or contains it; write to a new subfolder, e.g. -o build/model")
    assert _tree(project) == before
    assert _tree(project.parent) == {"project": None, **{f"project/{k}": v for k, v in before.items()}}


def test_empty_output_name_is_refused(project):
    before = _tree(project)
    proc = dycl("convert", "m.py", "-o", "", "--check", "2", cwd=project)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == (
        "error: -o: the output folder's name is empty; name a folder, e.g. -o build/model")
    assert _tree(project) == before


def test_folder_that_is_not_a_package_is_refused(project):
    models = project / "models"
    models.mkdir()
    (models / "other.py").write_text("# another model\n")
    before = _tree(project)
    proc = dycl("convert", "m.py", "-o", "models", "--check", "2", cwd=project)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == (
        "error: -o: models is not empty and is not a dycl package (no manifest.json); it holds other.py. dycl "
        "writes only into a missing or empty folder or replaces a dycl package: choose another folder")
    assert _tree(project) == before


def test_output_that_is_a_file_is_refused(project):
    before = _tree(project)
    proc = dycl("convert", "m.py", "-o", "notes.txt", "--check", "2", cwd=project)
    assert proc.returncode == 2
    assert _tree(project) == before


def test_package_holding_a_users_file_is_not_replaced(project):
    out = project / "pkg"
    assert dycl("convert", "m.py", "-o", "pkg", "--check", "2", cwd=project).returncode == 0
    (out / "mine.txt").write_text("keep me\n")
    before = _tree(project)
    proc = dycl("convert", "m.py", "-o", "pkg", "--check", "2", cwd=project)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == (
        "error: -o: the dycl package pkg also holds files that are not the package's: mine.txt; move them out "
        "or choose another folder")
    assert _tree(project) == before


def test_empty_folder_and_package_are_written_and_nothing_else_is_left(project):
    import dycl as dycl_runtime

    out = project / "pkg"
    out.mkdir()
    assert dycl("convert", "m.py", "-o", "pkg", "--check", "2", cwd=project).returncode == 0
    assert dycl_runtime.load(str(out))
    (out / "host.py").write_text("# damaged\n")  # a package is replaced whole, damaged or not
    proc = dycl("convert", "m.py", "-o", "pkg", "--check", "2", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert dycl_runtime.load(str(out))
    assert sorted(os.listdir(project)) == ["m.py", "notes.txt", "pkg"]


def test_replacing_a_package_swaps_it_whole(tmp_path):
    from dycl.outdir import replace_dir

    old, new = tmp_path / "pkg", tmp_path / ".pkg.tmp-1-x"
    for folder, text in ((old, "old"), (new, "new")):
        (folder / "regions").mkdir(parents=True)
        (folder / "manifest.json").write_text(text)
        (folder / "regions" / "r.onnx").write_text(text)
    (old / "__pycache__").mkdir()  # written by loads of earlier dycl versions
    replace_dir(str(new), str(old))
    assert _tree(tmp_path) == {"pkg": None, "pkg/regions": None, "pkg/manifest.json": b"new",
                               "pkg/regions/r.onnx": b"new"}


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_next_convert_removes_a_killed_converts_temporary_folder(tmp_path):
    dead, live = _dead_pid(), subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        stale = tmp_path / f".pkg.tmp-{dead}-abc"
        (stale / ".scratch").mkdir(parents=True)
        (stale / "host.py").write_text("# half written\n")
        busy = tmp_path / f".pkg.tmp-{live.pid}-def"  # another conversion, still running
        busy.mkdir()
        (busy / "host.py").write_text("# being written\n")
        lookalike = tmp_path / f".notes.tmp-{dead}-ghi"  # named like ours, but holds a user's file
        lookalike.mkdir()
        (lookalike / "notes.txt").write_text("mine\n")
        proc = dycl("convert", MODEL, "-o", str(tmp_path / "pkg"), "--check", "2")
        assert proc.returncode == 0, proc.stderr
        assert sorted(os.listdir(tmp_path)) == sorted([busy.name, lookalike.name, "pkg"])
    finally:
        live.kill()
        live.wait()


def test_unwritable_parent_is_one_clear_line(tmp_path, monkeypatch):
    from dycl.convert import ConvertOptions, convert
    from dycl.outdir import OutputError

    def refuse(*args, dir=None, **kw):
        raise PermissionError(13, "Permission denied", dir)

    monkeypatch.setattr(tempfile, "mkdtemp", refuse)
    with pytest.raises(OutputError) as err:
        convert(ConvertOptions(MODEL, str(tmp_path / "pkg"), check=2))
    assert str(err.value) == f"-o: cannot write in {tmp_path}: Permission denied"


def test_zoo_refuses_a_folder_it_did_not_write(project, tmp_path):
    zoo = tmp_path / "zoo"
    zoo.mkdir()
    shutil.copy(MODEL, zoo / "m.py")
    before = _tree(project)
    proc = dycl("zoo", str(zoo), "-o", str(project), "--check", "2")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == (
        f"error: zoo -o: {project} is not empty and is not the output of an earlier dycl zoo (no zoo-cache.json); "
        "it holds m.py, notes.txt. Choose a new or empty folder")
    assert _tree(project) == before


def test_zoo_leaves_a_users_folder_in_its_output_alone(tmp_path):
    zoo, out = tmp_path / "zoo", tmp_path / "out"
    zoo.mkdir()
    shutil.copy(MODEL, zoo / "m.py")
    assert dycl("zoo", str(zoo), "-o", str(out), "--check", "2").returncode == 0
    shutil.rmtree(out / "m")
    (out / "m").mkdir()
    (out / "m" / "mine.txt").write_text("keep me\n")
    proc = dycl("zoo", str(zoo), "-o", str(out), "--check", "2", "--force")
    assert proc.returncode == 1
    assert os.listdir(out / "m") == ["mine.txt"]
    row = json.loads((out / "report.json").read_text())["models"][0]
    assert row["status"] == "failed" and "m is not empty and is not a dycl package" in row["error"]


SLEEPER = '''
import time
import torch


def get_model():
    time.sleep(600)


def get_inputs():
    return (torch.zeros(1),)
'''


def test_timeout_stops_the_conversion_and_leaves_nothing(tmp_path):
    (tmp_path / "sleeper.py").write_text(SLEEPER)
    proc = dycl("convert", "sleeper.py", "-o", "build/pkg", "--timeout", "2", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-2:] == [
        "error: conversion failed in step 'load': stopped after 2 s (--timeout 2); the model may loop forever "
        "(a `while True:` with no reachable break) or need a longer --timeout",
        "No output was written."]
    assert os.listdir(tmp_path) == ["sleeper.py"]


@pytest.mark.parametrize("command", ["convert", "zoo"])
def test_output_under_a_file_is_one_clear_line(project, command):
    args = ("convert", "m.py") if command == "convert" else ("zoo", ".")
    proc = dycl(*args, "-o", "notes.txt/out", "--check", "2", cwd=project)
    assert proc.returncode == 2
    what = "-o" if command == "convert" else "zoo -o"
    assert f"error: {what}: cannot write in {project}/notes.txt: it is a file, not a folder" in proc.stderr.splitlines()
    assert sorted(os.listdir(project)) == ["m.py", "notes.txt"]


def test_unwritable_zoo_output_is_one_clear_line(tmp_path, monkeypatch):
    from dycl import zoo
    from dycl.outdir import OutputError

    def refuse(out, cache):
        raise PermissionError(13, "Permission denied", str(out))

    monkeypatch.setattr(zoo, "_save_cache", refuse)
    with pytest.raises(OutputError) as err:
        zoo.run_zoo(zoo.ZooOptions(MODELS, str(tmp_path / "out")))
    assert str(err.value) == f"zoo -o: cannot write in {tmp_path / 'out'}: Permission denied"
