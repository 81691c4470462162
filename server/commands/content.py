"""`content import FILE`: news and research items (SPEC 3).

Every item is validated first (one bad item: nothing is imported); then they are written 1,000 per
transaction. Item ids derive from their content, so re-running a file adds only what is missing.
"""

from __future__ import annotations

import argparse
from typing import Any

from server.api.core.body import Fields
from server.commands.common import CommandError, command, db, load_json_file
from server.commands.import_fields import localised, parse_items, report, string_list, timestamp
from server.store.site.content import ContentItem, ContentKind


def register(sub: Any) -> None:
    content = sub.add_parser("content", help="site news and research").add_subparsers(
        dest="content_cmd", required=True)
    imp = command(content, "import", "import a JSON list of news/research items", _import)
    imp.add_argument("file")


def parse_content(f: Fields) -> ContentItem | None:
    kind = f.choice("kind", tuple(k.value for k in ContentKind))
    if "kind" not in f.data:
        f.error("kind", "is required (news or research)")
    title = localised(f, "title", 300)
    summary = localised(f, "summary", 5000)
    source = f.text("source", required=False, max_len=200)
    author = f.text("author", required=False, max_len=100)
    category = f.text("category", required=False, max_len=50)
    published = timestamp(f, "publishedAt")
    tags = string_list(f, "tags")
    if kind is None or title is None or summary is None or published is None:
        return None
    return ContentItem(ContentKind(kind), title, summary, published, source, author, category, tags)


def _import(ns: argparse.Namespace) -> int:
    data = load_json_file(ns.file)
    items, errors = parse_items(data, parse_content)
    if errors:
        raise CommandError(report(errors, len(data) if isinstance(data, list) else 0))
    added = db(ns).content.import_items(items)  # one short transaction per chunk: a live server keeps writing
    news = sum(1 for i in items if i.kind is ContentKind.NEWS)
    print(f"imported {added} new item(s) ({news} news, {len(items) - news} research in the file; "
          f"{len(items) - added} already present)")
    return 0
