"""`isinstance(x, list)` on a run-time value (RANet's ConvNormal: `if not isinstance(x, list): x = [x]`).

A test of a Python container type is decided like a shape: exploration sees it
go one way and folds it, and the arm it takes joins the code around it, so
the blocks stay one region. The confidence test depends on the input; samples
take both arms.
"""

import torch
import torch.nn as nn


class Dense(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.body = nn.Linear(width, width)

    def forward(self, x):
        if not isinstance(x, list):
            x = [x]
        return torch.cat([x[0], torch.relu(self.body(x[0]))], dim=1)


class TypeTests(nn.Module):
    def __init__(self):
        super().__init__()
        self.first = Dense(3)
        self.second = Dense(6)
        self.head = nn.Linear(12, 2)

    def forward(self, x):
        h = self.second(self.first(x))
        logits = self.head(h)
        if logits.softmax(-1).max() > 0.8:
            return logits
        return -logits


def get_model():
    torch.manual_seed(0)
    return TypeTests().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [((4.0 if i % 2 else 0.05) * torch.randn(1, 3, generator=gen),) for i in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
