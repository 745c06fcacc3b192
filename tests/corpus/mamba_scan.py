"""transformers' Mamba mixer on its sequential path (no CUDA kernels): the selective scan is a Python
loop over the time steps, `for index in range(seq_len)`, each updating the SSM state; sequences of
different lengths run the loop a different number of times."""
import torch
from torch import nn

import _corpus
from transformers import MambaConfig
from transformers.models.mamba.modeling_mamba import MambaMixer

HIDDEN = 16


class MambaBlock(nn.Module):
    def __init__(self):
        super().__init__()
        config = MambaConfig(hidden_size=HIDDEN, state_size=4, expand=2, conv_kernel=3, time_step_rank=4,
                             num_hidden_layers=1, use_mambapy=False)
        self.mixer = MambaMixer(config, layer_idx=0)

    def forward(self, x):
        return self.mixer(x)


def get_model():
    return _corpus.randomize(MambaBlock(), seed=0, scale=0.3)


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, 1 + i % 5, HIDDEN, generator=gen),) for i in range(n)]


def get_inputs():
    return sample_inputs(3)[2]
