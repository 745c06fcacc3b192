"""Found by scripts/fuzz.py (shrunk): a loop on a Python float that never holds.

No input runs the loop's body, so its region had no example shapes to export
at, and the conversion failed in step explore without a diagnostic. Then it
was refused with [unreached-code]; now exploration runs every `while` exactly
1 and 2 times as well, so the body has examples and the model converts (the
package never runs it, as the model never does).
"""
import torch
from torch import nn


class Fuzzed(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x):
        h = self.layers[0](x)
        score = 0.0
        k0 = 0
        while k0 < 1 and (score >= 1.0):
            k0 += 1
            h = torch.tanh(h)
        return h


def get_model():
    torch.manual_seed(0)
    return Fuzzed().eval()


def get_inputs():
    return (torch.randn(2, 4),)


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(2, 4, generator=gen),) for _ in range(n)]
