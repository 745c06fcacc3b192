"""DyCL subject: SkipNet-38 with feed-forward gates (`ResNetFeedForwardSP`, FFGate-I), through its own
`adaptive_forward_compile`, imported unmodified from ../shared/dycl-adnn."""
import torch
import torch.nn as nn

from _adnn import import_adnn

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
    gen = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        colour = 6 * torch.rand(1, 3, 1, 1, generator=gen) - 3
        out.append((colour + 0.5 * torch.randn(1, 3, 32, 32, generator=gen),))
    return out


def get_inputs():
    return sample_inputs(1)[0]
