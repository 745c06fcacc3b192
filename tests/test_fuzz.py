"""The differential fuzzer (scripts/fuzz.py): a fixed slice of its programs, its comparison, its findings."""
import os

import numpy as np

from conftest import MODELS


def test_unrolled_loop_fuses_each_iteration_apart(converted):
    # Found by the fuzzer: the graphs fused from one stretch of an unrolled loop shared a name,
    # so the last one built replaced the others' artifact.
    import torch

    import dycl

    result = converted(os.path.join(MODELS, "fuzz_unrolled_fusion.py"), check=6)
    assert result.check.passed, result.check.failure
    blocks = [m["name"] for m in result.region_meta if m.get("fuses")]
    assert len(blocks) >= 2 and len(set(blocks)) == len(blocks)
    net = dycl.load(result.out)
    for (x,) in result.spec.sample_inputs(8, seed=3):
        with torch.no_grad():
            expected = result.spec.model(x)[0].numpy()
        np.testing.assert_allclose(net(x.numpy())[0], expected, rtol=1e-4, atol=1e-5)
