"""Serve the scripted judge model (judge_model.py) on http://127.0.0.1:8766/v1 with the repository's local
OpenAI-compatible test server: ``python examples/judge/serve.py``. Stop it with Ctrl-C."""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PORT = 8766


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=PORT, help=f"port on 127.0.0.1 (default {PORT})")
    args = parser.parse_args()
    sys.path[:0] = [str(HERE), str(HERE.parent.parent / "tests")]
    from fakes.openai_server import OpenAIServer
    from judge_model import respond

    server = OpenAIServer(responder=respond, port=args.port)
    print(f"{server.url} (the scripted judge)", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server._loop.run_forever()


if __name__ == "__main__":
    main()
