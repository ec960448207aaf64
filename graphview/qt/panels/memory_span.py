"""The activations' peak marked on the memory chart at its height.

The chart's areas are stacked: inputs at the bottom, weights on them, activations on top, so the
blue area's top is all saved, not the activations. A GPT-2's chart said "activations peak 545.3 KiB"
above a blue area that topped out near 950 KiB (weights under it), and neither the legend nor the
tooltip said why. The activations' peak is now drawn where it is: a bar from the top of the weights
and inputs to the top of the stack at the event where the activations peak, as tall as the
headline's figure (the bytes the trace gives, nothing measured again); the tooltip says the areas
are stacked and what the bar is.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyqtgraph as pg

from graphview.qt import theme as themes

#: what the tooltip says of the stacking and of the bar (plain text, before the series' own words)
STACKED_TIP = ("The areas are stacked: inputs at the bottom, weights on them, activations on top;\n"
               "the top of the blue area is all saved (the red dot), the activations are its thickness.\n"
               "The bar ┃ marks the activations' peak: from the top of the weights and inputs to the top\n"
               "of the stack, at the event where the activations peak.\n\n")


class ActivationSpan:
    """A bar on ``plot`` from the weights' and inputs' top to the stack's top where the activations peak."""

    def __init__(self, plot: pg.PlotItem) -> None:
        self.line = pg.PlotCurveItem()
        self.ends = pg.ScatterPlotItem(symbol="_", size=9)
        for item in (self.line, self.ends):
            item.setZValue(5)  # above the stacked areas (they are at -10 and up)
            plot.addItem(item)
        self.shown: tuple[int, int, int] | None = None  # (event, bottom, top) in bytes
        self.apply_theme()

    def apply_theme(self, theme: themes.Theme | None = None) -> None:
        t = theme or themes.current()
        self.line.setPen(pg.mkPen(t.chart_text, width=2))
        self.ends.setPen(pg.mkPen(t.chart_text, width=2))
        self.ends.setBrush(pg.mkBrush(t.chart_text))

    def show(self, series: Mapping[str, np.ndarray]) -> tuple[int, int, int] | None:
        """Mark the activations' peak of ``series`` (the chart's arrays by kind); none if none are held.
        Returns (event, bottom, top): the bar spans ``top - bottom`` bytes, the activations' peak."""
        activations = series["activation"]
        if not len(activations) or activations.max() <= 0:
            self.hide()
            return None
        event = int(np.argmax(activations))  # (the first event with the most)
        bottom, top = int(series["input_param"][event]), int(series["total"][event])
        if self.shown != (event, bottom, top):
            self.shown = (event, bottom, top)
            self.line.setData([event, event], [bottom, top])
            self.ends.setData([event, event], [bottom, top])
        return self.shown

    def hide(self) -> None:
        if self.shown is not None:
            self.shown = None
            self.line.setData([], [])
            self.ends.setData([], [])
