"""Pitfall: .cpu() does not detach; NumPy refuses a tensor that requires grad."""
import torch

w = torch.tensor([1.0, 2.0], requires_grad=True)
out = w * 2
array = out.cpu().numpy()  # RuntimeError: Can't call numpy() on Tensor that requires grad
