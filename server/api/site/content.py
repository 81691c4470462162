"""`GET /api/news` and `GET /api/research`: `{items, total, limit, offset}`, newest first.

Read from storage (a reader thread, awaited) on every request, so `content import` run by an operator while the
server is up shows at once.
"""

from __future__ import annotations

import orjson

from server.api.core.router import Access, Router
from server.api.core.types import Request, Response
from server.api.site.fields import int_params
from server.store.content import ContentKind
from server.store.repositories import Content

DEFAULT_LIMIT = 20
MAX_LIMIT = 100
MAX_OFFSET = 10**9


class SiteContentApi:
    def __init__(self, repo: Content) -> None:
        self.repo = repo

    def register(self, router: Router) -> None:
        router.add("GET", "/api/news", self.news, Access.PUBLIC, name="site_news")
        router.add("GET", "/api/research", self.research, Access.PUBLIC, name="site_research")

    async def news(self, req: Request) -> Response:
        return await self._page(req, ContentKind.NEWS)

    async def research(self, req: Request) -> Response:
        return await self._page(req, ContentKind.RESEARCH)

    async def _page(self, req: Request, kind: ContentKind) -> Response:
        page = int_params(req.query, limit=(DEFAULT_LIMIT, 1, MAX_LIMIT), offset=(0, 0, MAX_OFFSET))
        limit, offset = page["limit"], page["offset"]
        items, total = await self.repo.page(kind, limit, offset)
        return Response(200, orjson.dumps({"items": items, "total": total, "limit": limit, "offset": offset}))
