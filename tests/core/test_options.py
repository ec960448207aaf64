"""Run options: the what-if fields round-trip, validate with one-line reasons and label a run."""

from __future__ import annotations

import pytest

from graphview.core.events import is_options
from graphview.core.options import RunOptions, module_matches


def test_what_if_options_round_trip_and_label():
    options = RunOptions(checkpoint=["encoder.layers.*"], autocast="bfloat16", save_on_cpu=True)
    assert RunOptions.from_dict(options.to_dict()) == options
    assert is_options(options.to_dict())
    assert options.label() == "checkpoint encoder.layers.*, autocast bfloat16, save_on_cpu"
    assert RunOptions.from_dict({"retain_graph": True}).checkpoint == []  # an older trace's options


@pytest.mark.parametrize("options, message", [
    (RunOptions(checkpoint=["encoder..0"]), "--checkpoint 'encoder..0': expected a module path"),
    (RunOptions(checkpoint=[" "]), "--checkpoint '': expected a module path"),
    (RunOptions(autocast="int8"), "--autocast must be one of bfloat16, float16, not 'int8'"),
])
def test_bad_what_if_options_say_why_in_one_line(options, message):
    with pytest.raises(ValueError, match="^" + message.replace(".", r"\.").replace("*", r"\*")) as caught:
        options.validate()
    assert "\n" not in str(caught.value)


def test_a_pattern_matches_one_part_per_star():
    assert module_matches("encoder.layers.*", "encoder.layers.0")
    assert module_matches("encoder.layers.*", "encoder.layers.11")
    assert not module_matches("encoder.layers.*", "encoder.layers.0.linear1")
    assert not module_matches("encoder.layers.*", "encoder.layers")
    assert module_matches("*.fc", "block.fc") and module_matches("head", "head")
