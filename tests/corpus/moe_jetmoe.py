"""transformers' JetMoE feed-forward block: its top-k router counts the tokens per expert and turns the counts
into a Python list with `.tolist()`; the parallel experts `split` the sorted tokens by those sizes and loop
over the chunks (some of them empty)."""
import torch
from torch import nn

import _corpus
from transformers import JetMoeConfig
from transformers.models.jetmoe.modeling_jetmoe import JetMoeMoE

HIDDEN = 32


class MoE(nn.Module):
    def __init__(self):
        super().__init__()
        config = JetMoeConfig(hidden_size=HIDDEN, intermediate_size=32, num_local_experts=4, num_experts_per_tok=2)
        self.block = JetMoeMoE(config)

    def forward(self, x):
        return self.block(x)


def get_model():
    return _corpus.randomize(MoE(), seed=1)


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, 1 + i % 4, HIDDEN, generator=gen),) for i in range(n)]


def get_inputs():
    return sample_inputs(3)[2]
