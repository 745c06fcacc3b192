"""transformers' SwitchTransformers sparse MLP: a top-1 router that drops the tokens an expert
receives beyond its capacity, and a ModuleDict of experts picked by `self[f"expert_{idx}"]`."""
import torch
from torch import nn

import _corpus
from transformers import SwitchTransformersConfig
from transformers.models.switch_transformers.modeling_switch_transformers import SwitchTransformersLayerFF

D = 16
EXPERTS = 4
CAPACITY = 2


class SwitchFF(nn.Module):
    def __init__(self):
        super().__init__()
        config = SwitchTransformersConfig(d_model=D, d_ff=32, num_experts=EXPERTS, expert_capacity=CAPACITY,
                                          router_jitter_noise=0.0, dropout_rate=0.0)
        self.layer = SwitchTransformersLayerFF(config, is_sparse=True)

    def forward(self, x):
        return self.layer(x)


def get_model():
    return _corpus.randomize(SwitchFF(), seed=0, scale=0.5)


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, 1 + i % 6, D, generator=gen),) for i in range(n)]


def get_inputs():
    return sample_inputs(6)[5]

