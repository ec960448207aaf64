"""What-if memory in the window: checkpoint a module from its box, see the summary, the boxes'
bytes in both runs and a measured suggestion; every figure is the runs' own."""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt

from graphview.core.options import RunOptions
from graphview.core.whatif import compare_runs, human, module_bytes_in_both
from graphview.qt.canvas.node_menu import add_checkpoint_actions
from graphview.qt.formatting import human_bytes
from tests.conftest import model

TRANSFORMER = model("transformer_block")


def before_backward(run) -> int:
    return next(i for i, e in enumerate(run.events) if e["ev"] == "backward_start")


def show(window, qtbot, run, options: RunOptions) -> None:
    """``run`` streamed into the window as a live run of ``options`` is."""
    window.begin_run(run.start["script"], options)
    for start in range(0, len(run.events), 60):
        window.append_events(run.events[start:start + 60])
        qtbot.wait(1)
    qtbot.waitUntil(lambda: window.runs.settled, timeout=30000)


def test_checkpoint_from_a_module_box_reruns_and_the_summary_has_both_peaks(window, record, qtbot):
    first = record(TRANSFORMER)
    window.begin_run(first.start["script"], RunOptions(), first)  # a whole run: drawn and summarised at once
    window.set_cursor(before_backward(first))
    layer = next(g for g in window.scene.groups.values() if g.path == "encoder.layers.0")
    layer_activations = layer.held.activations  # what its box shows ("51.2 KiB activations")
    # the module box's context menu asks for a re-run with that checkpoint
    asked: list[RunOptions] = []
    window.sigRunRequested.connect(asked.append)
    group = next(g for g in window.scene.groups.values() if g.path == "encoder.layers.0")
    actions = []
    add_checkpoint_actions(_Menu(actions), group.path, window.view.sigCheckpointRequested)
    assert [text for text, _ in actions] == ["Checkpoint this module (re-run): encoder.layers.0",
                                            "Checkpoint every encoder.layers.* (re-run)"]
    actions[1][1]()
    assert asked and asked[-1].checkpoint == ["encoder.layers.*"]
    assert window.toggles.checkpoint.text() == "encoder.layers.*"

    second = record(TRANSFORMER, checkpoint=["encoder.layers.*"])
    show(window, qtbot, second, asked[-1])
    summary = window.whatif
    assert summary.isVisibleTo(window)
    [step] = summary.comparisons
    assert step.peak_before == first.peak_per_step()[0]["peak"] and step.peak_after == second.peak_per_step()[0]["peak"]
    assert step.peak_after["cpu"] < step.peak_before["cpu"]
    assert step.recomputed_after == sum(1 for _, op in second.ops if op.get("recompute")) > 0
    assert step.modules[0].path == "encoder.layers.0" and step.modules[0].after < step.modules[0].before
    # the summary's figure for the layer is the activations its box showed (it was 83.8 KiB, its
    # weights included, beside the box's 51.2 KiB), and says so
    assert step.modules[0].before == layer_activations > 0
    text = summary.text()
    assert (f"encoder.layers.0: {human_bytes(step.modules[0].before)} → {human_bytes(step.modules[0].after)} "
            in text.replace("&nbsp;", " ")) and "of activations held at backward" in text
    assert human_bytes(step.peak_before["cpu"]) in text and human_bytes(step.peak_after["cpu"]) in text
    assert f"recomputed in backward: {step.recomputed_after} ops" in text
    # each module box shows its own bytes in both runs
    window.set_cursor(before_backward(second))
    both = module_bytes_in_both(first, second, 1)
    box = next(g for g in window.scene.groups.values() if g.path == "encoder.layers.0")
    assert box.compared == both["encoder.layers.0"]
    assert box.compared_text() == f"{human_bytes(both['encoder.layers.0'][0])} → {human_bytes(both['encoder.layers.0'][1])} activations"
    assert box.compared_text() in box.label()
    # the Diagnostics list the measured result of the checkpoint tried
    items = [window.diagnostics.topLevelItem(i).text(0) for i in range(window.diagnostics.topLevelItemCount())]
    measured = next(t for t in items if t.startswith("✓ checkpoint encoder.layers.*, measured"))
    assert human(first.peak_saved_bytes()["cpu"]) in measured and human(second.peak_saved_bytes()["cpu"]) in measured
    assert compare_runs(first, second)[0].peak_after == step.peak_after


def test_a_suggestion_names_the_layers_and_tries_them_in_one_click(window, record, qtbot, write_script):
    # two layers: recomputed one at a time in backward, checkpointing both saves most (one alone
    # is recomputed beside everything made before it)
    with open(TRANSFORMER, encoding="utf-8") as f:
        first = record(write_script(f.read().replace("num_layers=1", "num_layers=2")))
    window.begin_run(first.start["script"], RunOptions(), first)  # a whole run: drawn and summarised at once
    panel = window.diagnostics
    items = [panel.topLevelItem(i) for i in range(panel.topLevelItemCount())]
    suggestion = next(i for i in items if i.data(0, panel.SUGGESTION) is not None)
    assert suggestion.data(0, panel.SUGGESTION).pattern == "encoder.layers.*"
    panel.list.setCurrentItem(suggestion)
    assert panel.try_button.isVisibleTo(panel) and "encoder.layers.*" in panel.try_button.toolTip()
    asked: list[RunOptions] = []
    window.sigRunRequested.connect(asked.append)
    qtbot.mouseClick(panel.try_button, Qt.LeftButton)
    assert asked[-1].checkpoint == ["encoder.layers.*"]


def test_bad_what_if_options_in_the_panel_say_why_and_run_nothing(window, qtbot):
    asked: list[RunOptions] = []
    window.sigRunRequested.connect(asked.append)
    window.toggles.checkpoint.setText("encoder..0")
    window.toggles.run_button.click()
    assert asked == []
    assert "expected a module path" in window.toggles.arguments_error.text()


class _Menu:
    """Collects what a context menu would offer (a real QMenu blocks in exec)."""

    def __init__(self, actions: list) -> None:
        self.actions = actions

    def addAction(self, text, slot) -> None:
        self.actions.append((text, slot))


def test_with_no_pitfall_the_first_suggestion_is_shown_in_full_with_its_button(window, record, write_script):
    """A run with no pitfall but a checkpoint suggestion: the suggestion is selected, its detail and
    its "Try it" shown (the detail said "no autograd pitfalls found" again, below the list that says
    so, and the suggestion was cut off in the list's last lines with no button in sight)."""
    with open(TRANSFORMER, encoding="utf-8") as f:
        run = record(write_script(f.read().replace("num_layers=1", "num_layers=2")))
    window.begin_run(run.start["script"], RunOptions(), run)
    panel = window.diagnostics
    assert not panel.findings and panel.topLevelItemCount() >= 2
    current = panel.list.currentItem()
    assert current is panel.topLevelItem(1) and current.data(0, panel.SUGGESTION) is not None
    assert panel.try_button.isVisibleTo(panel)
    assert "Suggestion:" in panel.detail.toPlainText()


def test_the_summary_says_what_all_saved_holds_besides_activations(qtbot, record):
    """The summary said "all saved, weights included" of a lesson whose runs save no weight."""
    from graphview.qt.panels.whatif_summary import WhatIfSummary
    from tests.conftest import lesson

    before, after = record(lesson("chain_rule")), record(lesson("chain_rule"), retain_graph=True)
    summary = WhatIfSummary()
    qtbot.addWidget(summary)
    summary.show_comparison(compare_runs(before, after), "earlier run", "retain_graph")
    assert "all saved, inputs included: cpu" in summary.text() and "weights" not in summary.text()


def test_a_shut_boxs_activations_in_both_runs_read_whole_at_long_figures(window, record, qtbot, write_script):
    """The transformer sample with two layers and 40 sequences, re-run with its first layer
    checkpointed: the second layer's card compares 512.5 KiB with 512.5 KiB, and "512.5 KiB →
    512.5 KiB activations" was elided on it ("…"). Its line reads whole, both figures as the
    what-if summary gives them, on every shut card the comparison marks."""
    from graphview.qt.canvas.groups import CARD_TEXT_W

    with open(TRANSFORMER, encoding="utf-8") as f:
        text = f.read().replace("32, 4, 10, 4\n", "32, 4, 10, 40\n").replace("num_layers=1", "num_layers=2")
    script = write_script(text)
    first = record(script, steps=1)
    options = RunOptions(steps=1, checkpoint=["encoder.layers.0"])
    second = record(script, steps=1, checkpoint=["encoder.layers.0"])
    window.begin_run(script, RunOptions(steps=1), first)
    show(window, qtbot, second, options)
    window.set_cursor(before_backward(second))
    both = module_bytes_in_both(first, second, 1)
    before, after = both["encoder.layers.1"]
    assert len(human_bytes(before)) >= 9 and len(human_bytes(after)) >= 9  # both long: 512.5 KiB
    def cards():
        return [g for g in window.scene.groups.values() if g.isVisible() and g.collapsed and g.compared is not None]

    while "encoder.layers.1" not in {card.path for card in cards()}:
        level = window.scene.boxes.level()
        window.actions["open_level"].trigger()  # "]": the encoder opens, its layers shut inside
        assert window.scene.boxes.level() != level
    cards = cards()
    for card in cards:
        assert card.compared == both[card.path]
        _, line = card.card_lines(CARD_TEXT_W)[2]  # (the card's width less its padding, as painted)
        assert "…" not in line, line
        figures = [human_bytes(n) for n in card.compared]
        # each figure whole: with its unit, or its number before the unit both share
        assert all(f in line or f.split(" ")[0] in line for f in figures), (line, figures)


def test_try_it_on_an_open_trace_is_disabled_and_says_to_open_the_script(window, record, qtbot, write_script):
    """A trace is a recording with no script to run: "Try it" was enabled and, clicked, ran nothing
    and said nothing. It is disabled and says to open the script (named, never run for the user)."""
    with open(TRANSFORMER, encoding="utf-8") as f:
        run = record(write_script(f.read().replace("num_layers=1", "num_layers=2"), name="layers2.py"))
    window.begin_run(None, RunOptions(), run)  # as App.open_trace shows a whole trace
    panel = window.diagnostics
    items = [panel.topLevelItem(i) for i in range(panel.topLevelItemCount())]
    suggestion = next(i for i in items if i.data(0, panel.SUGGESTION) is not None)
    panel.list.setCurrentItem(suggestion)
    assert panel.try_button.isVisibleTo(panel) and not panel.try_button.isEnabled()
    assert "open its script (layers2.py)" in panel.try_button.toolTip()
    assert "open its script (layers2.py) with File > Open" in panel.detail.toPlainText()
    asked: list[RunOptions] = []
    window.sigRunRequested.connect(asked.append)
    panel._try()  # (a disabled button takes no click; its slot asks for nothing either)
    assert asked == []
    window.begin_run(run.start["script"], RunOptions(), run)  # the script opened: it re-runs
    panel.list.setCurrentItem(next(panel.topLevelItem(i) for i in range(panel.topLevelItemCount())
                                   if panel.topLevelItem(i).data(0, panel.SUGGESTION) is not None))
    assert panel.try_button.isEnabled() and "open its script" not in panel.detail.toPlainText()
    qtbot.mouseClick(panel.try_button, Qt.LeftButton)
    assert asked[-1].checkpoint == ["encoder.layers.*"]
