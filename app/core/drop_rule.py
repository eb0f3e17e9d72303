"""The drop rule a reader of a turn's event stream applies at `turn.resumed` (DESIGN "Events").

A turn continued by another replica numbers its events above any id the lost run may have sent;
its first event, `turn.resumed`, names the last event that was stored (`last_durable_seq`). What a
reader showed past that point never happened as far as the turn's record goes, so it is withdrawn.
So is the model reply the lost run was still streaming (deltas with no `message.completed` yet, be
they stored or not): the continuation makes that model call again and streams the reply anew. A
finished reply stays — the engine stores its `message.completed` with the message itself.

Pure functions over event data (the JSON objects of the stream), shared by the chat CLI and the
protocol adapters; the web page (app/web/static/app.js) says the same rule in JavaScript.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

REPLY_CLOSERS = frozenset({"message.completed", "turn.ended"})


def withdrawn(shown: Iterable[Mapping[str, Any]], resumed: Mapping[str, Any]) -> set[int]:
    """The seqs of the events in `shown` (what a reader has shown, in order) that `resumed` withdraws."""
    durable = int(resumed["last_durable_seq"])
    lost: set[int] = set()
    open_reply: list[int] = []
    for event in shown:
        seq = int(event["seq"])
        if durable < seq < int(resumed["seq"]):
            lost.add(seq)
        elif event["type"] == "message.delta":
            open_reply.append(seq)
        elif event["type"] in REPLY_CLOSERS:
            open_reply.clear()
    return lost.union(open_reply)
