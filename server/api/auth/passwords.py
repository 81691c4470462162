"""Password hashing with Argon2id (memory-hard; argon2-cffi's RFC 9106 low-memory profile).

These calls take tens of milliseconds and 64 MiB each: async handlers run them
with `asyncio.to_thread`, never on the event loop.
"""

from __future__ import annotations

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

MIN_PASSWORD = 8
MAX_PASSWORD = 256

_HASHER = PasswordHasher()  # stateless and thread-safe: holds only the cost parameters
_DUMMY_PASSWORD = "not-a-real-password-used-for-timing"


def hash_password(password: str) -> str:
    return _HASHER.hash(password)


def verify_password(password_hash: str, password: str) -> bool:
    try:
        return _HASHER.verify(password_hash, password)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


def needs_rehash(password_hash: str) -> bool:
    return _HASHER.check_needs_rehash(password_hash)


class TimingShield:
    """A hash to verify against when the account does not exist, so that answer costs the same time."""

    def __init__(self) -> None:
        self._hash: str | None = None

    def burn(self, password: str) -> None:
        if self._hash is None:
            self._hash = hash_password(_DUMMY_PASSWORD)
        verify_password(self._hash, password)
