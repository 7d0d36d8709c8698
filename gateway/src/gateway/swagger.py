"""The browsable API reference at ``GET /docs``: Swagger UI reading ``/openapi.json``.

The page loads a pinned release of swagger-ui-dist from the jsDelivr CDN, each file with its
Subresource Integrity hash, so a changed file on the CDN is refused by the browser. The page
is rendered once, from ``templates/swagger-ui.html``.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path
from string import Template

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


def render_swagger_ui() -> str:
    """The page, with the pinned assets' URLs and integrity hashes."""
    template = Template((TEMPLATES / "swagger-ui.html").read_text(encoding="utf-8"))
    return template.substitute(
        stylesheet_url=html.escape(SWAGGER_UI_STYLESHEET.url),
        stylesheet_integrity=SWAGGER_UI_STYLESHEET.integrity,
        script_url=html.escape(SWAGGER_UI_SCRIPT.url),
        script_integrity=SWAGGER_UI_SCRIPT.integrity,
    )


SWAGGER_UI = render_swagger_ui()
