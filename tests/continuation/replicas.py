"""Replicas for the crash and drain tests: B lives for the whole package, each test takes a fresh A
(its own process, killed or drained by the test), and the next A starts while a test runs — a
replica takes seconds to start on a loaded machine, which would otherwise dominate every test."""

from __future__ import annotations

from collections.abc import Callable

from tests.live_server import LiveServer


class ReplicaPool:
    def __init__(self, spawn: Callable[[], LiveServer]) -> None:
        self._spawn = spawn
        self._started: list[LiveServer] = []
        self.survivor = self._start()
        self._spare = self._start()
        self.survivor.wait_ready()

    def _start(self) -> LiveServer:
        server = self._spawn()
        self._started.append(server)
        return server

    def take(self) -> LiveServer:
        """A ready replica that is this test's to kill; a spare for the next test starts at once."""
        taken, self._spare = self._spare, self._start()
        taken.wait_ready()
        return taken

    def running(self, runner_id: str) -> LiveServer:
        """The live replica that runs turns as `runner_id` (each says so in its log when it starts)."""
        (server,) = [s for s in self._started if s.alive() and f"runs turns as runner {runner_id}" in s.log()]
        return server

    def kill(self, server: LiveServer) -> None:
        """SIGKILL any replica (a live spare sweeps and continues turns too): a killed spare is replaced,
        and if the survivor is killed, the spare survives from now on."""
        server.kill()
        if server is self._spare:
            self._spare = self._start()
        elif server is self.survivor:
            self.survivor = self.take()

    def close(self) -> None:
        for server in self._started:
            server.terminate()
        for server in self._started:
            server.stop()
