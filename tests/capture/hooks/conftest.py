"""Each mechanism alone: installed on its own over the shared state, nothing else recording."""

from __future__ import annotations

from contextlib import ExitStack, contextmanager

import pytest


@pytest.fixture
def alone():
    """``with alone(MechanismClass, "install_x") as events:`` records with that one mechanism."""

    @contextmanager
    def _alone(mechanism, install: str, script: str):
        events: list[dict] = []
        recorder = type("OneMechanism", (mechanism,), {})(events.append, script)
        with ExitStack() as stack:
            getattr(recorder, install)(stack)
            recorder._active = True
            stack.callback(setattr, recorder, "_active", False)
            yield events

    return _alone
