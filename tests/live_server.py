"""The real service in a process of its own (`agent-runtime serve` on loopback), for tests that must
watch what a request does to the process: its memory limit, whether it survives, what it logs, or
what its peers on the same database do when it is killed or drained."""

from __future__ import annotations

import os
import resource
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

START_TIMEOUT_SECONDS = 180
"""A safety net for a loaded machine (start-up takes seconds), not a measurement."""


@dataclass(frozen=True)
class LiveServer:
    base_url: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def alive(self) -> bool:
        return self.process.poll() is None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_ready(self) -> None:
        _wait_until_ready(self)

    def kill(self) -> None:
        """SIGKILL: the process dies at once, as in a crash; nothing of it runs any more."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def terminate(self) -> None:
        """SIGTERM: the process drains (see `DrainingServer`) and exits by itself."""
        self.process.send_signal(signal.SIGTERM)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if the drain has not ended the process within 30 s."""
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _address_space_limit(limit_bytes: int) -> Callable[[], None]:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    return apply


def spawn_server(
    database_url: str,
    secret: str,
    work_dir: Path,
    *,
    memory_limit_bytes: int | None = None,
    env_overrides: dict[str, str] | None = None,
) -> LiveServer:
    """Start serving on a free loopback port (not yet ready: see `wait_ready`); the log (stdout and
    stderr) goes to a file. `SHUTDOWN_GRACE_SECONDS` is 5 unless overridden."""
    port = _free_port()
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "AUTH_JWT_SECRET": secret,
        "DATA_DIR": str(work_dir),
        "SHUTDOWN_GRACE_SECONDS": "5",
        **(env_overrides or {}),
    }
    log_path = work_dir / f"server-{port}.log"
    command = [sys.executable, "-m", "app.cli", "serve", "--host", "127.0.0.1", "--port", str(port)]
    preexec = _address_space_limit(memory_limit_bytes) if memory_limit_bytes else None
    with log_path.open("wb") as log:
        process = subprocess.Popen(  # noqa: S603 - our own CLI, fixed arguments
            command, env=env, stdout=log, stderr=subprocess.STDOUT, preexec_fn=preexec, cwd=Path.cwd()
        )
    return LiveServer(f"http://127.0.0.1:{port}", process, log_path)


@contextmanager
def live_server(
    database_url: str,
    secret: str,
    work_dir: Path,
    *,
    memory_limit_bytes: int | None = None,
    env_overrides: dict[str, str] | None = None,
) -> Iterator[LiveServer]:
    """A ready server until the block ends. The block's end is a SIGTERM, which drains: running turns
    get `SHUTDOWN_GRACE_SECONDS` before the process stops."""
    server = spawn_server(
        database_url, secret, work_dir, memory_limit_bytes=memory_limit_bytes, env_overrides=env_overrides
    )
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


def _wait_until_ready(server: LiveServer) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if not server.alive():
            raise RuntimeError(f"the service exited at start:\n{server.log()}")
        try:
            if httpx.get(f"{server.base_url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"the service did not start within {START_TIMEOUT_SECONDS} s:\n{server.log()}")
