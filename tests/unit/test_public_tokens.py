"""JWT edge cases: expiry on the injected clock, required claims, alg none, forgery, algorithm confusion."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import stat
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from server.api.auth.tokens import (
    TOKEN_TTL_S,
    ExternalKey,
    TokenError,
    TokenService,
    load_external_key,
    load_secret,
)
from server.config import ConfigError

SECRET = b"s" * 48
NOW = 1_800_000_000.0


class Clock:
    def __init__(self, t: float = NOW) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _hs256_by_hand(header: dict, claims: dict, key: bytes) -> str:
    signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
    sig = hmac.new(key, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{_b64(sig)}"


def _claims(**extra: object) -> dict:
    return {"sub": "usr_1", "iat": int(NOW), "exp": int(NOW) + 60, **extra}


@pytest.fixture(scope="module")
def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _pem(public_key: object) -> bytes:
    return public_key.public_bytes(  # type: ignore[attr-defined]
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def test_issue_then_verify_and_expiry_on_the_injected_clock() -> None:
    clock = Clock()
    svc = TokenService(SECRET, clock=clock)
    token = svc.issue("usr_1", "a@example.com")
    claims = svc.verify(token)
    assert (claims.subject, claims.email, claims.external) == ("usr_1", "a@example.com", False)
    decoded = jwt.decode(token, SECRET, algorithms=["HS256"], options={"verify_exp": False, "verify_iat": False})
    assert decoded["exp"] - decoded["iat"] == TOKEN_TTL_S
    clock.t = NOW + TOKEN_TTL_S - 1
    svc.verify(token)
    clock.t = NOW + TOKEN_TTL_S  # exp is exclusive
    with pytest.raises(TokenError, match="expired"):
        svc.verify(token)


@pytest.mark.parametrize(
    ("claims", "reason"),
    [
        ({"sub": "usr_1"}, "exp"),
        ({"exp": int(NOW) + 60}, "sub"),
        (_claims(sub=""), "subject"),
        (_claims(sub=42), "invalid"),
        (_claims(exp="tomorrow"), "exp"),
        (_claims(exp=True), "exp"),
        (_claims(nbf=int(NOW) + 30), "not valid yet"),
        (_claims(iat=int(NOW) + 30), "not valid yet"),
    ],
)
def test_claims_problems_are_refused(claims: dict, reason: str) -> None:
    svc = TokenService(SECRET, clock=Clock())
    with pytest.raises(TokenError, match=reason):
        svc.verify(_hs256_by_hand({"alg": "HS256", "typ": "JWT"}, claims, SECRET))


def test_alg_none_and_other_algorithms_are_refused() -> None:
    svc = TokenService(SECRET, clock=Clock())
    none_header = _b64(json.dumps({"alg": "none", "typ": "JWT"}).encode())
    unsigned = f"{none_header}.{_b64(json.dumps(_claims()).encode())}."
    for token in (unsigned, unsigned[:-1], _hs256_by_hand({"alg": "HS512"}, _claims(), SECRET),
                  _hs256_by_hand({"alg": "NONE"}, _claims(), SECRET)):
        with pytest.raises(TokenError):
            svc.verify(token)


@pytest.mark.parametrize("token", ["", "abc", "a.b.c", "x" * 9000, "eyJhbGciOiJIUzI1NiJ9.e30"])
def test_malformed_tokens_are_refused(token: str) -> None:
    with pytest.raises(TokenError):
        TokenService(SECRET, clock=Clock()).verify(token)


def test_forged_and_tampered_tokens_are_refused() -> None:
    svc = TokenService(SECRET, clock=Clock())
    with pytest.raises(TokenError, match="signature"):
        svc.verify(_hs256_by_hand({"alg": "HS256"}, _claims(), b"k" * 48))
    good = svc.issue("usr_1")
    head, _payload, sig = good.split(".")
    evil = _b64(json.dumps(_claims(sub="usr_admin")).encode())
    with pytest.raises(TokenError):
        svc.verify(f"{head}.{evil}.{sig}")


def test_external_rs256_key_and_algorithm_confusion(rsa_key: rsa.RSAPrivateKey) -> None:
    pem = _pem(rsa_key.public_key())
    svc = TokenService(SECRET, ExternalKey(serialization.load_pem_public_key(pem), "RS256"), clock=Clock())
    idp = jwt.encode(_claims(email="a@example.com", aud="someone"), rsa_key, algorithm="RS256")
    claims = svc.verify(idp)
    assert claims.external and claims.email == "a@example.com"
    # the classic confusion attack: HS256 "signed" with the public key's PEM as the HMAC secret
    with pytest.raises(TokenError, match="signature"):
        svc.verify(_hs256_by_hand({"alg": "HS256", "typ": "JWT"}, _claims(), pem))
    # an ES256 token is not accepted for an RSA identity provider
    es = jwt.encode(_claims(), ec.generate_private_key(ec.SECP256R1()), algorithm="ES256")
    with pytest.raises(TokenError, match="algorithm"):
        svc.verify(es)
    # without an external key, RS256 is refused outright
    with pytest.raises(TokenError, match="algorithm"):
        TokenService(SECRET, clock=Clock()).verify(idp)
    # a token from another RSA key fails the signature
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    with pytest.raises(TokenError, match="signature"):
        svc.verify(jwt.encode(_claims(), other, algorithm="RS256"))


def test_external_es256_key_with_audience(tmp_path: Path) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    path = tmp_path / "idp.pem"
    path.write_bytes(_pem(key.public_key()))
    ext = load_external_key(str(path), audience="market")
    assert ext is not None and ext.algorithm == "ES256"
    svc = TokenService(SECRET, ext, clock=Clock())
    assert svc.verify(jwt.encode(_claims(aud="market"), key, algorithm="ES256")).external
    with pytest.raises(TokenError, match="audience"):
        svc.verify(jwt.encode(_claims(aud="other"), key, algorithm="ES256"))


def test_external_key_loading_errors(tmp_path: Path, rsa_key: rsa.RSAPrivateKey) -> None:
    assert load_external_key(None) is None
    with pytest.raises(ConfigError, match="cannot read"):
        load_external_key(str(tmp_path / "missing.pem"))
    junk = tmp_path / "junk.pem"
    junk.write_text("not a key")
    with pytest.raises(ConfigError, match="not a PEM"):
        load_external_key(str(junk))
    small = tmp_path / "small.pem"
    small.write_bytes(_pem(rsa.generate_private_key(public_exponent=65537, key_size=1024).public_key()))
    with pytest.raises(ConfigError, match="2048"):
        load_external_key(str(small))
    p384 = tmp_path / "p384.pem"
    p384.write_bytes(_pem(ec.generate_private_key(ec.SECP384R1()).public_key()))
    with pytest.raises(ConfigError, match="P-256"):
        load_external_key(str(p384))


def test_secret_is_generated_once_with_mode_0600(tmp_path: Path) -> None:
    first = load_secret(None, tmp_path)
    assert len(first) >= 32
    assert stat.S_IMODE(os.stat(tmp_path / "jwt-secret").st_mode) == 0o600
    assert load_secret(None, tmp_path) == first
    assert load_secret("c" * 40, tmp_path) == b"c" * 40
    with pytest.raises(ConfigError, match="at least 32"):
        load_secret("short", tmp_path)
    with pytest.raises(ValueError):
        TokenService(b"short")


def test_processes_starting_together_share_one_whole_secret(tmp_path: Path) -> None:
    """--workers: hubs starting at once all read the same secret, never the empty file between another's creation
    and its write (a worker once failed with 'the stored JWT secret is shorter than 32 bytes')."""
    from concurrent.futures import ThreadPoolExecutor
    from threading import Barrier

    barrier = Barrier(16)
    for round_ in range(5):
        data = tmp_path / f"round-{round_}"
        data.mkdir()
        barrier.reset()
        with ThreadPoolExecutor(16) as pool:
            secrets_seen = set(pool.map(lambda n, d=data: load_secret(None, d) if barrier.wait() >= 0 else b"",
                                        range(16)))
        assert len(secrets_seen) == 1 and len(next(iter(secrets_seen))) >= 32
        assert [p.name for p in data.iterdir()] == ["jwt-secret"]  # no temporary file left behind


# Issue 46: what tokens.py's first mutation run left unheld. A refusal's reason is shown to the client in the
# 401's detail ("The bearer token was refused: <reason>."), so each is asserted whole, not by a word in it.

def _sized_token(svc_secret: bytes, length: int) -> str:
    """A well-signed HS256 token of exactly `length` characters (a padding claim, and a header field where the
    base64 of the claims cannot land on the length)."""
    for kid in ("", "k", "kk"):
        header = {"alg": "HS256", "typ": "JWT", **({"kid": kid} if kid else {})}
        base = len(_hs256_by_hand(header, _claims(pad=""), svc_secret))
        for pad in range(max(0, (length - base) * 3 // 4 - 4), (length - base) * 3 // 4 + 4):
            token = _hs256_by_hand(header, _claims(pad="p" * pad), svc_secret)
            if len(token) == length:
                return token
    raise AssertionError(f"no token of {length} characters")


def test_a_token_over_8192_characters_is_refused_even_when_well_signed() -> None:
    svc = TokenService(SECRET, clock=Clock())
    assert svc.verify(_sized_token(SECRET, 8192)).subject == "usr_1"  # the bound itself is accepted
    for token in (_sized_token(SECRET, 8193), ""):
        with pytest.raises(TokenError) as caught:
            svc.verify(token)
        assert str(caught.value) == "malformed token"
    with pytest.raises(TokenError) as caught:
        svc.verify("a.b.c")  # a header that does not decode
    assert str(caught.value) == "malformed token"


@pytest.mark.parametrize(
    ("claims", "reason"),
    [
        (_claims(exp=int(NOW)), "token expired"),
        (_claims(exp="tomorrow"), "claim exp must be a number"),
        (_claims(nbf="soon"), "claim nbf must be a number"),
        (_claims(iat=int(NOW) + 1), "token not valid yet (iat)"),  # our own tokens: no clock skew allowed
        (_claims(nbf=int(NOW) + 1), "token not valid yet (nbf)"),
        (_claims(sub=""), "token has an empty subject"),
        (_claims(sub=42), "token invalid"),
        ({"exp": int(NOW) + 60}, "token lacks the sub claim"),
    ],
)
def test_each_refusal_gives_its_reason_whole(claims: dict, reason: str) -> None:
    svc = TokenService(SECRET, clock=Clock())
    with pytest.raises(TokenError) as caught:
        svc.verify(_hs256_by_hand({"alg": "HS256", "typ": "JWT"}, claims, SECRET))
    assert str(caught.value) == reason


def test_signature_audience_and_algorithm_refusals_give_their_reason_whole() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    svc = TokenService(SECRET, ExternalKey(key.public_key(), "ES256", "market"), clock=Clock())
    cases = [
        (_hs256_by_hand({"alg": "HS256"}, _claims(), b"k" * 48), "token signature invalid"),
        (jwt.encode(_claims(aud="other"), key, algorithm="ES256"), "token audience not accepted"),
        (_hs256_by_hand({"alg": "HS512"}, _claims(), SECRET), "token algorithm not accepted"),
    ]
    for token, reason in cases:
        with pytest.raises(TokenError) as caught:
            svc.verify(token)
        assert str(caught.value) == reason


def test_an_issued_token_carries_exactly_its_documented_claims() -> None:
    svc = TokenService(SECRET, clock=Clock())
    def read(token: str) -> dict:
        return jwt.decode(token, SECRET, algorithms=["HS256"], options={"verify_exp": False, "verify_iat": False})

    with_email = read(svc.issue("usr_1", "a@example.com"))
    assert with_email == {"sub": "usr_1", "iat": int(NOW), "exp": int(NOW) + TOKEN_TTL_S, "iss": "market-server",
                          "email": "a@example.com"}
    without = read(svc.issue("usr_2"))
    assert without == {"sub": "usr_2", "iat": int(NOW), "exp": int(NOW) + TOKEN_TTL_S, "iss": "market-server"}


def test_a_non_string_email_claim_is_read_as_no_email() -> None:
    svc = TokenService(SECRET, clock=Clock())
    claims = svc.verify(_hs256_by_hand({"alg": "HS256"}, _claims(email=42), SECRET))
    assert (claims.subject, claims.email) == ("usr_1", None)


def test_an_external_token_may_be_issued_up_to_60_s_ahead_of_our_clock(rsa_key: rsa.RSAPrivateKey) -> None:
    """CLOCK_SKEW_S: the identity provider's clock may run ahead of ours; our own tokens get no such slack."""
    svc = TokenService(SECRET, ExternalKey(rsa_key.public_key(), "RS256"), clock=Clock())
    for name in ("iat", "nbf"):
        assert svc.verify(jwt.encode(_claims(**{name: int(NOW) + 60}), rsa_key, algorithm="RS256")).external
        with pytest.raises(TokenError) as caught:
            svc.verify(jwt.encode(_claims(**{name: int(NOW) + 61}), rsa_key, algorithm="RS256"))
        assert str(caught.value) == f"token not valid yet ({name})"


def test_an_rsa_pem_of_2048_bits_loads_as_rs256_with_its_audience(tmp_path: Path, rsa_key: rsa.RSAPrivateKey) -> None:
    path = tmp_path / "idp.pem"
    path.write_bytes(_pem(rsa_key.public_key()))
    ext = load_external_key(str(path), audience="market")
    assert ext is not None and (ext.algorithm, ext.audience, ext.key.key_size) == ("RS256", "market", 2048)
    svc = TokenService(SECRET, ext, clock=Clock())
    claims = svc.verify(jwt.encode(_claims(aud="market", email="a@example.com"), rsa_key, algorithm="RS256"))
    assert (claims.subject, claims.email, claims.external) == ("usr_1", "a@example.com", True)
    with pytest.raises(TokenError) as caught:
        svc.verify(jwt.encode(_claims(aud="other"), rsa_key, algorithm="RS256"))
    assert str(caught.value) == "token audience not accepted"
    p384 = tmp_path / "p384.pem"
    p384.write_bytes(_pem(ec.generate_private_key(ec.SECP384R1()).public_key()))
    with pytest.raises(ConfigError) as refused:
        load_external_key(str(p384))
    assert str(refused.value) == "--jwt-public-key: must be an RSA (2048+ bits) or EC P-256 public key"


def test_a_secret_of_exactly_32_bytes_is_enough_and_31_is_not(tmp_path: Path) -> None:
    assert load_secret("c" * 32, tmp_path) == b"c" * 32
    with pytest.raises(ConfigError) as caught:
        load_secret("c" * 31, tmp_path)
    assert str(caught.value) == "--jwt-secret: must be at least 32 bytes (value not shown)"
    TokenService(b"s" * 32)
    with pytest.raises(ValueError) as short:
        TokenService(b"s" * 31)
    assert str(short.value) == "the HS256 secret must be at least 32 bytes"
    stored = tmp_path / "jwt-secret"
    stored.write_bytes(b"d" * 32 + b"\n")
    assert load_secret(None, tmp_path) == b"d" * 32
    stored.write_bytes(b"d" * 31 + b"\n")
    with pytest.raises(ConfigError) as truncated:
        load_secret(None, tmp_path)
    assert str(truncated.value) == f"{stored}: the stored JWT secret is shorter than 32 bytes"


def test_a_generated_secret_holds_384_random_bits(tmp_path: Path) -> None:
    """The docstring's promise: 48 random bytes, URL-safe base64 (64 characters), one line in the file."""
    secret = load_secret(None, tmp_path)
    assert len(secret) == 64 and len(base64.urlsafe_b64decode(secret)) == 48
    assert (tmp_path / "jwt-secret").read_bytes() == secret + b"\n"
