"""Runs a script as ``python SCRIPT ARGS`` would, then saves what a fidelity comparison needs.

    python tests/capture/inprocess_harness.py OUT [--probe] -- SCRIPT ARGS...

OUT gets (``OUT.rank<N>`` under torchrun) the losses the script kept in ``losses``, every tensor,
parameter and ``.grad`` its globals hold at the end (:func:`graphview.capture.fidelity.final_state`)
and, with ``--probe``, torch's own graph at every backward call (a walk of ``next_functions``).
"""

from __future__ import annotations

import contextlib
import os
import runpy
import sys

import torch

from graphview.capture.fidelity import GraphProbe, final_state


def main() -> None:
    cut = sys.argv.index("--")
    out, flags, script_argv = sys.argv[1], sys.argv[2:cut], sys.argv[cut + 1:]
    sys.argv = script_argv
    sys.path[0] = os.path.dirname(os.path.abspath(script_argv[0]))
    probe = GraphProbe()
    with probe.installed() if "--probe" in flags else contextlib.nullcontext():
        scope = runpy.run_path(script_argv[0], run_name="__main__")
    rank = os.environ.get("RANK")
    torch.save({"results": [t.clone() for t in scope.get("losses", [])], "state": final_state(scope),
                "error": None, "stdout": "", "graphs": probe.calls},
               out if rank is None else f"{out}.rank{rank}")


if __name__ == "__main__":
    main()
