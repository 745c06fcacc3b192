"""Dynamic-resolution CNN: one package for image batches of any size and resolution.

Architecture: a 3x3 stem conv (3 -> 16 channels, BatchNorm, ReLU); for
large images an extra stride-2 "downsample" stage (3x3 conv, 16 -> 16,
BatchNorm, ReLU); a residual ``BasicBlock`` (16 -> 32 channels, stride 2);
a gated residual ``BasicBlock`` (32 -> 32); global average pooling and a
linear classifier (10 classes).  Input: images [B, 3, H, W], example
[1, 3, 32, 32].

Dynamic behaviour:

* ``DYNAMIC`` declares the batch, height and width of ``x`` dynamic, so one
  package serves every batch size and resolution.
* Shape-determined decision: ``if x.shape[-1] > 48:`` -- images wider than
  48 pixels get the extra downsampling stage, so wide images are processed
  at roughly the cost of small ones.  The host decides it from the input's
  shape alone.
* Value-determined decision: a gate (global average pool -> linear(32, 1))
  scores every image; ``if torch.sigmoid(gate).mean() > 0.5:`` -- a mean
  over the batch, so one decision per batch -- runs the second block,
  otherwise it is skipped (identity).

``sample_inputs`` draws flat-coloured images (the eight corners of the RGB
cube, cycled) with a noise texture.  The gate is sharpened and its bias
hard-coded (calibrated once on such images) so that four colours open it
and four keep it closed, far from the 0.5 threshold.
"""

import itertools

import torch
import torch.nn as nn

# Sibling module: dycl puts the model file's folder on sys.path.
from _blocks import BasicBlock

DYNAMIC = {"x": {0: "batch", 2: "h", 3: "w"}}

# Images wider than this get the extra stride-2 stage.
WIDE = 48

# Input distribution of sample_inputs: the eight corners of the RGB cube as
# flat colours, plus Gaussian texture.
PALETTE = list(itertools.product((-1.0, 1.0), repeat=3))
TEXTURE_STD = 0.5

# The gate's freshly initialised weight is scaled up and its bias set to a
# value calibrated once on sample_inputs-style images (see module docstring).
GATE_WEIGHT_SCALE = 100.0
GATE_BIAS = 3.5


class Gate(nn.Module):
    """Global average pool -> linear(C, 1): one gate logit per image."""

    def __init__(self, channels):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(channels, 1)

    def forward(self, x):
        return self.fc(self.pool(x).flatten(1))


class DynResCNN(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 16, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(16),
            nn.ReLU(inplace=True),
        )
        self.down = nn.Sequential(
            nn.Conv2d(16, 16, kernel_size=3, stride=2, padding=1, bias=False),
            nn.BatchNorm2d(16),
            nn.ReLU(inplace=True),
        )
        self.block1 = BasicBlock(16, 32, stride=2)
        self.gate = Gate(32)
        self.block2 = BasicBlock(32, 32)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(32, num_classes)

    def forward(self, x):
        feat = self.stem(x)
        if x.shape[-1] > WIDE:
            feat = self.down(feat)
        feat = self.block1(feat)
        if torch.sigmoid(self.gate(feat)).mean() > 0.5:
            feat = self.block2(feat)
        feat = self.avgpool(feat).flatten(1)
        return self.fc(feat)


def get_model():
    torch.manual_seed(0)
    model = DynResCNN()
    with torch.no_grad():
        model.gate.fc.weight.mul_(GATE_WEIGHT_SCALE)
        model.gate.fc.bias.fill_(GATE_BIAS)
    return model.eval()


def sample_inputs(n, seed=0):
    """``n`` image batches of shape [1, 3, 32, 32]: a flat colour plus noise texture.

    Sample ``i`` uses colour ``PALETTE[i % 8]``; the seed only changes the
    texture.  The gate mostly sees the global colour, so whether the second
    block runs is set by the colour, far from the 0.5 threshold.
    """
    gen = torch.Generator().manual_seed(seed)
    inputs = []
    for i in range(n):
        colour = torch.tensor(PALETTE[i % len(PALETTE)]).view(1, 3, 1, 1)
        texture = TEXTURE_STD * torch.randn(1, 3, 32, 32, generator=gen)
        inputs.append((colour + texture,))
    return inputs


def get_inputs():
    return sample_inputs(1)[0]
