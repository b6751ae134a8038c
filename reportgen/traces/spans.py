"""Pairing of duration events: a ``B`` (begin) waits for its ``E`` (end) on the same key.

Chrome traces nest B/E pairs per thread (Kineto, keyed by pid and tid) or per process (smdebug,
keyed by pid): the last open B of a key is the one an E closes.
"""

from __future__ import annotations

from collections import defaultdict


class OpenSpans:
    """B events not yet closed, per key, each with its start time."""

    def __init__(self):
        self._open: dict = defaultdict(list)

    def begin(self, key, event, ts) -> None:
        self._open[key].append((event, ts))

    def end(self, key):
        """The (event, ts) of the last open B of ``key``, or None when there is none."""
        stack = self._open[key]  # (a key first met at an E still takes its place in ``unclosed``'s order)
        return stack.pop() if stack else None

    def unclosed(self) -> list:
        """The B events never closed, key by key in the order their keys first opened."""
        return [event for stack in self._open.values() for event, _ in stack]
