"""server/api/ops/web.py without a server: which files load, how index.html is versioned, 304s, config."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from server.api.core.types import Request
from server.api.ops.web import IMMUTABLE, REVALIDATE, WEB_ROOT, WebApi, load_files, versioned_index
from server.config import Settings
from server.core.errors import ApiError


def make_root(tmp_path: Path) -> Path:
    (tmp_path / "vendor").mkdir()
    (tmp_path / "index.html").write_text(
        '<script src="/static/vendor/lib.js"></script><a href="/static/vendor/lib.js#x">'
    )
    (tmp_path / "app.js").write_text("export {};\n")
    (tmp_path / "notes.txt").write_text("not served")
    (tmp_path / "vendor" / "lib.js").write_text("window.lib = 1;\n")
    return tmp_path


def test_loads_known_types_only_with_cache_policy_by_folder(tmp_path: Path) -> None:
    files = load_files(make_root(tmp_path))
    assert set(files) == {"index.html", "app.js", "vendor/lib.js"}
    assert files["app.js"].content_type == "text/javascript; charset=utf-8"
    assert files["app.js"].cache_control == REVALIDATE
    assert files["vendor/lib.js"].cache_control == IMMUTABLE
    assert files["app.js"].etag.startswith('"') and files["app.js"].etag != files["vendor/lib.js"].etag


def test_missing_index_is_a_start_error(tmp_path: Path) -> None:
    (tmp_path / "app.js").write_text("")
    with pytest.raises(RuntimeError, match=r"no index\.html"):
        load_files(tmp_path)


def test_index_versions_exact_vendor_urls_only(tmp_path: Path) -> None:
    files = load_files(make_root(tmp_path))
    html = versioned_index(files).body.decode()
    version = files["vendor/lib.js"].etag.strip('"')[:12]
    assert f'src="/static/vendor/lib.js?v={version}"' in html
    assert 'href="/static/vendor/lib.js#x"' in html  # not an exact quoted URL: left alone


def test_handlers_answer_304_and_404_and_config() -> None:
    settings = Settings(ws_port=9123)
    api = WebApi(settings, settings, settings)  # its http, feed and stream groups
    page = api.page(Request("GET", "/"))
    assert page.status == 200 and page.content_type == "text/html; charset=utf-8"
    etag = dict(page.headers)["etag"]
    again = api.page(Request("GET", "/", headers={"if-none-match": f'W/{etag}, "x"'}))
    assert again.status == 304 and again.body == b""
    js = api.static(Request("GET", "/static/app.js", path_params={"file": "app.js"}))
    assert js.body == (WEB_ROOT / "app.js").read_bytes()
    for name in ("index.html", "../hub.py", "vendor"):
        with pytest.raises(ApiError) as err:
            api.static(Request("GET", "/static/x", path_params={"file": name}))
        assert err.value.status == 404
    config = orjson.loads(api.client_config(Request("GET", "/api/config")).body)
    assert config == {"wsPort": 9123, "wsPath": "/ws/quotes", "demo": True, "heartbeatS": 5.0}
