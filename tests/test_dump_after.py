"""`dycl convert --dump-after STEP`: every step and rewrite pass writes the program as it stands, then
the conversion stops with no package written."""
import os
import subprocess
import sys

import pytest

from conftest import MODELS, ROOT
from dycl.convert import STEPS, ConvertOptions, convert
from rewrite import PASS_NAMES

MODEL = os.path.join(MODELS, "golden_gated.py")
STEP_NAMES = [name for name, _ in STEPS]


def _dump(tmp_path, step: str) -> str:
    out = tmp_path / "pkg"
    opts = ConvertOptions(MODEL, str(out), "onnxruntime", 4)
    opts.fuse = "all"
    opts.dump_after = step
    result = convert(opts)
    assert not out.exists() and os.listdir(tmp_path) == []  # no package, half-written or whole
    assert result.out == "" and result.dump
    return result.dump


def test_the_steps_are_named_in_order():
    assert STEP_NAMES == ["load", "rewrite", "generate", "explore", "fold_shapes", "export", "fuse", "speculate",
                          "package", "check"]
    assert PASS_NAMES == ["parse", "partial_eval", "build", "tail_merge", "merge_across_host", "liveness"]


@pytest.mark.parametrize("step", PASS_NAMES)
def test_dump_after_each_rewrite_pass(tmp_path, step):
    text = _dump(tmp_path, step)
    assert text.startswith(f"# dycl --dump-after {step} (a pass of the rewrite)\n")
    compile(text, step, "exec")  # Python source text
    if step == "parse":  # forward as written
        assert "def forward(self, x):" in text and "self._gate(i, x)" in text
    elif step == "partial_eval":  # helpers inlined, static config folded; no regions yet
        assert "def forward(x):" in text and "regions." not in text and "if " in text
    else:  # a host calling regions, then the regions
        assert "regions." in text and "# decision L" in text
        regions = [line for line in text.splitlines() if line.startswith("def ") and "forward" not in line]
        assert regions
        if step == "liveness":  # each region now takes its live-in names and returns its live-out ones
            assert all("()" not in line for line in regions) and "    return " in text


@pytest.mark.parametrize("step", STEP_NAMES)
def test_dump_after_each_step(tmp_path, step):
    text = _dump(tmp_path, step)
    assert text.startswith(f"# dycl --dump-after {step}: ")
    assert "def forward(" in text
    done = STEP_NAMES[:STEP_NAMES.index(step) + 1]
    assert ("regions." in text) == (step != "load")
    assert ("# ==== host.py ====" in text) == ("generate" in done)
    if step in ("explore", "fold_shapes"):
        assert "# exploration: the dims" in text and "not reached" not in text
    if step in ("export", "fuse", "speculate", "package", "check"):
        assert ".onnx" in text  # the files listed: the regions' artifacts
    assert ("# ==== manifest.json ====" in text) == (step in ("package", "check"))
    assert ("# ==== report.md ====" in text) == (step == "check")


def test_cli_dump_after_to_stdout_and_to_a_file(tmp_path):
    def dycl(*args):
        return subprocess.run([sys.executable, "-m", "dycl.cli", "convert", MODEL, "-o", str(tmp_path / "pkg"),
                               "--check", "2", *args], capture_output=True, text=True, cwd=ROOT, timeout=600)

    proc = dycl("--dump-after", "build")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("# dycl --dump-after build") and "regions." in proc.stdout
    proc = dycl("--dump-after", "generate", "--dump-to", str(tmp_path / "dump.py"))
    assert proc.returncode == 0, proc.stderr
    assert "# ==== host.py ====" in (tmp_path / "dump.py").read_text() and proc.stdout == ""
    assert not (tmp_path / "pkg").exists()
    proc = dycl("--dump-after", "lowering")
    assert proc.returncode == 2 and "'lowering' is no step" in proc.stderr and "partial_eval" in proc.stderr
