"""The sandbox page: pinned assets from the CDN or a self-hosted URL, and a tight CSP."""

from __future__ import annotations

import base64
import hashlib
import re

import orjson

from books_graphql.http.sandbox import CDN_URL, DEFAULT_QUERY, NPM_PACKAGES, render_sandbox


def inline_script(html: str) -> str:
    scripts: list[str] = re.findall(r"<script>(.*?)</script>", html, flags=re.DOTALL)
    [script] = scripts
    return script


def test_by_default_assets_come_from_the_cdn_pinned_and_with_integrity() -> None:
    page = render_sandbox(None).html.decode()

    for url in (
        f"{CDN_URL}/react@18.3.1/umd/react.production.min.js",
        f"{CDN_URL}/react-dom@18.3.1/umd/react-dom.production.min.js",
        f"{CDN_URL}/graphiql@4.1.2/graphiql.min.js",
        f"{CDN_URL}/graphiql@4.1.2/graphiql.min.css",
    ):
        assert re.search(
            rf'"{re.escape(url)}" integrity="sha384-[A-Za-z0-9+/=]+" crossorigin="anonymous"', page
        ), url


def test_self_hosted_assets_follow_the_node_modules_layout() -> None:
    page = render_sandbox("https://static.example.org/graphiql/").html.decode()

    assert 'src="https://static.example.org/graphiql/react/umd/react.production.min.js"' in page
    assert 'src="https://static.example.org/graphiql/graphiql/graphiql.min.js"' in page
    assert 'href="https://static.example.org/graphiql/graphiql/graphiql.min.css"' in page
    assert CDN_URL not in page
    assert "integrity=" not in page


def test_the_csp_allows_the_asset_origin_and_exactly_the_inline_script() -> None:
    sandbox = render_sandbox("https://static.example.org/graphiql")
    digest = hashlib.sha256(inline_script(sandbox.html.decode()).encode()).digest()

    policy = dict(
        directive.split(" ", 1) for directive in sandbox.content_security_policy.split("; ")
    )

    assert policy["default-src"] == "'none'"
    assert policy["script-src"] == (
        f"https://static.example.org 'sha256-{base64.b64encode(digest).decode()}'"
    )
    assert policy["connect-src"] == "'self'"
    assert policy["frame-ancestors"] == "'none'"


def test_assets_on_this_host_are_allowed_as_self() -> None:
    policy = render_sandbox("/static/graphiql").content_security_policy

    assert "script-src 'self' 'sha256-" in policy


def test_the_page_preloads_the_example_query_safely_escaped() -> None:
    page = render_sandbox(None).html.decode()

    config_text = re.search(r'<script id="sandbox-config" type="application/json">(.*?)</script>',
                            page, flags=re.DOTALL)  # fmt: skip
    assert config_text is not None
    assert "<" not in config_text.group(1)
    config = orjson.loads(config_text.group(1))
    assert config["defaultQuery"] == DEFAULT_QUERY
    assert "books {\n    title\n    author\n  }" in DEFAULT_QUERY


def test_the_npm_packages_to_self_host_are_the_pinned_ones() -> None:
    assert NPM_PACKAGES == ("graphiql@4.1.2", "react-dom@18.3.1", "react@18.3.1")
