"""transformers' PhiMoE sparse block, eager experts: its router subclasses nn.Linear and calls
`super().forward(hidden_states)`, then a sparse-mixer top-2 (masked softmax), and a host loop over the
experts the router hit."""
import torch
from torch import nn

import _corpus
from transformers import PhimoeConfig
from transformers.models.phimoe.modeling_phimoe import PhimoeSparseMoeBlock

HIDDEN = 32


class MoE(nn.Module):
    def __init__(self):
        super().__init__()
        config = PhimoeConfig(hidden_size=HIDDEN, intermediate_size=32, num_local_experts=4, num_experts_per_tok=2,
                              experts_implementation="eager")
        self.block = PhimoeSparseMoeBlock(config)

    def forward(self, x):
        return self.block(x)


def get_model():
    return _corpus.randomize(MoE(), seed=1)


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, 1 + i % 4, HIDDEN, generator=gen),) for i in range(n)]


def get_inputs():
    return sample_inputs(3)[2]
