"""The Python client's console calls (SPEC 17) against a real server: sync and async, typed results, problems as
exceptions."""

from __future__ import annotations

import asyncio

import pytest
from market_client import AsyncMarketClient, Conflict, Forbidden, MarketClient, MarketError, NotFound

from tests.conftest import ServerProcess, run_cli

PASSWORD = "correct horse"


def test_console_calls(server: ServerProcess) -> None:
    assert run_cli(server.data_dir, "users", "create", "--email", "op@example.com", "--password", PASSWORD,
                   "--operator").returncode == 0
    with MarketClient(server.base) as api, MarketClient(server.base) as ops:
        api.register("client@example.com", PASSWORD)
        api.login("client@example.com", PASSWORD)
        ops.login("op@example.com", PASSWORD)
        me = api.console.me()
        assert (me.plan, me.role, me.limits.rate, me.subscription) == ("free", "customer", 60, None)
        created = api.console.create_key("desk")
        assert created.key.startswith("mk_") and created.rate == 60
        with pytest.raises(Conflict):
            api.console.create_key("another")
        renamed = api.console.rename_key(created.id, "main desk")
        assert renamed.label == "main desk" and [k.id for k in api.console.list_keys()] == [created.id]
        usage = api.console.usage(key=created.id)
        assert usage.end >= usage.start and usage.totals.requests >= 0
        with pytest.raises(NotFound):
            api.console.usage(key="key_nope")
        sub = api.console.request_plan("professional", "please")
        with pytest.raises(Forbidden):
            api.console.subscriptions()
        assert sub.id in [s.id for s in ops.console.subscriptions("pending")]
        assert ops.console.approve(sub.id).status == "approved"
        rotated = api.console.rotate_key(created.id)
        assert rotated.replaces == created.id and rotated.plan == "professional"
        assert api.console.revoke_key(rotated.id).revoked_at is not None
        assert [e.kind for e in api.console.events()][:2] == ["revoked", "rotated"]
        with pytest.raises(Forbidden):  # SPEC 20: the SLA report is the enterprise plan's (and the operators')
            api.console.sla()
        report = ops.console.sla()
        assert [c.id for c in report.components][:3] == ["rest", "stream", "storage"]
        assert report.target == 99.9 and len(report.days) >= 28 and report.support_response == []
        assert all(c.availability is None or 0 <= c.availability <= 100 for c in report.components)


def test_async_console_calls(server: ServerProcess) -> None:
    async def scenario() -> None:
        async with AsyncMarketClient(server.base) as api:
            await api.register("async@example.com", PASSWORD)
            await api.login("async@example.com", PASSWORD)
            key = await api.console.create_key()
            assert [k.id for k in await api.console.list_keys()] == [key.id]
            assert (await api.console.me()).limits.keys == 1
            sub = await api.console.request_plan("enterprise")
            assert sub.status == "pending" and (await api.console.me()).subscription is not None
            assert (await api.console.events())[0].kind == "plan_requested"

    asyncio.run(scenario())


def test_ticket_calls(server: ServerProcess) -> None:
    """Support tickets (SPEC 20): open, the thread, an operator's reply, close, reopen; another account's is 404."""
    assert run_cli(server.data_dir, "users", "create", "--email", "desk@example.com", "--password", PASSWORD,
                   "--operator").returncode == 0
    with MarketClient(server.base) as api, MarketClient(server.base) as ops, MarketClient(server.base) as other:
        for client, email in ((api, "ticket-client@example.com"), (other, "ticket-other@example.com")):
            client.register(email, PASSWORD)
            client.login(email, PASSWORD)
        ops.login("desk@example.com", PASSWORD)
        opened = api.console.open_ticket("Brent is stale", "No ticks since 09:31.\n<b>text</b>", severity=2)
        assert opened.status == "open" and opened.thread[0].body == "No ticks since 09:31.\n<b>text</b>"
        assert opened.first_response_due is None  # a free account: no target
        replied = ops.console.reply_ticket(opened.id, "Restarted.")
        assert replied.message.author == "operator" and replied.ticket.messages == 2
        assert [m.body for m in api.console.ticket(opened.id).thread] == [opened.thread[0].body, "Restarted."]
        assert opened.id in [t.id for t in ops.console.tickets("open")]
        with pytest.raises(NotFound):
            other.console.ticket(opened.id)
        assert api.console.close_ticket(opened.id).status == "closed"
        with pytest.raises(Conflict):
            api.console.reply_ticket(opened.id, "again")
        assert [t.id for t in api.console.tickets("closed")] == [opened.id]
        assert api.console.reopen_ticket(opened.id).status == "open"


def test_async_ticket_calls(server: ServerProcess) -> None:
    async def scenario() -> None:
        async with AsyncMarketClient(server.base) as api:
            await api.register("async-ticket@example.com", PASSWORD)
            await api.login("async-ticket@example.com", PASSWORD)
            opened = await api.console.open_ticket("s", "b", 3)
            await api.console.reply_ticket(opened.id, "more")
            assert (await api.console.ticket(opened.id)).messages == 2
            assert [t.id for t in await api.console.tickets()] == [opened.id]
            assert (await api.console.close_ticket(opened.id)).closed_at is not None
            assert (await api.console.reopen_ticket(opened.id)).closed_at is None

    asyncio.run(scenario())


def _enterprise(server: ServerProcess, email: str, namespace: str) -> None:
    assert run_cli(server.data_dir, "users", "create", "--email", email, "--password", PASSWORD).returncode == 0
    assert run_cli(server.data_dir, "users", "plan", email, "enterprise", "--rate", "6000").returncode == 0
    assert run_cli(server.data_dir, "users", "namespace", email, namespace).returncode == 0


SPEC = {"name": {"zh": "定制原油", "en": "Custom crude"}, "unit": {"zh": "美元/桶", "en": "USD/bbl"},
        "currency": "USD", "decimals": 2, "venue": "ice-eu"}


def test_a_dedicated_data_source(server: ServerProcess) -> None:
    """SPEC 20: declare, publish JSON lines with an ingest key (a bad line named by its number, the good ones kept),
    read the tick back with a read key, delete."""
    _enterprise(server, "source@acme.example", "pyacme")
    with MarketClient(server.base) as api:
        api.login("source@acme.example", PASSWORD)
        assert api.console.instruments().namespace == "pyacme" and "ice-eu" in api.console.instruments().venues
        made = api.console.declare_instrument("pyacme.blend", **SPEC)
        assert (made.id, made.name.en, made.decimals, made.session) == ("pyacme.blend", "Custom crude", 2, None)
        with pytest.raises(Forbidden):
            api.console.declare_instrument("other.blend", **SPEC)
        with pytest.raises(Conflict):
            api.console.declare_instrument("pyacme.blend", **SPEC)
        publisher, reader = api.console.create_key("feed", scope="ingest"), api.console.create_key("desk")
        assert (publisher.scope, reader.scope) == ("ingest", "read")
        with MarketClient(server.base, key=publisher.key) as feed, MarketClient(server.base, key=reader.key) as desk:
            answer = feed.ingest([{"id": "pyacme.blend", "price": 80.25, "volume": 3}, {"id": "pyacme.blend"}])
            assert (answer.accepted, answer.rejected_count, [r.line for r in answer.rejected]) == (1, 1, [2])
            assert feed.ingest('{"id":"pyacme.blend","price":80.5}\n', idempotency_key="b2").accepted == 1
            # the same batch again with its key (an answer lost): answered again, kept once (volume 3, not 3 + 0)
            assert feed.ingest('{"id":"pyacme.blend","price":80.5}\n', idempotency_key="b2").accepted == 1
            with pytest.raises(MarketError) as reused:  # the key names one batch
                feed.ingest('{"id":"pyacme.blend","price":80.75,"volume":1}\n', idempotency_key="b2")
            assert reused.value.status == 422
            with pytest.raises(Forbidden):
                feed.quote("pyacme.blend")  # an ingest key reads nothing
            quote = desk.quote("pyacme.blend")
            assert (quote.price, quote.volume) == (80.5, 3)
            api.console.delete_instrument("pyacme.blend")
            with pytest.raises(NotFound):
                desk.quote("pyacme.blend")
        assert api.console.instruments().items == []
        with pytest.raises(NotFound):
            api.console.delete_instrument("pyacme.blend")


def test_async_dedicated_data_source(server: ServerProcess) -> None:
    _enterprise(server, "async-source@acme.example", "pyasync")

    async def scenario() -> None:
        async with AsyncMarketClient(server.base) as api:
            await api.login("async-source@acme.example", PASSWORD)
            await api.console.declare_instrument("pyasync.blend", **SPEC)
            assert [i.id for i in (await api.console.instruments()).items] == ["pyasync.blend"]
            publisher = await api.console.create_key("feed", scope="ingest")
            async with AsyncMarketClient(server.base, key=publisher.key) as feed:
                answer = await feed.ingest(b'{"id":"pyasync.blend","price":7.5}\nnot json\n')
                assert (answer.accepted, answer.rejected[0].line) == (1, 2)
            await api.console.delete_instrument("pyasync.blend")
            assert (await api.console.instruments()).items == []

    asyncio.run(scenario())
