"""A submodule whose forward branches (so it is inlined) and loops over its own ModuleList:
the loop is unrolled against the submodule, not read as `self.stack.layers` from the model's scope."""
import torch
from torch import nn


class Stack(nn.Module):
    def __init__(self, d=6, depth=3):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(d, d) for _ in range(depth))

    def forward(self, x):
        for layer in self.layers:
            x = torch.tanh(layer(x))
        if x.mean().item() > 0:
            x = x * 2
        return x


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stack = Stack()
        self.head = nn.Linear(6, 2)

    def forward(self, x):
        return self.head(self.stack(x))


def get_model():
    torch.manual_seed(0)
    return Net().eval()


def sample_inputs(n, seed=0):
    """Inputs whose stack output has either sign of mean, in turn."""
    g = torch.Generator().manual_seed(seed)
    model = get_model()
    out = []
    for k in range(n):
        for _ in range(200):
            x = torch.randn(1, 6, generator=g) * 3
            with torch.no_grad():
                h = x
                for layer in model.stack.layers:
                    h = torch.tanh(layer(h))
            if (h.mean().item() > 0) == (k % 2 == 0):
                break
        out.append((x,))
    return out


def get_inputs():
    return sample_inputs(1)[0]
