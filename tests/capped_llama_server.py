"""``python -m llama_cpp.server`` with every completion capped at ``--cap`` tokens (the tests' real server).

Why: llama-cpp-python's ``chatml-function-calling`` handler passes ``max_tokens=None`` for a tool
call's arguments and for a plain message, so the request's ``max_tokens`` is ignored there and a
small model's runaway argument string runs on to the end of the context window (~4k tokens). On a
slow machine one such request took over the tests' 400-s timeout (twice, with the retry), and the
episode failed on the server's speed, not the harness. Servers that honour ``max_tokens`` (vLLM,
llama.cpp's own ``llama-server``) stop there; this one is made to stop at ``--cap``. The arguments
are then cut-off JSON: the model's invalid call, which the harness must and does handle.

Usage: python capped_llama_server.py --cap N <llama_cpp.server arguments>
"""

from __future__ import annotations

import inspect
import sys
from typing import Any

import llama_cpp
from llama_cpp.server.__main__ import main


def _capped(cap: int) -> None:
    create = llama_cpp.Llama.create_completion
    signature = inspect.signature(create)

    def create_completion(*args: Any, **kwargs: Any) -> Any:
        call = signature.bind(*args, **kwargs)
        call.apply_defaults()
        asked = call.arguments.get("max_tokens")
        call.arguments["max_tokens"] = cap if asked is None or asked <= 0 else min(asked, cap)
        return create(*call.args, **call.kwargs)

    llama_cpp.Llama.create_completion = create_completion  # type: ignore[method-assign]


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] != "--cap":
        raise SystemExit(__doc__)
    _capped(int(sys.argv[2]))
    del sys.argv[1:3]
    main()
