"""Input checks in forward: a value-determined `assert`, and `raise` under shape and None tests.

Each must survive conversion as a host check raising the same exception
with the same message; inputs that pass every check take both arms of the
data-dependent branch.
"""

import torch
import torch.nn as nn

DIM = 8
DYNAMIC = {"x": {0: "batch"}}


class Guarded(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(DIM, DIM)
        self.down = nn.Linear(DIM, DIM)

    def forward(self, x, scale):
        if x.ndim != 2:
            raise ValueError(f"expected a 2-D input, got {x.ndim}-D")
        if scale is None:
            raise TypeError("scale is required")
        if x.shape[0] > 64:
            raise ValueError("batch {} exceeds 64".format(x.shape[0]))
        assert x.sum() > -40, "input sum too small"
        assert x.shape[1] == DIM
        h = self.up(x) * scale
        if h.mean() > 0:
            h = torch.relu(h)
        else:
            h = self.down(h)
        assert (h.abs() < 1e4).all()
        return h


def get_model():
    torch.manual_seed(0)
    return Guarded().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(2, DIM, generator=gen) + (1.0 if i % 2 else -1.0), torch.tensor(1.5)) for i in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
