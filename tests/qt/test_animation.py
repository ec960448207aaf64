"""Animation export: one frame per stepping moment between two events, the view following the
action, the caption saying what happens; GIF and APNG (Pillow), MP4 and WebM where imageio-ffmpeg is."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from graphview.core import timeline
from graphview.core.export import ExportError
from graphview.qt.animation import (DEFAULT_SIZE, FRAME_DPI, ZOOM, AnimationOptions, FramePainter, moment, moments,
                                    render_animation)
from graphview.qt.canvas import style
from graphview.qt.canvas.view_fit import FIT_MARGIN, readable_scale
from tests.conftest import LESSONS, lesson, model

SMALL = AnimationOptions(size=(480, 300), max_frames=24)


def _frames(path) -> list[Image.Image]:
    image = Image.open(path)
    frames = []
    for k in range(getattr(image, "n_frames", 1)):
        image.seek(k)
        frames.append(image.convert("RGB").copy())
    return frames


def _orange(frame: Image.Image) -> int:
    """Pixels of the running node's border (the theme's running_border, #ff8c00)."""
    pixels = np.asarray(frame).reshape(-1, 3).astype(int)
    r, g, b = pixels[:, 0], pixels[:, 1], pixels[:, 2]
    return int(((r > 240) & (g > 120) & (g < 160) & (b < 40)).sum())


def test_the_second_backward_of_the_accumulation_lesson_as_a_gif(qapp, record, tmp_path):
    run = record(lesson("accumulate_without_clearing"))
    second = sorted(run.backwards.values(), key=lambda call: call.start)[1]
    path = tmp_path / "second.gif"
    frames, first, last = render_animation(run, str(path), AnimationOptions(start="backward:2", end="backward:2"))
    assert (first, last) == (second.start, second.end)
    expected = moments(run, second.start, second.end)
    assert frames == len(expected) and expected[0] == second.start and expected[-1] == second.end
    # a frame for every node the engine ran, in the engine's order (the trace's bw_node events)
    ran = [i for i in range(second.start, second.end + 1) if run.events[i]["ev"] == "bw_node"]
    assert [i for i in expected if run.events[i]["ev"] == "bw_node"] == ran
    pictures = _frames(path)
    assert len(pictures) == frames and pictures[0].size == (960, 600)
    # the engine's running node is lit in the frames of its moments, and in no other
    for index, picture in zip(expected, pictures):
        running = run.events[index]["ev"] in ("bw_node", "accumulate")
        assert (_orange(picture) > 200) == running, (index, run.events[index]["ev"])
    assert len({picture.tobytes() for picture in pictures}) == len(pictures)  # every frame shows a change


def test_an_apng_has_the_same_frames(qapp, record, tmp_path):
    run = record(lesson("chain_rule"))
    gif, apng = tmp_path / "a.gif", tmp_path / "a.apng"
    count, _, _ = render_animation(run, str(gif), SMALL)
    assert render_animation(run, str(apng), SMALL)[0] == count
    assert Image.open(apng).n_frames == count == Image.open(gif).n_frames


def test_the_view_follows_the_node_each_moment_is_about(qapp, record):
    run = record(lesson("retain_graph_twice"))
    painter = FramePainter(run, (480, 300), 0)
    assert painter.zoom == pytest.approx(readable_scale(FRAME_DPI))  # the graph is too tall to read whole
    followed = 0
    for index in moments(run, 0, len(run.events) - 1):
        painter.frame(index)
        item = painter.scene.item_at_event(index)
        if item is not None:
            followed += 1
            assert painter.source.contains(item.sceneBoundingRect()), index
        # no more room beyond the graph's top and bottom than the fit's margin
        shown = painter.scene.shown_rect()
        if shown.height() + 2 * FIT_MARGIN > painter.source.height():
            assert painter.source.top() >= shown.top() - FIT_MARGIN - 0.5
            assert painter.source.bottom() <= shown.bottom() + FIT_MARGIN + 0.5
    assert followed >= 10


def _running_and_root(run, call):
    """The node ids of the tensor a backward call was called on and of its grad_fn."""
    return [n.id for n in run._tensor_nodes_of[call.roots_tensors[0]]] + [f"op{call.roots[0]}"]


def test_no_frame_cuts_a_node_in_half(qapp, record):
    """A GIF of the accumulation lesson's first backward (the command line's default span) cut the
    node above its memory strip in half in its last frames: each frame is moved by up to half a
    row so that its edges fall between nodes, the node it follows kept in it."""
    from graphview.qt.canvas.view_fit import solid_rects

    run = record(lesson("accumulate_without_clearing"))
    indices = moments(run, 0, moment(run, "backward:1", True))  # (what the command line draws by default)
    painter = FramePainter(run, DEFAULT_SIZE, indices[0], (indices[0], indices[-1]), indices)
    assert painter.whole is None  # (followed: the graph does not read whole in the frame)
    for index in indices:
        painter.frame(index)
        cut = [rect for rect in solid_rects(painter.scene) if painter.source.intersects(rect)
               and not painter.source.contains(rect)]
        assert cut == [], (index, cut)
        item = painter.scene.item_at_event(index)
        if item is not None:
            assert painter.source.contains(item.sceneBoundingRect()), index


def test_a_backward_starts_on_the_tensor_it_was_called_on(qapp, record):
    run = record(model("mlp_optimizer"), steps=1)
    call = min(run.backwards.values(), key=lambda c: c.start)
    start = moment(run, "backward:1", False)
    assert start == call.start and run.events[start]["ev"] == "backward_start"
    painter = FramePainter(run, DEFAULT_SIZE, start, (start, call.end), moments(run, start, call.end))
    assert painter.whole is None  # (the MLP is taller than the frame: the frame follows)
    painter.frame(start)
    loss, grad_fn = _running_and_root(run, call)
    assert painter.scene.drawing.nodes[loss].kind != "op"
    for node_id in (loss, grad_fn):
        assert painter.source.contains(painter.scene.item_for(node_id).sceneBoundingRect()), node_id
    top = painter.scene.shown_rect().top()
    assert painter.source.top() > top + 200  # not the top of the graph, where its leaves are


def test_a_graph_that_reads_whole_in_the_frame_is_drawn_whole_in_every_frame(qapp, record):
    run = record(lesson("requires_grad_sum"))
    indices = moments(run, 0, len(run.events) - 1)
    painter = FramePainter(run, (960, 720), indices[0], (indices[0], indices[-1]), indices)
    assert painter.whole is not None and readable_scale(FRAME_DPI) <= painter.zoom <= ZOOM
    sources = set()
    for index in indices:
        painter.frame(index)
        sources.add(tuple(painter.source.getRect()))
        for item in painter.scene.node_items.values():
            if item.isVisible():
                assert painter.source.contains(item.sceneBoundingRect()), (index, item.node.title)
    assert len(sources) == 1  # drawn in the same place in every frame
    # in the default frame, under its memory strip, its 5 rows would not read whole: followed, readable
    assert FramePainter(run, DEFAULT_SIZE, indices[0], (indices[0], indices[-1]), indices).whole is None


def test_moments_name_events_backward_calls_and_steps(record):
    run = record(lesson("accumulate_without_clearing"))
    calls = sorted(run.backwards.values(), key=lambda call: call.start)
    assert moment(run, "backward:1", False) == calls[0].start and moment(run, "backward:1", True) == calls[0].end
    assert moment(run, "12", False) == 12 and moment(run, None, True) is None
    for bad, says in (("backward:3", "has 2 backward calls"), ("forward:1", "names no moment"),
                      ("backward:x", "names no moment")):
        with pytest.raises(ExportError, match=says):
            moment(run, bad, False)
    chosen = moments(run, 0, len(run.events) - 1, max_frames=5)
    assert len(chosen) == 5 and chosen[0] == 0 and chosen[-1] == len(run.events) - 1
    assert all(run.events[i]["ev"] in timeline.STOP_EVENTS for i in chosen[1:-1])


@pytest.mark.parametrize("options, says", [
    (AnimationOptions(start=30, end=10), "comes before"),
    (AnimationOptions(start=10 ** 6), "outside the run"),
    (AnimationOptions(size=(100, 100)), "frame size"),
    (AnimationOptions(fps=0.0), "frame rate"),
    (AnimationOptions(max_frames=1), "number of frames"),
])
def test_bad_options_are_refused_and_nothing_is_written(qapp, record, tmp_path, options, says):
    run = record(lesson("chain_rule"))
    with pytest.raises(ExportError, match=says):
        render_animation(run, str(tmp_path / "x.gif"), options)
    assert list(tmp_path.iterdir()) == []


def test_cancelling_writes_nothing(qapp, record, tmp_path):
    run = record(lesson("chain_rule"))
    seen = []

    def progress(done, total):
        seen.append((done, total))
        return done < 3

    with pytest.raises(ExportError, match="cancelled"):
        render_animation(run, str(tmp_path / "x.gif"), SMALL, progress)
    assert seen[-1][0] == 3 and list(tmp_path.iterdir()) == []


def test_a_video_needs_imageio_ffmpeg_or_says_how_to_get_it(qapp, record, tmp_path):
    run = record(lesson("chain_rule"))
    path = tmp_path / "x.mp4"
    try:
        import imageio_ffmpeg  # noqa: F401
    except ImportError:
        with pytest.raises(ExportError, match="pip install imageio-ffmpeg"):
            render_animation(run, str(path), SMALL)
        assert not path.exists()
    else:
        render_animation(run, str(path), SMALL)
        assert path.read_bytes()[4:8] == b"ftyp"  # an MP4 container


def test_the_dark_theme_draws_dark_frames_and_light_is_a_choice(qapp, record, tmp_path):
    run = record(lesson("chain_rule"))
    shown = style.colors()
    style.use(style.DARK)
    try:
        render_animation(run, str(tmp_path / "dark.gif"), SMALL)
        render_animation(run, str(tmp_path / "light.gif"), AnimationOptions(size=(480, 300), max_frames=24, theme="light"))
    finally:
        style.use(shown)
    dark, light = _frames(tmp_path / "dark.gif")[0], _frames(tmp_path / "light.gif")[0]
    assert sum(dark.getpixel((5, 5))) < 120 and sum(light.getpixel((5, 5))) > 600


@pytest.mark.parametrize("name", sorted(p.stem for p in LESSONS.glob("*.py")))
def test_every_lesson_exports_as_an_animation(qapp, record, tmp_path, name):
    run = record(lesson(name))
    count, _, _ = render_animation(run, str(tmp_path / "x.gif"), AnimationOptions(size=(320, 200), max_frames=8))
    assert Image.open(tmp_path / "x.gif").n_frames == count >= 1


def test_the_command_line_exports_a_gif_and_refuses_a_moment_that_is_not_there(tmp_path):
    out = tmp_path / "b.gif"
    done = subprocess.run([sys.executable, "-m", "graphview.app.cli", "export", lesson("accumulate_without_clearing"),
                           "-o", str(out), "--from", "backward:2", "--to", "backward:2", "--size", "480x300"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "wrote a GIF animation of" in done.stderr and Image.open(out).size == (480, 300)
    bad = subprocess.run([sys.executable, "-m", "graphview.app.cli", "export", lesson("chain_rule"),
                          "-o", str(tmp_path / "c.gif"), "--from", "backward:5"], capture_output=True, text=True,
                         timeout=300)
    assert bad.returncode == 2 and bad.stderr.strip().splitlines() == [
        "graphview: 'backward:5': the run has 1 backward call"]
    assert not (tmp_path / "c.gif").exists()


def test_the_window_exports_the_backward_at_its_cursor_and_a_web_page(window, record, tmp_path):
    from graphview.core.options import RunOptions
    from graphview.qt.animation import span_at

    run = record(lesson("accumulate_without_clearing"))
    window.begin_run(run.start["script"], RunOptions(), run)
    second = sorted(run.backwards.values(), key=lambda call: call.start)[1]
    window.set_cursor(second.start + 3)
    assert span_at(run, window.cursor) == (second.start, second.end)
    assert window.actions["export_animation"].isEnabled() and window.actions["export_web_page"].isEnabled()
    window.export_animation(str(tmp_path / "second.gif"))
    assert Image.open(tmp_path / "second.gif").n_frames == len(moments(run, second.start, second.end))
    assert "events" in window.statusBar().currentMessage()
    window.export_web_page(str(tmp_path / "run.html"))
    assert (tmp_path / "run.html").read_text().startswith("<!DOCTYPE html>")
    # an unwritable place: a message, the window goes on
    errors = []
    window.show_error = lambda title, message: errors.append(message)
    window.shares.show_error = window.show_error
    window.export_animation(str(tmp_path / "missing" / "x.gif"))
    assert errors and "x.gif" in errors[0]


def test_the_memory_strip_charts_the_activations_torch_holds_over_the_span(qapp, record, tmp_path):
    from graphview.core.held import held_at
    from graphview.qt.animation import STRIP_H, MemoryStrip

    run = record(lesson("retain_graph_twice"))
    first, last = 0, len(run.events) - 1
    strip = MemoryStrip(run, (first, last), 960)
    for index in moments(run, first, last):
        assert strip.at(index) == held_at(run, index).activations  # (what the memory answers' tests check against torch)
    with_chart, without = tmp_path / "a.gif", tmp_path / "b.gif"
    render_animation(run, str(with_chart), SMALL)
    render_animation(run, str(without), AnimationOptions(size=(480, 300), max_frames=24, chart=False))
    a, b = _frames(with_chart)[-1], _frames(without)[-1]
    assert a.size == b.size
    bottom = (0, 300 - STRIP_H + 2, 480, 300)
    assert a.crop(bottom).tobytes() != b.crop(bottom).tobytes()
