"""Fitting a tool-calling conversation into a model's context window.

A Heuresis episode allows 60 turns with long tool results and a CausaLab episode ~50; an 8k-token
window overflows long before the end. :class:`ContextWindow` keeps a conversation under a token
budget (the window minus the reply's ``max_tokens`` and a safety margin) by dropping whole old
turns, never the parts an agent cannot act without:

- the system prompt (task statement, rules, tools) and the first user message (the start: the
  starting graph, PC-KCI's deletion log, the lab's records);
- the most recent turns (an assistant reply with its tool results), at least the last one;
- a note, added to the first user message, saying how many turns were dropped and which tools
  they called, so the model knows its memory is partial;
- the current state (working graph and budgets, or the lab's records), which the caller appends
  to the latest message when anything was dropped (see ``LLMAgent``).

A turn is the unit of dropping because a tool result without its call (or a call without its
result) is invalid in the chat-completions protocol. Tokens are estimated from characters with a
ratio calibrated on the server's own ``prompt_tokens`` counts (:meth:`ContextWindow.observe`);
until the first count arrives the ratio is a cautious 3 characters per token. The window is the
``context_window`` given, else learnt from a server's "maximum context length is N tokens" error.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["ContextWindow", "ContextOverflow", "is_overflow", "window_from_error"]

_DEFAULT_CHARS_PER_TOKEN = 3.0
_MARGIN = 0.08  # share of the budget kept free for estimation error
_PLAUSIBLE = (1.0, 8.0)  # characters per token of any tokenizer on this JSON
_ERROR_PATTERNS = (
    re.compile(r"maximum context length is (\d+)", re.I),
    re.compile(r"context (?:window|length|size) of (\d+)", re.I),
    re.compile(r"n_ctx[^\d]{0,8}(\d+)", re.I),
)
_OVERFLOW_WORDS = ("context length", "context window", "maximum context", "too many tokens", "n_ctx", "prompt is too long")


class ContextOverflow(RuntimeError):
    """The system prompt, the start and the latest turn alone do not fit the window."""


def window_from_error(message: str) -> int | None:
    """The context window a server names in an over-length error, if it names one."""
    for pattern in _ERROR_PATTERNS:
        found = pattern.search(message)
        if found:
            return int(found.group(1))
    return None


def is_overflow(message: str) -> bool:
    """Whether an error message says the request did not fit the context."""
    lowered = message.lower()
    return any(word in lowered for word in _OVERFLOW_WORDS)


def _chars(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, default=str))


def _turns(messages: Sequence[Mapping[str, Any]]) -> list[tuple[int, int]]:
    """``(start, end)`` index ranges of the turns after the system prompt and the first user message.

    A turn starts at an assistant message and runs to the next one (its tool results and any user
    messages in between belong to it).
    """
    starts = [k for k in range(2, len(messages)) if messages[k].get("role") == "assistant"]
    return [(a, b) for a, b in zip(starts, [*starts[1:], len(messages)])]


class ContextWindow:
    """A token budget for the messages of one request (see the module docstring).

    Parameters
    ----------
    window : int or None
        The model's context window in tokens; None until known (nothing is trimmed).
    reply_tokens : int or None
        Tokens reserved for the reply (the request's ``max_tokens``; None reserves 512).
    """

    def __init__(self, window: int | None, reply_tokens: int | None) -> None:
        self.window = window
        self.reply_tokens = 512 if reply_tokens is None else reply_tokens
        self.chars_per_token = _DEFAULT_CHARS_PER_TOKEN

    @property
    def budget(self) -> int | None:
        """Prompt tokens a request may use (None: no known window)."""
        if self.window is None:
            return None
        return int((self.window - self.reply_tokens) * (1 - _MARGIN))

    def estimate(self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] = ()) -> int:
        """Estimated prompt tokens of a request with these messages and tool schemas."""
        return int((_chars(list(messages)) + (_chars(list(tools)) if tools else 0)) / self.chars_per_token) + 1

    def observe(self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]], prompt_tokens: int) -> None:
        """Calibrate the ratio from a request whose prompt the server counted (keeps the most cautious)."""
        if prompt_tokens <= 0:
            return
        ratio = (_chars(list(messages)) + (_chars(list(tools)) if tools else 0)) / prompt_tokens
        if not _PLAUSIBLE[0] <= ratio <= _PLAUSIBLE[1]:  # a server that does not count real tokens
            return
        if self.chars_per_token == _DEFAULT_CHARS_PER_TOKEN:
            self.chars_per_token = ratio
        else:
            self.chars_per_token = min(self.chars_per_token, ratio)

    def learn(self, error_message: str) -> bool:
        """Take the window from an over-length error, or shrink the budget by a quarter; True if it changed.

        A named window is taken only when none was known or it is smaller: after a shrink, the same
        error naming the server's full window must not grow the budget back (the request that
        overflowed would be sent again unchanged).
        """
        named = window_from_error(error_message)
        if named is not None and (self.window is None or named < self.window):
            self.window = named
            return True
        if self.window is not None:
            self.window = int(self.window * 0.75)
            return True
        return False

    def fit(
        self, messages: list[dict[str, Any]], tools: Sequence[Mapping[str, Any]] = ()
    ) -> tuple[list[dict[str, Any]], int]:
        """The messages to send: ``messages`` with the oldest turns dropped until the estimate fits.

        Returns
        -------
        (list, int)
            The messages (a new list; the dicts are shared except the first user message when a
            note is added) and the number of turns dropped.

        Raises
        ------
        ContextOverflow
            When even the system prompt, the start and the latest turn do not fit.
        """
        budget = self.budget
        if budget is None or self.estimate(messages, tools) <= budget:
            return list(messages), 0
        turns = _turns(messages)
        for dropped in range(1, len(turns)):
            removed = turns[:dropped]
            kept = messages[:2] + messages[turns[dropped][0]:]
            tools_used = Counter(
                call["function"]["name"]
                for a, b in removed
                for message in messages[a:b]
                for call in message.get("tool_calls") or ()
            )
            note = (
                f"\n\n[{dropped} earlier turn{'s' if dropped > 1 else ''} removed to fit the model's context"
                + (f" (calls: {', '.join(f'{name} x{k}' for name, k in sorted(tools_used.items()))})" if tools_used else "")
                + "; the latest result ends with the current state]"
            )
            first = dict(kept[1])
            first["content"] = str(first.get("content") or "") + note
            kept = [kept[0], first, *kept[2:]]
            if self.estimate(kept, tools) <= budget:
                return kept, dropped
        raise ContextOverflow(
            f"the context window ({self.window} tokens, {self.reply_tokens} kept for the reply) cannot hold the "
            f"system prompt, the start and the latest turn (about {self.estimate(messages[:2], tools)} tokens before "
            "any turn); raise context_window, lower max_tokens, or shorten tool results (max_result_chars)"
        )
