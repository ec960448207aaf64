"""Recording: runs a script under torch hooks and emits plain events. Imports torch, never Qt."""
