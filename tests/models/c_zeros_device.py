"""Multi-head scorer that accumulates into ``torch.zeros(..., device=x.device)``.

Sequences [B, T, D] are mean-pooled (``x.dim()`` check), then each head
adds or subtracts its scores into an accumulator depending on the sign of a
batch statistic, and the result is normalised by ``x.size(0)``.
"""

import torch
import torch.nn as nn

BATCH, STEPS, DIM = 4, 5, 16
NUM_HEADS = 3


class AccumulatingHeads(nn.Module):
    def __init__(self, dim=DIM, num_heads=NUM_HEADS, out=4):
        super().__init__()
        self.heads = nn.ModuleList([nn.Linear(dim, out) for _ in range(num_heads)])
        self.out = out

    def forward(self, x):
        if x.dim() == 3:
            x = x.mean(dim=1)
        acc = torch.zeros(x.shape[0], self.out, device=x.device)
        for i, head in enumerate(self.heads):
            scores = head(x)
            if x[:, i].mean() > 0:
                acc = acc + scores
            else:
                acc = acc - 0.5 * torch.relu(scores)
        count = torch.zeros(x.size(0), 1, device=x.device, dtype=x.dtype) + len(self.heads)
        return acc / count / x.size(0)


def get_model():
    torch.manual_seed(0)
    return AccumulatingHeads().eval()


def sample_inputs(n, seed=0):
    """[4, 5, 16] sequences; features 0..2 carry a +-1 offset following the bits of i."""
    gen = torch.Generator().manual_seed(seed)
    inputs = []
    for i in range(n):
        x = 0.3 * torch.randn(BATCH, STEPS, DIM, generator=gen)
        code = (3 * i + 1) % 8
        for bit in range(NUM_HEADS):
            x[:, :, bit] += 1.0 if (code >> bit) & 1 else -1.0
        inputs.append((x,))
    return inputs


def get_inputs():
    return sample_inputs(1)[0]
