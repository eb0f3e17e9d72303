"""The `agent-runtime` command: serve | migrate | token | chat | eval run | rotate-secrets-key."""

from __future__ import annotations

import argparse
import gc
import sys
from pathlib import Path

from pydantic import ValidationError

from app.settings import describe_invalid_setting, get_settings


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from app.core.draining_server import DrainingServer
    from app.main import create_app

    settings = get_settings()
    app = create_app(settings)
    _tune_gc()
    config = uvicorn.Config(
        app,
        host=args.host,
        port=args.port,
        loop="auto",
        http="auto",
        log_level=args.log_level,
        log_config=None,  # uvicorn's own lines go through the service's JSON logging (app/core/logs.py)
        access_log=False,
        timeout_graceful_shutdown=5,
    )
    DrainingServer(config, app, settings.shutdown.grace_seconds).run()
    return 0


def _tune_gc() -> None:
    """Move everything loaded so far (modules, the app) out of the collector's sight and collect young
    objects less often: a turn allocates thousands of short-lived dicts, and every collection of the
    oldest generation would otherwise walk the whole framework's objects again."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, 20, 20)


def _migrate(_: argparse.Namespace) -> int:
    from app.core.migrate import upgrade_head

    upgrade_head(get_settings().database_url)
    print("database is at head")
    return 0


def _token(args: argparse.Namespace) -> int:
    from app.auth.secret import NoSecret, load_secret
    from app.auth.verify import mint_user_token

    settings = get_settings()
    if settings.auth.jwks_url:
        print("this service verifies tokens from AUTH_JWKS_URL; ask that issuer for a token", file=sys.stderr)
        return 2
    try:
        secret = settings.auth.jwt_secret or load_secret(settings.data_dir)
    except NoSecret as missing:
        print(
            f"no service secret at {Path(str(missing)).resolve()}: run this where `agent-runtime serve` runs, "
            "or set DATA_DIR (or AUTH_JWT_SECRET) as the service has it",
            file=sys.stderr,
        )
        return 2
    print(
        mint_user_token(
            secret,
            tenant_id=args.tenant,
            sub=args.sub,
            roles=args.role or [],
            ttl_seconds=args.ttl,
            issuer=settings.auth.issuer,
            audience=settings.auth.audience,
        )
    )
    return 0


def _chat(args: argparse.Namespace) -> int:
    from app.cli.chat import run_chat

    return run_chat(args.session_id, base_url=str(args.url), token=args.token, agent=args.agent)


def _eval_run(args: argparse.Namespace) -> int:
    from app.evals.cli import EvalArgs, run_eval

    evaluated = EvalArgs(
        dataset=args.dataset, agent=args.agent, version=args.version, baseline=args.baseline,
        fail_under=args.fail_under, tools=args.tools, concurrency=args.concurrency, as_json=args.json,
    )  # fmt: skip
    return run_eval(evaluated, base_url=str(args.url), token=args.token)


def _rotate_secrets_key(args: argparse.Namespace) -> int:
    import asyncio

    from sqlalchemy.exc import SQLAlchemyError

    from app.core.db import create_engine
    from app.core.migrate import head_revisions, schema_problem
    from app.credentials.rotation import rotate_secrets_key
    from app.secrets.keyring import SecretsKeyring

    settings = get_settings()

    async def run() -> int:
        engine = create_engine(settings.database_url)
        try:
            async with engine.connect() as conn:
                problem = await schema_problem(conn, await asyncio.to_thread(head_revisions))
            if problem:
                print(f"agent-runtime: {problem}", file=sys.stderr)
                return 2
            keyring = SecretsKeyring.load_or_create(settings.secrets.key_file, settings.data_dir)
            report = await rotate_secrets_key(engine, keyring, prune=args.prune)
        except (OSError, SQLAlchemyError) as exc:
            print(f"agent-runtime: the database cannot be opened ({type(exc).__name__})", file=sys.stderr)
            return 2
        finally:
            await engine.dispose()
        print(f"new key {report.new_key_id}: {report.resealed} credential(s) re-sealed")
        if report.unreadable:
            print(f"{report.unreadable} credential(s) no key of the file opens were left as they are", file=sys.stderr)
        if report.pruned:
            print(f"removed unused key(s): {', '.join(report.pruned)}")
        return 0

    return asyncio.run(run())


def _positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {value!r}")
    return number


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("agent-runtime")
    except PackageNotFoundError:
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agent-runtime", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the HTTP service")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument(
        "--log-level", type=str.lower, default="info", choices=["critical", "error", "warning", "info", "debug"]
    )
    serve.set_defaults(func=_serve)
    sub.add_parser("migrate", help="upgrade the database to the latest schema").set_defaults(func=_migrate)
    token = sub.add_parser("token", help="print a bearer token this service accepts")
    token.add_argument("--tenant", required=True)
    token.add_argument("--sub", required=True)
    token.add_argument("--role", action="append", help="repeatable, e.g. --role admin")
    token.add_argument("--ttl", type=_positive_int, default=3600, help="lifetime in seconds")
    token.set_defaults(func=_token)
    chat = sub.add_parser("chat", help="talk to a session in the terminal")
    chat.add_argument("session_id", nargs="?", default=None, help="an open session (or use --agent)")
    chat.add_argument("--agent", default=None, metavar="AGENT", help="start a new session on this agent (name or id)")
    chat.add_argument("--url", default="http://127.0.0.1:8000")
    chat.add_argument("--token", default=None, help="bearer token (default: env AGENT_RUNTIME_TOKEN)")
    chat.set_defaults(func=_chat)
    evals = sub.add_parser("eval", help="evaluate an agent version on a dataset (for CI)")
    run = evals.add_subparsers(dest="eval_command", required=True).add_parser(
        "run", help="run an eval, print its results; exit 1 under --fail-under or on a regression"
    )
    run.add_argument("--dataset", required=True, metavar="NAME_OR_ID")
    run.add_argument("--agent", required=True, metavar="NAME_OR_ID")
    run.add_argument("--version", required=True, type=int, help="the agent version to evaluate")
    run.add_argument("--baseline", type=int, default=None, metavar="VERSION", help="compare with this version")
    run.add_argument("--fail-under", type=float, default=None, metavar="SCORE", help="least mean score, 0 to 1")
    run.add_argument("--tools", choices=("recorded", "live"), default="recorded")
    run.add_argument("--concurrency", type=int, default=4)
    run.add_argument("--json", action="store_true", help="print the results as JSON")
    run.add_argument("--url", default="http://127.0.0.1:8000")
    run.add_argument("--token", default=None, help="bearer token (default: env AGENT_RUNTIME_TOKEN)")
    run.set_defaults(func=_eval_run)
    rotate = sub.add_parser(
        "rotate-secrets-key", help="add a new key to SECRETS_KEY_FILE and re-encrypt every stored provider key"
    )
    rotate.add_argument(
        "--prune", action="store_true", help="then drop old keys no row uses (after every replica reloaded)"
    )
    rotate.set_defaults(func=_rotate_secrets_key)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command != "chat":
        try:
            get_settings()
        except ValidationError as error:
            print(f"agent-runtime: {describe_invalid_setting(error)}", file=sys.stderr)
            return 2
    return int(args.func(args))
