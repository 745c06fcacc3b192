"""BlockDrop-style ResNet with an input-dependent block-dropping policy.

Architecture: a small policy network (strided 3x3 conv -> relu -> global
average pool -> linear -> sigmoid) looks at the image and produces one
keep-probability per residual block.  The main network is a strided stem
conv (32 channels, 16x16 maps), six residual branches
(conv-bn-relu-conv-bn, all 32 channels), global average pooling and a
linear classifier (10 classes).

Dynamic behaviour: the probabilities are thresholded into a binary policy
``policy = (probs > 0.5).float()`` of shape [1, num_blocks].  For every
block, ``policy[0, i].item() == 1`` decides in Python whether the residual
branch is executed (``x = x + block(x)``) or dropped (identity).  The model
returns a tuple ``(logits, policy)``.

``sample_inputs`` draws flat-coloured images (eight colours, cycled) with a
noise texture.  The policy head is sharpened and its biases hard-coded
(calibrated once on such images) so that every block is kept for some
colours and dropped for others, far from the 0.5 threshold; the eight
colours follow seven distinct policies.
"""

import itertools

import torch
import torch.nn as nn

NUM_BLOCKS = 6

# Input distribution of sample_inputs: the eight corners of the RGB cube as
# flat colours, plus Gaussian texture.
PALETTE = list(itertools.product((-1.0, 1.0), repeat=3))
TEXTURE_STD = 0.5

# The policy head is sharpened (weights scaled up) and given per-block biases
# calibrated once on sample_inputs-style images, so that each keep/drop
# decision goes both ways with a comfortable margin.
POLICY_WEIGHT_SCALE = 10.0
POLICY_BIASES = [-0.542, -0.38, -1.711, -2.064, -0.629, 3.082]


class PolicyNet(nn.Module):
    """Tiny CNN mapping an image to per-block keep probabilities in [0, 1]."""

    def __init__(self, num_blocks):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, kernel_size=3, stride=2, padding=1),
            nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d(1),
        )
        self.logit = nn.Linear(16, num_blocks)

    def forward(self, x):
        return torch.sigmoid(self.logit(self.features(x).flatten(1)))


def residual_branch(channels):
    return nn.Sequential(
        nn.Conv2d(channels, channels, kernel_size=3, padding=1, bias=False),
        nn.BatchNorm2d(channels),
        nn.ReLU(inplace=True),
        nn.Conv2d(channels, channels, kernel_size=3, padding=1, bias=False),
        nn.BatchNorm2d(channels),
    )


class BlockDrop(nn.Module):
    def __init__(self, num_blocks=NUM_BLOCKS, channels=32, num_classes=10):
        super().__init__()
        self.policy_net = PolicyNet(num_blocks)
        self.stem = nn.Sequential(
            nn.Conv2d(3, channels, kernel_size=3, stride=2, padding=1, bias=False),
            nn.BatchNorm2d(channels),
            nn.ReLU(inplace=True),
        )
        self.blocks = nn.ModuleList(residual_branch(channels) for _ in range(num_blocks))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(channels, num_classes)

    def forward(self, x):
        probs = self.policy_net(x)
        policy = (probs > 0.5).float()

        x = self.stem(x)
        for i in range(len(self.blocks)):
            if policy[0, i].item() == 1:
                x = x + self.blocks[i](x)
            # else: the block is dropped and x passes through unchanged
        logits = self.fc(self.pool(x).flatten(1))
        return logits, policy


def get_model():
    torch.manual_seed(0)
    model = BlockDrop()
    with torch.no_grad():
        head = model.policy_net.logit
        head.weight.mul_(POLICY_WEIGHT_SCALE)
        head.bias.copy_(torch.tensor(POLICY_BIASES))
    return model.eval()


def sample_inputs(n, seed=0):
    """``n`` image batches of shape [1, 3, 32, 32]: a flat colour plus noise texture.

    Sample ``i`` uses colour ``PALETTE[i % 8]``; the seed only changes the
    texture.  The policy network mostly sees the global colour, so the path
    is set by the colour (seven distinct paths over the eight colours), far
    from the 0.5 decision threshold.
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
