"""Found by scripts/fuzz.py (shrunk): an `elif` whose only statement is a dead store.

`h = self.layers[0](h)` under the `elif` is overwritten before anything reads
it, so the stretch fused into one graph (the `elif` test and its arm)
computed nothing the host reads: a graph without outputs, which onnxruntime
refuses to run. The samples never took that arm, so the conversion passed
and the package failed on the first input that did.
"""
import torch
from torch import nn


class Fuzzed(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        self.head = nn.Linear(4, 3)

    def forward(self, x):
        h = self.layers[0](x)
        g = torch.tanh(x)
        n = 0
        if h.sum().item() > 0.0:
            h = self.layers[0](h)
            n += 1
            if h.sum().item() > 0.0:
                h = self.layers[0](h)
                return {'head': self.head(h)}
            elif h.sum().item() > 0.0:
                h = self.layers[0](h)
        h = self.layers[0](g)
        return {'head': self.head(h)}


def get_model():
    torch.manual_seed(212)
    return Fuzzed().eval()


def _rand(gen, rows, scale, shift):
    return tuple(torch.randn(rows, 4, generator=gen) * scale + shift for _ in range(1))


def get_inputs():
    return _rand(torch.Generator().manual_seed(212), 1, 1.0, 0.0)


def sample_inputs(n, seed=0):
    """Scales and shifts that send sums, means, any and all both ways."""
    gen = torch.Generator().manual_seed(seed)
    scales, shifts = (0.1, 1.0, 3.0, 10.0), (0.0, -1.0, 1.0, -3.0, 3.0)
    rows = (1,)
    return [_rand(gen, rows[k % len(rows)], scales[k % 4], shifts[k % 5]) for k in range(n)]
