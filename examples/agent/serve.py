"""Serve the scripted model (model.py) on http://127.0.0.1:8765/v1, the base_url of evalgate.yml,
with the repository's local OpenAI-compatible test server: ``python examples/agent/serve.py``
(version 1) or ``python examples/agent/serve.py --regress`` (version 2). Stop it with Ctrl-C."""

from __future__ import annotations

import argparse
import contextlib
import functools
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PORT = 8765


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--regress", action="store_true", help="serve version 2, which skips to_fahrenheit")
    parser.add_argument("--port", type=int, default=PORT, help=f"port on 127.0.0.1 (default {PORT})")
    args = parser.parse_args()
    sys.path[:0] = [str(HERE), str(HERE.parent.parent / "tests")]
    from model import respond
    from openai_server import OpenAIServer

    server = OpenAIServer(responder=functools.partial(respond, regress=args.regress), port=args.port)
    print(f"{server.url} (model version {2 if args.regress else 1})", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server._loop.run_forever()


if __name__ == "__main__":
    main()
