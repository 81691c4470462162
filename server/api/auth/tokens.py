"""JWT access tokens: HS256 issued here, optionally RS256/ES256 from an external identity provider.

Algorithm confusion is impossible by construction: the key is chosen from the
token's `alg` first, and each key is only ever used with the one algorithm
that fits it (our secret with HS256; the IdP's RSA key with RS256, its P-256
key with ES256). `none` and every other algorithm are refused. An HS256 token
"signed" with the IdP's public key is checked against our secret and fails.

Times (`exp`, `nbf`, `iat`) are checked against the injected clock, not PyJWT's,
so tests are exact; `exp` and `sub` are required.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from server.config import ConfigError

TOKEN_TTL_S = 3600
ISSUER = "market-server"
SECRET_FILE = "jwt-secret"
MIN_SECRET_BYTES = 32
MAX_TOKEN_CHARS = 8192
CLOCK_SKEW_S = 60  # tolerated for `iat`/`nbf` of external tokens issued on another machine


class TokenError(Exception):
    """The token is missing, malformed, forged, expired or otherwise unusable (answered with 401)."""


@dataclass(frozen=True, slots=True)
class Claims:
    subject: str
    email: str | None
    external: bool  # verified with the identity provider's key


@dataclass(frozen=True, slots=True)
class ExternalKey:
    key: Any
    algorithm: str  # "RS256" or "ES256"
    audience: str | None = None


class TokenService:
    def __init__(
        self, secret: bytes, external: ExternalKey | None = None,
        clock: Callable[[], float] = time.time, ttl_s: int = TOKEN_TTL_S,
    ) -> None:
        if len(secret) < MIN_SECRET_BYTES:
            raise ValueError(f"the HS256 secret must be at least {MIN_SECRET_BYTES} bytes")
        self._secret = secret
        self.external = external
        self.clock = clock
        self.ttl_s = ttl_s

    def issue(self, subject: str, email: str | None = None) -> str:
        now = int(self.clock())
        claims: dict[str, Any] = {"sub": subject, "iat": now, "exp": now + self.ttl_s, "iss": ISSUER}
        if email:
            claims["email"] = email
        return jwt.encode(claims, self._secret, algorithm="HS256")

    def verify(self, token: str) -> Claims:
        if not token or len(token) > MAX_TOKEN_CHARS:
            raise TokenError("malformed token")
        try:
            alg = jwt.get_unverified_header(token).get("alg")
        except jwt.PyJWTError:
            raise TokenError("malformed token") from None
        if alg == "HS256":
            payload = self._decode(token, self._secret, "HS256", None)
            external = False
        elif self.external is not None and alg == self.external.algorithm:
            payload = self._decode(token, self.external.key, alg, self.external.audience)
            external = True
        else:
            raise TokenError("token algorithm not accepted")
        self._check_times(payload, external)
        email = payload.get("email")
        return Claims(payload["sub"], email if isinstance(email, str) else None, external)

    def _decode(self, token: str, key: Any, alg: str, audience: str | None) -> dict[str, Any]:
        options: Any = {
            "require": ["exp", "sub"], "verify_exp": False, "verify_nbf": False, "verify_iat": False,
            "verify_aud": audience is not None, "verify_iss": False,
        }
        try:
            payload: dict[str, Any] = jwt.decode(token, key, algorithms=[alg], options=options, audience=audience)
        except jwt.PyJWTError as exc:
            raise TokenError(_reason(exc)) from None
        if not payload["sub"]:
            raise TokenError("token has an empty subject")
        return payload

    def _check_times(self, payload: dict[str, Any], external: bool) -> None:
        now = self.clock()
        skew = CLOCK_SKEW_S if external else 0
        exp = _number(payload.get("exp"), "exp")
        if exp <= now:
            raise TokenError("token expired")
        for name in ("nbf", "iat"):
            if name in payload and _number(payload[name], name) > now + skew:
                raise TokenError(f"token not valid yet ({name})")


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TokenError(f"claim {name} must be a number")
    return float(value)


def _reason(exc: jwt.PyJWTError) -> str:
    if isinstance(exc, jwt.MissingRequiredClaimError):
        return f"token lacks the {exc.claim} claim"
    if isinstance(exc, jwt.InvalidSignatureError):
        return "token signature invalid"
    if isinstance(exc, jwt.InvalidAudienceError):
        return "token audience not accepted"
    return "token invalid"


def load_secret(configured: str | None, data_dir: Path) -> bytes:
    """`--jwt-secret`, else DATA_DIR/jwt-secret, created once (mode 0600) with 384 random bits."""
    if configured:
        if len(configured.encode()) < MIN_SECRET_BYTES:
            raise ConfigError(f"--jwt-secret: must be at least {MIN_SECRET_BYTES} bytes (value not shown)")
        return configured.encode()
    path = data_dir / SECRET_FILE
    if path.exists():
        return _stored_secret(path)
    # made whole, then linked into place: a process starting beside this one (--workers) either sees no file or
    # the whole secret, never an empty file between its creation and its write
    secret = secrets.token_urlsafe(48).encode()
    tmp = path.with_name(f".{SECRET_FILE}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(secret + b"\n")
        fh.flush()
        os.fsync(fh.fileno())
    try:
        os.link(tmp, path)
    except FileExistsError:  # another process linked its secret first: every process uses that one
        return _stored_secret(path)
    finally:
        tmp.unlink()
    return secret


def _stored_secret(path: Path) -> bytes:
    secret = path.read_bytes().strip()
    if len(secret) < MIN_SECRET_BYTES:
        raise ConfigError(f"{path}: the stored JWT secret is shorter than {MIN_SECRET_BYTES} bytes")
    return secret


def load_external_key(pem_path: str | None, audience: str | None = None) -> ExternalKey | None:
    """The identity provider's public key: RSA (>= 2048 bits) means RS256, EC P-256 means ES256."""
    if not pem_path:
        return None
    try:
        key = serialization.load_pem_public_key(Path(pem_path).read_bytes())
    except OSError as exc:
        raise ConfigError(f"--jwt-public-key: cannot read {pem_path}: {exc.strerror}") from None
    except ValueError:
        raise ConfigError(f"--jwt-public-key: {pem_path} is not a PEM public key") from None
    if isinstance(key, rsa.RSAPublicKey) and key.key_size >= 2048:
        return ExternalKey(key, "RS256", audience)
    if isinstance(key, ec.EllipticCurvePublicKey) and isinstance(key.curve, ec.SECP256R1):
        return ExternalKey(key, "ES256", audience)
    raise ConfigError("--jwt-public-key: must be an RSA (2048+ bits) or EC P-256 public key")
