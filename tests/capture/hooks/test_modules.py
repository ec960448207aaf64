"""The modules mechanism alone: module paths, parameter names, optimizer steps, zero_grad."""

import torch
from torch import nn

from graphview.capture.hooks.modules import ModuleHooks


def test_module_paths_optimizer_steps_and_zero_grad(alone):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.ReLU(), nn.Linear(3, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with alone(ModuleHooks, "install_modules", __file__) as events:
        model(torch.ones(4, 2)).sum().backward()
        optimizer.step()
        optimizer.zero_grad()
    entered = [e["path"] for e in events if e["ev"] == "module_enter"]
    assert entered == ["model", "model.0", "model.1", "model.1.0", "model.1.1"]  # numbered parts: the variable first
    names = {e["name"] for e in events if e["ev"] == "tensor" and e["kind"] == "param"}
    assert names == {"model." + qual for qual, _ in model.named_parameters()}
    step = next(e for e in events if e["ev"] == "optimizer_step")
    assert step["optimizer"] == "SGD" and len(step["tids"]) == 4
    reset = next(e for e in events if e["ev"] == "grad_reset")
    assert reset["how"] == "set_to_none" and len(reset["tids"]) == 4


class _Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        return torch.relu(self.fc(x))


def test_names_say_which_module_they_are(alone):
    """Blocks of an nn.ModuleList called in a loop, and two nn.Sequential models, each get
    names of their own: torch's names alone (``fc.weight`` three times, ``0.weight`` twice)
    would not tell them apart."""
    torch.manual_seed(0)
    blocks = nn.ModuleList([_Block() for _ in range(3)])
    teacher = nn.Sequential(nn.Linear(3, 2), nn.Tanh())
    student = nn.Sequential(nn.Linear(3, 2), nn.Tanh())
    with alone(ModuleHooks, "install_modules", __file__) as events:
        h = torch.ones(2, 3)
        for block in blocks:
            h = block(h)
        (teacher(h) - student(h)).pow(2).sum().backward()
    entered = [(e["path"], e["type"]) for e in events if e["ev"] == "module_enter"]
    assert entered == [("blocks.0", "_Block"), ("blocks.0.fc", "Linear"), ("blocks.1", "_Block"),
                       ("blocks.1.fc", "Linear"), ("blocks.2", "_Block"), ("blocks.2.fc", "Linear"),
                       ("teacher", "Sequential"), ("teacher.0", "Linear"), ("teacher.1", "Tanh"),
                       ("student", "Sequential"), ("student.0", "Linear"), ("student.1", "Tanh")]
    names = [e["name"] for e in events if e["ev"] == "tensor" and e["kind"] == "param"]
    expected = [f"blocks.{i}.{q}" for i, b in enumerate(blocks) for q, _ in b.named_parameters()]
    expected += [f"{m}.{q}" for m, model in (("teacher", teacher), ("student", student)) for q, _ in model.named_parameters()]
    assert names == expected and len(set(names)) == len(names)


def test_a_model_in_a_variable_keeps_torchs_own_names(alone):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Linear(2, 2)
            self.head = nn.Linear(2, 1)

        def forward(self, x):
            return self.head(self.encoder(x))

    net = Net()
    with alone(ModuleHooks, "install_modules", __file__) as events:
        net(torch.ones(1, 2)).sum().backward()
    names = {e["name"] for e in events if e["ev"] == "tensor" and e["kind"] == "param"}
    assert names == {q for q, _ in net.named_parameters()}  # as state_dict() names them


class _TiedLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 4)
        self.head = nn.Linear(4, 10, bias=False)
        self.head.weight = self.embed.weight  # one tensor, two names

    def forward(self, ids):
        return self.head(self.embed(ids))


def test_a_tied_weight_is_named_once_and_known_by_its_other_name(alone):
    """GPT-2's lm_head.weight is transformer.wte.weight: searching the graph for lm_head.weight
    found nothing. The name event says the model's other names for it, as torch's
    ``named_parameters(remove_duplicate=False)`` gives them."""
    model = _TiedLM()
    with alone(ModuleHooks, "install_modules", __file__) as events:
        model(torch.tensor([1, 2])).sum().backward()
    torch_names = [qual for qual, p in model.named_parameters(remove_duplicate=False) if p is model.embed.weight]
    [tied] = [e for e in events if e["ev"] == "name" and e.get("also")]
    assert [tied["name"], *tied["also"]] == torch_names  # (a model with named parts keeps torch's names)


class _WeightNormed(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.utils.parametrizations.weight_norm(nn.Conv1d(2, 2, 3))
        nn.init.normal_(self.conv.weight.data)  # the parametrized weight, read in the constructor
        self.head = nn.Linear(2, 1)

    def forward(self, x):
        return self.head(self.conv(x).mean(-1))


def test_a_weight_norms_parameters_have_torchs_names(record, write_script):
    """Wav2Vec2's weight-normed convolution is read in its constructor: its parametrization was
    taken for the root module and its parameters named original0 and original1."""
    import inspect

    source = inspect.getsource(_WeightNormed)
    run = record(write_script("import torch\nfrom torch import nn\n" + source + "\nmodel = _WeightNormed()\n"
                              "model(torch.randn(4, 2, 5)).sum().backward()\n"))
    names = {info.get("name") for info in run.tensors.values() if info.get("kind") == "param"}
    assert names == {qual for qual, _ in _WeightNormed().named_parameters()}
