"""DigitsNet: a small convolutional network for 1x8x8 digit images (about 40k parameters).

Built only from layers every converter and mobile runtime knows (convolution, batch norm, ReLU,
max pooling, linear) and with no branches that depend on the data, so it exports to ONNX and
quantizes without surprises. Registered as the model ``digits_net``: ``model_name=digits_net`` in
the hyper-parameters picks it.
"""

import torch
from torch import nn
from workbench_trainkit import models

NUM_CLASSES = 10
INPUT_SHAPE = (1, 8, 8)  # channels, height, width


def conv_block(in_channels: int, out_channels: int) -> nn.Sequential:
    """3x3 convolution that keeps the image size, then batch norm and ReLU."""
    return nn.Sequential(
        # No bias: the batch norm right after it has its own.
        nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1, bias=False),
        nn.BatchNorm2d(out_channels),
        nn.ReLU(inplace=True),
    )


class DigitsNet(nn.Module):
    """Classifies a batch of 1x8x8 images (values in [0, 1]) into the digits 0-9.

    Input: float tensor of shape (N, 1, 8, 8). Output: logits of shape (N, 10).
    """

    def __init__(self, num_classes: int = NUM_CLASSES, dropout: float = 0.2):
        super().__init__()
        self.features = nn.Sequential(
            conv_block(1, 16),   # 16 x 8 x 8
            conv_block(16, 32),  # 32 x 8 x 8
            nn.MaxPool2d(2),     # 32 x 4 x 4
            conv_block(32, 64),  # 64 x 4 x 4
            nn.MaxPool2d(2),     # 64 x 2 x 2
        )
        self.classifier = nn.Sequential(
            nn.Flatten(),
            nn.Linear(64 * 2 * 2, 64),
            nn.ReLU(inplace=True),
            nn.Dropout(dropout),
            nn.Linear(64, num_classes),
        )

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(images))


@models.register("digits_net")
def digits_net(hp) -> DigitsNet:
    """A fresh DigitsNet with ``num_classes`` outputs; chosen by ``model_name=digits_net``."""
    return DigitsNet(num_classes=hp.get("num_classes", NUM_CLASSES))


def count_parameters(model: nn.Module) -> int:
    """The number of trainable weights in ``model``."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


if __name__ == "__main__":
    net = DigitsNet()
    print(f"DigitsNet: {count_parameters(net):,} parameters")
    print(net(torch.zeros(2, *INPUT_SHAPE)).shape)
