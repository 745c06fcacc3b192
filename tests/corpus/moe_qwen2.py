"""transformers' Qwen2-MoE sparse block, eager experts: a shared expert under a sigmoid gate plus a
host loop over the routed experts the top-k router hit."""
import torch
from torch import nn

import _corpus
from transformers import Qwen2MoeConfig
from transformers.models.qwen2_moe.modeling_qwen2_moe import Qwen2MoeSparseMoeBlock

HIDDEN = 32


class MoE(nn.Module):
    def __init__(self):
        super().__init__()
        config = Qwen2MoeConfig(hidden_size=HIDDEN, moe_intermediate_size=32, shared_expert_intermediate_size=48,
                                num_experts=6, num_experts_per_tok=2, norm_topk_prob=True,
                                experts_implementation="eager")
        self.block = Qwen2MoeSparseMoeBlock(config)

    def forward(self, x):
        return self.block(x)


def get_model():
    return _corpus.randomize(MoE(), seed=1)


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, 1 + i % 4, HIDDEN, generator=gen),) for i in range(n)]


def get_inputs():
    return sample_inputs(3)[2]
