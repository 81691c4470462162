"""Subscription requests (SPEC 17): filed by an account with their notification jobs, decided by an operator.

Part of the console's repository (`ConsoleRepo.plans`), on the same `Db` and transactions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from server.market.timefmt import iso
from server.store.accounts.console import (
    Account,
    Db,
    EventKind,
    NotPending,
    OpenRequest,
    Subscription,
    SubscriptionStatus,
    subscription_from_row,
)
from server.store.outbox.queue import JOB_COLUMNS, job_rows
from server.store.site.records import ChannelSpec, new_record_id
from server.store.sql.errors import integrity_errors


class AccountWrites(Protocol):
    """What a decision needs of the console's repository (server/store/accounts/console_repo.py)."""

    db: Db

    def add_event(self, user_id: str, kind: EventKind, key_id: str | None, detail: str | None, ip: str | None,
                  now: float) -> None: ...

    def set_plan(self, user_id: str, plan: str, rate: int | None) -> None: ...

SUB_COLUMNS = "id, user_id, user_email, plan, message, status, rate, created_at, decided_at"


class PlanRequests:
    def __init__(self, repo: AccountWrites) -> None:
        self.repo = repo

    def open_request(self, user_id: str) -> Subscription | None:
        rows = self.repo.db.rows(f"SELECT {SUB_COLUMNS} FROM subscription_requests WHERE user_id = ? "
                            "ORDER BY created_at DESC, id DESC LIMIT 1", (user_id,))
        return subscription_from_row(rows[0]) if rows else None

    def file(self, account: Account, plan: str, message: str | None, now: float, ip: str | None,
                     channels: Sequence[ChannelSpec]) -> Subscription:
        """The request and its notification jobs (one per channel) in one transaction; OpenRequest if one waits."""
        sub = Subscription(new_record_id("sub", now), account.id, account.email, plan, message,
                           SubscriptionStatus.PENDING, None, now, None)
        try:
            with self.repo.db.transaction():
                sql = f"INSERT INTO subscription_requests ({SUB_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
                self.repo.db.run(sql, (sub.id, sub.user_id, sub.user_email, plan, message, sub.status.value, None,
                                       now, None))
                self.repo.add_event(account.id, EventKind.PLAN_REQUESTED, None, plan, ip, now)
                if channels:
                    payload = subscription_payload(sub, account)
                    self.repo.db.many(f"INSERT INTO outbox_jobs ({JOB_COLUMNS}) VALUES ({', '.join('?' * 11)})",
                                 job_rows("subscription", sub.id, payload, channels, now))
        except integrity_errors():
            raise OpenRequest() from None
        return sub

    def get(self, sub_id: str) -> Subscription | None:
        rows = self.repo.db.rows(f"SELECT {SUB_COLUMNS} FROM subscription_requests WHERE id = ?", (sub_id,))
        return subscription_from_row(rows[0]) if rows else None

    def list(self, status: SubscriptionStatus | None, limit: int = 500) -> list[Subscription]:
        where, params = ("WHERE status = ?", [status.value]) if status else ("", [])
        rows = self.repo.db.rows(f"SELECT {SUB_COLUMNS} FROM subscription_requests {where} "
                            "ORDER BY created_at DESC, id DESC LIMIT ?", [*params, limit])
        return [subscription_from_row(r) for r in rows]

    def decide(self, sub_id: str, approve: bool, rate: int | None, operator: str | None,
               now: float) -> Subscription | None:
        """Approve (the account and its keys move to the plan) or reject a pending request; None if unknown,
        NotPending if decided already. The account's event names no address: the operator's is not the customer's
        to see (issue 45); the request keeps who decided."""
        status = SubscriptionStatus.APPROVED if approve else SubscriptionStatus.REJECTED
        with self.repo.db.transaction():
            rows = self.repo.db.rows(f"SELECT {SUB_COLUMNS} FROM subscription_requests WHERE id = ?", (sub_id,))
            if not rows:
                return None
            sub = subscription_from_row(rows[0])
            changed = self.repo.db.run("UPDATE subscription_requests SET status = ?, rate = ?, decided_at = ?, "
                                  "decided_by = ? WHERE id = ? AND status = 'pending'",
                                  (status.value, rate, now, operator, sub_id))
            if changed == 0:
                raise NotPending(sub.status.value)
            if approve:
                self.repo.set_plan(sub.user_id, sub.plan, rate)
            kind = EventKind.PLAN_CHANGED if approve else EventKind.PLAN_REJECTED
            detail = sub.plan + (f" ({rate}/min)" if approve and rate else "")
            self.repo.add_event(sub.user_id, kind, None, detail, None, now)
        return Subscription(sub.id, sub.user_id, sub.user_email, sub.plan, sub.message, status, rate,
                            sub.created_at, now)


def subscription_payload(sub: Subscription, account: Account) -> dict[str, Any]:
    """What the operators are told (the outbox job's payload)."""
    return {"id": sub.id, "status": sub.status.value, "createdAt": iso(sub.created_at), "userId": account.id,
            "userEmail": account.email, "company": account.company, "currentPlan": account.plan,
            "requestedPlan": sub.plan, "message": sub.message}
