"""Command line and wiring: spawns runners, writes traces, exports."""
