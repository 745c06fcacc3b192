"""Shallow-Deep Network (SDN): a small CNN with confidence-based early exits.

Architecture: four residual stages (16, 32, 64 and 64 channels; every stage
after the first halves the resolution, 32x32 -> 4x4).  Downsampling stages use
the CIFAR-ResNet "option A" shortcut: the identity is subsampled and padded
with zero channels.  An internal classifier (global average pool -> linear,
10 classes) follows each of the first three stages, and a final classifier
follows the last stage.

Dynamic behaviour: after every internal classifier the model computes its
confidence ``conf = softmax(out).max()``.  If ``conf.item() > self.threshold``
the forward pass returns early with ``(out, i)`` -- the logits and the exit
index as a Python int.  Otherwise it continues to the next stage; the final
classifier returns ``(out, num_exits)``.  There are therefore four possible
paths (exit 0, 1, 2 or the final classifier).

The internal classifiers' weights are scaled by hard-coded "sharpness"
constants, and ``sample_inputs`` cycles through four image contrasts.  The
convolutional trunk is bias-free (BatchNorm in eval mode, ReLU), so the
exits' logits scale with the input contrast; the constants were calibrated
once so that contrast level ``j`` leaves at exit ``j`` (level 3: the final
classifier) with comfortable confidence margins.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

# Multipliers applied to the internal classifiers' freshly initialised
# weights (see module docstring).
EXIT_SHARPNESS = [3.0, 20.0, 120.0]

# Input distribution of sample_inputs: a flat colour plus Gaussian texture,
# multiplied by one of four contrast levels (level j -> exit j).
COLOUR = (1.0, -1.0, 1.0)
TEXTURE_STD = 0.5
CONTRAST_LEVELS = (3.0, 1.0, 0.35, 0.08)


class Stage(nn.Module):
    """Residual stage: conv-bn-relu-conv-bn plus an option-A shortcut, then relu."""

    def __init__(self, in_channels, out_channels, stride=1):
        super().__init__()
        self.stride = stride
        self.pad_channels = out_channels - in_channels
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)

    def shortcut(self, x):
        if self.stride != 1:
            x = x[:, :, ::self.stride, ::self.stride]
        if self.pad_channels > 0:
            n, _, h, w = x.shape
            zeros = torch.zeros(n, self.pad_channels, h, w, dtype=x.dtype, device=x.device)
            x = torch.cat([x, zeros], dim=1)
        return x

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class InternalClassifier(nn.Module):
    """Global average pool -> linear."""

    def __init__(self, channels, num_classes):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.linear = nn.Linear(channels, num_classes)

    def forward(self, x):
        return self.linear(self.pool(x).flatten(1))


class SDN(nn.Module):
    def __init__(self, num_classes=10, threshold=0.8):
        super().__init__()
        self.threshold = threshold
        self.stem = nn.Sequential(
            nn.Conv2d(3, 16, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(16),
            nn.ReLU(inplace=True),
        )
        widths = [16, 16, 32, 64, 64]
        self.stages = nn.ModuleList(
            Stage(widths[i], widths[i + 1], stride=1 if i == 0 else 2) for i in range(4)
        )
        # One internal classifier after each stage except the last.
        self.exits = nn.ModuleList(
            InternalClassifier(widths[i + 1], num_classes) for i in range(3)
        )
        self.num_exits = len(self.exits)
        self.final = InternalClassifier(widths[-1], num_classes)

    def forward(self, x):
        x = self.stem(x)
        for i, stage in enumerate(self.stages):
            x = stage(x)
            if i < self.num_exits:
                out = self.exits[i](x)
                conf = torch.softmax(out, dim=1).max()
                if conf.item() > self.threshold:
                    return out, i
        out = self.final(x)
        return out, self.num_exits


def get_model():
    torch.manual_seed(0)
    model = SDN()
    with torch.no_grad():
        for head, sharpness in zip(model.exits, EXIT_SHARPNESS):
            head.linear.weight.mul_(sharpness)
    return model.eval()


def sample_inputs(n, seed=0):
    """``n`` image batches of shape [1, 3, 32, 32] at four contrast levels.

    Sample ``i`` is ``CONTRAST_LEVELS[i % 4] * (COLOUR + texture)``; the seed
    only changes the texture.  High-contrast images give large logits and a
    confident early exit; low-contrast ones go deeper.
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
