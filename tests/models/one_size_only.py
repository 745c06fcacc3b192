"""Code that runs at one size of a dynamic dim only, and fails at every other: refused.

`h.reshape(20)` runs only where the batch is 5. Exploration reaches it at 5
rows alone, and replaying the decisions that led there at the other sizes
fails in the reshape, so which dims follow the batch cannot be told:
`[one-size-code]`, not a package whose region refuses other sizes.
"""
import torch
from torch import nn

DYNAMIC = {"x": {0: "batch"}}


class OneSize(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        h = self.lin(x)
        if x.shape[0] == 5:
            h = h.reshape(20)[:4].expand(5, 4)
        return h


def get_model():
    torch.manual_seed(0)
    return OneSize().eval()


def get_inputs():
    return (torch.randn(2, 4),)
