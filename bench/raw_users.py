"""The users list by hand: the floor users-service is measured against (bench/users_list.py).

    RAW_DATABASE_URL=postgres://... RAW_PORT=8101 JWKS_URL=... python bench/raw_users.py

One Sanic handler for ``GET /api/users?limit&offset`` (default sort): it checks the admin
bearer token with the platform's shared verifier (cached per token, as the service's is),
runs the same two statements as the service (the page by the ``(created_at, id)`` index,
the total from ``user_counts``) with raw asyncpg on a pool of the ORM's size (1..5), and
answers the same JSON. No middleware, no ORM, no validation models, no access log: what is
left is the least any Python service must do for this request.
"""

from __future__ import annotations

import os
from typing import Any

import asyncpg
import orjson
from sanic import Request, Sanic
from sanic.response import HTTPResponse

from api_shared.auth import JwksKeySource, TokenVerifier, bearer_token

PAGE_SQL = (
    'SELECT "id", "name", "email", "role", "created_at", "updated_at" FROM "users" '
    'ORDER BY "created_at" ASC, "id" ASC LIMIT $1 OFFSET $2'
)
COUNT_SQL = 'SELECT "role", "n" FROM "user_counts"'
TIMESTAMP = "%Y-%m-%dT%H:%M:%SZ"
FORBIDDEN = orjson.dumps({"error": {"code": "FORBIDDEN", "message": "Admins only."}})


def create_app() -> Sanic:  # type: ignore[type-arg]  # Sanic's generics are not needed here
    app = Sanic("raw_users")
    app.config.ACCESS_LOG = False
    app.config.KEEP_ALIVE_TIMEOUT = 75
    verifier = TokenVerifier(
        JwksKeySource(os.environ["JWKS_URL"]),
        issuer=os.environ.get("JWT_ISSUER", "users-service"),
        audience=os.environ.get("JWT_AUDIENCE", "api-platform"),
    )

    @app.before_server_start
    async def open_pool(app: Sanic, _: Any) -> None:  # type: ignore[type-arg]
        app.ctx.pool = await asyncpg.create_pool(
            os.environ["RAW_DATABASE_URL"], min_size=1, max_size=5
        )

    @app.after_server_stop
    async def close_pool(app: Sanic, _: Any) -> None:  # type: ignore[type-arg]
        await app.ctx.pool.close()

    @app.get("/health")
    async def health(request: Request) -> HTTPResponse:
        return HTTPResponse(b'{"status":"ok"}', content_type="application/json")

    @app.get("/api/users")
    async def list_users(request: Request) -> HTTPResponse:
        token = bearer_token(request.headers.get("authorization")) or ""
        if not (await verifier.verify(token)).is_admin:
            return HTTPResponse(FORBIDDEN, status=403, content_type="application/json")
        limit = min(max(int(request.args.get("limit", 20)), 1), 100)
        offset = max(int(request.args.get("offset", 0)), 0)
        async with app.ctx.pool.acquire() as connection:
            rows = await connection.fetch(PAGE_SQL, limit, offset)
            total = sum(n for _, n in await connection.fetch(COUNT_SQL))
        body = {
            "data": [
                {
                    "id": str(row["id"]),
                    "name": row["name"],
                    "email": row["email"],
                    "role": row["role"],
                    "createdAt": row["created_at"].strftime(TIMESTAMP),
                    "updatedAt": row["updated_at"].strftime(TIMESTAMP),
                }
                for row in rows
            ],
            "page": {"total": total, "limit": limit, "offset": offset},
        }
        return HTTPResponse(orjson.dumps(body), content_type="application/json")

    return app


if __name__ == "__main__":
    create_app().run(
        host="127.0.0.1",
        port=int(os.environ["RAW_PORT"]),
        single_process=True,
        access_log=False,
        motd=False,
    )
