"""DyCL subject: BlockDrop-110 (`MyFlatResNet32` with its `Policy32` network), through its own
`adaptive_forward_compile`, imported unmodified from ../shared/dycl-adnn.

Seeded random weights. Each residual block's last batch-norm scale is set to
RESIDUAL_SCALE (as in zero-init-residual training), so that the residual
stream of 54 blocks stays near unit scale instead of doubling its variance at
every kept block, where float32 rounding alone would exceed the check's 1e-4.
The policy's own random weights already drop different blocks for different
flat-coloured images.
"""
import torch
import torch.nn as nn

from _adnn import coloured_images, import_adnn

blockdrop = import_adnn("adNN.blockdrop")

RESIDUAL_SCALE = 0.2


class Subject(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        agent = blockdrop.Policy32([1, 1, 1], num_blocks=54)
        self.net = blockdrop.MyFlatResNet32(agent, blockdrop.BasicBlock, [18, 18, 18], num_classes=10)
        with torch.no_grad():
            for segment in self.net.blocks:
                for block in segment:
                    block.bn2.weight.fill_(RESIDUAL_SCALE)

    def forward(self, x):
        return self.net.adaptive_forward_compile(x)


def get_model():
    return Subject().eval()


def sample_inputs(n, seed=0):
    return coloured_images(n, seed)


def get_inputs():
    return sample_inputs(1)[0]
