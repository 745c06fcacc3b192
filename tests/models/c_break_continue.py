"""Early exit with `break` and `continue` inside a loop over a ModuleList.

The loop is unrolled against the model; the data-dependent `break` becomes a
host flag that guards the later stages, `continue` skips the rest of a stage.
Stage i breaks when control feature i is high and skips its damping when it
is low, so the inputs pick every combination.
"""
import itertools

import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, width=8, stages=3):
        super().__init__()
        self.stages = nn.ModuleList([nn.Linear(width, width) for _ in range(stages)])
        self.heads = nn.ModuleList([nn.Linear(width, 3) for _ in range(stages)])

    def forward(self, x):
        h = x
        out = None
        exit_at = -1
        for i, (stage, head) in enumerate(zip(self.stages, self.heads)):
            h = torch.relu(stage(h))
            out = head(h)
            exit_at = i
            if x[:, i].sum() > 1.0:
                break
            if x[:, i].sum() < -1.0:
                continue
            h = h * 0.5
        return out, exit_at


def get_model():
    torch.manual_seed(0)
    return Net().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    codes = list(itertools.product((-2.0, 0.0, 2.0), repeat=3))
    inputs = []
    for k in range(n):
        x = 0.2 * torch.randn(1, 8, generator=gen)
        x[0, :3] += torch.tensor(codes[(7 * k) % len(codes)])
        inputs.append((x,))
    return inputs


def get_inputs():
    return sample_inputs(1)[0]
