"""How far a long export is, said on the command line (``graphview export ... -o run.gif``).

A GIF of one Llama backward (200 frames) took 37 s with nothing said. :class:`FrameProgress`
says the frame the export is at: on a terminal, on one line rewritten in place at every frame;
in a file or a pipe (a log), a line every tenth of the frames.
"""

from __future__ import annotations

from typing import TextIO

#: a file or a pipe gets this many lines: one each time another tenth of the frames is done
LINES = 10


class FrameProgress:
    """A ``progress(done, total)`` callback for :func:`graphview.qt.animation.render_animation`
    that writes ``graphview: frame DONE/TOTAL`` on ``stream``; :meth:`close` clears a terminal's
    line, so that what is said next starts a clean one."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        try:
            self.in_place = stream.isatty()
        except (AttributeError, ValueError):  # (a closed or a bare stream: lines)
            self.in_place = False
        self._next_line = 1  # the tenth whose line comes next
        self._written = False

    def __call__(self, done: int, total: int) -> bool:
        if total <= 0 or done <= 0:
            return True
        if self.in_place:
            self.stream.write(f"\rgraphview: frame {done}/{total}")
            self.stream.flush()
            self._written = True
        elif done * LINES >= self._next_line * total:
            self.stream.write(f"graphview: frame {done}/{total}\n")
            self.stream.flush()
            while self._next_line * total <= done * LINES:
                self._next_line += 1
        return True  # (never cancels)

    def close(self) -> None:
        if self.in_place and self._written:
            self.stream.write("\r\x1b[K")  # the count goes; the next word starts the line
            self.stream.flush()
            self._written = False
