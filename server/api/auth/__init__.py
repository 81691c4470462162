"""Who is asking: Argon2id password hashes, JWT access tokens (HS256 here, or RS256/ES256 from an identity
provider), and the key watch that keeps the in-memory key cache current while the server runs.

May import the layers below `api` and `api/core/`.
"""
