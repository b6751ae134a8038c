"""Data-quality bookkeeping: every input problem is counted, a capped sample is kept with its location.

Readers never raise on bad input; they record what they skipped or flagged here so the report can
say how trustworthy the numbers are (and so nothing is lost silently).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

MAX_LISTED = 200


@dataclass(frozen=True)
class DataProblem:
    file: str
    line: int | None  # 1-based line (or event index for JSON arrays); None when not attributable
    reason: str


@dataclass
class ProblemLog:
    """Counts by reason (exact) plus the first ``cap`` problems in full."""

    cap: int = MAX_LISTED
    counts: Counter[str] = field(default_factory=Counter)
    items: list[DataProblem] = field(default_factory=list)

    def add(self, file: object, line: int | None, reason: str, count: int = 1) -> None:
        self.counts[reason] += count
        if len(self.items) < self.cap:
            self.items.append(DataProblem(str(file), line, reason))

    def merge(self, other: "ProblemLog") -> None:
        """Append another log's problems (as if they had been added here after ours)."""
        self.counts.update(other.counts)
        self.items.extend(other.items[: max(self.cap - len(self.items), 0)])

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "by_reason": dict(sorted(self.counts.items())),
            "listed": len(self.items),
            "problems": [{"file": p.file, "line": p.line, "reason": p.reason} for p in self.items],
        }


@dataclass(frozen=True)
class LoggedProblems:
    """A problem log as read back from data-quality.json (``ProblemLog.to_json``, written beside the rule
    outputs) for the report's Data quality section: a folder of rule outputs is input too, so every field is
    read leniently (a total that is no integer is 0, a reason table that is no object empty, listed problems
    that are no objects skipped); the listed problems' file, line and reason are as written."""

    total: int = 0
    by_reason: dict[Any, Any] = field(default_factory=dict)
    listed: list[tuple[object, object, object]] = field(default_factory=list)  # (file, line, reason)

    @classmethod
    def of(cls, document: object) -> LoggedProblems:
        found = document if isinstance(document, dict) else {}
        total, by_reason, problems = found.get("total"), found.get("by_reason"), found.get("problems", [])
        return cls(total if isinstance(total, int) else 0, by_reason if isinstance(by_reason, dict) else {},
                   [(p.get("file", ""), p.get("line"), p.get("reason", ""))
                    for p in (problems if isinstance(problems, list) else []) if isinstance(p, dict)])
