"""`.tolist()` in forward: the host makes the list, regions take its items (rewrite/tolist.py).

tests/models/c_tolist_split.py also runs in test_constructs (both backends); here, what the package
does with the list, on inputs whose split sizes include zeros, and the diagnostic for a list whose
length changes between runs.
"""
import json
import os
import subprocess
import sys

import numpy as np
import torch

from conftest import MODELS, ROOT


def test_split_sizes_from_tolist_are_host_values_that_regions_take(converted):
    import dycl

    result = converted(os.path.join(MODELS, "c_tolist_split.py"), check=20)
    assert result.check.passed and result.check.eta == 0 and result.check.delta <= 1e-4, result.check.failure
    host = open(os.path.join(result.out, "host.py")).read()
    # the router's forward (no branch) is inlined for its `.tolist()`; the one inside `torch.split(...)` is lifted
    assert "sizes_1 = counts_1.tolist()" in host and "list_L47 = counts.tolist()" in host
    assert "if max(sizes) * 2 > sum(sizes):" in host and "host_L57 = sizes.count(0)" in host
    manifest = json.load(open(os.path.join(result.out, "manifest.json")))
    experts = next(r for r in manifest["regions"] if r["name"].startswith("experts_"))
    sizes = next(i for i in experts["inputs"] if i["name"] == "sizes")
    assert sizes["spec"] == {"t": "list", "items": [{"t": "scalar", "dtype": "int64"}] * 3}

    model = result.spec.model
    net = dycl.load(result.out)
    seen = set()
    for (x,) in result.spec.sample_inputs(24, seed=5) + [(x[:1],) for (x,) in result.spec.sample_inputs(3)]:
        with torch.no_grad():
            seen.add(tuple(model.router(x)[2]))
            expected = model(x).numpy()
        np.testing.assert_allclose(net(x.numpy()), expected, rtol=1e-5, atol=1e-5)
    assert any(0 in s for s in seen) and any(0 not in s for s in seen) and len(seen) > 5


def test_list_whose_length_changes_is_a_diagnostic(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "dycl.cli", "convert", "tests/models/bad_tolist_length.py",
                           "-o", str(out)], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2, proc.stderr
    assert """\
tests/models/bad_tolist_length.py:15:62: error: tensor code that reads `sizes`, a list whose length changes \
between runs [varying-list]
            pieces = torch.split(x.repeat_interleave(copies, 0), sizes)
                                                                 ^
  Explanation: region pieces_L15 takes the list item by item, one graph input per item, and a compiled graph has \
a fixed number of inputs; `sizes` had 2 items on one run and 1 on another (`.tolist()` of a tensor whose size \
varies gives such a list, and so do appends under a run-time `if`)
  Hint: keep the values in a tensor for tensor code (`x[idx]` rather than `x[idx.tolist()]`, a mask rather than \
appended positions), or use the list only in Python (`for`, `len`, `sum`)

1 error: the model cannot be converted as written.""" in proc.stderr
    assert not out.exists()
