"""Pitfall: an in-place op modified a tensor that autograd saved for backward."""
import torch

p = torch.ones(3, requires_grad=True)
q = p.exp()   # ExpBackward0 saves its result q
q += 1        # changes q in place
q.sum().backward()  # RuntimeError: ... modified by an inplace operation
