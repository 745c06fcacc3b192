"""A shape test that pins the size of a dim, beside one that is a threshold.

`H == 3 and W == 3` (read from `h.shape`) lets the grid through at one size only, as timm's
`resample_abs_pos_embed` returns its position embedding unchanged at the native grid alone: the
region behind it joins a 3x3 table to the grid (`torch.cat`, which broadcasts nothing), so it runs at
3x3 only, and replaying that path at other sizes fails. The test itself guards it, so its static 3s are right and it needs no other size. Behind
`H > 4`, a threshold, the same kind of region sees every height above 4: its height is symbolic.
"""
import torch
from torch import nn

DYNAMIC = {"x": {1: "height", 2: "width"}}
SIZES = [(3, 3), (3, 5), (5, 3), (6, 6), (2, 3), (7, 4), (3, 3), (9, 5)]


class PinnedAndThreshold(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(1, 4)
        self.pos = nn.Parameter(torch.randn(3, 3, 4))

    def forward(self, x):
        h = self.proj(x.unsqueeze(-1))
        B, H, W, C = h.shape
        if H == 3 and W == 3:  # pinned: the grid is 3x3 on this arm
            h = torch.cat([h, self.pos.expand(B, -1, -1, -1)], -1)
        else:
            h = torch.cat([h, h * 0.5], -1)
        if H > 4:  # a threshold: every height above 4
            h = torch.cat([h[:, :4], h[:, 4:].tanh()], 1)
        else:
            h = h.relu()
        return h.sum((1, 2))


def get_model():
    torch.manual_seed(0)
    return PinnedAndThreshold().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(2, *SIZES[i % len(SIZES)], generator=gen),) for i in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
