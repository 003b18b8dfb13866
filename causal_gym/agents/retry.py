"""When a failed chat completion is tried again, and after how long.

Kept apart from the agent's request loop (:meth:`causal_gym.agents.llm.LLMAgent._complete`), which
also learns the context window from overflow errors and writes transcript events: this module only
decides. Connection errors, HTTP 429 and 5xx are transient; a 5xx that repeats the previous
message word for word or reads as request validation is deterministic (retrying it cannot help); a
timeout is retried once (a second one means the request itself is too slow).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["RetryDecision", "RetryPolicy"]


@dataclass(frozen=True)
class RetryDecision:
    """Whether to retry; ``delay`` in seconds when so; ``kind`` says why not (for the error message)."""

    retry: bool
    delay: float | None
    kind: str | None


class RetryPolicy:
    """Exponential backoff with jitter, at least a numeric ``Retry-After``, both capped at ``max_delay``.

    Retry ``k`` (0-based) waits ``min(max_delay, base_delay * 2**k)`` times a factor in ``[0.5, 1)``
    drawn from ``jitter`` (seeded by the agent, so a replayed episode waits the same).
    """

    def __init__(self, max_retries: int, base_delay: float, max_delay: float, jitter: np.random.Generator) -> None:
        self.max_retries = max_retries
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.jitter = jitter
        self.attempt = 0
        self.timeouts = 0
        self.previous: str | None = None

    def decide(self, exc: Any) -> RetryDecision:
        """Judge ``exc`` (an ``openai.APIError``) as the failure of attempt ``self.attempt``; a retry is counted."""
        import openai

        transient = isinstance(exc, (openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError))
        timeout = isinstance(exc, openai.APITimeoutError)
        status = getattr(exc, "status_code", None)
        text = str(exc)
        deterministic = status is not None and status >= 500 and (
            text == self.previous or "validation error" in text.lower() or "input should be" in text.lower())
        if not transient:
            return RetryDecision(False, None, "not retryable")
        if deterministic:
            return RetryDecision(False, None, "deterministic")
        if self.attempt >= self.max_retries or (timeout and self.timeouts >= 1):
            return RetryDecision(False, None, "retries exhausted")
        delay = self.backoff(self.attempt, exc)
        self.previous = text
        self.timeouts += timeout
        self.attempt += 1
        return RetryDecision(True, delay, None)

    def backoff(self, attempt: int, exc: Any) -> float:
        """The wait before retry ``attempt``."""
        delay = min(self.max_delay, self.base_delay * 2.0**attempt) * (0.5 + 0.5 * self.jitter.random())
        response = getattr(exc, "response", None)
        header = response.headers.get("retry-after") if response is not None else None
        try:
            delay = max(delay, min(self.max_delay, float(header))) if header is not None else delay
        except ValueError:
            pass
        return delay
