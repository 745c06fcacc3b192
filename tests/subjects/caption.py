"""DyCL subject: the image-caption model (`CaptionModel` with `LSTMDecoderWithAttention`), greedy
decoding through its own `forward_compile`, imported unmodified from ../shared/dycl-adnn.

`Encoder.__init__` loads a pretrained torchvision backbone, which cannot be had here: the adapter
builds an `Encoder` around a small seeded CNN instead and runs `Encoder.forward` unmodified.
Seeded random weights: greedy decoding already stops after different numbers of steps for
different images (or runs to MAX_LENGTH).
"""
import torch
import torch.nn as nn

from _adnn import coloured_images, import_adnn

caption = import_adnn("adNN.ImgCaption")

WORDS = ["<pad>", "<start>", "<end>", "<unk>"] + [f"w{k}" for k in range(16)]
MAX_LENGTH = 12
ENCODER_DIM, ATTENTION_DIM, EMBED_DIM, DECODER_DIM = 32, 16, 16, 32


def _encoder() -> nn.Module:
    encoder = caption.Encoder.__new__(caption.Encoder)
    nn.Module.__init__(encoder)
    encoder.resnet = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(),
                                   nn.Conv2d(16, ENCODER_DIM, 3, stride=2, padding=1), nn.ReLU())
    encoder.adaptive_pool = nn.AvgPool2d((4, 4))  # what Encoder.__init__ sets
    return encoder


class Subject(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        word_map = {w: k for k, w in enumerate(WORDS)}
        decoder = caption.LSTMDecoderWithAttention(ATTENTION_DIM, EMBED_DIM, DECODER_DIM, len(WORDS), "cpu",
                                                   ENCODER_DIM, dropout=0.5)
        self.net = caption.CaptionModel(_encoder(), decoder, word_map, MAX_LENGTH)

    def forward(self, x):
        return self.net.forward_compile(x)


def get_model():
    return Subject().eval()


def sample_inputs(n, seed=0):
    return coloured_images(n, seed)


def get_inputs():
    return sample_inputs(1)[0]
