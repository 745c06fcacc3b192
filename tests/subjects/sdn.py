"""DyCL subject: a Shallow-Deep Network (`ResNet_SDN`), through its own `early_exit_compile`,
imported unmodified from ../shared/dycl-adnn.

At its own input size: `ResNet_SDN` sizes its final classifier for 256x256 images (a
16*64-wide linear layer after an 8x8 average pool of the 32x32 last stage), so that is what it
takes. Three stages of three basic blocks (ResNet-20's layout, not SDN's ResNet-56, to keep the
conversion cheap), with an internal classifier after each stage's second block. Seeded random
weights; each residual branch's last batch-norm scale is set to RESIDUAL_SCALE so that the
activations stay near unit scale, each internal classifier's linear layer is scaled by
EXIT_SCALE (so its logits' spread is 1.2, 1.5 and 1 instead of 1, 0.4 and 0.25), and the
model's own confidence threshold is CONFIDENCE_THRESHOLD: sample inputs leave at every exit.
"""
import torch
import torch.nn as nn

from _adnn import coloured_images, import_adnn

sdn = import_adnn("adNN.ShallowDeep.architectures.SDNs.ResNet_SDN")

CONFIDENCE_THRESHOLD = 0.5
RESIDUAL_SCALE = 0.2
EXIT_SCALE = [1.24, 3.86, 4.08]


def _params():
    return {"num_blocks": [3, 3, 3], "num_classes": 10, "augment_training": True, "input_size": 256,
            "block_type": "basic", "init_weights": True, "confidence_threshold": CONFIDENCE_THRESHOLD,
            "add_ic": [[0, 1, 0], [0, 1, 0], [0, 1, 0]]}


class Subject(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = sdn.ResNet_SDN(_params())
        with torch.no_grad():
            for block in self.net.layers:
                block.layers[0][4].weight.fill_(RESIDUAL_SCALE)  # the residual branch's last batch norm
            exits = [block.output.linear for block in self.net.layers if not block.no_output]
            for linear, scale in zip(exits, EXIT_SCALE, strict=True):
                linear.weight.mul_(scale)
                linear.bias.mul_(scale)

    def forward(self, x):
        return self.net.early_exit_compile(x)


def get_model():
    return Subject().eval()


def sample_inputs(n, seed=0):
    return coloured_images(n, seed, size=256)


def get_inputs():
    return sample_inputs(1)[0]
