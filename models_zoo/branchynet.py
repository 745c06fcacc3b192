"""BranchyNet-style CNN with entropy-based early exits, for 32x32 images (batch 1).

Architecture: a conv backbone of three stages (conv-bn-relu then 2x2 max
pool; 16, 32 and 64 channels, 32x32 -> 16x16 -> 8x8 -> 4x4) and a final
classifier (global average pool -> linear, 10 classes).  Two side branches
leave the backbone, after stage 1 and after stage 2; each is a small conv
(conv-bn-relu) followed by its own global-average-pool -> linear classifier.

Dynamic behaviour: at each side branch the model computes the entropy of the
branch's softmax, ``ent = -(p * p.log()).sum()``.  If
``ent.item() < self.entropy_thresholds[k]`` the branch is confident enough
and the forward pass returns its logits early; otherwise the backbone
continues.  The final classifier's logits are returned at the end.  There
are three possible paths (branch 0, branch 1 or the final exit); the output
is always a [1, 10] logits tensor.

The branch classifiers' weights are scaled by hard-coded "sharpness"
constants, and ``sample_inputs`` cycles through three image contrasts.  The
convolutional trunk is bias-free (BatchNorm in eval mode, ReLU, max
pooling), so the branches' logits scale with the input contrast; the
constants were calibrated once so that contrast level ``j`` leaves at
branch ``j`` (level 2: the final exit) with comfortable entropy margins.
The logits stay small enough that no softmax probability underflows to 0,
so ``p.log()`` is finite.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

# Entropy thresholds of the two side branches (in nats; a uniform
# distribution over 10 classes has entropy ln 10 = 2.30).
ENTROPY_THRESHOLDS = (0.5, 0.5)

# Multipliers applied to the branch classifiers' freshly initialised
# weights (see module docstring).
EXIT_SHARPNESS = [17.1, 41.3]

# Input distribution of sample_inputs: a flat colour plus Gaussian texture,
# multiplied by one of three contrast levels (level j -> exit j).
COLOUR = (-1.0, 1.0, 1.0)
TEXTURE_STD = 0.5
CONTRAST_LEVELS = (2.0, 0.7, 0.2)


def stage(in_channels, out_channels):
    """conv-bn-relu then 2x2 max pool: one backbone stage."""
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1, bias=False),
        nn.BatchNorm2d(out_channels),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(2),
    )


class Branch(nn.Module):
    """Side branch: conv-bn-relu, global average pool, linear."""

    def __init__(self, channels, num_classes):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(channels, channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(channels),
            nn.ReLU(inplace=True),
        )
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.linear = nn.Linear(channels, num_classes)

    def forward(self, x):
        return self.linear(self.pool(self.conv(x)).flatten(1))


class BranchyNet(nn.Module):
    def __init__(self, num_classes=10, entropy_thresholds=ENTROPY_THRESHOLDS):
        super().__init__()
        self.entropy_thresholds = list(entropy_thresholds)
        self.stage1 = stage(3, 16)
        self.stage2 = stage(16, 32)
        self.stage3 = stage(32, 64)
        self.branches = nn.ModuleList([Branch(16, num_classes), Branch(32, num_classes)])
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, num_classes)
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode='fan_out', nonlinearity='relu')

    def entropy(self, logits):
        p = F.softmax(logits, dim=1)
        return -(p * p.log()).sum()

    def forward(self, x):
        x = self.stage1(x)
        out = self.branches[0](x)
        ent = self.entropy(out)
        if ent.item() < self.entropy_thresholds[0]:
            return out

        x = self.stage2(x)
        out = self.branches[1](x)
        ent = self.entropy(out)
        if ent.item() < self.entropy_thresholds[1]:
            return out

        x = self.stage3(x)
        return self.fc(self.pool(x).flatten(1))


def get_model():
    torch.manual_seed(0)
    model = BranchyNet()
    with torch.no_grad():
        for branch, sharpness in zip(model.branches, EXIT_SHARPNESS):
            branch.linear.weight.mul_(sharpness)
    return model.eval()


def sample_inputs(n, seed=0):
    """``n`` image batches of shape [1, 3, 32, 32] at three contrast levels.

    Sample ``i`` is ``CONTRAST_LEVELS[i % 3] * (COLOUR + texture)``; the seed
    only changes the texture.  High-contrast images give large branch logits,
    a low-entropy softmax and an early exit; low-contrast ones go deeper.
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
