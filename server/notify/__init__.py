"""Notifications (layer 4, SPEC 9): the outbox worker that claims due jobs and delivers them by e-mail (SMTP) or
webhook (each platform's format and signature), the retry policy, and the bilingual message text.

May import `core`, `config`, `market`, `evidence`, `engine` and `store` (the outbox's jobs and their states).
"""
