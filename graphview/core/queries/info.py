"""The summary ``graphview info`` prints, built from the run's tables and its queries."""

from __future__ import annotations

from graphview.core.queries.tables import RunTables


def run_info(run: RunTables) -> dict:
    """The summary ``graphview info`` prints (:meth:`graphview.core.run.Run.info`)."""
    errors = []
    for index, ev in run.errors:
        errors.append({"index": index, "type": ev.get("type"), "message": ev.get("message"), "line": ev.get("line")})
    start = run.start or {}
    return {
        "script": start.get("script"),
        "mode": run.mode,
        "torch": start.get("torch"),
        "options": start.get("options", {}),
        "status": run.status,
        "exit_code": (run.end or {}).get("exit_code"),
        "events": len(run.events),
        "steps": len(run.steps),
        "ops": len(run.ops),
        "nodes": len(run.op_nodes),
        "tensors": len(run.tensors),
        "saved_tensors": len(run.saved),
        "backward_calls": len(run.backwards),
        "optimizer_steps": len(run.optimizer_steps),
        "peak_saved_bytes": run.peak_saved_bytes(),
        "peak_per_step": run.peak_per_step(),
        "errors": errors,
    }
