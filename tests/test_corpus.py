"""The library corpus: transformers and timm modules, unmodified, with tiny random configs.

Each converts on onnxruntime and matches the library code on inputs that take several paths
(η = 0, δ ≤ 1e-4). Conversion times are measured by scripts/bench_corpus.py, not asserted here.
"""
import os

import pytest

from conftest import ROOT

CORPUS = os.path.join(ROOT, "tests", "corpus")
# Converting: MoE blocks looping over the experts their router hit (Mixtral, Qwen2-MoE, both the
# `eager` experts implementation behind transformers' dispatch wrapper), SwitchTransformers' top-1
# router that drops tokens over capacity (experts picked by `self[f"expert_{idx}"]`), early exit
# over timm ViT blocks and over transformers' BERT layers, the Mamba mixer's sequential selective
# scan (a host loop over the time steps), and timm's ViT at any image size (padding and position
# embeddings resampled by shape-determined branches).
MODELS = {"moe_mixtral": 3, "moe_qwen2": 3, "switch_capacity": 4, "early_exit_vit": 3, "early_exit_bert": 4,
          "mamba_scan": 4, "vit_dynamic_pad": 3}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_corpus_model_converts_and_matches(converted, name):
    result = converted(os.path.join(CORPUS, f"{name}.py"), check=20)
    assert result.check.passed, result.check.failure
    assert result.check.eta == 0 and result.check.delta <= 1e-4
    assert result.check.paths >= MODELS[name]
