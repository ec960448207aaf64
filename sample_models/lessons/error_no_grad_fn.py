"""Error: backward() on a tensor that does not require grad (it was computed under no_grad)."""
import torch

w = torch.tensor(2.0, requires_grad=True)
with torch.no_grad():
    loss = (w * 3 - 1) ** 2
loss.backward()  # RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn
