"""Loops over ModuleLists with data-dependent skips (BlockDrop-like policy).

A policy layer reads the input and emits one keep-probability per residual
block; ``for i, layer in enumerate(self.layers)`` skips blocks whose
probability is below 0.5 (the first block always runs).  A second stage
walks ``zip(self.refiners, self.gates)`` and applies each refiner only when
its gate fires.
"""

import torch
import torch.nn as nn

DIM = 16
NUM_LAYERS = 3
NUM_REFINERS = 2


class Residual(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc1 = nn.Linear(dim, dim)
        self.fc2 = nn.Linear(dim, dim)

    def forward(self, x):
        return x + self.fc2(torch.relu(self.fc1(x)))


class PolicySkipNet(nn.Module):
    def __init__(self, dim=DIM, num_layers=NUM_LAYERS, num_refiners=NUM_REFINERS, num_classes=10):
        super().__init__()
        self.policy = nn.Linear(dim, num_layers)
        self.layers = nn.ModuleList([Residual(dim) for _ in range(num_layers)])
        self.refiners = nn.ModuleList([nn.Linear(dim, dim) for _ in range(num_refiners)])
        self.gates = nn.ModuleList([nn.Linear(dim, 1) for _ in range(num_refiners)])
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        keep = torch.sigmoid(self.policy(x))
        h = x
        for i, layer in enumerate(self.layers):
            if i > 0 and keep[0, i] < 0.5:
                continue
            h = layer(h)
        for refiner, gate in zip(self.refiners, self.gates):
            if torch.sigmoid(gate(x)).item() > 0.5:
                h = h + torch.tanh(refiner(h))
        return self.head(h)


def get_model():
    torch.manual_seed(0)
    model = PolicySkipNet()
    with torch.no_grad():
        # Policy logit i reads feature i; gate j reads feature NUM_LAYERS + j.
        model.policy.weight.zero_()
        model.policy.bias.zero_()
        for i in range(NUM_LAYERS):
            model.policy.weight[i, i] = 1.0
        for j, gate in enumerate(model.gates):
            gate.weight.zero_()
            gate.bias.zero_()
            gate.weight[0, NUM_LAYERS + j] = 1.0
    return model.eval()


def sample_inputs(n, seed=0):
    """Control features 0..4 are +-(1..1.5) following the bits of a per-sample code."""
    gen = torch.Generator().manual_seed(seed)
    num_bits = NUM_LAYERS + NUM_REFINERS
    inputs = []
    for i in range(n):
        code = (7 * i + 3) % (1 << num_bits)
        x = 0.5 * torch.randn(1, DIM, generator=gen)
        for bit in range(num_bits):
            sign = 1.0 if (code >> bit) & 1 else -1.0
            x[0, bit] = sign * (1.0 + 0.5 * torch.rand(1, generator=gen).item())
        inputs.append((x,))
    return inputs


def get_inputs():
    return sample_inputs(1)[0]
