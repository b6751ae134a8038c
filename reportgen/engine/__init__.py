"""Analysis engine: raw profiler data -> the 11 rule outputs (facade added below)."""
