"""Residual blocks a policy drops (BlockDrop-like), keeping the shortcut in a name of its own.

A policy layer reads the input and keeps block i when its probability is
above 0.5. Each step sets ``shortcut = x`` (projected when the width changes)
and then either ``x = shortcut + block(x)`` or, for a dropped block,
``x = shortcut``: after the decision ``x`` and ``shortcut`` may hold one value.
"""

import torch
import torch.nn as nn

WIDTHS = (8, 8, 12, 12)


class GatedResidual(nn.Module):
    def __init__(self, widths=WIDTHS, num_classes=5):
        super().__init__()
        self.policy = nn.Linear(widths[0], len(widths))
        self.blocks = nn.ModuleList()
        self.projections = nn.ModuleDict()
        width = widths[0]
        for i, out in enumerate(widths):
            self.blocks.append(nn.Sequential(nn.Linear(width, out), nn.ReLU(), nn.Linear(out, out)))
            if out != width:
                self.projections[str(i)] = nn.Linear(width, out, bias=False)
            width = out
        self.head = nn.Linear(width, num_classes)

    def forward(self, x):
        keep = torch.sigmoid(self.policy(x)) > 0.5
        for i in range(len(self.blocks)):
            shortcut = x
            if str(i) in self.projections:
                shortcut = self.projections[str(i)](x)
            if keep[0, i].item():
                x = shortcut + self.blocks[i](x)
            else:
                x = shortcut
        return self.head(x)


def get_model():
    torch.manual_seed(0)
    model = GatedResidual()
    with torch.no_grad():  # policy logit i reads input feature i
        model.policy.weight.zero_()
        model.policy.bias.zero_()
        for i in range(len(WIDTHS)):
            model.policy.weight[i, i] = 4.0
    return model.eval()


def sample_inputs(n, seed=0):
    """Features 0..3 are +-(1..1.5) following the bits of a per-sample code: every block kept and dropped."""
    gen = torch.Generator().manual_seed(seed)
    inputs = []
    for i in range(n):
        code = (5 * i + 1) % (1 << len(WIDTHS))
        x = 0.5 * torch.randn(1, WIDTHS[0], generator=gen)
        for bit in range(len(WIDTHS)):
            x[0, bit] = (1.0 if (code >> bit) & 1 else -1.0) * (1.0 + 0.5 * torch.rand(1, generator=gen).item())
        inputs.append((x,))
    return inputs


def get_inputs():
    return sample_inputs(1)[0]
