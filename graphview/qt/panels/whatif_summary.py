"""The what-if summary beside the memory chart: after a re-run with other options, per step the
peak saved bytes before and after, the ops recomputed in backward and the modules whose
activations held at backward changed most (:func:`graphview.core.whatif.compare_runs`)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel

from graphview.core.whatif import StepComparison
from graphview.qt.formatting import human_bytes as human
from graphview.qt import theme as themes
from graphview.qt.plain import esc


class WhatIfSummary(QLabel):
    """Hidden until there is an earlier run to compare with."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("whatIfSummary")
        self.setWordWrap(True)
        self.setTextFormat(Qt.RichText)
        self.setAlignment(Qt.AlignTop | Qt.AlignLeft)
        self.setMinimumWidth(230)
        self.setMaximumWidth(340)
        self.setContentsMargins(6, 4, 6, 4)
        self.comparisons: list[StepComparison] = []
        self.labels = ("", "")
        self.hide()
        themes.changes().changed.connect(self.apply_theme)  # a bound slot: it goes with the widget

    def apply_theme(self, theme=None) -> None:
        self._render()

    def show_comparison(self, comparisons: list[StepComparison], before: str, after: str) -> None:
        self.comparisons, self.labels = list(comparisons), (before, after)
        self._render()

    def clear(self) -> None:
        self.comparisons = []
        self.setText("")
        self.hide()

    def _render(self) -> None:
        if not self.comparisons:
            self.hide()
            return
        t = themes.current()
        before, after = (esc(label) for label in self.labels)
        rows = [f"<b>What changed</b><br><span style='color:{t.muted}'>{before} → <b>{after}</b></span>"]
        for steps, c in _runs_of_equal_steps(self.comparisons):
            activations = _changes(c.activations_before, c.activations_after)
            saved = _changes(c.peak_before, c.peak_after)
            if activations:  # what the option changed that a user can act on; weights are held anyway
                text = f"<b>{esc(steps)}</b>: peak of activations {', '.join(activations)}"
                if c.anyway:  # (else all saved is the activations)
                    text += (f"<br>&nbsp;&nbsp;<span style='color:{t.muted}'>all saved, {esc(c.anyway_words)} included: "
                             f"{', '.join(saved)}</span>")
            else:
                text = f"<b>{esc(steps)}</b>: peak saved {', '.join(saved) or 'none'}"
            extra = c.recomputed_after - c.recomputed_before
            if c.recomputed_after or c.recomputed_before:
                text += f"<br>&nbsp;&nbsp;recomputed in backward: {c.recomputed_after} ops ({extra:+d})"
            for m in c.modules:
                text += (f"<br>&nbsp;&nbsp;{esc(m.path)}: {esc(human(m.before))} → {esc(human(m.after))} "
                         f"<span style='color:{t.muted}'>of activations held at backward</span>")
            rows.append(text)
        self.setText("<br>".join(rows))
        self.show()


def _changes(before: dict[str, int], after: dict[str, int]) -> list[str]:
    """Per device: ``cpu 1.00 MiB → <b>512.00 KiB</b> (-50%)``."""
    parts = []
    for device in sorted(set(before) | set(after)):
        b, a = before.get(device, 0), after.get(device, 0)
        ratio = f" ({(a - b) / b:+.0%})" if b else ""
        parts.append(f"{esc(device)} {human(b)} → <b>{human(a)}</b>{ratio}")
    return parts


def _runs_of_equal_steps(comparisons: list[StepComparison]) -> list[tuple[str, StepComparison]]:
    """Steps in a row whose figures are all the same, said once: ``steps 1–3``."""
    groups: list[list[StepComparison]] = []
    for c in comparisons:
        last = groups[-1][-1] if groups else None
        if last is not None and last.step + 1 == c.step and _figures(last) == _figures(c):
            groups[-1].append(c)
        else:
            groups.append([c])
    return [(f"step {g[0].step}" if len(g) == 1 else f"steps {g[0].step}–{g[-1].step}", g[0]) for g in groups]


def _figures(c: StepComparison) -> tuple:
    return (c.peak_before, c.peak_after, c.activations_before, c.activations_after, c.recomputed_before, c.recomputed_after,
            [(m.path, m.before, m.after) for m in c.modules], c.anyway)
