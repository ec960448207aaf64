"""Animation export: the canvas as it changes between two moments of a run, one frame per moment
at which Step ▶ stops (an op, a backward node, ``.grad`` reset, an optimizer step ...).

Each frame is the graph at that moment, at a zoom where its labels read at the output's size. A
graph that fits the frame whole at a readable zoom (every node any frame shows) is drawn whole, in
the same place in every frame (at 100% at most); a bigger one at the smallest readable zoom, the
view following the action as the window's does (it centres the node the moment is about, or the
shut box that holds it: where a backward call starts, the tensor it was called on; it keeps its
place when a moment is about no node, and shows no more empty room beyond the graph's edge than it
must), under a caption band
(script, step, event, what happened, what backward holds). GIF and APNG are written with Pillow;
MP4 and WebM with imageio-ffmpeg (optional: a clear message says how to get it when it is absent).

Frames are drawn one at a time and kept as palette images (a 960x600 frame is 0.6 MB, not 2.3 MB),
and ``progress(done, total)`` may return False to cancel.
"""

from __future__ import annotations

import io
import os
import tempfile
from dataclasses import dataclass
from typing import Callable

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QImage, QPainter, QPainterPath, QPen

from graphview.core import timeline
from graphview.core.captions import caption as caption_of
from graphview.core.export import default_fits
from graphview.core.files import write_file
from graphview.core.held import busiest_device
from graphview.core.run import Run
from graphview.qt.canvas import GraphScene, style
from graphview.qt.canvas.view_fit import FIT_MARGIN, clear_move, readable_centre, readable_scale
from graphview.qt.export import ExportError, canvas_colors, content_rect
from graphview.qt.formatting import human_bytes

ANIMATION_SUFFIXES = (".gif", ".apng", ".mp4", ".webm")
#: the frame's size in pixels, unless asked for another
DEFAULT_SIZE = (960, 600)
SMALLEST_SIZE, LARGEST_SIZE = (320, 200), (3840, 2160)
DEFAULT_FPS = 4.0
#: frames drawn by default at most (moments between --from and --to beyond that are sampled evenly)
DEFAULT_MAX_FRAMES = 200
#: ... and at most, whatever is asked (a frame is kept in memory until the file is written)
MAX_FRAMES = 2000
#: pixels per scene unit, at most: a graph that fits the frame whole at a zoom its labels read at is
#: drawn whole, at 100% (as the window draws its nodes) or less; a bigger one at the smallest
#: readable zoom (on a screen of FRAME_DPI), as the window's Fit shows it
ZOOM = 1.0
FRAME_DPI = 96.0
CAPTION_H = 46
CAPTION_PT = 10.0
#: the memory strip below the graph: the activations held over the animated span, and a cursor
STRIP_H = 64
STRIP_PAD = 10


class ExportCancelled(ExportError):
    """The user cancelled an animation export: nothing was written."""


def moment(run: Run, spec: str | int | None, closing: bool) -> int | None:
    """The event ``spec`` names: an event index, ``backward:N`` (the Nth backward call, counted from
    1: its start, or its end when ``closing``) or ``step:N`` (likewise, the Nth step)."""
    if spec is None or isinstance(spec, int):
        return spec
    text = spec.strip().lower()
    if text.lstrip("-").isdigit():
        return int(text)
    kind, _, number = text.partition(":")
    spans = {"backward": _spans(run, "backward"), "step": _spans(run, "step")}
    if kind not in spans or not number.isdigit():
        raise ExportError(f"{spec!r} names no moment: give an event index, backward:N or step:N")
    known = spans[kind]
    n = int(number)
    if not 1 <= n <= len(known):
        raise ExportError(f"{spec!r}: the run has {len(known)} {kind} {'call' if kind == 'backward' else 'step'}"
                          f"{'s' if len(known) != 1 else ''}")
    start, end = known[n - 1]
    return end if closing else start


def _spans(run: Run, kind: str) -> list[tuple[int, int]]:
    """(first, last event) of each backward call (``kind`` "backward") or step, in order; one not
    ended yet ends at the run's last event."""
    last = len(run.events) - 1
    if kind == "backward":
        known = [(call.start, call.end) for call in sorted(run.backwards.values(), key=lambda c: c.start)]
    else:
        known = [(step["start"], step["end"]) for step in run.steps]
    return [(start, last if end is None else end) for start, end in known]


@dataclass(frozen=True)
class AnimationOptions:
    start: int | str | None = None  # first event, or backward:N / step:N (default: the run's first)
    end: int | str | None = None  # last event, or backward:N / step:N (default: the end of the first backward)
    fps: float = DEFAULT_FPS
    max_frames: int = DEFAULT_MAX_FRAMES
    size: tuple[int, int] = DEFAULT_SIZE
    theme: str | None = None  # None: the canvas's; "light"
    chart: bool = True  # a strip of the activations held over the span, with the frame's moment marked


def moments(run: Run, start: int | None = None, end: int | None = None,
            max_frames: int = DEFAULT_MAX_FRAMES) -> list[int]:
    """The event indices that get a frame: ``start``, every moment Step ▶ stops at after it up to
    ``end``, and ``end``; evenly sampled (first and last kept) when there are more than ``max_frames``."""
    last = len(run.events) - 1
    if last < 0:
        raise ExportError("the run has no events: nothing to animate")
    first = 0 if start is None else start
    if end is None:
        end = next((i for i in range(first, last + 1) if run.events[i].get("ev") == "backward_end"), last)
    for name, value in (("--from", first), ("--to", end)):
        if not 0 <= value <= last:
            raise ExportError(f"{name} {value} is outside the run (it has events 0 to {last})")
    if end < first:
        raise ExportError(f"--to {end} comes before --from {first}")
    if not 2 <= max_frames <= MAX_FRAMES:
        raise ExportError(f"the number of frames must be between 2 and {MAX_FRAMES}, not {max_frames}")
    return timeline.stops_between(run, first, end, max_frames)


class FramePainter:
    """Draws ``run`` at one moment after another into images ``size`` big, following the action."""

    def __init__(self, run: Run, size: tuple[int, int], first: int, strip: tuple[int, int] | None = None,
                 frames: list[int] | None = None) -> None:
        """``strip``: the span (first and last event) the memory strip shows; None: no strip.
        ``frames``: the moments that will be drawn, if known: a graph whose nodes at all of them fit
        the frame at a readable zoom is drawn whole."""
        self.run = run
        self.width, self.height = size
        self.scene = GraphScene()
        self.scene.set_run(run)
        self.scene.set_cursor(first)
        self.scene.boxes.shut_to_fit(default_fits)  # module boxes as a picture export opens them
        self.focus: QRectF | None = None  # the node the last moment about a node was about
        self.source = QRectF()  # what the last frame showed, in scene units
        self.strip = MemoryStrip(run, strip, self.width) if strip is not None else None
        self.graph_h = self.height - CAPTION_H - (STRIP_H if self.strip is not None else 0)
        self.zoom = readable_scale(FRAME_DPI)  # (unless the graph is drawn whole)
        self.whole: QRectF | None = None  # what every frame shows, when the graph is drawn whole
        if frames:
            self._fit_whole(frames)

    def _fit_whole(self, frames: list[int]) -> None:
        """Draw the graph whole, at the zoom that fits it (100% at most), if what the frames
        show fits the frame at a readable zoom; else the frames show what they can at the smallest
        readable zoom, following the action."""
        scene = self.scene
        if scene.virtual:  # a big run's drawing: never readable whole
            return
        shown = QRectF()
        for index in frames:
            scene.set_cursor(index)
            scene.boxes.settle()
            shown = shown.united(content_rect(scene))
            zoom = min(self.width / shown.width(), self.graph_h / shown.height())
            if zoom < self.zoom:
                return  # (no need to look further)
        self.zoom = min(ZOOM, zoom)
        self.whole = shown

    def _follow(self, index: int) -> QPointF:
        """The centre of the frame of moment ``index``: the whole graph's, when it is drawn whole;
        else the node the moment is about (that of the last moment about a node; the top of the
        graph before any), kept inside what is shown so that no frame shows more empty room than
        it must."""
        if self.whole is not None:
            return self.whole.center()
        item = self.scene.item_at_event(index)
        if item is not None:
            self.focus = item.sceneBoundingRect()
        shown = self.scene.shown_rect()
        framed = content_rect(self.scene) if shown.isNull() else shown.adjusted(-FIT_MARGIN, -FIT_MARGIN,
                                                                                FIT_MARGIN, FIT_MARGIN)
        half_w, half_h = self.width / self.zoom / 2, self.graph_h / self.zoom / 2
        centre = readable_centre(framed, self.focus, half_w, half_h)
        # no node or shut box cut in half at the frame's edges, the node followed kept in it, the
        # frame no further past the graph's margin than it was (a frame of the accumulation lesson
        # cut a node in half above the memory strip)
        shown = QRectF(centre.x() - half_w, centre.y() - half_h, 2 * half_w, 2 * half_h)
        return centre + clear_move(self.scene, shown, self.focus, framed)

    def frame(self, index: int) -> QImage:
        scene = self.scene
        scene.set_cursor(index)
        scene.boxes.settle()
        colors = style.colors()
        image = QImage(self.width, self.height, QImage.Format_RGB32)
        image.fill(colors.q("background"))
        painter = QPainter(image)
        try:
            painter.setRenderHint(QPainter.Antialiasing)
            painter.setRenderHint(QPainter.TextAntialiasing)
            center = self._follow(index)
            w, h = self.width / self.zoom, self.graph_h / self.zoom
            self.source = QRectF(center.x() - w / 2, center.y() - h / 2, w, h)
            target = QRectF(0, CAPTION_H, self.width, self.graph_h)
            scene.render(painter, target, self.source, Qt.IgnoreAspectRatio)
            self._caption(painter, index, colors)
            if self.strip is not None:
                self.strip.paint(painter, QRectF(0, self.height - STRIP_H, self.width, STRIP_H), index, colors)
        finally:
            painter.end()
        return image

    def _caption(self, painter: QPainter, index: int, colors) -> None:
        band = QRectF(0, 0, self.width, CAPTION_H)
        painter.fillRect(band, colors.q("background"))
        painter.setPen(colors.q("group_border"))
        painter.drawLine(QPointF(0, CAPTION_H - 0.5), QPointF(self.width, CAPTION_H - 0.5))
        painter.setPen(colors.q("title"))
        font = QFont("DejaVu Sans")
        font.setPointSizeF(CAPTION_PT)
        painter.setFont(font)
        text = caption_of(self.run, index)
        painter.drawText(band.adjusted(10, 4, -10, -4), Qt.AlignLeft | Qt.AlignVCenter | Qt.TextWordWrap, text)


class MemoryStrip:
    """The activations autograd holds after each event of a span (on the run's busiest device),
    binned to the frame's width (each pixel column its highest), drawn under the graph."""

    def __init__(self, run: Run, span: tuple[int, int], width: int) -> None:
        self.first, self.last = span
        self.device = busiest_device(run)
        arrays = run.memory_arrays(self.device)
        values = arrays.array("activation")[self.first:self.last + 1] if arrays.n else []
        self.values = [int(v) for v in values]
        columns = max(1, width - 2 * STRIP_PAD)
        n = len(self.values)
        self.columns = [max(self.values[k * n // columns:max(k * n // columns + 1, (k + 1) * n // columns)])
                        for k in range(columns)] if n else []
        self.most = max(self.values, default=0)

    def at(self, index: int) -> int:
        k = index - self.first
        return self.values[k] if 0 <= k < len(self.values) else 0

    def paint(self, painter: QPainter, band: QRectF, index: int, colors) -> None:
        painter.fillRect(band, colors.q("background"))
        painter.setPen(colors.q("group_border"))
        painter.drawLine(QPointF(band.left(), band.top() + 0.5), QPointF(band.right(), band.top() + 0.5))
        plot = band.adjusted(STRIP_PAD, 18, -STRIP_PAD, -6)
        font = QFont("DejaVu Sans")
        font.setPointSizeF(CAPTION_PT - 1)
        painter.setFont(font)
        painter.setPen(colors.q("subtitle"))
        painter.drawText(QRectF(plot.left(), band.top() + 2, plot.width(), 16), Qt.AlignLeft | Qt.AlignVCenter,
                         f"activations held for backward on {self.device}: {human_bytes(self.at(index))}"
                         f" (highest here {human_bytes(self.most)})")
        if self.columns and self.most > 0:
            path = QPainterPath(QPointF(plot.left(), plot.bottom()))
            step = plot.width() / len(self.columns)
            for k, value in enumerate(self.columns):
                y = plot.bottom() - plot.height() * value / self.most
                path.lineTo(plot.left() + k * step, y)
                path.lineTo(plot.left() + (k + 1) * step, y)
            path.lineTo(plot.right(), plot.bottom())
            path.closeSubpath()
            painter.setPen(colors.border_of("op"))
            painter.setBrush(colors.fill_of("op"))
            painter.drawPath(path)
        span = max(1, self.last - self.first)
        x = plot.left() + plot.width() * (index - self.first) / span
        painter.setPen(QPen(colors.q("error_border"), 2))
        painter.drawLine(QPointF(x, plot.top() - 2), QPointF(x, plot.bottom()))


def render_animation(run: Run, path: str, options: AnimationOptions = AnimationOptions(),
                     progress: Callable[[int, int], bool] | None = None) -> tuple[int, int, int]:
    """Write the run between ``options.start`` and ``options.end`` to ``path`` as an animation
    (format from the suffix). Returns the number of frames, the first and the last event. Raises :class:`ExportError` (and
    :class:`ExportCancelled` when ``progress`` returns False); nothing is written then."""
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in ANIMATION_SUFFIXES:
        raise ExportError(f"cannot tell the animation format from {path!r}: use {', '.join(ANIMATION_SUFFIXES)}")
    width, height = options.size
    if not (SMALLEST_SIZE[0] <= width <= LARGEST_SIZE[0] and SMALLEST_SIZE[1] <= height <= LARGEST_SIZE[1]):
        raise ExportError(f"the frame size must be between {SMALLEST_SIZE[0]}x{SMALLEST_SIZE[1]} and "
                          f"{LARGEST_SIZE[0]}x{LARGEST_SIZE[1]} pixels, not {width}x{height}")
    if not 0.1 <= options.fps <= 60:
        raise ExportError(f"the frame rate must be between 0.1 and 60 frames a second, not {options.fps:g}")
    encode = _ENCODERS[suffix]
    indices = moments(run, moment(run, options.start, False), moment(run, options.end, True), options.max_frames)
    painter = FramePainter(run, (width, height), indices[0], (indices[0], indices[-1]) if options.chart else None,
                           indices)
    frames = []
    with canvas_colors(painter.scene, style.LIGHT if options.theme == "light" else None):
        for done, index in enumerate(indices):
            if progress is not None and progress(done, len(indices)) is False:
                raise ExportCancelled(f"cancelled: nothing written to {path}")
            frames.append(_pillow(painter.frame(index)))
    write_file(path, encode(frames, options.fps))
    if progress is not None:
        progress(len(indices), len(indices))
    return len(frames), indices[0], indices[-1]


def _pillow(image: QImage):
    """A QImage as a Pillow image in a 256-colour palette (kept small until the file is written)."""
    from PIL import Image

    rgb = image.convertToFormat(QImage.Format_RGB888)
    width, height = rgb.width(), rgb.height()
    data = bytes(rgb.constBits())[: rgb.bytesPerLine() * height]
    frame = Image.frombuffer("RGB", (width, height), data, "raw", "RGB", rgb.bytesPerLine(), 1)
    return frame.convert("P", palette=Image.Palette.ADAPTIVE, colors=256)


def _gif(frames, fps: float) -> bytes:
    buffer = io.BytesIO()
    frames[0].save(buffer, format="GIF", save_all=True, append_images=frames[1:], duration=round(1000 / fps),
                   loop=0, disposal=1)
    return buffer.getvalue()


def _apng(frames, fps: float) -> bytes:
    buffer = io.BytesIO()
    frames[0].save(buffer, format="PNG", save_all=True, append_images=frames[1:], duration=round(1000 / fps),
                   loop=0)
    return buffer.getvalue()


def _video(codec: str, suffix: str):
    def encode(frames, fps: float) -> bytes:
        try:
            import imageio_ffmpeg
        except ImportError:
            raise ExportError(f"{suffix[1:].upper()} needs the imageio-ffmpeg package (it brings its own "
                              "ffmpeg): pip install imageio-ffmpeg; or export .gif or .apng") from None
        width, height = frames[0].size
        with tempfile.TemporaryDirectory(prefix="graphview-video-") as folder:
            out = os.path.join(folder, "video" + suffix)
            writer = imageio_ffmpeg.write_frames(out, (width, height), fps=fps, codec=codec, macro_block_size=2,
                                                 output_params=["-loglevel", "error"])
            writer.send(None)
            for frame in frames:
                writer.send(frame.convert("RGB").tobytes())
            writer.close()
            with open(out, "rb") as file:
                return file.read()
    return encode


_ENCODERS = {".gif": _gif, ".apng": _apng, ".mp4": _video("libx264", ".mp4"), ".webm": _video("libvpx-vp9", ".webm")}


def span_at(run: Run, cursor: int) -> tuple[int, int]:
    """What File > Export > Animation draws from the cursor: the backward call it is in, else its
    step, else from the cursor to the end of the next backward call (or of the run)."""
    calls = _spans(run, "backward")
    for start, end in calls + _spans(run, "step"):
        if start <= cursor <= end:
            return start, end
    after = next((end for start, end in calls if start >= cursor), len(run.events) - 1)
    return cursor, after
