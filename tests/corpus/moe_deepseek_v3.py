"""transformers' DeepSeek-V3 MoE block, eager experts: a sigmoid router with a score-correction bias and
grouped top-k (the best `topk_group` of `n_group` expert groups by the sum of each group's top-2 scores,
the rest masked to -inf, then top-k with `sorted=False`), a host loop over the experts the router hit,
and a shared expert."""
import torch
from torch import nn

import _corpus
from transformers import DeepseekV3Config
from transformers.models.deepseek_v3.modeling_deepseek_v3 import DeepseekV3MoE

HIDDEN = 32


class MoE(nn.Module):
    def __init__(self):
        super().__init__()
        config = DeepseekV3Config(hidden_size=HIDDEN, intermediate_size=32, moe_intermediate_size=16,
                                  n_routed_experts=8, num_experts_per_tok=2, n_group=4, topk_group=2,
                                  n_shared_experts=1, experts_implementation="eager")
        self.block = DeepseekV3MoE(config)

    def forward(self, x):
        return self.block(x)


def get_model():
    model = _corpus.randomize(MoE(), seed=1)
    with torch.no_grad():  # a non-zero correction bias, as trained checkpoints have
        bias = model.block.gate.e_score_correction_bias
        bias.copy_(torch.randn(bias.shape, generator=torch.Generator().manual_seed(2)) * 0.1)
    return model


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, 1 + i % 4, HIDDEN, generator=gen),) for i in range(n)]


def get_inputs():
    return sample_inputs(3)[2]
