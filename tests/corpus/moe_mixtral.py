"""transformers' Mixtral sparse-MoE block, eager experts: a host loop over the experts the router hit."""
import torch
from torch import nn

import _corpus
from transformers import MixtralConfig
from transformers.models.mixtral.modeling_mixtral import MixtralSparseMoeBlock

HIDDEN = 32


class MoE(nn.Module):
    def __init__(self):
        super().__init__()
        config = MixtralConfig(hidden_size=HIDDEN, intermediate_size=64, num_local_experts=8,
                               num_experts_per_tok=2, experts_implementation="eager")
        self.block = MixtralSparseMoeBlock(config)

    def forward(self, x):
        return self.block(x)


def get_model():
    return _corpus.randomize(MoE(), seed=0)


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, 1 + i % 5, HIDDEN, generator=gen),) for i in range(n)]


def get_inputs():
    return sample_inputs(2)[1]

