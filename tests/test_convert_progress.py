"""The pipeline says which step and which region it is working on, and leaves torch's threads as it found them."""
import os

import torch

from conftest import MODELS


def test_progress_names_each_region_and_fusion_trial(tmp_path):
    from dycl.convert import ConvertOptions, convert

    events = []
    opts = ConvertOptions(os.path.join(MODELS, "c_gated_residual.py"), str(tmp_path / "pkg"), "onnxruntime", 4)
    opts.fuse = "all"
    before = torch.get_num_threads()
    result = convert(opts, on_progress=lambda *event: events.append(event))
    assert torch.get_num_threads() == before
    regions = {r.name for r in result.program.regions}
    exported = {d.split()[2] for step, d, _, _ in events if step == "export" and d.startswith("exporting region")}
    verified = {d.split()[2] for step, d, _, _ in events if step == "export" and d.startswith("verifying region")}
    assert exported == regions and verified == regions
    assert any(step == "export" and d.startswith("compiled ") for step, d, _, _ in events)
    trials = [d for step, d, _, _ in events if step == "fuse"]
    assert trials and all(d.startswith("fusion trial ") and " forward L" in d for d in trials)
    checks = [(done, total) for step, _, done, total in events if step == "check"]
    assert checks == [(k, 4) for k in range(4)]
    assert all(0 <= done <= total for _, _, done, total in events)
