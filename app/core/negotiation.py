"""Content negotiation on `Accept` (RFC 9110 §12.5.1): which of a route's representations to send.

A route lists what it can answer, its default first. No `Accept` (or `*/*`) gets the default; the
best-weighted acceptable one wins, a tie going to the more specific range and then to the route's
order; an `Accept` that allows none of them is refused (406) before the route does anything.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.errors import NotAcceptable


def _ranges(accept: str) -> list[tuple[str, float]]:
    ranges = []
    for part in accept.split(","):
        media, *params = (p.strip() for p in part.split(";"))
        if not media:
            continue
        weight = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    weight = max(0.0, min(1.0, float(value)))
                except ValueError:
                    weight = 0.0
        ranges.append((media.lower(), weight))
    return ranges


def _match(offer: str, ranges: list[tuple[str, float]]) -> tuple[float, int]:
    """The weight `Accept` gives `offer` and how specific the range that gave it is (2 exact, 1 type/*, 0 */*)."""
    kind = offer.split("/")[0]
    best: tuple[int, float] | None = None
    for media, weight in ranges:
        if media == offer:
            specificity = 2
        elif media == f"{kind}/*":
            specificity = 1
        elif media == "*/*":
            specificity = 0
        else:
            continue
        if best is None or specificity > best[0]:
            best = (specificity, weight)
    return (0.0, -1) if best is None else (best[1], best[0])


def negotiate(accept: str | None, offers: Sequence[str]) -> str:
    """The media type of `offers` to answer with, or `NotAcceptable` naming what the route can send."""
    if not accept or not accept.strip():
        return offers[0]
    ranges = _ranges(accept)
    scored = [(_match(offer, ranges), -index, offer) for index, offer in enumerate(offers)]
    (weight, _), _, chosen = max(scored)
    if weight <= 0:
        raise NotAcceptable(f"This route answers {' or '.join(offers)}; `Accept: {accept[:200]}` allows neither")
    return chosen
