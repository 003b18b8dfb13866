"""The call record (trace) of an episode: every call with its arguments, result, cost and time.

The record is what lets each edge of a submitted graph be traced to the edits and evidence behind
it. It never holds ground truth: it is built from what the agent sent and what the tools returned.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from causal_gym._jsonable import to_jsonable

__all__ = ["TIMING_FIELDS", "CallRecord", "EpisodeLog"]

TIMING_FIELDS = ("wall_time",)
"""Fields that depend on the machine's speed; :meth:`EpisodeLog.deterministic_view` leaves them out."""


@dataclass(frozen=True)
class CallRecord:
    """One step of an episode.

    Attributes
    ----------
    step:
        1 for the first step after ``reset``.
    tool:
        The tool called; for a rejected call the tool it named, or None when it named none.
    arguments:
        The arguments with variables by name (``ToolCall.to_dict``); for a rejected call
        ``{"raw": ...}``, a summary of what was sent.
    ok:
        False for errors, refusals and rejected submissions.
    result_text:
        The full text shown to the agent (the observation may cut it).
    data:
        The structured result (JSON-serialisable).
    cost:
        Budget name -> amount actually charged by the call.
    wall_time:
        Seconds the environment spent on the step.
    """

    step: int
    tool: str | None
    arguments: Mapping[str, Any]
    ok: bool
    result_text: str
    data: Mapping[str, Any] = field(default_factory=dict)
    cost: Mapping[str, float] = field(default_factory=dict)
    wall_time: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "tool": self.tool,
            "arguments": to_jsonable(self.arguments),
            "ok": self.ok,
            "result_text": self.result_text,
            "data": to_jsonable(self.data),
            "cost": to_jsonable(self.cost),
            "wall_time": self.wall_time,
        }


class EpisodeLog:
    """The ordered calls of one episode."""

    def __init__(self) -> None:
        self._calls: list[CallRecord] = []

    def append(self, record: CallRecord) -> None:
        if not isinstance(record, CallRecord):
            raise TypeError(f"expected a CallRecord, got {type(record).__name__}")
        self._calls.append(record)

    def __len__(self) -> int:
        return len(self._calls)

    def __iter__(self) -> Iterator[CallRecord]:
        return iter(self._calls)

    def __getitem__(self, index: int) -> CallRecord:
        return self._calls[index]

    def to_list(self) -> list[dict[str, Any]]:
        """Every call as a JSON-serialisable dict."""
        return [c.to_dict() for c in self._calls]

    def deterministic_view(self) -> list[dict[str, Any]]:
        """:meth:`to_list` without :data:`TIMING_FIELDS`: equal for equal seeds and actions."""
        return [{k: v for k, v in c.items() if k not in TIMING_FIELDS} for c in self.to_list()]

    def summary(self) -> dict[str, Any]:
        """Counts that do not depend on timing: calls, errors, calls per tool, total cost per budget."""
        cost: Counter[str] = Counter()
        for c in self._calls:
            cost.update(c.cost)
        return {
            "calls": len(self._calls),
            "errors": sum(not c.ok for c in self._calls),
            "tool_counts": dict(Counter(str(c.tool) for c in self._calls)),
            "cost": {k: float(v) for k, v in cost.items()},
        }

    def to_dict(self) -> dict[str, Any]:
        """The summary and the calls, for run stores (``to_jsonable`` uses this)."""
        return {"summary": self.summary(), "calls": self.to_list()}
