"""`dycl zoo`: workers die with the zoo (SIGKILL, SIGTERM), and one bad file is one failed row."""
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


def _start_zoo(folder, out, *args):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))}
    return subprocess.Popen([sys.executable, "-m", "dycl.cli", "zoo", str(folder), "-o", str(out), *args], cwd=ROOT,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry))
    return found


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _workers(zoo_pid: int) -> list[int]:
    """The zoo's worker processes, once its hanging worker has started."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        workers = [p for p in _children(zoo_pid) if "spawn_main" in open(f"/proc/{p}/cmdline").read()]
        if workers:
            time.sleep(3)  # past its start, into get_model()
            return workers
        time.sleep(0.2)
    raise AssertionError("the zoo started no worker")


def _gone(pids: list[int], seconds: float = 20) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not any(_running(p) for p in pids):
            return True
        time.sleep(0.2)
    return False


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_workers_die_with_the_zoo(tmp_path, sig):
    folder = tmp_path / "zoo"
    folder.mkdir()
    (folder / "hang.py").write_text(HANG)
    out = tmp_path / "out"
    zoo = _start_zoo(folder, out, "--timeout", "600")
    workers = []
    try:
        workers = _workers(zoo.pid)
        zoo.send_signal(sig)
        zoo.wait(timeout=60)
        assert _gone(workers), "a worker outlived the zoo"
    finally:
        for pid in workers + ([] if zoo.poll() is not None else [zoo.pid]):
            if _running(pid):
                os.kill(pid, signal.SIGKILL)
    if sig == signal.SIGTERM:  # stopped like Ctrl-C: nothing half-written is left
        assert not [e for e in os.listdir(out) if ".tmp-" in e or e == ".zoo-results"]


def test_a_syntax_error_or_non_utf8_file_is_one_failed_row(tmp_path):
    folder = tmp_path / "zoo"
    folder.mkdir()
    shutil.copy(os.path.join(MODELS, "c_if_else.py"), folder / "good.py")
    (folder / "broken.py").write_text("def get_model(:\n    pass\n")
    (folder / "latin1.py").write_bytes('NAME = "caf\xe9"\n\n\ndef get_model():\n    pass\n'.encode("latin-1"))
    out = tmp_path / "out"
    zoo = _start_zoo(folder, out, "--check", "4")
    assert zoo.wait(timeout=600) == 1
    rows = {r["model"]: r for r in json.loads((out / "report.json").read_text())["models"]}
    assert {n: r["status"] for n, r in rows.items()} == {"good": "ok", "broken": "failed", "latin1": "failed"}
    assert rows["broken"]["error"].startswith("load: ") and "SyntaxError" in rows["broken"]["error"]
    assert rows["latin1"]["error"].startswith("load: ") and "utf-8" in rows["latin1"]["error"]
