"""Found by scripts/fuzz.py (shrunk): the same lines fused once per iteration of an unrolled loop.

`for layer in self.layers:` is unrolled, so the stretch `h = layer(h)` +
`while k0 < 1:` becomes one ONNX graph per iteration, all from the same
source lines. They were all named `block_L<line>`, so each iteration's graph
overwrote the one before: the package failed in its check or, where the
outputs agreed in shape, computed with another iteration's weights.
"""
import torch
from torch import nn


class Fuzzed(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        self.head = nn.Linear(4, 3)
        self.depth = 2

    def forward(self, x):
        h = self.layers[0](x)
        for layer0 in self.layers:
            for i0 in range(self.depth):
                h = self.layers[0](h)
                break
            h = layer0(h)
            k0 = 0
            while k0 < 1:
                k0 += 1
                h = layer0(h)
        return (self.head(h),)


def get_model():
    torch.manual_seed(0)
    return Fuzzed().eval()


def get_inputs():
    return (torch.randn(1, 4),)


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, 4, generator=gen) * (k + 1),) for k in range(n)]
