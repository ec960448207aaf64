"""The memory chart: saved-tensor bytes over the run, stacked by kind, earlier runs as overlays.

An earlier run's overlay is lined up with the current run step by step and op by op
(:class:`graphview.core.alignment.Alignment`), not by event number: runs with other options have
other event counts, and the same step's hump must sit on the same hump.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor

from graphview.core.alignment import Alignment
from graphview.core.memory_arrays import MemoryArrays
from graphview.core.run import Run
from graphview.qt import theme as themes
from graphview.qt.formatting import human_bytes
from graphview.qt.panels import memory_title as title
from graphview.qt.panels.memory_span import STACKED_TIP, ActivationSpan


class BytesAxis(pg.AxisItem):
    """Byte axis with ticks at round binary sizes (1 KiB, 2 KiB, ... not 1000 B)."""

    def tickSpacing(self, minVal, maxVal, size):
        span = max(1.0, maxVal - minVal)
        unit = 1.0
        while unit * 1024 <= span:
            unit *= 1024
        for mult in (0.125, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512):
            step = unit * mult
            if span / step <= 5 and step >= 1:
                return [(step, 0)]
        return [(unit * 512, 0)]

    def tickStrings(self, values, scale, spacing):
        return [human_bytes(v) for v in values]


class EventAxis(pg.AxisItem):
    """Event indices as a reader counts them: 500k, 1M, 1.5M (pyqtgraph wrote 1e+06)."""

    def tickSpacing(self, minVal, maxVal, size):
        """Ticks at whole events only: there is nothing between two events (a run of 4 events had
        ticks at 0.5, 1.5, 2.5 too, written "0 0 1 2 2 2 3" under its chart)."""
        levels = [level for level in super().tickSpacing(minVal, maxVal, size) if level[0] >= 1]
        return levels or [(1.0, 0)]

    def tickStrings(self, values, scale, spacing):
        return [event_count(v) for v in values]


def event_count(value: float) -> str:
    """``1500`` -> ``1500``, ``250000`` -> ``250k``, ``1500000`` -> ``1.5M``."""
    value = float(value)
    for limit, unit in ((1e6, "M"), (1e4, "k")):
        if abs(value) >= limit:
            divisor = limit if unit == "M" else 1e3
            # (two decimals where a tick needs them: 1.05M and 1.15M were both "1.1M")
            return f"{value / divisor:.2f}".rstrip("0").rstrip(".") + unit
    return f"{value:.0f}"


class MemoryChart(pg.PlotWidget):
    """Live saved-tensor bytes over the timeline, stacked by kind; a cursor; click to jump."""

    sigJump = Signal(int)
    sigReadableHeight = Signal()  # the title's height changed: so did readable_height()
    #: the plot's height below which the chart is a strip (its byte axis's labels run into each other)
    READABLE_PLOT = 110
    MAX_POINTS = 1500  # filled curves cost paint time per point: long runs are drawn binned (peaks kept)
    POINTS_PER_PIXEL = 2  # ... and no more points than the plot's pixels can show (a dock: ~600)
    #: while a big trace is still being read, the chart is drawn often and roughly: each picture
    #: (curves set, fill paths built, painted) then costs a few ms, not 50 in the event loop
    ROUGH_POINTS = 300
    TITLE_SPACE = 6  # below the title: the byte axis's top label does not touch the legend
    TITLE_MARGIN = 4  # the chart's width less the title's line (the plot's margins, a pixel to spare)
    _taken_apart = False  # (see take_apart)

    def __init__(self, parent=None) -> None:
        super().__init__(parent=parent, axisItems={"left": BytesAxis("left"), "bottom": EventAxis("bottom")})
        self.getAxis("left").setWidth(72)  # fixed: labels of changing width would re-layout forever
        # no grid: in software rendering its translucent lines cost more than everything else
        self.setMouseEnabled(x=True, y=False)
        # top right, away from where runs start; an opaque box keeps it readable over the curves
        # the legend is a line of the title, above the plot: it can never cover the curves
        self._overlay_labels: list[tuple[str, str]] = []
        self.cursor_line = pg.InfiniteLine(pos=0, angle=90)
        self.addItem(self.cursor_line)
        self.curves: dict[str, pg.PlotDataItem] = {}
        self.overlays: list[pg.PlotDataItem] = []
        self._overlay_peaks: list[int] = []
        self._overlay_data: list[tuple[Run, np.ndarray, np.ndarray]] = []  # (earlier run, its x, y)
        self._alignments: list[Alignment | None] = []
        self._arrays: MemoryArrays | None = None  # the shown run's series (grown as it grows)
        self.peak = pg.ScatterPlotItem(size=9)
        self.addItem(self.peak)  # the peak's figure goes in the title: a TextItem repaints forever
        self.span = ActivationSpan(self.plotItem)  # the activations' peak, at its height on the stack
        self.scene().sigMouseClicked.connect(self._clicked)
        self.series: Mapping[str, np.ndarray] = {}
        self.device = "cpu"
        self.setToolTip(SERIES_TIP)
        self._headline: tuple[str, ...] | None = None  # what _title last showed, redrawn in a new theme
        self._title_text = ""  # the whole title, on one line (HTML)
        self._title_parts: title.TitleParts | None = None
        self._title_fitted: tuple | None = None  # (parts, width) the title was last laid out for
        # the title spans the byte axis's column too: at 1366x768 that is 72 px more of a 310 px chart
        layout = self.plotItem.layout
        layout.removeItem(self.plotItem.titleLabel)
        layout.addItem(self.plotItem.titleLabel, 0, 0, 1, 3)
        self.apply_theme()
        themes.changes().changed.connect(self.apply_theme)

    def apply_theme(self, theme: themes.Theme | None = None) -> None:
        """Background, axes, curves, cursor, peak and the title's legend in the colours of the theme now applied."""
        t = theme or themes.current()
        self.setBackground(t.chart_background)
        for name in ("left", "bottom"):
            axis = self.getAxis(name)
            axis.setPen(pg.mkPen(t.chart_axis))
            axis.setTextPen(pg.mkPen(t.chart_text))
        self.setLabel("bottom", "event", color=t.chart_text)
        self.cursor_line.setPen(pg.mkPen(t.chart_cursor, width=1.5))
        self.peak.setBrush(pg.mkBrush(t.chart_cursor))
        self.peak.setPen(pg.mkPen(t.chart_background))
        self.span.apply_theme(t)
        for kind, curve in self.curves.items():
            curve.setPen(self._pen(kind, t))
            if kind in t.chart_fills:
                curve.setBrush(QColor(t.chart_fills[kind]))
        if self._headline is not None:
            self._title(*self._headline)

    @staticmethod
    def _pen(kind: str, t: themes.Theme):
        if kind == "allocated":
            return pg.mkPen(t.chart_lines["allocated"], style=Qt.DashLine)
        return pg.mkPen(QColor(t.chart_lines[kind]), width=1)

    def show_run(self, run: Run, device: str, rough: bool = False) -> None:
        """Plot ``run``'s series on ``device``. A live run calls this as it grows: only the new
        events are converted, and the peaks of the bins already drawn are kept
        (:class:`~graphview.core.memory_arrays.MemoryArrays`), so a refresh costs about the same at
        event 1,000 as at event 1,000,000. ``rough``: at most ROUGH_POINTS points a curve (a big trace
        still being read)."""
        self.device = device
        arrays = run.memory_arrays(device)
        self._arrays = arrays
        points = self.ROUGH_POINTS if rough else self._points()
        self._shown_with = (run, device, points)
        self.series = arrays  # the arrays by kind, read when asked for (the CSV, a click)
        self._show_axes(arrays.n > 0)
        self._align_overlays(run)
        for kind, top in (("input", "input"), ("param", "input_param"), ("activation", "total")):
            label = {"activation": "activations", "param": "weights (parameters)",
                     "input": "inputs and constants"}[kind]
            x, y = arrays.peaks(top, points)
            curve = self.curves.get(kind)
            if curve is None:
                # steps, not ramps: the bytes after event i hold until event i + 1
                t = themes.current()
                curve = self.plot(x, y, name=label, pen=self._pen(kind, t), fillLevel=0,
                                  brush=QColor(t.chart_fills[kind]), stepMode="right")
                self.curves[kind] = curve
            else:
                _set_data(curve, x, y)
            if kind == "activation":
                peak_x, peak_value = (int(x[np.argmax(y)]), int(y.max())) if len(y) else (0, 0)
        if arrays.has_alloc:
            x, values = arrays.peaks("allocated", points)
            if "allocated" not in self.curves:
                self.curves["allocated"] = self.plot(x, values, name="CUDA allocated",
                                                     pen=self._pen("allocated", themes.current()))
            else:
                _set_data(self.curves["allocated"], x, values)
        elif "allocated" in self.curves:
            self.curves["allocated"].setData([], [])  # an earlier run's allocator line
        # opaque stacked areas: the tallest (activations, the total) at the back, inputs in front
        for z, kind in enumerate(("activation", "param", "input", "allocated")):
            if kind in self.curves:
                self.curves[kind].setZValue(-10 + z)
        if peak_value > 0:  # the first event with the highest total (a bin keeps its first)
            self.peak.setData([peak_x], [peak_value])
            self.span.show(arrays)
            activations = arrays.array("activation")
            self._title("peak", device, human_bytes(peak_value), str(peak_x),
                        human_bytes(int(activations.max())) if len(activations) else "0 B",
                        _held_anyway(int(arrays.array("param")[peak_x]), int(arrays.array("input")[peak_x])))
        else:
            self.peak.setData([], [])
            self.span.hide()
            self._title("empty", device)
        self._headroom(peak_value)

    def _title(self, what: str, device: str, *figures: str) -> None:
        """The title: the peak (``what`` ``"peak"``, with its bytes and event), its absence (``"empty"``) or
        a run still starting (``"waiting"``), and the legend; laid out for the chart's width
        (:mod:`graphview.qt.panels.memory_title`), all of it in the tooltip."""
        self._headline = (what, device, *figures)
        t = themes.current()
        if what == "peak":
            headlines = title.peak_headlines(figures, device, t.chart_text, t.chart_cursor, t.muted)
        else:  # "waiting": a new run whose first events have not come yet
            words = "waiting for the run's first events" if what == "waiting" else f"no saved tensors on {device}"
            headlines = ((title.Segment(words, f"color:{t.muted}"),),)
        lines = t.chart_lines
        # (the words of the keys are short: a narrow panel keeps its plot; what each holds is the tooltip)
        keys = [title.Key(lines["activation"], "■", "activations", "activations"),
                title.Key(lines["param"], "■", "weights", "weights"),
                title.Key(lines["input"], "■", "inputs and constants", "inputs")]
        if self._arrays is not None and self._arrays.has_alloc:
            keys.append(title.Key(lines["allocated"], "┅", "CUDA allocated", "allocated"))
        # an earlier run's short words: "earlier", numbered where there are several (its colour says which)
        overlays = self._overlay_labels
        keys += [title.Key(color, "┅", label, "earlier" if len(overlays) == 1 else f"earlier {i + 1}")
                 for i, (label, color) in enumerate(overlays)]
        parts = title.TitleParts(headlines, tuple(keys), t.chart_text, t.muted)
        whole = parts.full()
        if whole == self._title_text:
            return  # unchanged: laying the title out again costs a repaint of the whole chart
        self._title_text = whole
        self._title_parts = parts
        self.setToolTip(title.tooltip(parts, (STACKED_TIP if what == "peak" else "") + SERIES_TIP))
        self._wrap_title()

    def _wrap_title(self) -> None:
        """The title in the form that fits the chart's width (one line, else two: the headline, the
        legend); a narrow chart (a dock beside the canvas) keeps its plot whole instead of being
        pushed wider than its panel. The title spans the chart, the byte axis's column too."""
        label = getattr(getattr(self, "plotItem", None), "titleLabel", None)
        parts = getattr(self, "_title_parts", None)
        if label is None or parts is None:
            return  # still being built, or no title yet
        width = max(120, self.width() - self.TITLE_MARGIN)
        if (parts, width) != self._title_fitted:
            self._title_fitted = (parts, width)
            shown = title.fit(parts, width, label.item.font())
            if shown != label.text:
                self.setTitle(shown, size=title.SIZE)
        label.item.setTextWidth(width)  # (a chart too narrow for the shortest form wraps it)
        label.updateMin()
        height = int(label.item.boundingRect().height()) + 2
        label.setMaximumHeight(height)
        self.plotItem.layout.setRowFixedHeight(0, height)
        self.plotItem.layout.setRowSpacing(0, self.TITLE_SPACE)
        if height + self.TITLE_SPACE != getattr(self, "_title_height", None):
            self._title_height = height + self.TITLE_SPACE
            self.sigReadableHeight.emit()
        if self.centralWidget is not None:  # laid out again now that the title no longer holds it wide
            self.centralWidget.setGeometry(self.range)

    def readable_height(self) -> int:
        """The chart's height at which its plot is :data:`READABLE_PLOT` tall: the title (wrapped for
        the chart's width), the plot and the event axis below it."""
        label = getattr(getattr(self, "plotItem", None), "titleLabel", None)
        title = getattr(self, "_title_height", 0) if label is not None and label.isVisible() else 0
        axis = self.getAxis("bottom")
        below = int(max(axis.height(), axis.minimumHeight())) if axis.isVisible() else 0
        return title + self.READABLE_PLOT + max(below, 40) + 12

    def _points(self) -> int:
        """How many points a curve gets: what the plot's width can show, at most MAX_POINTS."""
        return max(self.ROUGH_POINTS, min(self.MAX_POINTS, self.POINTS_PER_PIXEL * self.width()))

    def take_apart(self, *_) -> None:
        """Delete the plot's items before Qt destroys the chart with its window. Destroyed whole,
        by the scene's destructor, pyqtgraph's items crashed the process now and then (SIGSEGV in
        ``~QGraphicsWidget`` when a window that had shown a few runs was deleted); cleared from
        here first, they never did. The chart shows nothing afterwards."""
        if self._taken_apart:
            return
        self._taken_apart = True
        try:
            themes.changes().changed.disconnect(self.apply_theme)
        except (RuntimeError, TypeError):  # (already gone)
            pass
        scene = self.scene()
        if scene is not None:
            scene.clear()

    def resizeEvent(self, event) -> None:
        if self._taken_apart:
            return
        self._wrap_title()  # first: the plot is then laid out within the new width
        super().resizeEvent(event)
        self._wrap_title()
        shown = getattr(self, "_shown_with", None)
        if shown is not None and shown[2] != self.ROUGH_POINTS and self._points() > shown[2]:
            self.show_run(shown[0], shown[1])  # wider now: the curves in the detail it can show

    def _headroom(self, peak: int) -> None:
        """Fix the y range a little above the highest curve, this run's or an earlier run's (auto
        range would follow only part of them and jump while a run streams)."""
        top = max([peak] + self._overlay_peaks + [1]) * 1.06
        # up to the next tick: the highest label is above the peak (at 42 KiB the axis ended at 47
        # KiB and its last label said 32 KiB, which read as a scale that stopped short)
        step = self.getAxis("left").tickSpacing(0, top, 0)[0][0]
        self.enableAutoRange(axis="y", enable=False)
        self.setYRange(0, math.ceil(top / step) * step, padding=0)

    def add_overlay(self, run: Run, label: str, color: str) -> None:
        """An earlier ``run`` drawn dotted; lined up with the current run from its next :meth:`show_run`."""
        x, y = run.memory_arrays(self.device).peaks("total", self.MAX_POINTS)
        curve = self.plot(x, y, name=label, pen=pg.mkPen(color, width=2, style=Qt.DotLine))
        self.overlays.append(curve)
        self._overlay_labels.append((label, color))
        self._overlay_peaks.append(int(y.max()) if len(y) else 0)
        self._overlay_data.append((run, x, y))
        self._alignments.append(None)

    def _align_overlays(self, current: Run) -> None:
        """Each overlay's events placed on the current run's axis (which grows while it streams)."""
        for k, (earlier, x, y) in enumerate(self._overlay_data):
            alignment = self._alignments[k]
            if alignment is None or alignment.current is not current:
                alignment = self._alignments[k] = Alignment(earlier, current)
            self.overlays[k].setData(alignment.map(x), y)

    def clear_overlays(self) -> None:
        for curve in self.overlays:
            self.removeItem(curve)
        self.overlays.clear()
        self._overlay_peaks.clear()
        self._overlay_labels.clear()
        self._overlay_data.clear()
        self._alignments.clear()

    def set_run(self, run: Run) -> None:
        """A new run: the last run's curves and the earlier runs' overlays go (the window adds back
        those it compares with); until this run has events the chart has no axes to show."""
        self.clear_overlays()
        for curve in self.curves.values():
            curve.setData([], [])
        self.peak.setData([], [])
        self.span.hide()
        self.series = {}
        self._arrays = None
        self._shown_with = None
        self._show_axes(bool(run.events))
        if not run.events:
            self._title("waiting", self.device)

    def _show_axes(self, shown: bool) -> None:
        changed = self.getAxis("left").isVisible() != shown
        for side in ("left", "bottom"):
            self.showAxis(side, shown)
        self.cursor_line.setVisible(shown)
        if changed:
            self._wrap_title()  # the title's room beside the byte axis changed

    def set_cursor(self, index: int) -> None:
        self.cursor_line.setValue(index)

    def _clicked(self, event) -> None:
        point = self.plotItem.vb.mapSceneToView(event.scenePos())
        if len(self.series.get("total", ())):
            index = int(round(point.x()))
            self.sigJump.emit(max(0, min(index, len(self.series["total"]) - 1)))

    def to_csv(self) -> str:
        rows = ["event,activation_bytes,param_bytes,input_bytes,total_bytes,cuda_allocated_bytes"]
        if not len(self.series.get("total", ())):
            return "\n".join(rows) + "\n"
        s = {key: self.series[key].tolist() for key in ("activation", "param", "input", "total", "allocated")}
        for i in range(len(s["total"])):
            alloc = s["allocated"][i]
            rows.append(f"{i},{s['activation'][i]},{s['param'][i]},{s['input'][i]},{s['total'][i]},"
                        f"{'' if alloc != alloc else int(alloc)}")
        return "\n".join(rows) + "\n"


def _set_data(curve: pg.PlotDataItem, x: np.ndarray, y: np.ndarray) -> None:
    """``curve.setData(x, y)`` unless it shows those points already: new data makes pyqtgraph
    build the curve's fill path again at the next paint."""
    shown_x, shown_y = curve.getData()
    if shown_x is not None and np.array_equal(shown_x, x) and np.array_equal(shown_y, y, equal_nan=True):
        return
    curve.setData(x, y)


#: what the chart's three series hold
SERIES_TIP = ("Bytes autograd holds for backward (saved tensors) on this device, at each event:\n"
              "activations: results of ops saved for backward;\n"
              "weights: parameters (nn.Parameter, frozen ones included) saved as they are (a weight a matmul saves);\n"
              "inputs and constants: other tensors the script made or was given, requiring grad or not,\n"
              "that ops saved (the batch a conv saves, a lesson's w made by torch.randn(..., requires_grad=True)).\n"
              "Click to move the cursor there.")


def _held_anyway(weights: int, inputs: int) -> str:
    """What the stack's top holds besides activations, as this run holds it at its peak: ``", weights
    and inputs included"``, ``", inputs included"`` (a lesson's leaves are plain tensors, no weight),
    or nothing."""
    kinds = [kind for kind, held in (("weights", weights), ("inputs", inputs)) if held]
    return f", {' and '.join(kinds)} included" if kinds else ""
