"""Who the client is, for per-IP limits: the peer address, or X-Forwarded-For from a trusted proxy.

Shared by the HTTP pipeline and the WebSocket handshake, so both count one client the same way.
"""

from __future__ import annotations

import ipaddress
from typing import Any


def client_address(peer: str, forwarded: str | None, trusted: tuple[Any, ...]) -> str:
    """The peer address; X-Forwarded-For is read only when the peer is a trusted proxy."""
    if not trusted or not forwarded or not in_networks(peer, trusted):
        return peer
    # walk right to left: the first address that is not a trusted proxy is the client
    for hop in reversed([h.strip() for h in forwarded.split(",")]):
        if hop and not in_networks(hop, trusted):
            return hop
    return peer


def peer_host(client: str) -> str:
    """A "host:port" peer string (Granian's `scope.client`, "[v6]:port" for IPv6) as the bare address."""
    host = client.rsplit(":", 1)[0]
    return host[1:-1] if host.startswith("[") else host


def granian_peer(scope: Any) -> str:
    """Granian's RSGI scope as the peer (what its runtime hands serve_hot): `scope.client` is a getter call into
    Rust, made only for a public route."""
    return peer_host(scope.client)


def robyn_peer(request: Any) -> str:
    """Robyn's request object as the peer (what its runtime hands serve_hot): the address is a getter call into
    Rust, made only for a public route."""
    return request.ip_addr or ""


def in_networks(addr: str, networks: tuple[Any, ...]) -> bool:
    try:
        ip = ipaddress.ip_address(addr)
    except ValueError:
        return False
    return any(ip in net for net in networks)
