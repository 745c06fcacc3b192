"""The library corpus: transformers and timm modules, unmodified, with tiny random configs.

Each converts on onnxruntime and matches the library code on inputs that take several paths
(η = 0, δ ≤ 1e-4). Conversion times are measured by scripts/bench_corpus.py, not asserted here.
"""
import os

import pytest

from conftest import ROOT

CORPUS = os.path.join(ROOT, "tests", "corpus")
# Converting: MoE blocks looping over the experts their router hit (Mixtral, Qwen2-MoE, PhiMoE whose router
# calls `super().forward` of nn.Linear, DeepSeek-V3 whose sigmoid router keeps the best expert groups and then
# takes an unsorted top-k (dycl/topk_order.py), all the `eager` experts implementation behind transformers'
# dispatch wrapper), JetMoE whose router turns its per-expert token counts into split sizes with `.tolist()`
# (the host makes the list, the experts' region takes its items; no decision, so one path), SwitchTransformers' top-1
# router that drops tokens over capacity (experts picked by `self[f"expert_{idx}"]`), early exit
# over timm ViT blocks and over transformers' BERT layers, the Mamba mixer's sequential selective
# scan (a host loop over the time steps), timm's ViT at any image size (padding and position
# embeddings resampled by shape-determined branches), and greedy generation around LlamaForCausalLM
# without a cache (a host loop that re-runs the whole prefix and stops at EOS) and with transformers'
# DynamicCache (the first step unrolled, then a host loop carrying the cache's tensors). The ViT's embedding is
# returned unchanged only where `4 == new_size[0] and 4 == new_size[1]`: that region runs at the 4x4 grid
# alone, which the test pins (dycl/pins.py), so it keeps static dims; its sizes take each of the 3 paths.
MODELS = {"moe_mixtral": 3, "moe_qwen2": 3, "moe_phimoe": 3, "moe_deepseek_v3": 3, "moe_jetmoe": 1,
          "switch_capacity": 4, "early_exit_vit": 3, "early_exit_bert": 4,
          "mamba_scan": 4, "vit_dynamic_pad": 3, "greedy_llama": 4, "greedy_llama_cache": 4}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_corpus_model_converts_and_matches(converted, name):
    result = converted(os.path.join(CORPUS, f"{name}.py"), check=20)
    assert result.check.passed, result.check.failure
    assert result.check.eta == 0 and result.check.delta <= 1e-4
    assert result.check.paths >= MODELS[name]


def test_vit_dynamic_pad_at_image_sizes_no_sample_had(converted):
    # Every size from 25 to 32 pads to the 4x4 grid and takes the pinned arm (the region whose dims the
    # test fixes), though the samples only reached it at widths 32: the grid is what is static there.
    import numpy as np
    import torch

    import dycl

    result = converted(os.path.join(CORPUS, "vit_dynamic_pad.py"), check=20)
    net = dycl.load(result.out)
    gen = torch.Generator().manual_seed(3)
    for size in [(27, 30), (25, 25), (32, 31), (9, 40), (8, 8), (40, 17)]:
        x = torch.randn(1, 3, *size, generator=gen)
        with torch.no_grad():
            expected = result.spec.model(x).numpy()
        np.testing.assert_allclose(net(x.numpy()), expected, rtol=1e-4, atol=1e-4, err_msg=str(size))


def test_greedy_llama_with_dynamic_cache_carries_the_cache_through_one_host_loop(converted):
    # `DynamicCache(config=...)` is built when converting; the keys and values its layers grow by torch.cat
    # are variables (`cache_layers_0_keys`, ...). The first step fills the cache from the prompt (and sets its
    # `is_initialized`), so it is unrolled; every later step feeds one token through one host loop that
    # carries the cache's tensors, and `get_seq_length()` reads their shapes.
    import dycl
    from hostgen.fused import FusedBlock
    from rewrite.cfg import Loop, RegionCall, host_nodes

    path = os.path.join(CORPUS, "greedy_llama_cache.py")
    result = converted(path, check=20)
    assert result.check.passed, result.check.failure
    assert result.check.eta == 0 and result.check.delta <= 1e-4 and result.check.paths >= 4
    loops = [n for n in host_nodes(result.program.body) if isinstance(n, Loop)]
    assert len(loops) == 1
    # what the loop body's regions read: a region call's inputs, or the arguments of a run fused into one graph
    read = {name for n in host_nodes(loops[0].body) if isinstance(n, (RegionCall, FusedBlock))
            for name in (n.region.inputs if isinstance(n, RegionCall) else n.args)}
    carried = {f"cache_layers_{k}_{kind}" for k in (0, 1) for kind in ("keys", "values")}
    assert carried <= read
    # prompts of every length from 1 to 8 tokens, with early EOS and without
    import torch

    net = dycl.load(result.out)
    gen = torch.Generator().manual_seed(11)
    lengths = set()
    for k in range(24):
        ids = torch.randint(4, 48, (1, 1 + k % 8), generator=gen)
        with torch.no_grad():
            expected = result.spec.model(ids).numpy()
        lengths.add(expected.shape[1] - ids.shape[1])
        assert (net(ids.numpy()) == expected).all(), (ids, expected)
    assert len(lengths) >= 3 and 6 in lengths, lengths
