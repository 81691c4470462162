"""The console's core without a server (SPEC 17): the usage meter's arithmetic and days, the repository on both
databases (the same SQL), and an older SQLite data dir brought up to the console's schema."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from server.commands.console_db import with_console
from server.core.usage import UsageMeter, local_day, next_midnight
from server.store.accounts.console import CapReached, NotPending, OpenRequest, PgDb, Role, SqliteDb, SubscriptionStatus
from server.store.accounts.console_repo import ConsoleRepo, mail_owner
from server.store.accounts.users import new_user
from server.store.sql.db import DB_NAME, open_db
from server.store.sql.schema import SQLITE_SCHEMA
from server.store.sql.sqlite_sync import KeyRepo, UserRepo
from tests.pg_service import pg_schema

# 2026-03-01 23:59:59 in Asia/Shanghai (15:59:59 UTC), and one second later the next day
LATE = 1_772_380_799.0
NOW = LATE - 3600


def test_local_day_and_midnight() -> None:
    assert local_day(LATE) == "2026-03-01" and local_day(LATE + 1) == "2026-03-02"
    assert next_midnight(NOW) == LATE + 1 and next_midnight(LATE + 1) == LATE + 1 + 86400


def test_meter_counts_and_takes_by_the_window_start_day() -> None:
    meter = UsageMeter(NOW)
    meter.cell("k1")[0] += 2  # the hot path (the pipeline's memo of the key holds this cell)
    meter.hits["key:k1"] += 1  # the Redis engine's awaited hot path
    meter.hits["ip:1.2.3.4"] += 5  # a public bucket is not a key's
    for status in (200, 304, 429, 404, 400, 500):
        meter.answered("k1", status)
    meter.ws_opened("k2")
    meter.ws_delivered("k2", 0)  # nothing delivered: no entry
    meter.collect_with(lambda m: m.ws_delivered("k2", 2))  # the stream's frames, added at each take
    day, counts, used = meter.take(LATE + 1)  # taken after midnight: the window began the day before
    assert day == "2026-03-01" and used == {"k1", "k2"}
    assert counts == {("k1", "2026-03-01"): (9, 1, 2, 0, 0), ("k2", "2026-03-01"): (0, 0, 0, 1, 2)}
    meter.hits["key:k1"] += 1
    assert meter.take(LATE + 10)[1] == {("k1", "2026-03-02"): (1, 0, 0, 0, 0), ("k2", "2026-03-02"): (0, 0, 0, 0, 2)}
    meter.collectors.clear()
    assert meter.take(LATE + 20)[1] == {}


@pytest.fixture(params=("sqlite", "postgresql"))
def repo(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ConsoleRepo]:
    if request.param == "sqlite":
        conn = open_db(tmp_path / "data")
        yield ConsoleRepo(SqliteDb(conn))
        conn.close()
        return
    from server.store.sql.pg import connect, migrate

    with pg_schema() as url:
        pg = connect(url)
        migrate(pg)
        yield ConsoleRepo(PgDb(pg))
        pg.close()


def _account(repo: ConsoleRepo, email: str) -> str:
    user = new_user(email, "hash", None, None, NOW)
    repo.db.run("INSERT INTO users (id, email, password_hash, created_at) VALUES (?, ?, ?, ?)",
                (user.id, user.email, "hash", NOW))
    return user.id


def test_keys_follow_the_plan_and_its_cap(repo: ConsoleRepo) -> None:
    uid = _account(repo, "a@example.cn")
    account = repo.account(uid)
    assert account is not None and (account.plan, account.role) == ("free", Role.CUSTOMER)
    key, secret = repo.create_key(account, "trial", NOW, "10.0.0.1")
    assert secret.startswith(key.prefix or "?") and key.plan == "free"
    with pytest.raises(CapReached):
        repo.create_key(account, "second", NOW, None)
    new, _ = repo.rotate_key(uid, key.id, NOW + 1, None) or (None, "")
    assert new is not None and new.id != key.id and new.label == "trial"
    assert repo.rotate_key(uid, key.id, NOW + 2, None) is None  # revoked by the rotation
    assert repo.relabel_key(uid, new.id, "main", NOW + 3, None) and not repo.relabel_key("other", new.id, "x", 0, None)
    sub = repo.plans.file(account, "enterprise", "please", NOW + 4, "10.0.0.2", [("generic", "http://x")])
    with pytest.raises(OpenRequest):
        repo.plans.file(account, "professional", None, NOW + 5, None, [])
    jobs = repo.db.rows("SELECT record_kind, record_id FROM outbox_jobs")
    assert jobs == [{"record_kind": "subscription", "record_id": sub.id}]
    decided = repo.plans.decide(sub.id, True, 5000, "ops@example.cn", NOW + 6)
    assert decided is not None and decided.status is SubscriptionStatus.APPROVED
    with pytest.raises(NotPending):
        repo.plans.decide(sub.id, False, None, None, NOW + 7)
    assert [(k.plan, k.rate) for k in repo.keys_of(uid) if k.revoked_at is None] == [("enterprise", 5000)]
    assert repo.revoke_key(uid, new.id, NOW + 8, None) and not repo.revoke_key(uid, new.id, NOW + 9, None)
    kinds = [e.kind for e in repo.events(uid)]
    assert kinds == ["revoked", "plan_changed", "plan_requested", "relabelled", "rotated", "created"]


def test_an_enterprise_accounts_new_keys_carry_its_rate_and_what_was_asked(repo: ConsoleRepo) -> None:
    """Issue 46's mutation run: a key made for an enterprise account carries the account's rate (a free one none),
    with its label and time, as returned and as stored; the lockout's e-mail is one outbox job to the owner."""
    uid = _account(repo, "e@example.cn")
    repo.set_plan(uid, "enterprise", 7000)
    account = repo.account(uid)
    assert account is not None and (account.plan, account.rate) == ("enterprise", 7000)
    key, _ = repo.create_key(account, "desk", NOW, None)
    assert (key.plan, key.rate, key.label, key.created_at) == ("enterprise", 7000, "desk", NOW)
    assert repo.key_of(uid, key.id) == key
    free_uid = _account(repo, "f@example.cn")
    free = repo.account(free_uid)
    assert free is not None and free.rate is None
    repo.set_plan(free_uid, "free", 7000)  # a rate is an enterprise plan's only
    free = repo.account(free_uid)
    assert free is not None and free.rate is None
    free_key, _ = repo.create_key(free, None, NOW + 1, None)
    assert (free_key.plan, free_key.rate, free_key.label) == ("free", None, None)
    assert repo.key_of(free_uid, free_key.id) == free_key
    mail_owner(repo, "login_locked", uid, "e@example.cn", {"until": "later"}, NOW + 2)
    jobs = repo.db.rows("SELECT record_kind, record_id, channel, target, payload FROM outbox_jobs")
    assert jobs == [{"record_kind": "login_locked", "record_id": uid, "channel": "email", "target": "e@example.cn",
                     "payload": '{"until":"later"}'}]


def test_the_audit_list_names_each_key_its_detail_and_address(repo: ConsoleRepo) -> None:
    """Issue 46's mutation run: what each event records (key, detail, address), the cap's refusal, an operator's
    plan change and role, and an unknown account or key, had no test that reads them back."""
    uid = _account(repo, "audit@example.cn")
    account = repo.account(uid)
    assert account is not None and repo.account("nobody") is None and repo.key_of(uid, "key_nope") is None
    key, _ = repo.create_key(account, "desk", NOW, "10.0.0.1")
    with pytest.raises(CapReached) as refused:
        repo.create_key(account, "more", NOW, None)
    assert (refused.value.plan, refused.value.cap) == ("free", 1) and "allows 1 active key" in str(refused.value)
    new, _ = repo.rotate_key(uid, key.id, NOW + 1, "10.0.0.2") or (None, "")
    assert new is not None and new.label == "desk"
    assert repo.relabel_key(uid, new.id, "main", NOW + 2, "10.0.0.3")
    assert repo.revoke_key(uid, new.id, NOW + 3, "10.0.0.4")
    assert repo.change_plan("Audit@example.cn ", "enterprise", 9000, NOW + 4) is not None
    assert repo.change_plan("nobody@example.cn", "enterprise", 9000, NOW + 5) is None
    assert repo.change_plan("audit@example.cn", "professional", None, NOW + 6) is not None
    assert repo.change_plan("audit@example.cn", "enterprise", 9000, NOW + 7) is not None
    events = [(e.kind, e.key_id, e.detail, e.ip, e.at) for e in repo.events(uid)]
    assert events == [("plan_changed", None, "enterprise (9000/min)", None, NOW + 7),
                      ("plan_changed", None, "professional", None, NOW + 6),
                      ("plan_changed", None, "enterprise (9000/min)", None, NOW + 4),
                      ("revoked", new.id, None, "10.0.0.4", NOW + 3),
                      ("relabelled", new.id, "main", "10.0.0.3", NOW + 2),
                      ("rotated", new.id, f"replaces {key.id}", "10.0.0.2", NOW + 1),
                      ("created", key.id, "desk", "10.0.0.1", NOW)]
    assert all(e.id.startswith("evt") for e in repo.events(uid)) and len(repo.events(uid, limit=2)) == 2
    changed = repo.account(uid)
    assert changed is not None and (changed.plan, changed.rate) == ("enterprise", 9000)
    assert repo.set_role("audit@example.cn", Role.OPERATOR) and not repo.set_role("nobody@example.cn", Role.OPERATOR)
    again = repo.account_by_email("AUDIT@example.cn")
    assert again is not None and again.role is Role.OPERATOR and repo.account_by_email("x@example.cn") is None


def test_usage_from_several_hubs_adds_up(repo: ConsoleRepo) -> None:
    uid = _account(repo, "u@example.cn")
    account = repo.account(uid)
    assert account is not None
    key, _ = repo.create_key(account, None, NOW, None)
    for _hub in range(2):
        repo.add_usage({(key.id, "2026-03-01"): (5, 1, 2, 1, 40)}, {key.id: NOW + 5})
    repo.add_usage({(key.id, "2026-03-02"): (1, 0, 0, 0, 0)}, {key.id: NOW + 1})
    rows = repo.usage(uid, "2026-03-01", "2026-03-01", None)
    assert [(r.key_id, r.day, r.requests, r.refused, r.client_errors, r.ws_connections, r.ws_messages)
            for r in rows] == [(key.id, "2026-03-01", 10, 2, 4, 2, 80)]
    assert len(repo.usage(uid, "2026-01-01", "2026-12-31", key.id)) == 2
    assert repo.usage("someone-else", "2026-01-01", "2026-12-31", None) == []
    assert repo.keys_of(uid)[0].last_used_at == NOW + 5  # never moved back by a later, older report


def test_an_older_data_dir_gains_the_console_columns(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    old = sqlite3.connect(data / DB_NAME)
    for statement in SQLITE_SCHEMA:  # the tables as they were before the console
        old.execute(statement)
    old.execute("INSERT INTO meta (key, value) VALUES ('seeded', '1')")
    old.execute("INSERT INTO users (id, email, password_hash, created_at) VALUES ('usr_1', 'o@example.cn', 'h', 1)")
    old.commit()
    old.close()
    conn = open_db(data)
    assert UserRepo(conn).by_email("o@example.cn") is not None
    account = ConsoleRepo(SqliteDb(conn)).account("usr_1")
    assert account is not None and (account.plan, account.role, account.rate) == ("free", Role.CUSTOMER, None)
    conn.close()
    open_db(data).close()  # a second open changes nothing


def test_a_disabled_accounts_keys_are_not_served(tmp_path: Path) -> None:
    conn = open_db(tmp_path / "data")
    repo = ConsoleRepo(SqliteDb(conn))
    uid = _account(repo, "d@example.cn")
    account = repo.account(uid)
    assert account is not None
    key, _ = repo.create_key(account, None, NOW, None)
    keys = KeyRepo(conn)
    assert key.id in {k.id for k in keys.active_by_hash().values()}
    UserRepo(conn).disable("d@example.cn")
    assert key.id not in {k.id for k in keys.active_by_hash().values()}
    conn.close()


def test_cli_promotes_through_with_console(tmp_path: Path) -> None:
    import argparse

    conn = open_db(tmp_path / "data")
    _account(ConsoleRepo(SqliteDb(conn)), "p@example.cn")
    conn.close()
    ns = argparse.Namespace(data_dir=str(tmp_path / "data"), database_url=None)
    assert with_console(ns, lambda r: r.set_role("P@example.cn", Role.OPERATOR))
    account = with_console(ns, lambda r: r.account_by_email("p@example.cn"))
    assert account is not None and account.is_operator
