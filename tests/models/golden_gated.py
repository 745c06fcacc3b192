"""A small gated network used by the golden host.py test: a helper method, a
ModuleDict looked up by formatted keys, a gate per block and an early exit."""
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc = nn.Linear(width, width)
        self.down = None

    def forward(self, x):
        out = self.fc(x)
        if self.down is not None:
            out = self.down(out)
        return torch.relu(out) + x


class GatedNet(nn.Module):
    def __init__(self, width=8, depth=3):
        super().__init__()
        self.blocks = nn.ModuleList([Block(width) for _ in range(depth)])
        self.gates = nn.ModuleList([nn.Linear(width, 1) for _ in range(depth)])
        self.ds = nn.ModuleDict({"group0_ds1": nn.Tanh()})
        self.head = nn.Linear(width, 4)
        self.exit_threshold = 3.0

    def _gate(self, i, x):
        return torch.sigmoid(self.gates[i](x))

    def forward(self, x):
        x = x * 2
        for i, blk in enumerate(self.blocks):
            key = "group{}_ds{}".format(0, i)
            if key in self.ds:
                x = self.ds[key](x)
            g = self._gate(i, x)
            if g.item() > 0.5:
                x = blk(x)
            elif x.abs().sum() > self.exit_threshold:
                return self.head(x), i
        return self.head(x), len(self.blocks)


def get_model():
    torch.manual_seed(0)
    return GatedNet().eval()


def get_inputs():
    return (torch.randn(1, 8),)


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, 8, generator=gen) * (0.3 + 2.0 * (k % 3)),) for k in range(n)]
