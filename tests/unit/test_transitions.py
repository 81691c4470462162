"""The one transition-table helper every state machine uses (outbox jobs, receipts, stream sessions)."""

from __future__ import annotations

from enum import Enum

import pytest

from server.core.transitions import IllegalTransition, Transitions
from server.store.outbox.jobs import TRANSITIONS as JOBS
from server.store.site.receipts import TRANSITIONS as RECEIPTS
from server.stream.protocol.states import ALLOWED as SESSIONS


class Light(Enum):
    RED = "red"
    GREEN = "green"
    OFF = "off"


TABLE = Transitions("light", Light, {Light.RED: {Light.GREEN, Light.OFF}, Light.GREEN: {Light.RED}, Light.OFF: ()})


def test_a_table_must_decide_every_state() -> None:
    with pytest.raises(ValueError, match=r"light: no row for state\(s\) off"):
        Transitions("light", Light, {Light.RED: {Light.GREEN}, Light.GREEN: {Light.RED}})


def test_check_returns_the_target_or_raises_a_named_error() -> None:
    assert TABLE.check(Light.RED, Light.GREEN) is Light.GREEN
    with pytest.raises(IllegalTransition) as err:
        TABLE.check(Light.OFF, Light.RED, "crossing 7")
    assert (err.value.machine, err.value.current, err.value.target) == ("light", Light.OFF, Light.RED)
    assert str(err.value) == "illegal light transition off -> red (crossing 7)"
    assert TABLE.allows(Light.GREEN, Light.RED) and not TABLE.allows(Light.GREEN, Light.OFF)
    assert TABLE.terminal() == {Light.OFF}
    assert TABLE[Light.RED] == frozenset({Light.GREEN, Light.OFF}) and len(TABLE) == 3


def test_the_three_machines_share_one_error_type() -> None:
    machines = [(JOBS, "outbox job"), (RECEIPTS, "receipt"), (SESSIONS, "session")]
    for table, name in machines:
        assert isinstance(table, Transitions) and table.machine == name
        terminal = next(iter(table.terminal()))
        other = next(s for s in table if s is not terminal)
        with pytest.raises(IllegalTransition, match=f"illegal {name} transition"):
            table.check(terminal, other)
