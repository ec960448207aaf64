"""Hugging Face ResNet (image classification) from a tiny random config: conv, BatchNorm in training, residuals."""
import torch
from transformers import ResNetConfig, ResNetForImageClassification

torch.manual_seed(0)
model = ResNetForImageClassification(ResNetConfig(num_channels=3, embedding_size=8, hidden_sizes=[8, 16],
                                                  depths=[1, 1], layer_type="basic", num_labels=3))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
images = torch.randn(2, 3, 32, 32)
labels = torch.tensor([1, 2])


def step():
    loss = model(pixel_values=images, labels=labels).loss
    return loss
