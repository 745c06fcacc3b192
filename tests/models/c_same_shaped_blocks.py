"""Same-shaped residual blocks, each with weights of its own, that a policy keeps or drops (BlockDrop-like).

``policy = (probs > 0.5).float()`` is computed once; ``policy[0, i].item() == 1``
decides in the host whether block i runs (``x = x + block(x)``). Every block
is one region of the same shape with different weights: on TVM they share one
compiled library, each region binding its own weights.
"""

import torch
import torch.nn as nn

DIM = 8
NUM_BLOCKS = 4


class SameShapedBlocks(nn.Module):
    def __init__(self, dim=DIM, num_blocks=NUM_BLOCKS, num_classes=3):
        super().__init__()
        self.policy = nn.Linear(dim, num_blocks)
        self.blocks = nn.ModuleList([nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim))
                                     for _ in range(num_blocks)])
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        policy = (torch.sigmoid(self.policy(x)) > 0.5).float()
        for i in range(len(self.blocks)):
            if policy[0, i].item() == 1:
                x = x + self.blocks[i](x)
        return self.head(x), policy


def get_model():
    torch.manual_seed(0)
    model = SameShapedBlocks()
    with torch.no_grad():  # policy logit i reads input feature i
        model.policy.weight.zero_()
        model.policy.bias.zero_()
        for i in range(NUM_BLOCKS):
            model.policy.weight[i, i] = 4.0
    return model.eval()


def sample_inputs(n, seed=0):
    """Features 0..3 are +-(1..1.5) following the bits of a per-sample code: every block kept and dropped."""
    gen = torch.Generator().manual_seed(seed)
    inputs = []
    for i in range(n):
        code = (5 * i + 1) % (1 << NUM_BLOCKS)
        x = 0.5 * torch.randn(1, DIM, generator=gen)
        for bit in range(NUM_BLOCKS):
            x[0, bit] = (1.0 if (code >> bit) & 1 else -1.0) * (1.0 + 0.5 * torch.rand(1, generator=gen).item())
        inputs.append((x,))
    return inputs


def get_inputs():
    return sample_inputs(1)[0]
