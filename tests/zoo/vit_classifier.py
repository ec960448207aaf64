"""Hugging Face ViT (image classification) from a tiny random config: patch embedding conv, CLS token."""
import torch
from transformers import ViTConfig, ViTForImageClassification

torch.manual_seed(0)
model = ViTForImageClassification(ViTConfig(image_size=16, patch_size=4, num_channels=3, hidden_size=32,
                                            num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                                            num_labels=3))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
images = torch.randn(2, 3, 16, 16)
labels = torch.tensor([0, 2])


def step():
    loss = model(pixel_values=images, labels=labels).loss
    return loss
