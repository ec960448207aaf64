"""no_grad() turns off graph recording for a block: no grad_fn, no saved tensors."""
import torch

model = torch.nn.Linear(10, 1)
input_data = torch.randn(4, 10)

with torch.no_grad():
    output = model(input_data)
print(output.requires_grad)  # False

w = torch.tensor(2.0, requires_grad=True)
with torch.no_grad():
    y = w * 5
print(y.requires_grad)       # False

with torch.inference_mode():
    features = model(input_data)
    result = features.softmax(dim=-1)
print(result.requires_grad)  # False
