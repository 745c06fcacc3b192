"""SkipNet-style gated ResNet for 32x32 CIFAR-like images (batch 1).

Architecture: a 3x3 stem conv (16 channels), then six residual
``BasicBlock``s arranged in three groups of two (16, 32 and 64 channels;
the first block of groups 2 and 3 downsamples by 2), global average pooling
and a linear classifier (10 classes).

Dynamic behaviour: in front of every block sits a small gate (global average
pool -> linear(C, 1) -> sigmoid).  The gate's probability is turned into a
Python bool with ``.item()``; when it is above 0.5 the block is executed,
otherwise the block is skipped.  A skipped downsampling block still has to
change the feature-map shape, so the skip path applies a 1x1 strided
"downsample" layer looked up by name in ``self.ds_layers``
(``'group{g}_ds{i}'``) -- only blocks that change the shape have an entry.

``sample_inputs`` draws flat-coloured images (eight colours, cycled) with a
noise texture.  The gates are sharpened and their biases hard-coded
(calibrated once on such images) so that every gate opens for some colours
and stays closed for others, far from the 0.5 threshold; the eight colours
follow seven distinct paths.
"""

import itertools

import torch
import torch.nn as nn

# Sibling module: dycl puts the model file's folder on sys.path.
from _blocks import BasicBlock

# (group, index-in-group, in_planes, planes, stride) for each gated block.
LAYOUT = [
    (1, 0, 16, 16, 1),
    (1, 1, 16, 16, 1),
    (2, 0, 16, 32, 2),
    (2, 1, 32, 32, 1),
    (3, 0, 32, 64, 2),
    (3, 1, 64, 64, 1),
]

# Input distribution of sample_inputs: the eight corners of the RGB cube as
# flat colours, plus Gaussian texture.
PALETTE = list(itertools.product((-1.0, 1.0), repeat=3))
TEXTURE_STD = 0.5

# The freshly initialised gates are sharpened (weights scaled up) and given
# biases calibrated once on sample_inputs-style images, so that each gate's
# decision goes both ways with a comfortable margin.
GATE_WEIGHT_SCALE = 10.0
GATE_BIASES = [3.985, -4.649, 3.511, 1.043, 0.643, 0.044]


class Gate(nn.Module):
    """Global average pool -> linear(C, 1) -> sigmoid: probability of executing a block."""

    def __init__(self, channels):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(channels, 1)

    def forward(self, x):
        return torch.sigmoid(self.fc(self.pool(x).flatten(1)))


class SkipNet(nn.Module):
    def __init__(self, num_classes=10, layout=LAYOUT):
        super().__init__()
        self.layout = [(g, i) for g, i, _, _, _ in layout]
        self.stem = nn.Sequential(
            nn.Conv2d(3, 16, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(16),
            nn.ReLU(inplace=True),
        )
        self.blocks = nn.ModuleList()
        self.gates = nn.ModuleList()
        self.ds_layers = nn.ModuleDict()
        for g, i, inplanes, planes, stride in layout:
            self.gates.append(Gate(inplanes))
            self.blocks.append(BasicBlock(inplanes, planes, stride))
            if stride != 1 or inplanes != planes:
                self.ds_layers['group{}_ds{}'.format(g, i)] = nn.Sequential(
                    nn.Conv2d(inplanes, planes, kernel_size=1, stride=stride, bias=False),
                    nn.BatchNorm2d(planes),
                )
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(layout[-1][3], num_classes)

    def _gate(self, i, x):
        """Probability (shape [1, 1]) that block ``i`` is executed on ``x``."""
        return self.gates[i](x)

    def forward(self, x):
        x = self.stem(x)
        for i in range(len(self.blocks)):
            gate_prob = self._gate(i, x)
            if gate_prob.item() > 0.5:
                x = self.blocks[i](x)
            else:
                # Skipped block: keep the identity, but match the block's
                # output shape when it would have downsampled.
                key = 'group{}_ds{}'.format(*self.layout[i])
                if key in self.ds_layers:
                    x = self.ds_layers[key](x)
        x = self.avgpool(x).flatten(1)
        return self.fc(x)


def get_model():
    torch.manual_seed(0)
    model = SkipNet()
    with torch.no_grad():
        for gate, bias in zip(model.gates, GATE_BIASES):
            gate.fc.weight.mul_(GATE_WEIGHT_SCALE)
            gate.fc.bias.fill_(bias)
    return model.eval()


def sample_inputs(n, seed=0):
    """``n`` image batches of shape [1, 3, 32, 32]: a flat colour plus noise texture.

    Sample ``i`` uses colour ``PALETTE[i % 8]``; the seed only changes the
    texture.  The gates mostly see the global colour, so the path is set by
    the colour (seven distinct paths over the eight colours), far from the
    0.5 decision threshold.
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
