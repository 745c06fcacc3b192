"""`dycl zoo`: each model in its own worker, failures isolated, a cache, interruptions safe."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from conftest import MODELS, ROOT

HANG = '''
import time
import torch


def get_model():
    time.sleep(600)


def get_inputs():
    return (torch.zeros(1),)
'''

CRASH = '''
import os
import torch


def get_model():
    os.abort()


def get_inputs():
    return (torch.zeros(1),)
'''


def _zoo(folder, out, *args, **kw):
    return subprocess.run([sys.executable, "-m", "dycl.cli", "zoo", str(folder), "-o", str(out), *args],
                          capture_output=True, text=True, cwd=ROOT, **kw)


@pytest.fixture
def folder(tmp_path):
    zoo = tmp_path / "zoo"
    zoo.mkdir()
    for name in ("c_if_else.py", "c_elif_chain.py"):
        shutil.copy(os.path.join(MODELS, name), zoo / name)
    return zoo


def _rows(out):
    return {r["model"]: r for r in json.loads((out / "report.json").read_text())["models"]}


def test_failures_are_isolated_and_reported(folder, tmp_path):
    (folder / "hang.py").write_text(HANG)
    (folder / "crash.py").write_text(CRASH)
    shutil.copy(os.path.join(MODELS, "bad_constructs.py"), folder / "bad_constructs.py")
    out = tmp_path / "out"
    proc = _zoo(folder, out, "--jobs", "2", "--timeout", "20", "--check", "10", timeout=600)
    assert proc.returncode == 1
    rows = _rows(out)
    assert {n: r["status"] for n, r in rows.items()} == {
        "c_if_else": "ok", "c_elif_chain": "ok", "hang": "timeout", "crash": "crashed",
        "bad_constructs": "unsupported"}
    assert rows["bad_constructs"]["error"].endswith("error: `global` in forward [global-state]")
    assert rows["c_if_else"]["eta"] == 0 and rows["c_if_else"]["regions"] >= 2
    report = (out / "report.md").read_text()
    assert "| c_if_else | ok |" in report and "2 of 5 models converted" in report
    assert sorted(p for p in os.listdir(out) if not p.endswith((".md", ".json"))) == ["c_elif_chain", "c_if_else"]


def test_second_run_converts_nothing_until_a_source_changes(folder, tmp_path):
    import dycl

    out = tmp_path / "out"
    assert _zoo(folder, out, "--check", "10", timeout=600).returncode == 0
    first = _rows(out)
    assert not any(r.get("cached") for r in first.values())
    proc = _zoo(folder, out, "--check", "10", timeout=600)
    assert proc.returncode == 0
    assert all(r.get("cached") for r in _rows(out).values())
    # A changed model file is converted again; the other is not.
    path = folder / "c_if_else.py"
    path.write_text(path.read_text() + "\n# changed\n")
    _zoo(folder, out, "--check", "10", timeout=600)
    rows = _rows(out)
    assert not rows["c_if_else"].get("cached") and rows["c_elif_chain"].get("cached")
    assert dycl.load(str(out / "c_if_else"))
    # --force converts everything again.
    _zoo(folder, out, "--check", "10", "--force", timeout=600)
    assert not any(r.get("cached") for r in _rows(out).values())


def test_interrupted_run_leaves_only_whole_packages(folder, tmp_path):
    import dycl

    (folder / "hang.py").write_text(HANG)
    out = tmp_path / "out"
    # A shell that starts a job in the background (`make test &`) ignores SIGINT in it and its children, and
    # Python then never raises KeyboardInterrupt: the zoo gets the default disposition, as in a terminal.
    proc = subprocess.Popen([sys.executable, "-m", "dycl.cli", "zoo", str(folder), "-o", str(out), "--jobs", "2",
                             "--check", "10"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and len([p for p in os.listdir(out) if p.startswith("c_")] if out.exists()
                                              else []) < 2:
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)  # hang.py is still running
    proc.wait(timeout=60)
    entries = os.listdir(out)
    assert not [e for e in entries if ".tmp-" in e or ".old-" in e]
    packages = [e for e in entries if os.path.isdir(out / e) and not e.startswith(".")]
    assert sorted(packages) == ["c_elif_chain", "c_if_else"]
    for name in packages:
        assert dycl.load(str(out / name))
