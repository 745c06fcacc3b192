"""BlockDrop on ResNet-110 for 32x32 CIFAR-like images (batch 1), at full depth.

Architecture: ResNet-110 for CIFAR -- a 3x3 stem conv (16 channels), then 54
residual blocks in three groups of 18 (16, 32 and 64 channels; the first
block of groups 2 and 3 halves the resolution, 32x32 -> 16x16 -> 8x8),
global average pooling and a linear classifier (10 classes).  Each block is
a residual branch (conv-bn-relu-conv-bn, the first conv strided in a
downsampling block) added to a shortcut: the identity, or -- for the two
downsampling blocks -- a 1x1 strided conv + BatchNorm looked up by name in
``self.shortcuts`` (``'group{g}_ds{i}'``).  A small policy network (4x
average pooling to an 8x8 thumbnail -> two 3x3 convs with relu -> global
average pool -> linear -> sigmoid) looks at the image and produces one
keep-probability per block.

Dynamic behaviour: the probabilities are thresholded into a binary policy
``policy = (probs > 0.5).float()`` of shape [1, 54].  For every block,
``policy[0, i].item() == 1`` decides in Python whether the residual branch
is executed (``x = shortcut + block(x)``) or dropped (``x = shortcut``).  As
in the original BlockDrop, a dropped downsampling block still applies its
shortcut, so the feature-map shape always follows the network's layout.  The
model returns a tuple ``(logits, policy)``.

``sample_inputs`` draws flat-coloured images (eight colours, cycled) with a
noise texture.  The policy head is sharpened and its 54 biases hard-coded
(calibrated once on such images) so that every block is kept for some
colours and dropped for others, far from the 0.5 threshold; the eight
colours follow eight distinct policies.
"""

import itertools

import torch
import torch.nn as nn

GROUP_WIDTHS = (16, 32, 64)
BLOCKS_PER_GROUP = 18
NUM_BLOCKS = len(GROUP_WIDTHS) * BLOCKS_PER_GROUP

# Input distribution of sample_inputs: the eight corners of the RGB cube as
# flat colours, plus Gaussian texture.
PALETTE = list(itertools.product((-1.0, 1.0), repeat=3))
TEXTURE_STD = 0.5

# The policy head is sharpened (weights scaled up) and given per-block biases
# calibrated once on sample_inputs-style images, so that each keep/drop
# decision goes both ways with a comfortable margin.
POLICY_WEIGHT_SCALE = 200.0
POLICY_BIASES = [
    0.273, -21.489, 6.472, -21.742, 2.337, 4.009, 2.126, 6.619,
    6.2, -1.688, -5.723, 4.342, -7.606, 8.664, -10.487, -15.238,
    2.797, 4.224, 3.718, 3.765, -5.529, 1.71, -5.546, -22.175,
    -1.082, 14.588, -18.677, -2.663, -5.381, -25.884, 0.718, -9.218,
    1.125, 17.989, 3.88, 12.004, -0.912, -6.065, -4.347, 0.633,
    22.562, -4.286, -5.989, 4.62, 12.758, 9.904, 20.862, 4.471,
    -13.722, -0.907, 2.426, -8.64, -12.047, -9.986,
]


class PolicyNet(nn.Module):
    """Small CNN mapping an image to per-block keep probabilities in [0, 1]."""

    def __init__(self, num_blocks):
        super().__init__()
        self.features = nn.Sequential(
            nn.AvgPool2d(4),  # the policy looks at an 8x8 thumbnail
            nn.Conv2d(3, 16, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(16, 32, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d(1),
        )
        self.logit = nn.Linear(32, num_blocks)

    def forward(self, x):
        return torch.sigmoid(self.logit(self.features(x).flatten(1)))


def residual_branch(in_planes, planes, stride):
    return nn.Sequential(
        nn.Conv2d(in_planes, planes, kernel_size=3, stride=stride, padding=1, bias=False),
        nn.BatchNorm2d(planes),
        nn.ReLU(inplace=True),
        nn.Conv2d(planes, planes, kernel_size=3, padding=1, bias=False),
        nn.BatchNorm2d(planes),
    )


class BlockDrop110(nn.Module):
    def __init__(self, widths=GROUP_WIDTHS, blocks_per_group=BLOCKS_PER_GROUP, num_classes=10):
        super().__init__()
        self.policy_net = PolicyNet(len(widths) * blocks_per_group)
        self.stem = nn.Sequential(
            nn.Conv2d(3, widths[0], kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(widths[0]),
            nn.ReLU(inplace=True),
        )
        # (group, index-in-group) of every block, in execution order.
        self.layout = []
        self.blocks = nn.ModuleList()
        self.shortcuts = nn.ModuleDict()
        in_planes = widths[0]
        for g, planes in enumerate(widths, start=1):
            for i in range(blocks_per_group):
                stride = 2 if (i == 0 and g > 1) else 1
                self.layout.append((g, i))
                self.blocks.append(residual_branch(in_planes, planes, stride))
                if stride != 1 or in_planes != planes:
                    self.shortcuts['group{}_ds{}'.format(g, i)] = nn.Sequential(
                        nn.Conv2d(in_planes, planes, kernel_size=1, stride=stride, bias=False),
                        nn.BatchNorm2d(planes),
                    )
                in_planes = planes
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(widths[-1], num_classes)

    def forward(self, x):
        probs = self.policy_net(x)
        policy = (probs > 0.5).float()

        x = self.stem(x)
        for i in range(len(self.blocks)):
            g, b = self.layout[i]
            key = 'group{}_ds{}'.format(g, b)
            shortcut = x
            if key in self.shortcuts:
                shortcut = self.shortcuts[key](x)
            if policy[0, i].item() == 1:
                x = shortcut + self.blocks[i](x)
            else:
                # The block is dropped: only its shortcut is applied.
                x = shortcut
        logits = self.fc(self.pool(x).flatten(1))
        return logits, policy


def get_model():
    torch.manual_seed(0)
    model = BlockDrop110()
    with torch.no_grad():
        head = model.policy_net.logit
        head.weight.mul_(POLICY_WEIGHT_SCALE)
        head.bias.copy_(torch.tensor(POLICY_BIASES))
    return model.eval()


def sample_inputs(n, seed=0):
    """``n`` image batches of shape [1, 3, 32, 32]: a flat colour plus noise texture.

    Sample ``i`` uses colour ``PALETTE[i % 8]``; the seed only changes the
    texture.  The policy network mostly sees the global colour, so the
    policy is set by the colour (eight distinct policies over the eight
    colours), far from the 0.5 decision threshold.
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
