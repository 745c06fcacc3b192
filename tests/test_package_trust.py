"""Package trust: one digest over the manifest and every file, paths confined to the package, host.py run
from its verified bytes, versions checked, and one clear line for every bad package or input."""
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from conftest import MODELS, ROOT

IF_ELSE = os.path.join(MODELS, "c_if_else.py")
X = np.ones((1, 32), np.float32)


def dycl_cli(*args):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "dycl.cli", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=300)


@pytest.fixture
def package(converted, tmp_path):
    """A fresh copy of a converted package, and its conversion result."""
    result = converted(IF_ELSE, check=5)
    pkg = tmp_path / "pkg"
    shutil.copytree(result.out, pkg)
    return pkg, result


def _manifest(pkg) -> dict:
    return json.loads((pkg / "manifest.json").read_text())


def _rewrite(pkg, manifest: dict) -> None:
    """Write a manifest whose file hashes match what is on disk, as someone altering the package would."""
    for rel in manifest["files"]:
        path = os.path.join(pkg, rel)
        if os.path.isfile(path) and not rel.startswith("/"):
            manifest["files"][rel] = hashlib.sha256(open(path, "rb").read()).hexdigest()
    (pkg / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")


def test_digest_is_printed_recorded_and_checked(package):
    import dycl

    pkg, result = package
    digest = hashlib.sha256((pkg / "manifest.json").read_bytes()).hexdigest()
    assert result.digest == digest
    assert json.loads((pkg / "report.json").read_text())["digest"] == digest
    assert dycl.load(str(pkg), digest=digest).digest == digest
    proc = dycl_cli("verify", str(pkg), "--digest", digest)
    assert proc.returncode == 0 and proc.stdout.strip() == f"{pkg}: ok, digest {digest}"


def test_convert_prints_the_digest(tmp_path):
    out = tmp_path / "pkg"
    proc = dycl_cli("convert", IF_ELSE, "-o", str(out), "--check", "2")
    assert proc.returncode == 0, proc.stderr
    digest = hashlib.sha256((out / "manifest.json").read_bytes()).hexdigest()
    assert f"digest: {digest}  (check it with: dycl verify PACKAGE --digest DIGEST)" in proc.stdout.splitlines()


def test_an_altered_manifest_changes_the_digest(package):
    import dycl
    from dycl.runtime import PackageError

    pkg, result = package
    manifest = _manifest(pkg)
    manifest["signature"][0]["shape"][0] = "batch"  # self-consistent, but not what was converted
    _rewrite(pkg, manifest)
    with pytest.raises(PackageError) as err:
        dycl.load(str(pkg), digest=result.digest)
    assert str(err.value).startswith(f"{pkg}: digest ") and str(err.value).endswith(f"is not the expected {result.digest}")
    proc = dycl_cli("verify", str(pkg), "--digest", result.digest)
    assert proc.returncode == 1 and proc.stderr.startswith(f"error: {pkg}: digest ")


@pytest.mark.parametrize("where", ["parent", "absolute"])
def test_artifact_outside_the_package_is_refused(package, where):
    import dycl
    from dycl.runtime import PackageError

    pkg, _ = package
    manifest = _manifest(pkg)
    meta = next(m for m in manifest["regions"] if m["artifact"])
    for suffix in (".onnx", ".weights"):
        src = pkg / (meta["artifact"][:-len(".onnx")] + suffix)
        if src.exists():
            shutil.copy(src, pkg.parent / f"outside{suffix}")
    rel = "../outside.onnx" if where == "parent" else str(pkg.parent / "outside.onnx")
    meta["artifact"] = rel
    manifest["files"][rel] = ""
    _rewrite(pkg, manifest)
    for verify in (True, False):
        with pytest.raises(PackageError) as err:
            dycl.load(str(pkg), verify=verify)
        assert str(err.value) == f"{pkg}: the manifest names {rel!r}, which is not a path inside the package"


def test_symbolic_link_out_of_the_package_is_refused(package):
    import dycl
    from dycl.runtime import PackageError

    pkg, _ = package
    manifest = _manifest(pkg)
    onnx = next(m["artifact"] for m in manifest["regions"] if m["artifact"])
    shutil.move(pkg / onnx, pkg.parent / "moved.onnx")
    os.symlink(pkg.parent / "moved.onnx", pkg / onnx)
    with pytest.raises(PackageError) as err:
        dycl.load(str(pkg))
    assert str(err.value) == f"{pkg}: {onnx} leads outside the package (a symbolic link)"


def test_a_device_in_files_fails_at_once(package):
    pkg, _ = package
    manifest = _manifest(pkg)
    manifest["files"]["/dev/zero"] = "0" * 64
    _rewrite(pkg, manifest)
    proc = subprocess.run([sys.executable, "-c", f"import dycl; dycl.load({str(pkg)!r})"], capture_output=True,
                          text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == (
        f"dycl.runtime.verify.PackageError: {pkg}: the manifest names '/dev/zero', which is not a path inside "
        "the package")


def test_planted_bytecode_never_runs_and_load_writes_no_cache(package):
    import dycl

    pkg, _ = package
    host = pkg / "host.py"
    source = host.read_text()
    evil = "def forward(regions, *args):\n    return 'planted'\n"
    evil += "#" * (len(source.encode()) - len(evil.encode()) - 1) + "\n"  # the size of the real host.py
    code = compile(evil, str(host), "exec")
    stat = host.stat()
    pyc = importlib.util.cache_from_source(str(host))
    os.makedirs(os.path.dirname(pyc))
    with open(pyc, "wb") as fh:
        fh.write(importlib._bootstrap_external._code_to_timestamp_pyc(code, stat.st_mtime, stat.st_size))
    got = dycl.load(str(pkg))(X)
    assert not isinstance(got, str)
    shutil.rmtree(pkg / "__pycache__")
    dycl.load(str(pkg))(X)
    assert not (pkg / "__pycache__").exists()


@pytest.mark.parametrize("key, value, message", [
    ("format", 2, "manifest format 2 is not the one this dycl (0.1.0) reads (1); reconvert the model with this dycl"),
    ("dycl", "9.0.0", "made by dycl '9.0.0', which this dycl (0.1.0) cannot run; reconvert the model with this dycl"),
    ("dycl", None, "made by dycl None, which this dycl (0.1.0) cannot run; reconvert the model with this dycl"),
])
def test_unknown_versions_are_refused(package, key, value, message):
    import dycl
    from dycl.runtime import PackageError

    pkg, _ = package
    manifest = _manifest(pkg)
    manifest[key] = value
    _rewrite(pkg, manifest)
    with pytest.raises(PackageError) as err:
        dycl.load(str(pkg), verify=False)
    assert str(err.value) == f"{pkg}: {message}"


@pytest.mark.parametrize("damage, message", [
    (lambda m: "{not json", "manifest.json is not valid JSON (Expecting property name enclosed in double quotes: "
                            "line 1 column 2 (char 1))"),
    (lambda m: {k: v for k, v in m.items() if k != "regions"}, "manifest.json has no valid 'regions' entry"),
    (lambda m: dict(m, regions=[{"name": "r"}]),
     "manifest.json: the region r entry is malformed (KeyError: 'origin')"),
])
def test_malformed_manifest_is_one_line(package, damage, message):
    import dycl
    from dycl.runtime import PackageError

    pkg, _ = package
    damaged = damage(_manifest(pkg))
    (pkg / "manifest.json").write_text(damaged if isinstance(damaged, str) else json.dumps(damaged))
    with pytest.raises(PackageError) as err:
        dycl.load(str(pkg))
    assert str(err.value) == f"{pkg}: {message}"


def test_run_on_a_damaged_package_is_one_line(package):
    pkg, _ = package
    with open(pkg / "host.py", "a") as fh:
        fh.write("# edited\n")
    proc = dycl_cli("run", str(pkg))
    assert proc.returncode == 1
    assert proc.stderr == f"error: {pkg}: host.py was modified after conversion (hash mismatch)\n"


def test_keyword_inputs(converted):
    import dycl
    from dycl.runtime import InputError

    net = dycl.load(converted(IF_ELSE, check=5).out)
    name = net.signature[0].name
    np.testing.assert_array_equal(net(**{name: X}), net(X))
    with pytest.raises(InputError) as err:
        net(X, **{name: X})
    assert str(err.value) == f"input '{name}' given twice (by position and by name)"
    with pytest.raises(InputError) as err:
        net(y=X)
    assert str(err.value) == f"unknown input 'y'; the inputs are {name}"


@pytest.mark.parametrize("value, got", [(None, "NoneType"), ("abc", "str")])
def test_none_and_str_inputs(converted, value, got):
    import dycl
    from dycl.runtime import InputError

    net = dycl.load(converted(IF_ELSE, check=5).out)
    with pytest.raises(InputError) as err:
        net(value)
    assert str(err.value) == f"input 'x': expected a float32 array of shape (1, 32), got {got}"


SCALAR_MODEL = '''
import torch
from torch import nn


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x, k: int, w: float):
        h = self.fc(x) * w
        if h.sum() > 0:
            return h + k
        return h - k


def get_model():
    torch.manual_seed(0)
    return Scaled()


def get_inputs():
    return (torch.ones(1, 4), 2, 0.5)


def sample_inputs(n, seed=0):
    return [(torch.ones(1, 4) * (1 if i % 2 else -1), i, 0.5 + i) for i in range(n)]
'''


def test_scalar_inputs_are_type_checked(converted, tmp_path):
    import dycl
    from dycl.runtime import InputError

    path = tmp_path / "scaled.py"
    path.write_text(SCALAR_MODEL)
    net = dycl.load(converted(str(path), check=6).out)
    assert [p.kind for p in net.signature] == ["array", "int", "float"]
    x = np.ones((1, 4), np.float32)
    np.testing.assert_allclose(net(x, 3, 2), net(x, np.int64(3), 2.0))
    with pytest.raises(InputError) as err:
        net(x, "3", 0.5)
    assert str(err.value) == "input 'k': expected a Python int, got str '3'"
    with pytest.raises(InputError) as err:
        net(x, 1.5, 0.5)
    assert str(err.value) == "input 'k': expected a Python int, got float 1.5"
    with pytest.raises(InputError) as err:
        net(x, 1, None)
    assert str(err.value) == "input 'w': expected a Python float, got NoneType None"
