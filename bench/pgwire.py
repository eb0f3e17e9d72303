"""A counting PostgreSQL proxy on loopback: the statements and commits of one agent-runtime process.

pg_stat_statements needs `shared_preload_libraries` (a server restart) and the bench shares its
PostgreSQL with others, so `bench.run --db-stats` starts one more agent-runtime whose `DATABASE_URL`
points here. The proxy forwards every byte both ways. From the server's replies: each
CommandComplete other than transaction control is a statement, and each return to idle after a
completed command, with no error or rollback since the last idle, is a commit (an implicit
transaction's too, as `pg_stat_database.xact_commit` counts it). From the client's requests, the
SQL each execution runs (Parse names a statement, Bind a portal of it, Execute runs the portal): a
commit whose transaction ran an INSERT, UPDATE or DELETE (a data-modifying CTE too) is a write, the
commits that cost a WAL flush. It refuses TLS so it can read.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import struct
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass

from bench.procs import LOOPBACK

SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
TRANSACTION_CONTROL = frozenset({"BEGIN", "START", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE"})
CHUNK = 65536
Observer = Callable[[bytes], None] | None
WRITES = re.compile(rb"\b(INSERT|UPDATE|DELETE)\b", re.IGNORECASE)


@dataclass
class WireCounts:
    statements: int = 0
    commits: int = 0
    writes: int = 0
    """Commits of transactions that changed data."""
    rollbacks: int = 0

    def snapshot(self) -> dict[str, int]:
        return asdict(self)


def _messages(buffer: bytearray, data: bytes) -> list[tuple[bytes, bytes]]:
    """The whole messages `data` completes in `buffer` (kind, body); a partial one stays buffered."""
    buffer += data
    found = []
    while len(buffer) >= 5:
        (length,) = struct.unpack_from("!i", buffer, 1)
        if len(buffer) < 1 + length:
            break
        found.append((bytes(buffer[0:1]), bytes(buffer[5 : 1 + length])))
        del buffer[: 1 + length]
    return found


def _cstrings(body: bytes, count: int) -> list[bytes]:
    return body.split(b"\0", count)[:count]


class RequestReader:
    """Parses one connection's client-to-server stream (after the startup message): whether each
    execution it asks for writes, in order, into `executions` (the replies consume them)."""

    def __init__(self, executions: deque[bool]) -> None:
        self.executions = executions
        self._buffer = bytearray()
        self._statements: dict[bytes, bool] = {}
        self._portals: dict[bytes, bool] = {}

    def feed(self, data: bytes) -> None:
        for kind, body in _messages(self._buffer, data):
            if kind == b"P":
                name, query = _cstrings(body, 2)
                self._statements[name] = WRITES.search(query) is not None
            elif kind == b"B":
                portal, statement = _cstrings(body, 2)
                self._portals[portal] = self._statements.get(statement, False)
            elif kind == b"E":
                self.executions.append(self._portals.get(_cstrings(body, 1)[0], False))
            elif kind == b"Q":
                self.executions.append(WRITES.search(body) is not None)


class ReplyReader:
    """Parses one connection's server-to-client byte stream (already past TLS negotiation) into `counts`."""

    def __init__(self, counts: WireCounts, executions: deque[bool] | None = None) -> None:
        self.counts = counts
        self.executions = deque() if executions is None else executions
        self._buffer = bytearray()
        self._completed = False
        self._aborted = False
        self._wrote = False

    def feed(self, data: bytes) -> None:
        for kind, body in _messages(self._buffer, data):
            self._message(kind, body)

    def _executed(self) -> None:
        self._completed = True
        if self.executions and self.executions.popleft():
            self._wrote = True

    def _message(self, kind: bytes, body: bytes) -> None:
        if kind == b"C":
            tag = body.rstrip(b"\0").decode(errors="replace").split(" ", 1)[0].upper()
            self._executed()
            if tag == "ROLLBACK":
                self._aborted = True
                self.counts.rollbacks += 1
            elif tag not in TRANSACTION_CONTROL:
                self.counts.statements += 1
        elif kind == b"s":  # PortalSuspended: an Execute with a row limit (asyncpg's fetchval, fetchrow)
            self._executed()
            self.counts.statements += 1
        elif kind == b"E":
            self._aborted = True
        elif kind == b"Z":
            self.executions.clear()  # a sync: whatever an error skipped will not be answered
            if body[:1] == b"I":
                if self._completed and not self._aborted:
                    self.counts.commits += 1
                    self.counts.writes += self._wrote
                self._completed = self._aborted = self._wrote = False


class CountingProxy:
    """Listens on a free loopback port and forwards each connection to `upstream_host:upstream_port`."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.counts = WireCounts()
        self.port = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._handle, LOOPBACK, 0)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self.port

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _handle(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        server_w: asyncio.StreamWriter | None = None
        try:
            startup = await _startup_message(client_r, client_w)
            server_r, server_w = await asyncio.open_connection(*self.upstream)
            server_w.write(startup)
            executions: deque[bool] = deque()
            requests, replies = RequestReader(executions), ReplyReader(self.counts, executions)
            await asyncio.gather(_pump(client_r, server_w, requests.feed), _pump(server_r, client_w, replies.feed))
        except (OSError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass  # a connection closed, or the proxy stopping
        finally:
            for writer in (client_w, server_w):
                if writer is not None:
                    writer.close()
            if task is not None:
                self._tasks.discard(task)


async def _startup_message(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bytes:
    """The client's first real message, after answering `N` (not supported) to TLS and GSS requests."""
    while True:
        head = await reader.readexactly(8)
        length, code = struct.unpack("!ii", head)
        if code in (SSL_REQUEST, GSSENC_REQUEST):
            writer.write(b"N")
            await writer.drain()
            continue
        return head + await reader.readexactly(length - 8)


async def _pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter, observe: Observer) -> None:
    with contextlib.suppress(OSError):
        while data := await source.read(CHUNK):
            if observe is not None:
                observe(data)
            sink.write(data)
            await sink.drain()
    with contextlib.suppress(OSError):
        if sink.can_write_eof():
            sink.write_eof()
