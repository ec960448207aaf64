"""Recordings made once by a real ``graphview record`` (its CLI and runner processes) for the tests
of several modules that read them and write nothing into them."""

from __future__ import annotations

import pytest

from tests.conftest import model


@pytest.fixture(scope="session")
def mlp_recording(tmp_path_factory):
    """``graphview record`` of the MLP sample (a step script: the app's steps), quiet: (the trace,
    the finished CLI process with its exit status and what it wrote)."""
    from tests.app.test_cli import graphview

    trace = tmp_path_factory.mktemp("mlp_recording") / "mlp.gvtrace"
    return trace, graphview("record", model("mlp_optimizer"), "-o", trace, "-q")
