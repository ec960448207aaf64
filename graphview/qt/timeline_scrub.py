"""The timeline's slider moves the cursor, and the canvas follows it there as it follows a step.

Scrubbing set the cursor only: the view stayed where it was, and a jump far back (to an op early in
the forward, its node far above the backward's) left the canvas blank until the next step. A click
on the slider's bar or a key follows at once; a drag follows when the slider is let go (the view
does not scroll under the pointer at every event it passes)."""

from __future__ import annotations

from PySide6.QtCore import QObject


class TimelineScrub(QObject):
    """Connects the window's timeline bar to its cursor and its following of the cursor."""

    def __init__(self, window) -> None:
        super().__init__(window)
        self._window = window
        bar = window.timeline_bar
        bar.scrubbed.connect(self._on_scrubbed)
        bar.slider.sliderReleased.connect(window.keep_in_view)

    def _on_scrubbed(self, index: int) -> None:
        window = self._window
        window.session.follow_live = False
        window.set_cursor(index)
        if not window.timeline_bar.slider.isSliderDown():
            window.keep_in_view()
