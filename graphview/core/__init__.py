"""Pure-Python model of a run: events, traces, graph, memory, exports. Imports neither torch nor Qt."""
