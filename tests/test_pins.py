"""Shape tests that pin a dim (dycl/pins.py): what they pin, and the regions they let keep static dims."""
import os

import numpy as np
import pytest
import torch
from torch import nn

from conftest import MODELS, ROOT
from dycl.pins import region_pins
from rewrite import rewrite_model
from rewrite.cfg import code

PINNED = os.path.join(MODELS, "pinned_shape_test.py")


class _Tests(nn.Module):
    """Each arm calls one region; which of them a test pins, and what."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        h = self.lin(x)
        B, N, C = h.shape
        size = (N, C)
        if 5 == size[0] and h.shape[-1] == 4:  # pins h dims 1 and -1, through the tuple and directly
            h = h * 2
        if N > 3:  # a threshold pins nothing
            h = h * 3
        if x.size(1) != 6:  # pins x dim 1 on the else arm
            h = h + 1
        else:
            h = h - 1
        if len(x) == 2:  # pins x dim 0, not h's
            h = h * 5
        h = torch.cat([h, h], 1)  # h is written: a test on its old shape pins nothing after
        if N == 7:
            h = h - 2
        return h


def _pins():
    model = _Tests().eval()
    program = rewrite_model(model, (torch.randn(2, 5, 4),))
    found = region_pins(program)
    return {code(r.stmts[0].node): sorted((p.name, p.axis, p.size) for p in found[r.name].pins)
            if r.name in found else [] for r in program.regions}


def test_what_each_test_pins():
    pins = _pins()
    assert pins["h = h * 2"] == [("h", -1, 4), ("h", 1, 5)]
    assert pins["h = h * 3"] == []  # behind `N > 3`
    assert pins["h = h + 1"] == []  # the body of `!=`
    assert pins["h = h - 1"] == [("x", 1, 6)]  # its else
    assert pins["h = h * 5"] == [("x", 0, 2)]  # (with the cat after the if, pushed into both arms)
    assert pins["h = h - 2"] == []  # `N == 7` read h's shape before h was written


def test_pinned_region_keeps_static_dims_and_the_threshold_region_does_not(converted):
    import dycl

    # the regions as compiled on their own (fused, the host takes these shape decisions and calls one graph
    # per arm: tests/test_fuse_arms.py)
    result = converted(PINNED, check=20, fuse="none")
    assert result.check.passed and result.check.eta == 0 and result.check.delta <= 1e-4
    shapes = {s.name: [list(leaf.shape) for leaf in s.input_leaves] for s in result.signatures}
    pinned = next(s.name for s in result.signatures if s.origin.endswith("L24-26"))
    assert shapes[pinned] == [[2, 3, 3, 4]]  # seen at 3x3 only: the test makes that right
    assert result.exploration.records[pinned].one_size() == {"height": 3, "width": 3}
    threshold = next(s.name for s in result.signatures if s.origin.endswith("L30-33"))
    assert shapes[threshold] == [[2, "height", "width", 8]]
    net = dycl.load(result.out)
    gen = torch.Generator().manual_seed(1)
    arms = set()
    for height in (1, 2, 3, 4, 5, 8, 13):
        for width in (1, 3, 4, 7):
            x = torch.randn(2, height, width, generator=gen)
            with torch.no_grad():
                expected = result.spec.model(x).numpy()
            np.testing.assert_allclose(net(x.numpy()), expected, rtol=1e-4, atol=1e-5, err_msg=f"{height}x{width}")
            arms.add((height == 3 and width == 3, height > 4))
    assert arms == {(True, False), (False, False), (False, True)}  # 3x3 is never above 4


def test_fused_arms_of_the_pinned_tests_serve_every_size(converted):
    import dycl

    result = converted(PINNED, check=20)
    assert result.fused and result.check.passed
    net = dycl.load(result.out)
    gen = torch.Generator().manual_seed(2)
    for height in (1, 3, 4, 5, 13):
        for width in (1, 3, 7):
            x = torch.randn(2, height, width, generator=gen)
            with torch.no_grad():
                expected = result.spec.model(x).numpy()
            np.testing.assert_allclose(net(x.numpy()), expected, rtol=1e-4, atol=1e-5, err_msg=f"{height}x{width}")


def test_the_pinned_region_refuses_another_size_with_a_clear_error(converted):
    # The host's test never passes it another size; called directly, it refuses one, naming itself.
    import dycl
    from dycl.runtime.region import RegionError

    result = converted(PINNED, check=20, fuse="none")
    pinned = next(s.name for s in result.signatures if s.origin.endswith("L24-26"))
    net = dycl.load(result.out)
    region = getattr(net.regions, pinned)
    assert region(np.zeros((2, 3, 3, 4), np.float32)).shape == (2, 3, 3, 8)
    with pytest.raises(RegionError, match=f"while executing region {pinned} \\(forward L24-26\\)"):
        region(np.zeros((2, 3, 4, 4), np.float32))


def _variant(tmp_path, old: str, new: str, name: str) -> str:
    with open(PINNED, encoding="utf-8") as fh:
        text = fh.read()
    assert old in text
    path = tmp_path / f"{name}.py"
    path.write_text(text.replace(old, new), encoding="utf-8")
    return str(path)


def test_an_arm_split_by_a_value_decision_keeps_its_static_dims(tmp_path):
    # `h` is made on the arm (by the cat), so no pin reads it and the test cannot observe it; it is made at
    # one size all the same: the cat's inputs are pinned or static, and its output shape follows from them.
    import dycl
    from dycl.convert import ConvertOptions, convert

    cat = "            h = torch.cat([h, self.pos.expand(B, -1, -1, -1)], -1)\n"
    path = _variant(tmp_path, cat, cat + "            if h.mean() > 0:\n                h = h * 2\n", "split")
    opts = ConvertOptions(path, str(tmp_path / "out"), check=20)
    opts.fuse = "none"
    result = convert(opts)
    assert result.check.passed and result.check.eta == 0
    doubled = next(s for s in result.signatures if s.origin == "forward L28")
    assert [list(leaf.shape) for leaf in doubled.input_leaves] == [[2, 3, 3, 8]]
    net = dycl.load(result.out)
    for k in range(6):
        x = torch.randn(2, 3, 3, generator=torch.Generator().manual_seed(k)) + (k % 2 - 0.5) * 4
        with torch.no_grad():
            expected = result.spec.model(x).numpy()
        np.testing.assert_allclose(net(x.numpy()), expected, rtol=1e-4, atol=1e-5)


def test_a_range_that_admits_one_size_is_no_pin(tmp_path):
    # `2 < H < 4` admits 3 alone, but it is a threshold to dycl: the region is refused as before.
    from dycl.convert import ConvertOptions, convert
    from rewrite import ConversionError

    path = _variant(tmp_path, "if H == 3 and W == 3:", "if 2 < H < 4 and 2 < W < 4:", "ranged")
    with pytest.raises(ConversionError) as info:
        convert(ConvertOptions(path, str(tmp_path / "out"), check=8))
    text = info.value.format()
    assert "[one-size-code]" in text and "fixes" not in text


def test_a_dim_the_test_does_not_pin_is_still_refused(tmp_path):
    # With the batch dynamic too and an example off the 3x3 grid, only the samples reach the pinned arm,
    # all at batch 2: the test pins h's grid, not its batch dim, which varies at the test.
    from dycl.convert import ConvertOptions, convert
    from rewrite import ConversionError

    path = _variant(tmp_path, 'DYNAMIC = {"x": {1: "height", 2: "width"}}',
                    'DYNAMIC = {"x": {0: "batch", 1: "height", 2: "width"}}', "batched")
    path = _variant_of(path, "return sample_inputs(1)[0]", "return (torch.randn(3, 3, 6),)")
    with pytest.raises(ConversionError) as info:
        convert(ConvertOptions(path, str(tmp_path / "out"), check=8))
    text = info.value.format()
    assert "this code ran at one size of `batch`, `height`, `width` only [one-size-code]" in text
    assert "fixes `h` dim 1 = 3 and `h` dim 2 = 3, but not `h` dim 0" in text


def _variant_of(path: str, old: str, new: str) -> str:
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    assert old in text
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text.replace(old, new))
    return path


def test_one_size_only_is_still_refused(tmp_path, monkeypatch):
    # `x.shape[0] == 5` pins x's rows; the region takes h, whose rows vary at that test.
    from dycl.convert import ConvertOptions, convert
    from rewrite import ConversionError

    monkeypatch.chdir(ROOT)
    with pytest.raises(ConversionError) as info:
        convert(ConvertOptions(os.path.join(MODELS, "one_size_only.py"), str(tmp_path / "out"), check=4))
    assert "fixes `x` dim 0 = 5, but not `h` dim 0" in info.value.format()
