"""Pitfall: a tensor made under torch.inference_mode() cannot be saved for backward: using it
in a computation that needs grad fails (torch.no_grad() would have been fine)."""
import torch

lin = torch.nn.Linear(3, 1)
with torch.inference_mode():
    features = torch.randn(4, 3) * 2  # an inference tensor
loss = lin(features).pow(2).mean()  # the linear layer must save features for its weight's grad
loss.backward()
