"""The browsable API reference at ``GET /docs``: Swagger UI reading ``/openapi.json``.

The page loads a pinned release of swagger-ui-dist from the jsDelivr CDN, each file with its
Subresource Integrity hash, so a changed file on the CDN is refused by the browser. The page
is rendered once, from ``templates/swagger-ui.html`` and its one inline script
``templates/swagger-ui.js``, and sent with a Content-Security-Policy like GraphiQL's
(``books_graphql.http.sandbox``): scripts from the CDN and that script (by hash) only, requests to
this origin only, no framing.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from dataclasses import dataclass
from pathlib import Path
from string import Template
from urllib.parse import urlsplit

from gateway.routing import OPENAPI_DOCUMENT

TEMPLATES = Path(__file__).parent / "templates"
CDN_URL = "https://cdn.jsdelivr.net/npm"
SWAGGER_UI_PACKAGE = "swagger-ui-dist"
SWAGGER_UI_VERSION = "5.35.0"  # pinned: a floating major would run whatever is published


@dataclass(frozen=True, slots=True)
class Asset:
    """A file of the pinned npm package, with the Subresource Integrity hash of its bytes."""

    path: str
    integrity: str  # of the file in the npm tarball, which the CDN serves byte for byte

    @property
    def url(self) -> str:
        return f"{CDN_URL}/{SWAGGER_UI_PACKAGE}@{SWAGGER_UI_VERSION}/{self.path}"


SWAGGER_UI_SCRIPT = Asset(
    "swagger-ui-bundle.js",
    "sha384-gjRm0bEPMeTmMh5jT2cHccIwCUZSTd8YC+j0d0sXw0MdGEfScduGpSyF3ZSSLkX9",
)
SWAGGER_UI_STYLESHEET = Asset(
    "swagger-ui.css",
    "sha384-WlYgdmXYOOBWL5apwjDEZwN+U3HmXSSu5R6V5aGxEcf7z+KuRNwBhoxKVN1i3D5I",
)


@dataclass(frozen=True, slots=True)
class DocsPage:
    """The page, and the headers it must be sent with (each response copies them)."""

    html: str
    headers: dict[str, str]


def render_swagger_ui() -> DocsPage:
    """The page, with the pinned assets' URLs and integrity hashes, and its policy."""
    boot_template = Template((TEMPLATES / "swagger-ui.js").read_text(encoding="utf-8"))
    boot_script = boot_template.substitute(document_url=json.dumps(OPENAPI_DOCUMENT))
    template = Template((TEMPLATES / "swagger-ui.html").read_text(encoding="utf-8"))
    page = template.substitute(
        stylesheet_url=html.escape(SWAGGER_UI_STYLESHEET.url),
        stylesheet_integrity=SWAGGER_UI_STYLESHEET.integrity,
        script_url=html.escape(SWAGGER_UI_SCRIPT.url),
        script_integrity=SWAGGER_UI_SCRIPT.integrity,
        boot_script=boot_script,
    )
    headers = {
        "Content-Security-Policy": _content_security_policy(boot_script),
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
    }
    return DocsPage(page, headers)


def _content_security_policy(boot_script: str) -> str:
    cdn = "{0.scheme}://{0.netloc}".format(urlsplit(CDN_URL))
    digest = base64.b64encode(hashlib.sha256(boot_script.encode()).digest()).decode()
    return "; ".join(
        (
            "default-src 'none'",
            f"script-src {cdn} 'sha256-{digest}'",
            # Swagger UI styles its elements through the DOM, which no policy restricts: no
            # inline style is needed (gateway/tests/integration/test_docs_assets.py checks).
            f"style-src {cdn}",
            "img-src 'self' data:",  # the stylesheet's and the bundle's icons; the favicon
            "connect-src 'self'",  # /openapi.json, and "Try it out" on this origin
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
        )
    )


SWAGGER_UI = render_swagger_ui()
