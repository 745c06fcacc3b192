"""DyCL subject: SkipNet-38 with feed-forward gates (`ResNetFeedForwardSP`, FFGate-I), through its own
`adaptive_forward_compile`, imported unmodified from ../shared/dycl-adnn."""
import torch
import torch.nn as nn

from _adnn import coloured_images, import_adnn

skipnet = import_adnn("adNN.skipnet.cifar.models")


class Subject(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = skipnet.ResNetFeedForwardSP(skipnet.BasicBlock, [6, 6, 6], gate_type="ffgate1")

    def forward(self, x):
        return self.net.adaptive_forward_compile(x)


def get_model():
    return Subject().eval()


def sample_inputs(n, seed=0):
    return coloured_images(n, seed)


def get_inputs():
    return sample_inputs(1)[0]
