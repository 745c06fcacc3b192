"""A module-level helper whose control flow depends on tensor values: tracing would freeze
one arm, so dycl inlines the function (like a method) and the branch stays in the host."""
import torch
from torch import nn


def gated_residual(block, x, threshold):
    y = block(x)
    if y.norm() > threshold:
        return x + 0.1 * y
    return x + y


class Net(nn.Module):
    def __init__(self, d=6):
        super().__init__()
        self.block = nn.Linear(d, d)
        self.head = nn.Linear(d, 2)
        self.threshold = 2.0

    def forward(self, x):
        x = gated_residual(self.block, x, self.threshold)
        return self.head(x)


def get_model():
    torch.manual_seed(0)
    return Net().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [((0.2 if k % 2 else 6.0) * torch.randn(1, 6, generator=gen),) for k in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
