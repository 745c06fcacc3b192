"""Three shape decisions in one run of host code: the host takes the first two, the third stays in the graph.

`x` is [batch, T, 6], both dims dynamic. Long sequences (T > 6) are pooled
in pairs; big batches (batch > 4) return early through a light head; a
value-determined gate (its sign set by the inputs' shift) runs a residual
block; very short sequences (T < 3) get a bias. With fusion the host decides
T > 6 and then batch > 4 before any graph runs (four graphs, the early exit's
arm without the code after it) and the T < 3 test is an ONNX If in the
graphs of the arms that reach it (at most two decisions are taken this way).
"""
import torch
from torch import nn

DYNAMIC = {"x": {0: "batch", 1: "t"}}


class ShapeArms(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(6, 16)
        self.small = nn.Linear(16, 3)
        self.gate = nn.Linear(16, 1)
        self.block = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 16))
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        h = torch.relu(self.inp(x))
        if x.shape[1] > 6:
            h = nn.functional.avg_pool1d(h.transpose(1, 2), 2, ceil_mode=True).transpose(1, 2)
        if x.shape[0] > 4:
            return self.small(h.mean(1))
        if torch.sigmoid(self.gate(h.mean(1)) + 4 * x.mean()).mean() > 0.5:
            h = h + self.block(h)
        if x.shape[1] < 3:
            h = h + 1.0
        return self.head(h.mean(1))


def get_model():
    torch.manual_seed(0)
    return ShapeArms().eval()


def sample_inputs(n, seed=0):
    """Batches of 1-7 and lengths 1-9 in turn, shifted by +1 or -1 (every other pair: the gate's sign)."""
    gen = torch.Generator().manual_seed(seed)
    inputs = []
    for k in range(n):
        batch, length = 1 + (3 * k) % 7, 1 + (5 * k) % 9
        shift = 1.0 if (k // 2) % 2 == 0 else -1.0
        inputs.append((torch.randn(batch, length, 6, generator=gen) + shift,))
    return inputs


def get_inputs():
    return sample_inputs(1)[0]
