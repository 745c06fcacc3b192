"""Staged network whose blocks live in a ModuleDict keyed 'stage{}_block{}'.

Not every (stage, block) slot has a block (the layout is sparse), so forward
walks nested static loops, rebuilds each key with str.format, tests
``key in self.blocks`` and, for present blocks, asks a per-block gate
(stored under the same key in ``self.gates``) whether to run it.  Block
numbers in the keys are 1-based, so the inner loop variable is reassigned.
"""

import torch
import torch.nn as nn

DIM = 16
NUM_STAGES = 3
DEPTH = 2
# 1-based (stage, block) slots that hold a block.
PRESENT = [(0, 1), (0, 2), (1, 2), (2, 1)]


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        return x + torch.relu(self.fc(self.norm(x)))


class StagedNet(nn.Module):
    def __init__(self, dim=DIM, num_stages=NUM_STAGES, depth=DEPTH, num_classes=10):
        super().__init__()
        self.num_stages = num_stages
        self.depth = depth
        self.stem = nn.Linear(dim, dim)
        self.blocks = nn.ModuleDict()
        self.gates = nn.ModuleDict()
        for s, b in PRESENT:
            self.blocks['stage{}_block{}'.format(s, b)] = Block(dim)
            self.gates['stage{}_block{}'.format(s, b)] = nn.Linear(dim, 1)
        self.transitions = nn.ModuleList([nn.Linear(dim, dim) for _ in range(num_stages)])
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        h = self.stem(x)
        for s in range(self.num_stages):
            for b in range(self.depth):
                b = b + 1  # keys are 1-based
                key = 'stage{}_block{}'.format(s, b)
                if key in self.blocks:
                    if torch.sigmoid(self.gates[key](x)) > 0.5:
                        h = self.blocks[key](h)
            h = torch.relu(self.transitions[s](h))
        return self.head(h)


def get_model():
    torch.manual_seed(0)
    model = StagedNet()
    with torch.no_grad():
        # Gate number j (in PRESENT order) reads input feature j.
        for j, (s, b) in enumerate(PRESENT):
            gate = model.gates['stage{}_block{}'.format(s, b)]
            gate.weight.zero_()
            gate.bias.zero_()
            gate.weight[0, j] = 1.0
    return model.eval()


def sample_inputs(n, seed=0):
    """Control features 0..3 are +-(1..1.5) following the bits of a per-sample code."""
    gen = torch.Generator().manual_seed(seed)
    inputs = []
    for i in range(n):
        code = (5 * i + 2) % 16
        x = 0.5 * torch.randn(1, DIM, generator=gen)
        for bit in range(len(PRESENT)):
            sign = 1.0 if (code >> bit) & 1 else -1.0
            x[0, bit] = sign * (1.0 + 0.5 * torch.rand(1, generator=gen).item())
        inputs.append((x,))
    return inputs


def get_inputs():
    return sample_inputs(1)[0]
