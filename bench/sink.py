"""The loopback receiver of the features pass: webhook deliveries and OTLP/HTTP trace exports.

    python -m bench.sink --port 8997

Answers every `POST /webhook` and `POST /v1/traces` with 200 and counts them; `GET /health` returns
the counts, so the bench can say that deliveries and spans did arrive.
"""

from __future__ import annotations

import argparse
from collections import Counter

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from bench.serving import serve

WEBHOOK_PATH = "/webhook"
TRACES_PATH = "/v1/traces"


def build_app() -> Starlette:
    received: Counter[str] = Counter()

    async def accept(request: Request) -> Response:
        await request.body()
        received[request.url.path] += 1
        return Response(status_code=200)

    async def health(_request: Request) -> Response:
        return JSONResponse(dict(received))

    return Starlette(
        routes=[
            Route(WEBHOOK_PATH, accept, methods=["POST"]),
            Route(TRACES_PATH, accept, methods=["POST"]),
            Route("/health", health, methods=["GET"]),
        ]
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.sink", description=__doc__)
    parser.add_argument("--port", type=int, default=8997)
    serve(build_app(), parser.parse_args(argv).port)


if __name__ == "__main__":
    main()
