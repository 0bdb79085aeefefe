"""Serve the scripted model (model.py) on port 8765 with the repository's local test server of a
wire format, the base_url of that format's config: ``python examples/agent/serve.py`` (Chat
Completions, evalgate.yml), ``--format responses`` (the Responses API, evalgate.responses.yml),
``--format anthropic`` (Anthropic Messages, evalgate.anthropic.yml: it takes the x-api-key
``sk-ant-local-example``); ``--regress`` serves version 2. Stop it with Ctrl-C."""

from __future__ import annotations

import argparse
import contextlib
import functools
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PORT = 8765
ANTHROPIC_KEY = "sk-ant-local-example"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--format", choices=("chat", "responses", "anthropic"), default="chat")
    parser.add_argument("--regress", action="store_true", help="serve version 2, which skips to_fahrenheit")
    parser.add_argument("--port", type=int, default=PORT, help=f"port on 127.0.0.1 (default {PORT})")
    args = parser.parse_args()
    sys.path[:0] = [str(HERE), str(HERE.parent.parent / "tests")]
    from fakes.anthropic_server import AnthropicServer
    from fakes.openai_server import OpenAIServer
    from fakes.responses_server import ResponsesServer
    from model import RESPONDERS

    respond = functools.partial(RESPONDERS[args.format], regress=args.regress)
    server: OpenAIServer
    if args.format == "anthropic":
        server = AnthropicServer(respond, api_key=ANTHROPIC_KEY, port=args.port)
    elif args.format == "responses":
        server = ResponsesServer(port=args.port)
        server.responder = respond
    else:
        server = OpenAIServer(responder=respond, port=args.port)
    print(f"{server.url} ({args.format}, model version {2 if args.regress else 1})", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server._loop.run_forever()


if __name__ == "__main__":
    main()
