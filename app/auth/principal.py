from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Principal:
    """The authenticated caller: who (`sub`), for which tenant, with which roles."""

    sub: str
    tenant_id: str
    roles: frozenset[str] = frozenset()

    @property
    def is_admin(self) -> bool:
        return "admin" in self.roles

    @property
    def owner_filter(self) -> str | None:
        """The owner whose sessions (turns, approvals) this caller may see; None for an admin (all)."""
        return None if self.is_admin else self.sub

    @property
    def writer(self) -> Principal:
        """This caller as it may write into sessions (start turns, decide approvals): its own sessions
        only, admin or not. An admin reads every session of its tenant, but a turn or a decision in
        another user's session would run as that user (its tokens' `act`), so it is 404 as for anyone."""
        return Principal(sub=self.sub, tenant_id=self.tenant_id)
