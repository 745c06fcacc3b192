"""`for i in range(x.shape[0])` over a dynamic batch, a branch on each row inside.

The loop's trip count is the batch size, so a fused graph runs an ONNX Loop
whose count is a symbolic dim.
"""

import torch
import torch.nn as nn

DYNAMIC = {"x": {0: "batch"}}


class LoopOverBatch(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(6, 6)

    def forward(self, x):
        h = self.lin(x)
        acc = torch.zeros(6)
        for i in range(x.shape[0]):
            if h[i].sum() > 0:
                acc = acc + h[i] * (i + 1)
            else:
                acc = acc - h[i]
        return acc


def get_model():
    torch.manual_seed(0)
    return LoopOverBatch().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(4, 6, generator=gen),) for _ in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
