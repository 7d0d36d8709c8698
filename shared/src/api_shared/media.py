"""Media-type rules of docs/api.md#representation: JSON out (else 406), JSON in (else 415)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sanic import Request

from api_shared.errors import NotAcceptableError, UnsupportedMediaTypeError
from api_shared.types import App

JSON = "application/json"
MERGE_PATCH_JSON = "application/merge-patch+json"

# Operational endpoints are read by probes and scrapers, which send their own Accept headers.
EXEMPT_PATHS = frozenset({"/health", "/ready", "/metrics"})


@dataclass(frozen=True, slots=True)
class MediaRange:
    type: str
    subtype: str
    quality: float

    def matches(self, media_type: str) -> bool:
        kind, _, sub = media_type.partition("/")
        return self.type in ("*", kind) and self.subtype in ("*", sub)

    @property
    def specificity(self) -> int:
        return (self.type != "*") + (self.subtype != "*")


def parse_accept(header: str) -> list[MediaRange]:
    """Parse an ``Accept`` header; malformed parts are skipped rather than refused."""
    ranges: list[MediaRange] = []
    for part in header.split(","):
        media, *params = (piece.strip() for piece in part.split(";"))
        kind, slash, sub = media.lower().partition("/")
        if not slash or not kind or not sub:
            continue
        quality = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = min(max(float(value), 0.0), 1.0)
                except ValueError:
                    quality = 0.0
        ranges.append(MediaRange(kind, sub, quality))
    return ranges


def quality_of(accept: str | None, media_type: str) -> float:
    """How much the client wants ``media_type`` (RFC 9110 §12.5.1: the most specific range wins)."""
    if not accept or not accept.strip():
        return 1.0
    return quality_in(parse_accept(accept), media_type)


def quality_in(ranges: Sequence[MediaRange], media_type: str) -> float:
    """``quality_of`` over an ``Accept`` header already parsed (one that is not empty)."""
    matching = [r for r in ranges if r.matches(media_type)]
    if not matching:
        return 0.0
    return max(matching, key=lambda r: r.specificity).quality


def content_type_of(request: Request) -> str:
    """The request's media type without parameters, lower-cased ('' when absent)."""
    return (request.headers.get("content-type") or "").split(";")[0].strip().lower()


def has_body(request: Request) -> bool:
    length = request.headers.get("content-length")
    return bool(request.headers.get("transfer-encoding")) or (
        length is not None and length.strip() not in ("", "0")
    )


def produces(request: Request) -> str:
    """What the request's route answers with: JSON, unless the route was declared with
    another media type (``@bp.get(path, ctx_produces="text/event-stream")``)."""
    route = request.route
    media_type = getattr(route.ctx, "produces", None) if route is not None else None
    return media_type if isinstance(media_type, str) else JSON


def install_json_media_rules(app: App) -> None:
    """Refuse clients that will not take what the route answers with, JSON unless it says
    otherwise (406), and bodies that are not JSON (415)."""

    async def check_media_types(request: Request) -> None:
        if request.path in EXEMPT_PATHS:
            return
        produced = produces(request)
        if quality_of(request.headers.get("accept"), produced) <= 0:
            raise NotAcceptableError(f"This resource is only available as {produced}.")
        if request.method in ("POST", "PUT", "PATCH") and has_body(request):
            allowed = (JSON, MERGE_PATCH_JSON) if request.method == "PATCH" else (JSON,)
            if content_type_of(request) not in allowed:
                raise UnsupportedMediaTypeError(f"The request body must be {' or '.join(allowed)}.")

    app.register_middleware(check_media_types, "request", priority=900)
