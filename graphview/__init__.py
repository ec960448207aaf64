"""graphview: watch PyTorch autograd build, run and free its graph.

``graphview.record(path)`` records autograd from inside a program or notebook (see
:mod:`graphview.capture.inprocess`); importing graphview itself loads neither torch nor Qt.
"""

from __future__ import annotations

import sys

__version__ = "0.1.0"
__all__ = ["record", "__version__"]


def record(path="run.gvtrace", *, start_step: int = 1, steps: int | None = None, **options):
    """Record what autograd does inside a ``with`` block into the trace file ``path``.

    >>> with graphview.record("run.gvtrace") as rec:
    ...     loss = model(x).sum()
    ...     loss.backward()
    ...     optimizer.step()

    The code runs in this process exactly as without graphview (results and gradients are
    bit-identical); the trace is written as it goes and opens in the app like one that
    ``graphview record`` made. Options: ``retain_graph=True`` / ``create_graph=True`` (forced on
    every backward), ``detach_at="fc2"`` (as the CLI's ``--detach-at``).

    Steps are your loop's: one ends when ``optimizer.step()`` returns (or at ``rec.step()``, for
    a loop without an optimizer). ``start_step=k, steps=n`` records steps k to k+n-1 only, and
    ``rec.pause()`` / ``rec.resume()`` leave a part out. Under ``torchrun`` each process writes
    ``run.rank<N>.gvtrace``. In a notebook the returned object shows the graph inline;
    ``rec.open()`` opens the trace in the graphview app.
    """
    from graphview.capture.inprocess import record as _record

    return _record(path, start_step=start_step, steps=steps, _caller=sys._getframe(1), **options)
