"""The `dycl` command: success summary, a missing file, the run command."""
import json
import os
import subprocess
import sys

from conftest import MODELS, ROOT


def dycl(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "dycl.cli", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=600)


def test_convert_prints_summary_and_writes_package(tmp_path):
    out = tmp_path / "gated"
    proc = dycl("convert", os.path.join(MODELS, "golden_gated.py"), "-o", str(out), "--check", "30")
    assert proc.returncode == 0, proc.stderr
    for stage in ("Rewriting forward", "Exploring shapes and paths", "Checking against the original model"):
        assert stage in proc.stderr
    assert "regions" in proc.stdout and "paths covered" in proc.stdout and "pass: δ =" in proc.stdout
    assert {"host.py", "manifest.json", "regions", "report.json", "report.md", "cfg.dot"} <= set(os.listdir(out))
    report = json.loads((out / "report.json").read_text())
    assert report["check"]["samples"] == 30 and report["check"]["eta"] == 0 and report["check"]["paths"] >= 2


def test_fuse_none_keeps_decisions_in_the_host(tmp_path):
    fused, host = tmp_path / "fused", tmp_path / "host"
    assert dycl("convert", os.path.join(MODELS, "golden_gated.py"), "-o", str(fused), "--check", "10",
                "--fuse", "all").returncode == 0
    proc = dycl("convert", os.path.join(MODELS, "golden_gated.py"), "-o", str(host), "--check", "10", "--fuse", "none")
    assert proc.returncode == 0, proc.stderr
    assert "run as one region" in (fused / "host.py").read_text()
    assert "run as one region" not in (host / "host.py").read_text() and "if " in (host / "host.py").read_text()


def test_tune_needs_a_tvm_backend(tmp_path):
    proc = dycl("convert", os.path.join(MODELS, "golden_gated.py"), "-o", str(tmp_path / "x"), "--tune", "8")
    assert proc.returncode == 2
    assert "--tune tunes TVM kernels: use it with --backend tvm or --backend auto" in proc.stderr
    assert not (tmp_path / "x").exists()


def test_missing_model_file(tmp_path):
    proc = dycl("convert", "no/such/model.py", "-o", str(tmp_path / "x"))
    assert proc.returncode == 2
    assert proc.stderr.strip().endswith(f"error: {os.path.join(ROOT, 'no/such/model.py')}: no such file")
    assert not (tmp_path / "x").exists()


def test_model_flag_and_input_flag(tmp_path):
    module = tmp_path / "plain.py"
    module.write_text(
        "import torch\nfrom torch import nn\n\n\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.a = nn.Linear(6, 3)\n"
        "        self.b = nn.Linear(6, 3)\n\n"
        "    def forward(self, x):\n"
        "        if x.sum() > 0:\n"
        "            return self.a(x)\n"
        "        return self.b(x)\n\n\n"
        "def build():\n    torch.manual_seed(0)\n    return Net()\n")
    out = tmp_path / "pkg"
    proc = dycl("convert", str(module), "--model", "plain:build", "--input", "x=float32[2,6]", "-o", str(out),
                cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["signature"] == [{"name": "x", "kind": "array", "dtype": "float32", "shape": [2, 6]}]


def test_bad_input_flag(tmp_path):
    proc = dycl("convert", os.path.join(MODELS, "golden_gated.py"), "--input", "x=float32(1,8)", "-o",
                str(tmp_path / "x"))
    assert proc.returncode == 2
    assert "--input 'x=float32(1,8)': expected NAME=DTYPE[D0,D1,...], e.g. x=float32[1,3,32,32]" in proc.stderr


def test_run_command(converted):
    result = converted(os.path.join(MODELS, "golden_gated.py"), check=5)
    proc = dycl("run", result.out, "--repeat", "2")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("float32[1, 4]") == 2


def test_inspect_prints_the_tree_and_writes_dot(tmp_path):
    import shutil

    import pydot

    dot = tmp_path / "sdn.dot"
    proc = dycl("inspect", os.path.join(ROOT, "models_zoo", "sdn.py"), "--dot", str(dot))
    assert proc.returncode == 0, proc.stderr
    assert "SDN.forward(x)" in proc.stdout or ".forward(x)" in proc.stdout
    assert "value-determined" in proc.stdout and "region " in proc.stdout
    (graph,) = pydot.graph_from_dot_data(dot.read_text())
    labels = " ".join(n.get_label() or "" for n in graph.get_nodes())
    assert "(value)" in labels and "forward" in labels
    if shutil.which("dot"):
        svg = tmp_path / "sdn.svg"
        assert svg.exists() and svg.read_text().lstrip().startswith("<?xml")


def test_package_report_shows_the_host_tree(converted):
    result = converted(os.path.join(MODELS, "golden_gated.py"), check=5)
    report = open(os.path.join(result.out, "report.md")).read()
    assert "## Host program" in report and "if g.item() > 0.5" in report
    assert os.path.exists(os.path.join(result.out, "cfg.dot"))


def test_model_code_that_exits_fails_the_conversion_and_says_so(tmp_path):
    # Before, `dycl convert` ended with the model's exit code (3), printing nothing and writing nothing.
    out = tmp_path / "out"
    proc = dycl("convert", os.path.join(MODELS, "bad_exit.py"), "-o", str(out), "--check", "4")
    assert proc.returncode == 1, proc.stderr
    assert "error: conversion failed in step 'explore': the model's code called sys.exit(3); dycl runs " \
           "get_model(), get_inputs(), sample_inputs() and forward (every path, forced ones too) while " \
           "converting, so none of them may exit" in proc.stderr
    assert not out.exists()
