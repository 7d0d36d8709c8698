"""The users list by hand: the floor users-service is measured against (bench/users_list.py).

    RAW_DATABASE_URL=postgres://... RAW_PORT=8101 JWKS_URL=... [RAW_ACCESS_LOG=1] \
        python bench/raw_users.py

One Sanic handler for ``GET /api/users?limit&offset`` (default sort) doing what the service
must for it: it checks the admin bearer token with the platform's shared verifier (cached
per token, as the service's is), then runs the service's three statements on one pooled
connection with raw asyncpg (a pool of the ORM's size, 1..5, which skips asyncpg's reset
query as the service's pool does): the caller check (the token's session, live, joined to
its user, active and an admin now), the page by the ``(created_at, id)`` index, and the
total from ``user_counts``; and it answers the same JSON. No middleware, no ORM, no
validation models: what is left is the least any Python service must do for this request.
With ``RAW_ACCESS_LOG=1`` it also writes one JSON access line per request to stdout, with
the fields of the services' access line (the peer of users-service at LOG_LEVEL=INFO), in
one unbuffered write.
"""

from __future__ import annotations

import os
import time
import uuid
from datetime import UTC, datetime
from uuid import UUID

import asyncpg
import orjson
from sanic import Request, Sanic
from sanic.response import HTTPResponse

from api_shared.auth import JwksKeySource, TokenVerifier, bearer_token
from api_shared.http import HttpSession

CALLER_SQL = (
    'SELECT "u"."id", "u"."role", "u"."is_active" FROM "sessions" "s" '
    'JOIN "users" "u" ON "u"."id" = "s"."user_id" '
    'WHERE "s"."id" = $1 AND "s"."revoked_at" IS NULL AND "s"."expires_at" > now()'
)
PAGE_SQL = (
    'SELECT "id", "name", "email", "role", "is_active", "created_at", "updated_at" '
    'FROM "users" ORDER BY "created_at" ASC, "id" ASC LIMIT $1 OFFSET $2'
)
COUNT_SQL = 'SELECT "role", "n" FROM "user_counts"'
TIMESTAMP = "%Y-%m-%dT%H:%M:%SZ"
FORBIDDEN = orjson.dumps({"error": {"code": "FORBIDDEN", "message": "Admins only."}})
UNAUTHENTICATED = orjson.dumps({"error": {"code": "UNAUTHENTICATED", "message": "Log in."}})
ACCESS_LOG = os.environ.get("RAW_ACCESS_LOG") == "1"


def log_access(request: Request, response: HTTPResponse, subject: str, started: float) -> None:
    """The access line, as simply as Python writes one: every field built per request."""
    line = {
        "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
        "level": "info",
        "service": "raw_users",
        "logger": "access",
        "message": "request",
        "requestId": uuid.uuid4().hex,
        "method": request.method,
        "path": request.path,
        "status": response.status,
        "durationMs": round((time.perf_counter() - started) * 1000, 3),
        "client": request.conn_info.client_ip if request.conn_info is not None else None,
        "subject": subject,
        "responseBytes": len(response.body or b""),
    }
    os.write(1, orjson.dumps(line, option=orjson.OPT_APPEND_NEWLINE))


async def keep_session(connection: asyncpg.Connection) -> None:
    """The pool's reset: nothing, as the service's (api_shared.database)."""


def create_app() -> Sanic:  # type: ignore[type-arg]  # Sanic's generics are not needed here
    app = Sanic("raw_users")
    app.config.ACCESS_LOG = False
    app.config.KEEP_ALIVE_TIMEOUT = 75
    http = HttpSession(timeout_s=3.0)  # the JWKS's, opened with the pool
    verifier = TokenVerifier(
        JwksKeySource(os.environ["JWKS_URL"], http),
        issuer=os.environ.get("JWT_ISSUER", "users-service"),
        audience=os.environ.get("JWT_AUDIENCE", "api-platform"),
    )

    @app.before_server_start
    async def open_pool(app: Sanic) -> None:  # type: ignore[type-arg]
        await http.start()
        app.ctx.pool = await asyncpg.create_pool(
            os.environ["RAW_DATABASE_URL"], min_size=1, max_size=5, reset=keep_session
        )

    @app.after_server_stop
    async def close_pool(app: Sanic) -> None:  # type: ignore[type-arg]
        await app.ctx.pool.close()
        await http.stop()

    @app.get("/health")
    async def health(request: Request) -> HTTPResponse:
        return HTTPResponse(b'{"status":"ok"}', content_type="application/json")

    @app.get("/api/users")
    async def list_users(request: Request) -> HTTPResponse:
        started = time.perf_counter()
        token = bearer_token(request.headers.get("authorization")) or ""
        principal = await verifier.verify(token)
        limit = min(max(int(request.args.get("limit", 20)), 1), 100)
        offset = max(int(request.args.get("offset", 0)), 0)
        async with app.ctx.pool.acquire() as connection:
            session = UUID(principal.session_id) if principal.session_id else None
            caller = await connection.fetchrow(CALLER_SQL, session) if session else None
            if caller is None or str(caller["id"]) != principal.subject:
                return HTTPResponse(UNAUTHENTICATED, status=401, content_type="application/json")
            if caller["role"] != "admin" or not caller["is_active"]:
                return HTTPResponse(FORBIDDEN, status=403, content_type="application/json")
            rows = await connection.fetch(PAGE_SQL, limit, offset)
            total = sum(n for _, n in await connection.fetch(COUNT_SQL))
        body = {
            "data": [
                {
                    "id": str(row["id"]),
                    "name": row["name"],
                    "email": row["email"],
                    "role": row["role"],
                    "isActive": row["is_active"],
                    "createdAt": row["created_at"].strftime(TIMESTAMP),
                    "updatedAt": row["updated_at"].strftime(TIMESTAMP),
                }
                for row in rows
            ],
            "page": {"total": total, "limit": limit, "offset": offset},
        }
        response = HTTPResponse(orjson.dumps(body), content_type="application/json")
        if ACCESS_LOG:
            log_access(request, response, principal.subject, started)
        return response

    return app


if __name__ == "__main__":
    create_app().run(
        host="127.0.0.1",
        port=int(os.environ["RAW_PORT"]),
        single_process=True,
        access_log=False,
        motd=False,
    )
