"""Wiring of the service console (SPEC 17): its routes on the router and its usage flusher (a hub service).

Called by the composition root with what the console uses: the hub's storage (store/accounts/console_store.py picks
the database), the site's token secret, the pipeline's per-subject buckets and client address, the engine's
revocation channel (rotation and revocation reach every hub at once), the outbox channels and the worker's wake.
Support tickets (issue 43) are on the same context; their business hours read SHFE's day calendar.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from server.api.auth.tokens import TokenService
from server.api.console.account import ConsoleAccountApi, ConsoleAdminApi
from server.api.console.context import BucketCheck, ClientIp, ConsoleContext, Revoke
from server.api.console.flush import UsageFlusher
from server.api.console.incidents import ConsoleIncidentsApi
from server.api.console.instruments import Bind, ConsoleInstrumentsApi
from server.api.console.keys import ConsoleKeysApi
from server.api.console.sla import SlaApi
from server.api.console.tickets import ConsoleTicketsApi
from server.api.core.router import Router
from server.api.site.accounts import BearerAuth
from server.config import Settings
from server.core.usage import UsageMeter
from server.market.venues.clock import VenueClock
from server.market.venues.feed import open_at_minute
from server.store.accounts.console_store import ConsoleStore
from server.store.availability.store import AvailabilityStore
from server.store.site.records import ChannelSpec
from server.store.sql.repositories import Repositories
from server.store.support.hours import SupportHours


def register_console(settings: Settings, router: Router, repos: Repositories, tokens: TokenService,
                     clock: Callable[[], float], *,
                     check_bucket: BucketCheck, client_ip: ClientIp, revoke: Revoke,
                     channels: Sequence[ChannelSpec], wake: Callable[[], None], meter: UsageMeter,
                     venues: Mapping[str, VenueClock] | None = None,
                     incidents_changed: Callable[[], None] = lambda: None,
                     sources: tuple[int, Sequence[str], Sequence[str], Bind] | None = None) -> UsageFlusher:
    """`venues`: each venue's clock, one `feed:{venue}` component of the SLA report each (SPEC 20); `sources`: the
    dedicated data sources' reserved rows, the venue and session ids a declaration may name, and this hub's binding
    (SPEC 20, docs/ingest.md)."""
    store = ConsoleStore(repos.storage)
    ctx = ConsoleContext(settings, store, BearerAuth(tokens, repos.users), check_bucket, client_ip, clock)
    for api in (ConsoleKeysApi(ctx, revoke), ConsoleAccountApi(ctx, channels, wake), ConsoleAdminApi(ctx),
                ConsoleIncidentsApi(ctx, incidents_changed)):
        api.register(router)
    if sources is not None:
        ConsoleInstrumentsApi(ctx, *sources).register(router)
    hours = SupportHours.load(settings.calendar_file)  # business hours: SHFE's trading days (issue 43)
    ConsoleTicketsApi(ctx, hours, channels, wake, mail=bool(settings.smtp_url)).register(router)
    clocks = dict(venues or {})
    SlaApi(ctx, AvailabilityStore(repos.storage), list(clocks), open_at_minute(clocks)).register(router)
    return UsageFlusher(meter, store, clock)
