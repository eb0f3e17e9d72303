"""A counting PostgreSQL proxy on loopback: the statements and commits of one agent-runtime process.

pg_stat_statements needs `shared_preload_libraries` (a server restart) and the bench shares its
PostgreSQL with others, so `bench.run --db-stats` starts one more agent-runtime whose `DATABASE_URL`
points here. The proxy forwards every byte both ways and reads the server's replies only: each
CommandComplete other than transaction control is a statement, and each return to idle after a
completed command, with no error or rollback since the last idle, is a commit (an implicit
transaction's too, as `pg_stat_database.xact_commit` counts it). It refuses TLS so it can read.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections.abc import Callable
from dataclasses import asdict, dataclass

from bench.procs import LOOPBACK

SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
TRANSACTION_CONTROL = frozenset({"BEGIN", "START", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE"})
CHUNK = 65536
Observer = Callable[[bytes], None] | None


@dataclass
class WireCounts:
    statements: int = 0
    commits: int = 0
    rollbacks: int = 0

    def snapshot(self) -> dict[str, int]:
        return asdict(self)


class ReplyReader:
    """Parses one connection's server-to-client byte stream (already past TLS negotiation) into `counts`."""

    def __init__(self, counts: WireCounts) -> None:
        self.counts = counts
        self._buffer = bytearray()
        self._completed = False
        self._aborted = False

    def feed(self, data: bytes) -> None:
        self._buffer += data
        while len(self._buffer) >= 5:
            kind = bytes(self._buffer[0:1])
            (length,) = struct.unpack_from("!i", self._buffer, 1)
            if len(self._buffer) < 1 + length:
                return
            body = bytes(self._buffer[5 : 1 + length])
            del self._buffer[: 1 + length]
            self._message(kind, body)

    def _message(self, kind: bytes, body: bytes) -> None:
        if kind == b"C":
            tag = body.rstrip(b"\0").decode(errors="replace").split(" ", 1)[0].upper()
            self._completed = True
            if tag == "ROLLBACK":
                self._aborted = True
                self.counts.rollbacks += 1
            elif tag not in TRANSACTION_CONTROL:
                self.counts.statements += 1
        elif kind == b"s":  # PortalSuspended: an Execute with a row limit (asyncpg's fetchval, fetchrow)
            self._completed = True
            self.counts.statements += 1
        elif kind == b"E":
            self._aborted = True
        elif kind == b"Z" and body[:1] == b"I":
            if self._completed and not self._aborted:
                self.counts.commits += 1
            self._completed = self._aborted = False


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
            reader = ReplyReader(self.counts)
            await asyncio.gather(_pump(client_r, server_w, None), _pump(server_r, client_w, reader.feed))
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
