"""Subprocesses of the bench: free ports, start, wait for health, and always stop (whole process group)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx

LOOPBACK = "127.0.0.1"
PR_SET_PDEATHSIG = 1


def raise_open_files() -> int:
    """Raise this process's open-files soft limit to the hard limit (each open stream is a socket, two
    in a proxy); returns the limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def _child_setup() -> None:
    """In the child: get SIGTERM if the bench dies without cleaning up (even by SIGKILL; Linux only),
    and as many open files as the hard limit allows."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    raise_open_files()


def repo_root() -> Path:
    return Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


class Proc:
    """One child process in its own session, so stopping it stops everything it started."""

    def __init__(self, name: str, argv: list[str], *, env: dict[str, str] | None, log_dir: Path, port: int) -> None:
        self.name = name
        self.port = port
        self.url = f"http://{LOOPBACK}:{port}"
        self.log_path = log_dir / f"{name}.log"
        self._log = self.log_path.open("wb")
        self.popen = subprocess.Popen(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_child_setup,
            cwd=str(repo_root()),
        )

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        return ""

    def wait_healthy(self, path: str, *, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        last_error = "no answer"
        with httpx.Client(timeout=2.0) as client:
            while time.monotonic() < deadline:
                if not self.alive():
                    raise RuntimeError(f"{self.name} exited with {self.popen.returncode}:\n{self.log_tail()}")
                try:
                    if client.get(self.url + path).status_code == 200:
                        return
                    last_error = "not ready"
                except httpx.HTTPError as exc:
                    last_error = type(exc).__name__
                time.sleep(0.1)
        raise RuntimeError(f"{self.name} not healthy after {timeout:.0f}s ({last_error}):\n{self.log_tail()}")

    def stop(self, grace: float = 8.0) -> None:
        """SIGTERM the process group, then SIGKILL whatever is left after `grace` seconds."""
        try:
            if self.alive():
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.popen.pid, signal.SIGTERM)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.popen.wait(timeout=grace)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout=5)
        finally:
            self._log.close()


class ProcSet:
    """Every process started in one phase; `stop_all` is safe to call twice."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.procs: list[Proc] = []

    def start(self, name: str, argv: list[str], *, port: int, env: dict[str, str] | None = None) -> Proc:
        proc = Proc(name, argv, env=env, log_dir=self.log_dir, port=port)
        self.procs.append(proc)
        return proc

    def stop(self, proc: Proc) -> None:
        """Stop one process before the others (a phase's extra server)."""
        if proc in self.procs:
            self.procs.remove(proc)
        with contextlib.suppress(Exception):
            proc.stop()

    def stop_all(self) -> None:
        while self.procs:
            proc = self.procs.pop()
            with contextlib.suppress(Exception):
                proc.stop()
