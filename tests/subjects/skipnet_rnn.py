"""DyCL subject: SkipNet-38 with the recurrent gate (`ResNetRecurrentGateRL`), through its own
`adaptive_forward_compile`, imported unmodified from ../shared/dycl-adnn.

Seeded random weights. Each residual block's last batch-norm scale is set to
RESIDUAL_SCALE (as in zero-init-residual training), so that the logits stay
near unit scale instead of growing through 18 blocks, where float32 rounding
alone comes near the check's 1e-4. The gates' own random weights already make
flat-coloured images (a random colour per image, plus noise) take different paths.
"""
import torch
import torch.nn as nn

from _adnn import coloured_images, import_adnn

skipnet = import_adnn("adNN.skipnet.cifar.models")

RESIDUAL_SCALE = 0.2


class Subject(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = skipnet.ResNetRecurrentGateRL(skipnet.BasicBlock, [6, 6, 6], num_classes=10,
                                                 embed_dim=10, hidden_dim=10)
        with torch.no_grad():
            for module in self.net.modules():
                if isinstance(module, skipnet.BasicBlock):
                    module.bn2.weight.fill_(RESIDUAL_SCALE)

    def forward(self, x):
        return self.net.adaptive_forward_compile(x)


def get_model():
    return Subject().eval()


def sample_inputs(n, seed=0):
    return coloured_images(n, seed)


def get_inputs():
    return sample_inputs(1)[0]
