"""`for` over `zip(...)` of a ModuleList and run-time lists (rewrite/zips.py): unrolled for the
ModuleList, with a host check where a run-time list could be shorter than the loop was unrolled for.

tests/models/c_zip_experts.py also runs in test_constructs (both backends).
"""
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

from conftest import MODELS, ROOT
from dycl.modelfile import load_model_file
from rewrite import ConversionError, rewrite_model


def test_zip_of_split_sizes_chunks_and_experts_is_unrolled(converted):
    import dycl

    result = converted(os.path.join(MODELS, "c_zip_experts.py"), check=20)
    assert result.check.passed and result.check.eta == 0 and result.check.delta <= 1e-4, result.check.failure
    host = open(os.path.join(result.out, "host.py")).read()
    # the host list `.tolist()` made is checked before each loop over it; the chunks torch.split cut stay
    # in the region that runs the experts, and the list of two ends needs no check
    assert re.search(r"    chunks, h = regions\.\w+\(x, order, sizes\)\n    if len\(sizes\) < 3:", host)
    assert host.count("if len(sizes) < 3:") == 2 and "if len(sizes) != 3:" in host
    assert "len(chunks)" not in host and "len(ends)" not in host and "len(zip_items)" not in host
    assert "n = sizes[0]" in host and "n = sizes[2]" in host

    model, net = result.spec.model, dycl.load(result.out)
    seen = set()
    for (x,) in result.spec.sample_inputs(24, seed=3):
        with torch.no_grad():
            seen.add(tuple((model.router(x).argmax(-1)[:, None] == torch.arange(3)).sum(0).tolist()))
            expected = model(x).numpy()
        np.testing.assert_allclose(net(x.numpy()), expected, rtol=1e-5, atol=1e-4)
    assert any(0 in s for s in seen) and any(s[0] > 0 for s in seen)


def test_package_refuses_a_list_shorter_than_the_unrolled_loop(converted):
    import dycl

    result = converted(os.path.join(MODELS, "zip_picked_rows.py"), check=20)
    assert result.check.passed, result.check.failure
    net = dycl.load(result.out)
    x = torch.randn(6, 4).abs()
    x[2:] *= -1  # two rows with a positive sum, for three experts
    with pytest.raises(ValueError, match=r"zip\(\) argument 1 \(`picks`\) has fewer than 3 items, the length of "
                                         r"`self.experts`: Python would end the loop early"):
        net(x.numpy())
    x[2] *= -1
    with torch.no_grad():
        np.testing.assert_allclose(net(x.numpy()), result.spec.model(x).numpy(), rtol=1e-5, atol=1e-5)


def test_zip_shorter_than_its_module_list_on_a_sample_is_a_diagnostic(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "dycl.cli", "convert", "tests/models/bad_zip_length.py",
                           "-o", str(out)], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2, proc.stderr
    assert """\
tests/models/bad_zip_length.py:15:30: error: zip of `self.experts` and `weights`, which is shorter than it on \
some inputs [varying-list]
            for w, expert in zip(weights, self.experts):
                                 ^
  Explanation: the loop is unrolled for the 3 items of `self.experts`, and zip stops at its shortest argument: \
where `weights` has fewer items, Python ends the loop early, which the package cannot (a tensor whose first dim \
varies gives such rows, and `.tolist()` of it such a list)
  Hint: give `weights` at least as many items as `self.experts` on every input; the package refuses another \
length with a ValueError

1 error: the model cannot be converted as written.""" in proc.stderr
    assert not out.exists()


def _model(tmp_path, monkeypatch, forward: str):
    src = tmp_path / "zips.py"
    src.write_text(
        "import torch\nfrom torch import nn\n\n\n"
        "class M(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.experts = nn.ModuleList(nn.Linear(4, 4) for _ in range(3))\n"
        "        self.gates = nn.ModuleList(nn.Linear(4, 1) for _ in range(2))\n\n"
        "    def forward(self, x):\n" + forward +
        "\n\ndef get_model():\n    return M()\n\n\n"
        "def get_inputs():\n    return (torch.randn(3, 4),)\n")
    monkeypatch.chdir(tmp_path)
    return load_model_file(str(src))


def test_strict_zip_of_module_lists_of_different_lengths_is_reported(tmp_path, monkeypatch):
    spec = _model(tmp_path, monkeypatch, "        for e, g in zip(self.experts, self.gates, strict=True):\n"
                                         "            x = e(x) * g(x)\n"
                                         "        return x\n")
    with pytest.raises(ConversionError) as info:
        rewrite_model(spec.model, spec.inputs)
    assert info.value.format() == """\
zips.py:12:21: error: `zip(..., strict=True)` of lengths that differ [zip-length]
            for e, g in zip(self.experts, self.gates, strict=True):
                        ^
  Explanation: the arguments the model fixes have 3 and 2 items, so forward always raises ValueError here
  Hint: zip arguments of the same length, or drop `strict=True` to stop at the shortest

1 error: the model cannot be converted as written."""


def test_enumerated_zip_stops_at_the_shortest_module_list(tmp_path, monkeypatch):
    from rewrite.dump import program_text

    spec = _model(tmp_path, monkeypatch, "        rows = x.sum(-1).tolist()\n"
                                         "        for k, (r, e, g) in enumerate(zip(rows, self.experts, self.gates), 1):\n"
                                         "            x = e(x) * g(x) * r + k\n"
                                         "        return x\n")
    text = program_text(rewrite_model(spec.model, spec.inputs))
    assert "    if len(rows) < 2:  # decision L13: shape\n        raise ValueError('zip() argument 1 (`rows`) has " \
           "fewer than 2 items, the length of `self.gates`" in text
    assert "r = rows[1]" in text and "rows[2]" not in text  # two iterations, numbered from 1
    assert "x = self.experts[1](x) * self.gates[1](x) * r + 2" in text and "self.experts[2]" not in text
