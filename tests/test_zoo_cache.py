"""`dycl zoo`: the cache covers every local module a model imports, and a cached package is verified."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT

MODEL = '''
import torch
from torch import nn

from helperpkg.layers import SCALE


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = self.fc(x)
        if x.sum() > 0:
            return h * SCALE
        return h - 1


def get_model():
    torch.manual_seed(0)
    return Net().eval()


def get_inputs():
    return (torch.ones(1, 4),)


def sample_inputs(n, seed=0):
    return [(torch.ones(1, 4) * (1 if k % 2 else -1),) for k in range(n)]
'''


def _zoo(folder, out, *args):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "dycl.cli", "zoo", str(folder), "-o", str(out), "--check", "4",
                           *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)


def _rows(out):
    return {r["model"]: r for r in json.loads((out / "report.json").read_text())["models"]}


@pytest.fixture
def zoo(tmp_path):
    folder = tmp_path / "zoo"
    (folder / "helperpkg").mkdir(parents=True)
    (folder / "helperpkg" / "__init__.py").write_text("")
    (folder / "helperpkg" / "layers.py").write_text("SCALE = 2.0\n")
    (folder / "m.py").write_text(MODEL)
    return folder


def _positive(out):
    import dycl

    return dycl.load(str(out / "m"))(np.ones((1, 4), np.float32))


def test_a_changed_helper_in_a_sub_package_is_converted_again(zoo, tmp_path):
    out = tmp_path / "out"
    assert _zoo(zoo, out).returncode == 0
    before = _positive(out)
    assert _zoo(zoo, out).returncode == 0 and _rows(out)["m"].get("cached")
    (zoo / "helperpkg" / "layers.py").write_text("SCALE = 3.0\n")
    proc = _zoo(zoo, out)
    assert proc.returncode == 0, proc.stderr
    assert not _rows(out)["m"].get("cached")
    np.testing.assert_allclose(_positive(out), before * 1.5, rtol=1e-6)


@pytest.mark.parametrize("damage", ["host", "manifest"])
def test_a_damaged_cached_package_is_converted_again(zoo, tmp_path, damage):
    import dycl

    out = tmp_path / "out"
    assert _zoo(zoo, out).returncode == 0
    package = out / "m"
    if damage == "host":
        with open(package / "host.py", "a") as fh:
            fh.write("# edited\n")
    else:
        manifest = json.loads((package / "manifest.json").read_text())
        manifest["regions"][0]["origin"] = "elsewhere"
        (package / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    proc = _zoo(zoo, out)
    assert proc.returncode == 0, proc.stderr
    assert not _rows(out)["m"].get("cached")
    dycl.load(str(package))


def test_a_cached_package_for_another_cpu_is_not_served(converted, tmp_path):
    import hashlib
    import shutil

    from conftest import ZOO
    from dycl import zoo

    package = tmp_path / "moe"
    shutil.copytree(converted(os.path.join(ZOO, "moe.py"), backend="tvm", check=5).out, package)
    manifest = json.loads((package / "manifest.json").read_text())
    raw = (json.dumps(manifest, indent=1) + "\n").encode()
    entry = {"key": "k", "sources": {}, "row": {"status": "ok", "digest": hashlib.sha256(raw).hexdigest()}}
    (package / "manifest.json").write_bytes(raw)
    assert zoo._serve_cached(entry, "k", str(package))
    manifest["target"]["mcpu"] = "some-other-cpu"
    raw = (json.dumps(manifest, indent=1) + "\n").encode()
    (package / "manifest.json").write_bytes(raw)
    entry["row"]["digest"] = hashlib.sha256(raw).hexdigest()  # a whole, verified package, from another machine
    assert not zoo._serve_cached(entry, "k", str(package))
