"""Code behind a shape test no size exploration tries passes (the batch is never above 100): no input
reaches it, and forcing the test (the last resort for such code) fails there, since row 100 does not
exist at the sizes explored; its region has no shapes to export at: [unreached-code].
"""
import torch
from torch import nn

DYNAMIC = {"x": {0: "batch"}}


class Fuzzed(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x):
        h = self.layers[0](x)
        if x.shape[0] > 100:
            h = h + torch.tanh(h[100])
        return h


def get_model():
    torch.manual_seed(0)
    return Fuzzed().eval()


def get_inputs():
    return (torch.randn(2, 4),)


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(2, 4, generator=gen),) for _ in range(n)]
