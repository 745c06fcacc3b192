"""`len(x)` and `x.size(0)` in tensor code: a shape read where the dim is dynamic (the batch of `x`),
a constant where it is static (the length of `seq`). `n = len(x)` is also recomputed inside the
region that uses it."""
import torch
from torch import nn

DYNAMIC = {"x": {0: "batch"}}


class LenSize(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 4)
        self.pos = nn.Parameter(torch.randn(5, 4))

    def forward(self, x, seq):
        h = self.fc(x)
        n = len(x)
        idx = torch.arange(len(seq)) % 5
        h = h + self.pos[idx[: len(self.fc(x)) % 5]].sum(0) + torch.ones(n, 1) * len(seq)
        if (h - len(seq)).sum().item() > 0:
            h = h * x.size(0)
        else:
            h = h - seq.size(0)
        return h.reshape(len(h), -1)


def get_model():
    torch.manual_seed(0)
    return LenSize().eval()


def sample_inputs(n, seed=0):
    """Batches of 3 shifted up or down in turn, so the sum's sign alternates."""
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(3, 6, generator=g) + (12.0 if k % 2 else -12.0), torch.randn(7, 2, generator=g))
            for k in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
