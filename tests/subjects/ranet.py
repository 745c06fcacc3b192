"""DyCL subject: RANet (resolution adaptive network), through its own `adaptive_forward_compile`,
imported unmodified from ../shared/dycl-adnn.

A small CIFAR configuration (the argument object of adNN/RANet/args.py, smaller): three scales
(32x32, 16x16, 8x8 feature maps), two blocks in the coarsest scale flow and one more per finer
flow, two layers per block, 8 base channels growing by 4: four exits. Seeded random weights; each
exit's linear layer is scaled by EXIT_SCALE (the first two exits' logits spread 0.03 at seeded
weights, the last two' 0.4-0.5) so that the softmax confidence spreads around the model's own
threshold (0.5): the example and 50 samples leave at each of the four exits or run to the end.
"""
import types

import torch
import torch.nn as nn

from _adnn import coloured_images, import_adnn

ranet = import_adnn("adNN.RANet.models.RANet")

EXIT_SCALE = [60.0, 60.0, 6.0, 3.0]


def _args():
    args = types.SimpleNamespace(
        data="cifar10", nBlocks=2, block_step=1, step=2, stepmode="even", nChannels=8, growthRate=4,
        grFactor=[4, 2, 1], bnFactor=[4, 2, 1], scale_list=[1, 2, 3], compress_factor=0.25,
        reduction=0.5, bnAfter=True)
    args.nScales = len(args.grFactor)
    return args


class Subject(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = ranet.RANet(_args())
        with torch.no_grad():
            for exit_, scale in zip(self.net.classifier, EXIT_SCALE, strict=True):
                exit_.linear.weight.mul_(scale)
                exit_.linear.bias.mul_(scale)

    def forward(self, x):
        return self.net.adaptive_forward_compile(x)


def get_model():
    return Subject().eval()


def sample_inputs(n, seed=0):
    return coloured_images(n, seed)


def get_inputs():
    return sample_inputs(1)[0]
