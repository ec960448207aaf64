"""Gradient check against central finite differences (float64), in-process."""

from __future__ import annotations

import pytest

from graphview.capture.gradcheck import gradient_check
from graphview.capture.script import StopRun
from tests.conftest import SAMPLES, lesson


@pytest.mark.parametrize("script, tensor, expected", [
    ("chain_rule", "x", [20.0]),
    ("prediction", "w", [-18.0]),
    ("requires_grad_sum", "x", [2.0, 4.0, 6.0]),
])
def test_correct_gradients_agree(script, tensor, expected):
    result = gradient_check(lesson(script), tensor)
    assert result["autograd"] == pytest.approx(expected)
    assert result["numeric"] == pytest.approx(expected, rel=1e-6)
    assert result["max_rel_error"] < 1e-6


def test_parameters_of_a_model_by_qualified_name():
    result = gradient_check(lesson("numpy_mlp_comparison"), "w1")
    assert result["shape"] == [2, 2] and result["max_rel_error"] < 1e-6


def test_a_wrong_custom_backward_is_caught():
    result = gradient_check(str(SAMPLES / "pitfalls" / "wrong_custom_backward.py"), "x")
    assert result["autograd"] == pytest.approx([3.0, 6.0, 9.0])  # what the wrong backward says
    assert result["numeric"] == pytest.approx([3.0, 12.0, 27.0], rel=1e-6)  # d/dx x^3
    assert result["max_rel_error"] > 0.5


def test_unknown_tensor_and_no_backward(write_script):
    with pytest.raises(StopRun, match="no tensor named 'nope'"):
        gradient_check(lesson("chain_rule"), "nope")
    with pytest.raises(StopRun, match="never calls backward"):
        gradient_check(write_script("import torch\nx = torch.ones(2, requires_grad=True)\ny = x * 2\n"), "x")


@pytest.mark.parametrize("name, tensor", [("mlp_optimizer", "model.2.weight"), ("custom_function", "x")])
def test_step_scripts_are_checked_at_their_first_step(name, tensor):
    """A step script's backward is graphview's: the check calls step() and differentiates what
    it returns, and autograd agrees with finite differences."""
    from graphview.capture.gradcheck import gradient_check
    from tests.conftest import model

    result = gradient_check(model(name), tensor)
    assert result["tensor"] == tensor
    assert len(result["autograd"]) == len(result["numeric"]) > 0
    assert result["max_rel_error"] < 1e-5
