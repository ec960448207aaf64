"""The run's lifecycle: a run streamed in batches ends as the same picture as the run read whole."""

from __future__ import annotations

from graphview.core.options import RunOptions
from graphview.core.run import Run
from tests.conftest import lesson, model


def stream(window, qtbot, run: Run, script: str, batch: int = 25) -> None:
    """Feed ``run``'s events as a runner would, then wait until the window has caught up."""
    window.begin_run(script, RunOptions(steps=2))
    for start in range(0, len(run.events), batch):
        window.append_events(run.events[start:start + batch])
        qtbot.wait(1)
    qtbot.waitUntil(lambda: window.runs.settled, timeout=30000)


def picture(window):
    """What the canvas shows: every node, and the state of those visible."""
    return sorted((i, it.isVisible(), it.state if it.isVisible() else None, it.saved if it.isVisible() else None)
                  for i, it in window.scene.node_items.items())


def test_a_streamed_run_ends_like_the_run_read_whole(window, record, qtbot):
    whole = record(model("mlp_optimizer"), steps=2)
    script = whole.start["script"]
    stream(window, qtbot, whole, script)
    streamed = picture(window)
    assert window.run.status == "ok" and len(window.run.events) == len(whole.events)
    assert window.cursor == 0  # untouched while it streamed: it opens at its start, as a trace does
    assert window.status_label.text().startswith("run ok:")
    assert len(window.memory.series["total"]) == len(whole.events)
    window.begin_run(None, RunOptions(steps=2), whole)
    assert picture(window) == streamed


def test_a_streaming_run_stays_at_its_start_and_a_moved_cursor_stays_put(window, record, qtbot):
    whole = record(model("mlp_optimizer"), steps=2)
    window.begin_run(whole.start["script"], RunOptions(steps=2))
    window.append_events(whole.events[:60])
    qtbot.waitUntil(lambda: window.runs.settled, timeout=10000)
    assert window.cursor == 0 and window.position_label.text().startswith(" 0 / 59")
    window.set_cursor(10)
    window.append_events(whole.events[60:])
    qtbot.waitUntil(lambda: window.runs.settled, timeout=30000)
    assert window.cursor == 10 and not window.follow_live
    assert window.position_label.text().startswith(f" 10 / {len(whole.events) - 1}")  # the run grew under it


def test_earlier_runs_of_the_same_script_are_kept_and_another_script_clears_them(window, record):
    first = record(lesson("chain_rule"))
    script = first.start["script"]
    window.begin_run(script, RunOptions(), first)
    window.begin_run(script, RunOptions(retain_graph=True), record(lesson("chain_rule"), retain_graph=True))
    assert [label for label, _ in window.earlier_runs] == ["default"]
    assert len(window.memory.overlays) == 1
    other = record(lesson("prediction"))
    window.begin_run(other.start["script"], RunOptions(), other)
    assert window.earlier_runs == [] and window.memory.overlays == []


def test_a_script_opened_anew_has_no_earlier_runs_and_runs_alike_are_numbered(window, record):
    first = record(lesson("chain_rule"))
    script = first.start["script"]
    window.begin_run(script, RunOptions(), first)
    window.begin_run(script, RunOptions(), record(lesson("chain_rule")))  # "Run again", same options
    window.begin_run(script, RunOptions(), record(lesson("chain_rule")))
    assert [o.name() for o in window.memory.overlays] == ["earlier run 1: default options",
                                                          "earlier run 2: default options"]
    window.runs.start_afresh()  # File > Open of the same script
    window.begin_run(script, RunOptions(), record(lesson("chain_rule")))
    assert window.earlier_runs == [] and window.memory.overlays == []


def test_a_new_live_run_does_not_show_the_last_runs_pitfalls(window, record):
    failed = record(lesson("error_backward_twice"))
    window.begin_run(failed.start["script"], RunOptions(), failed)
    assert window.diagnostics.findings
    window.begin_run(failed.start["script"], RunOptions())  # a re-run starts: nothing recorded yet
    assert window.diagnostics.findings == [] and window.diagnostics.topLevelItemCount() == 0


def test_a_replaced_run_is_freed_though_the_collector_froze_it_while_shown(window, record, qtbot):
    """What a trace makes is frozen out of the collector's passes (bulk_load): a run, its drawing
    and the window's pending slices hold no reference cycles, so the run shown before is freed
    by reference counting once another replaces it."""
    import gc
    import weakref

    from graphview.core.run import bulk_load

    first = record(model("mlp_optimizer"), steps=2)
    shown = Run(list(first.events))
    window.begin_run(None, RunOptions(steps=2), shown)
    window.runs.slices.later(lambda: None)  # a slice waiting while the collector freezes what lives
    with bulk_load():
        pass
    gone = weakref.ref(shown)
    del shown
    window.begin_run(None, RunOptions(), record(lesson("chain_rule")))
    qtbot.waitUntil(lambda: window.runs.settled, timeout=10000)
    qtbot.wait(20)
    gc.collect()
    assert gone() is None


def test_the_title_names_the_script_and_only_options_that_change_something(window, record):
    """A run with the default options was titled "graphview — mlp_optimizer.py [default]", which
    read as nothing a newcomer knew; options that change the run are still named."""
    run = record(model("mlp_optimizer"), steps=1)
    window.begin_run(run.start["script"], RunOptions(steps=3), run)
    assert window.windowTitle() == "graphview — mlp_optimizer.py"
    window.begin_run(run.start["script"], RunOptions(retain_graph=True, detach_at=["model.1"]), run)
    assert window.windowTitle() == "graphview — mlp_optimizer.py [retain_graph=on, detach at model.1]"
