"""The public site's API (`/api/...`, SPEC 8): the market snapshot, news and research, accounts (register, login,
Bearer), inquiries and cooperation intents, receipts and anchor verification.

May import the layers below `api`, `api/core/` and `api/auth/`.
"""
