"""How a run went: its mode, its status, and one line on why it failed."""

from __future__ import annotations

from graphview.core.events import FAILED_STATUSES


def _first_line(text: str) -> str:
    lines = str(text).strip().splitlines()
    return lines[0] if lines else ""


class Outcome:
    """The run's mode and end, from its ``run_start`` and ``run_end`` events (``start``, ``end``)
    and the script's errors (``errors``)."""

    @property
    def mode(self) -> str:
        return (self.start or {}).get("mode", "plain")

    @property
    def status(self) -> str:
        if self.end is None:
            return "incomplete"
        return self.end.get("status", "ok")

    @property
    def failed(self) -> bool:
        return self.status in FAILED_STATUSES

    def nothing_checked(self) -> str | None:
        """Why a diagnosis of this run has nothing to go on: ``nothing to check: the script failed
        (...) before any backward`` for a run that failed before backward ran (None otherwise: no
        finding then is a clean bill)."""
        if self.failed and not self.backwards:
            return f"nothing to check: {self.failure_headline()} before any backward"
        return None

    def failure_headline(self) -> str:
        """One line on why the run failed: ``the script failed (ValueError at line 4: boom)``."""
        end = self.end or {}
        message = _first_line(end.get("message") or "")
        if self.status == "error":
            if self.errors:
                _, err = self.errors[-1]
                if err.get("type") == "MemoryError" and err.get("limit"):  # graphview's records ran out of memory
                    return _first_line(err.get("message") or "")
                where = f" at line {err['line']}" if err.get("line") else ""
                return f"the script failed ({err.get('type')}{where}: {_first_line(err.get('message') or '')})"
            return f"the script failed ({message or 'error'})"
        if self.status == "timeout":
            return "the script was stopped at its time limit"
        if self.status == "stopped":
            return f"the script was stopped ({message or 'by the user'})"
        return message or f"the script failed ({self.status})"
