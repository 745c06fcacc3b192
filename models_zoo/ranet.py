"""RANet-style resolution-adaptive anytime network for 32x32 images (batch 1).

Architecture: an initial layer builds base features at three resolutions
(32x32 with 16 channels, 16x16 with 32 and 8x8 with 64; a stem conv and two
strided convs).  Three sub-networks then run from the lowest resolution to
the highest: sub-network ``k`` takes the base features of its resolution,
fuses in the features of sub-network ``k - 1`` (2x nearest upsampling, channel
concatenation, 1x1 conv), applies two conv-bn-relu layers and feeds an
internal classifier (global average pool -> linear, 10 classes).  A final
"reduction" path takes the 32x32 features back down (two strided convs, each
fused by concatenation with the lower-resolution sub-network's features at
that resolution) to a fourth, final classifier.

Dynamic behaviour: after each sub-network's classifier the model computes
its confidence ``conf = softmax(logits).max()``.  If
``conf.item() > self.thresholds[k]`` the forward pass returns early with
``(logits, k)`` -- the logits and the exit index as a Python int -- so the
higher-resolution sub-networks never run for "easy" inputs.  Otherwise it
continues; the final classifier returns ``(logits, 3)``.  There are four
possible paths (exit 0, 1, 2 or the final classifier).

The internal classifiers' weights are scaled by hard-coded "sharpness"
constants, and ``sample_inputs`` cycles through four image contrasts.  The
convolutional trunk is bias-free (BatchNorm in eval mode, ReLU, nearest
upsampling), so the exits' logits scale with the input contrast; the
constants were calibrated once so that contrast level ``j`` leaves at exit
``j`` (level 3: the final classifier) with comfortable confidence margins.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

# Channels of the 32x32, 16x16 and 8x8 streams.
WIDTHS = (16, 32, 64)

# Confidence thresholds of the three internal classifiers.
EXIT_THRESHOLDS = (0.8, 0.8, 0.8)

# Multipliers applied to the internal classifiers' freshly initialised
# weights (see module docstring).
EXIT_SHARPNESS = [14.6, 19.7, 37.2]

# Input distribution of sample_inputs: a flat colour plus Gaussian texture,
# multiplied by one of four contrast levels (level j -> exit j).
COLOUR = (-1.0, -1.0, -1.0)
TEXTURE_STD = 0.5
CONTRAST_LEVELS = (3.0, 1.0, 0.35, 0.1)


def conv_bn_relu(in_channels, out_channels, stride=1, kernel_size=3):
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride,
                  padding=kernel_size // 2, bias=False),
        nn.BatchNorm2d(out_channels),
        nn.ReLU(inplace=True),
    )


class InitialLayer(nn.Module):
    """Base features at 32x32, 16x16 and 8x8, highest resolution first."""

    def __init__(self, widths):
        super().__init__()
        self.layers = nn.ModuleList()
        in_channels = 3
        for s, width in enumerate(widths):
            self.layers.append(conv_bn_relu(in_channels, width, stride=1 if s == 0 else 2))
            in_channels = width

    def forward(self, x):
        feats = []
        for layer in self.layers:
            x = layer(x)
            feats.append(x)
        return feats


class UpFusion(nn.Module):
    """Upsample the coarser sub-network's features 2x, concatenate, 1x1 conv."""

    def __init__(self, channels, coarse_channels):
        super().__init__()
        self.mix = conv_bn_relu(channels + coarse_channels, channels, kernel_size=1)

    def forward(self, x, coarse):
        up = F.interpolate(coarse, scale_factor=2, mode='nearest')
        return self.mix(torch.cat([x, up], dim=1))


class Classifier(nn.Module):
    """Global average pool -> linear."""

    def __init__(self, channels, num_classes):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.linear = nn.Linear(channels, num_classes)

    def forward(self, x):
        return self.linear(self.pool(x).flatten(1))


class RANet(nn.Module):
    def __init__(self, widths=WIDTHS, num_classes=10, thresholds=EXIT_THRESHOLDS):
        super().__init__()
        self.thresholds = list(thresholds)
        self.initial = InitialLayer(widths)
        # Sub-networks run coarsest first: stream k works at resolution
        # widths[-1 - k] (8x8, then 16x16, then 32x32).
        coarse_first = list(reversed(widths))
        self.fusions = nn.ModuleList(
            UpFusion(coarse_first[k], coarse_first[k - 1]) for k in range(1, len(widths))
        )
        self.streams = nn.ModuleList(
            nn.Sequential(conv_bn_relu(c, c), conv_bn_relu(c, c)) for c in coarse_first
        )
        self.classifiers = nn.ModuleList(Classifier(c, num_classes) for c in coarse_first)
        self.num_exits = len(self.classifiers)
        # Reduction path of the finest stream: 32x32 -> 16x16 -> 8x8, each step
        # concatenated with that resolution's sub-network features.
        self.reductions = nn.ModuleList(
            conv_bn_relu(widths[s] if s == 0 else 2 * widths[s], widths[s + 1], stride=2)
            for s in range(len(widths) - 1)
        )
        self.final = Classifier(2 * widths[-1], num_classes)
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode='fan_out', nonlinearity='relu')

    def forward(self, x):
        base = self.initial(x)  # [32x32, 16x16, 8x8]
        outs = []  # sub-network features, coarsest first
        h = None
        for k in range(len(self.streams)):
            h_in = base[len(base) - 1 - k]
            if k > 0:
                h_in = self.fusions[k - 1](h_in, h)
            h = self.streams[k](h_in)
            outs.append(h)
            logits = self.classifiers[k](h)
            conf = torch.softmax(logits, dim=1).max()
            if conf.item() > self.thresholds[k]:
                return logits, k
        # Nobody was confident: reduce the finest features back to 8x8.
        y = h
        for s in range(len(self.reductions)):
            y = self.reductions[s](y)
            y = torch.cat([y, outs[len(outs) - 2 - s]], dim=1)
        return self.final(y), self.num_exits


def get_model():
    torch.manual_seed(0)
    model = RANet()
    with torch.no_grad():
        for head, sharpness in zip(model.classifiers, EXIT_SHARPNESS):
            head.linear.weight.mul_(sharpness)
    return model.eval()


def sample_inputs(n, seed=0):
    """``n`` image batches of shape [1, 3, 32, 32] at four contrast levels.

    Sample ``i`` is ``CONTRAST_LEVELS[i % 4] * (COLOUR + texture)``; the seed
    only changes the texture.  High-contrast images give large logits and a
    confident exit at the coarse 8x8 classifier; low-contrast ones need the
    finer resolutions.
    """
    gen = torch.Generator().manual_seed(seed)
    colour = torch.tensor(COLOUR).view(1, 3, 1, 1)
    inputs = []
    for i in range(n):
        texture = TEXTURE_STD * torch.randn(1, 3, 32, 32, generator=gen)
        contrast = CONTRAST_LEVELS[i % len(CONTRAST_LEVELS)]
        inputs.append((contrast * (colour + texture),))
    return inputs


def get_inputs():
    return sample_inputs(1)[0]
