"""`outbox list [--status S] [--json]`, `outbox retry ID`: inspect and retry notification jobs.

Works while the server runs: a retried job is back in `pending` and the hub's
worker picks it up on its next poll (within about a second). Channels are
shown as kind and host only (webhook URLs hold tokens).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from server.commands.common import CommandError, command, db, print_json
from server.market.timefmt import iso
from server.notify.channels import describe
from server.store.outbox.jobs import IllegalTransition, JobState
from server.store.outbox.queue import Job, JobNotFound


def register(sub: Any) -> None:
    outbox = sub.add_parser("outbox", help="inspect and retry notifications")
    cmds = outbox.add_subparsers(dest="outbox_cmd", required=True)
    listing = command(cmds, "list", "list notification jobs (oldest first)", _list)
    listing.add_argument("--status", choices=[s.value for s in JobState], help="only jobs in this state")
    listing.add_argument("--limit", type=int, default=1000)
    listing.add_argument("--json", action="store_true")
    retry = command(cmds, "retry", "move a failed or dead job back to pending (attempts reset)", _retry)
    retry.add_argument("id")


def view(job: Job) -> dict[str, Any]:
    return {
        "id": job.id, "recordKind": job.record_kind, "recordId": job.record_id, "channel": job.channel,
        "target": describe(job.channel, job.target), "status": job.state.value, "attempts": job.attempts,
        "nextAttemptAt": iso(job.next_attempt_at), "lastError": job.last_error,
        "idempotencyId": job.idempotency_id, "createdAt": iso(job.created_at), "updatedAt": iso(job.updated_at),
        "deliveredAt": iso(job.delivered_at) if job.delivered_at is not None else None,
    }


def _list(ns: argparse.Namespace) -> int:
    state = JobState(ns.status) if ns.status else None
    jobs = [view(j) for j in db(ns).outbox.list_jobs(state, ns.limit)]
    if ns.json:
        print_json(jobs)
        return 0
    if not jobs:
        print("no jobs")
    for j in jobs:
        print(f"{j['id']}  {j['status']:<9} {j['attempts']:>2}x  {j['recordKind']}/{j['recordId']}  "
              f"{j['target']}  {j['lastError'] or ''}".rstrip())
    return 0


def _retry(ns: argparse.Namespace) -> int:
    repo = db(ns).outbox
    try:
        job = repo.retry(ns.id, time.time())
    except JobNotFound:
        raise CommandError(f"no outbox job with id {ns.id}") from None
    except IllegalTransition as exc:
        raise CommandError(f"job {ns.id} is {exc.current.value}; only failed or dead jobs can be retried") from None
    print(f"{job.id} is pending again ({describe(job.channel, job.target)})")
    return 0
