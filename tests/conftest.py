"""Shared helpers: convert model files once per session, run packages in subprocesses."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.join(ROOT, "tests", "models")
ZOO = os.path.join(ROOT, "models_zoo")


@pytest.fixture(scope="session")
def converted(tmp_path_factory):
    """converted(path, backend="onnxruntime", check=50, fuse="all") -> ConversionResult (cached).

    Tests fuse every correct block ("all"), so what they convert does not depend on timings.
    """
    from dycl.convert import ConvertOptions, convert

    cache: dict = {}
    base = tmp_path_factory.mktemp("packages")

    def run(path: str, backend: str = "onnxruntime", check: int = 50, fuse: str = "all"):
        key = (path, backend, check, fuse)
        if key not in cache:
            name = f"{os.path.splitext(os.path.basename(path))[0]}-{backend}-{check}{'' if fuse == 'all' else '-' + fuse}"
            opts = ConvertOptions(path, str(base / name), backend, check)
            opts.fuse = fuse
            cache[key] = convert(opts)
        return cache[key]

    return run


def run_python(code: str, *, block_torch: bool = True, cwd: str | None = None) -> subprocess.CompletedProcess:
    """Run `code` in a fresh interpreter; with block_torch, `import torch` fails there."""
    prelude = "import sys\nsys.modules['torch'] = None\n" if block_torch else ""
    return subprocess.run([sys.executable, "-c", prelude + code], capture_output=True, text=True,
                          cwd=cwd or ROOT, timeout=300)
