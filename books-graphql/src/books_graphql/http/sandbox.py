"""The GraphiQL sandbox page that a browser gets at ``GET /`` (and ``GET /graphql``).

The page loads pinned releases of graphiql, react and react-dom: from the jsDelivr CDN by
default, each with its Subresource Integrity hash, or from a self-hosted base URL laid out
like ``node_modules`` (``npm install --prefix DIR`` the same versions, serve ``DIR/node_modules``).
The page is rendered once per app, with a Content-Security-Policy that lets it talk to this
service only.
"""

from __future__ import annotations

import base64
import hashlib
import html
from dataclasses import dataclass
from pathlib import Path
from string import Template
from urllib.parse import urlsplit

import orjson

TEMPLATES = Path(__file__).parent / "templates"
CDN_URL = "https://cdn.jsdelivr.net/npm"
DEFAULT_QUERY = """# Welcome to the book catalog. Press the run button (or Ctrl-Enter).
{
  books {
    title
    author
  }
}
"""


@dataclass(frozen=True, slots=True)
class Asset:
    package: str
    version: str
    path: str
    integrity: str  # of the file in the npm tarball, which the CDN serves byte for byte

    def url(self, base_url: str | None) -> str:
        if base_url is None:
            return f"{CDN_URL}/{self.package}@{self.version}/{self.path}"
        return f"{base_url.rstrip('/')}/{self.package}/{self.path}"


# The UMD builds: React 19 ships none, GraphiQL 4 is the last major with one.
SCRIPTS = (
    Asset(
        "react",
        "18.3.1",
        "umd/react.production.min.js",
        "sha384-DGyLxAyjq0f9SPpVevD6IgztCFlnMF6oW/XQGmfe+IsZ8TqEiDrcHkMLKI6fiB/Z",
    ),
    Asset(
        "react-dom",
        "18.3.1",
        "umd/react-dom.production.min.js",
        "sha384-gTGxhz21lVGYNMcdJOyq01Edg0jhn/c22nsx0kyqP0TxaV5WVdsSH1fSDUf5YJj1",
    ),
    Asset(
        "graphiql",
        "4.1.2",
        "graphiql.min.js",
        "sha384-9XdHu7ajgGJziD4J1zNBKQ842Q/+zZfDv+ib1eMhZWBH6hPAs806x+Jbcf0yNO6B",
    ),
)
STYLESHEETS = (
    Asset(
        "graphiql",
        "4.1.2",
        "graphiql.min.css",
        "sha384-1el1QShFBnnXTx9x/Cprg82hZWKt0ry29OAYIXt05swbi0KcZDFoj0CWguMpopJr",
    ),
)
NPM_PACKAGES = tuple(sorted({f"{a.package}@{a.version}" for a in (*SCRIPTS, *STYLESHEETS)}))
"""What to ``npm install`` for self-hosting the assets."""


@dataclass(frozen=True, slots=True)
class SandboxPage:
    html: bytes
    content_security_policy: str


def render_sandbox(assets_url: str | None) -> SandboxPage:
    """The page and its CSP, for assets at ``assets_url`` (None: the CDN)."""
    boot_script = (TEMPLATES / "graphiql.js").read_text(encoding="utf-8")
    config = {"defaultQuery": DEFAULT_QUERY, "assetsUrl": assets_url or CDN_URL}
    # "</script>" inside the JSON block must not end it: escape every "<".
    config_json = orjson.dumps(config).decode().replace("<", "\\u003c")
    page = Template((TEMPLATES / "graphiql.html").read_text(encoding="utf-8")).substitute(
        stylesheets="\n  ".join(_tag(asset, assets_url, stylesheet=True) for asset in STYLESHEETS),
        scripts="\n  ".join(_tag(asset, assets_url, stylesheet=False) for asset in SCRIPTS),
        config=config_json,
        boot_script=boot_script,
    )
    return SandboxPage(
        html=page.encode(),
        content_security_policy=_content_security_policy(assets_url, boot_script),
    )


def _tag(asset: Asset, assets_url: str | None, *, stylesheet: bool) -> str:
    url = html.escape(asset.url(assets_url))
    # Integrity pins the CDN's files; self-hosted files are the operator's own.
    integrity = (
        f' integrity="{asset.integrity}" crossorigin="anonymous"' if assets_url is None else ""
    )
    if stylesheet:
        return f'<link rel="stylesheet" href="{url}"{integrity}>'
    return f'<script src="{url}"{integrity}></script>'


def _content_security_policy(assets_url: str | None, boot_script: str) -> str:
    source = _origin(assets_url or CDN_URL)
    digest = base64.b64encode(hashlib.sha256(boot_script.encode()).digest()).decode()
    return "; ".join(
        (
            "default-src 'none'",
            f"script-src {source} 'sha256-{digest}'",
            # GraphiQL's editors set inline styles; its fonts and icons are data: URLs.
            f"style-src {source} 'unsafe-inline'",
            "font-src data:",
            "img-src 'self' data:",
            "connect-src 'self'",
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
        )
    )


def _origin(url: str) -> str:
    parts = urlsplit(url)
    if not parts.scheme or not parts.netloc:
        return "'self'"  # a path on this host, e.g. "/static/graphiql"
    return f"{parts.scheme}://{parts.netloc}"
