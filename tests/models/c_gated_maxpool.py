"""A gate in front of a max-pooling block (SkipNet's feed-forward gate pools first).

The gate reads the mean of the first channel; when open, the block pools and convolves,
otherwise the input passes through at half scale. A region with a MaxPool
carries a NaN guard (an ONNX `If` of its own, see dycl/torch_nan.py), so
running the decision in one graph means nesting that `If` in the block's.
"""

import torch
import torch.nn as nn


class GatedMaxPool(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool2d(2)
        self.conv = nn.Conv2d(3, 3, 3, padding=1)
        self.up = nn.Upsample(scale_factor=2)

    def forward(self, x):
        if x[:, 0].mean() > 0:
            x = x + self.up(self.conv(self.pool(x)))
        else:
            x = x * 0.5
        return x.relu()


def get_model():
    torch.manual_seed(0)
    return GatedMaxPool().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, 3, 8, 8, generator=gen) + (1.0 if k % 2 else -1.0),) for k in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
