# Every service's image, one shape, built from the repository root (shared/ is in the context):
#   docker build --target users-service --build-arg MEMBER=users-service \
#       -t api-platform/users-service .
# --target picks the service's final stage, MEMBER the workspace member its venv holds (the
# same name; docker-compose.yml passes both, tests/deploy checks they agree). One development
# image too, never a service's: `--target dev-mail --build-arg MEMBER=devservers`, the mail
# catcher (last stage below).
# The image serves by default; `migrate` as the command applies the migrations and exits
# (docker-compose.yml and the Kubernetes Jobs run it once, before the service starts).

# Every public image is a build argument: point them at a registry mirror when Docker Hub
# and ghcr.io are out of reach (and no `# syntax=` line: it would fetch a frontend image).
# Where a registry is used, pin them by digest: `--build-arg PYTHON_IMAGE=<name:tag>@sha256:…`
# (compose passes .env's, which deploy/pin-images.sh pins; deploy/README.md, Images).
ARG PYTHON_IMAGE=python:3.11-slim-bookworm
ARG UV_IMAGE=ghcr.io/astral-sh/uv:0.13.9
ARG MEMBER=gateway

# --- uv, pinned. `COPY --from` takes no build argument; a stage does.
FROM ${UV_IMAGE} AS uv

# --- toolchain: uv and every member's pyproject.toml (uv needs the whole workspace to read
# the lock).
FROM ${PYTHON_IMAGE} AS toolchain
COPY --from=uv /uv /bin/uv
ENV UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_PYTHON_DOWNLOADS=never \
    UV_PROJECT_ENVIRONMENT=/app/.venv
WORKDIR /src
COPY pyproject.toml uv.lock ./
COPY shared/pyproject.toml shared/
COPY gateway/pyproject.toml gateway/
COPY users-service/pyproject.toml users-service/
COPY orders-service/pyproject.toml orders-service/
COPY books-graphql/pyproject.toml books-graphql/
# The test kit is a member (development only): its pyproject.toml, never its code, which
# .dockerignore leaves out and no `uv sync --no-dev --package` installs.
COPY testkit/pyproject.toml testkit/
COPY webhooks-service/pyproject.toml webhooks-service/
# The development servers (the dev-mail image's member; no service depends on them).
COPY devservers/pyproject.toml devservers/

# The toolchain each member builds with: the plain one, except books-graphql's.
FROM toolchain AS toolchain-gateway
FROM toolchain AS toolchain-users-service
FROM toolchain AS toolchain-orders-service
FROM toolchain AS toolchain-webhooks-service
FROM toolchain AS toolchain-devservers
FROM toolchain AS toolchain-books-graphql
# Tartiflette ships only an sdist: it compiles libgraphqlparser (C++, cmake, flex/bison) when
# installed. The compilers stay in this stage; the runtime needs only libstdc++ (in slim).
RUN apt-get update \
    && apt-get install -y --no-install-recommends cmake g++ make flex bison \
    && rm -rf /var/lib/apt/lists/*

# --- builder: the locked dependencies, then the member and shared/ as wheels, in /app/.venv.
# hadolint reads `toolchain-${MEMBER}` as an untagged image; it is one of the stages above.
# hadolint ignore=DL3006
FROM toolchain-${MEMBER} AS builder
ARG MEMBER
WORKDIR /src
# Third-party dependencies first: this layer changes only with uv.lock.
RUN --mount=type=cache,target=/root/.cache/uv \
    uv sync --frozen --no-dev --no-install-workspace --package ${MEMBER}
COPY shared/ shared/
COPY ${MEMBER}/ ${MEMBER}/
# --no-editable: the venv holds real copies, so the runtime stage needs no source tree.
RUN --mount=type=cache,target=/root/.cache/uv \
    uv sync --frozen --no-dev --no-editable --package ${MEMBER}
# The version the image is labelled with (SERVICE_VERSION, below; deploy/service-versions.sh
# reads it from the member's pyproject.toml): if given, it must be the installed member's own,
# so a label never names another version than the code's.
ARG SERVICE_VERSION=""
RUN installed=$(/app/.venv/bin/python -c "import importlib.metadata as m; print(m.version('${MEMBER}'))") \
    && { [ -z "${SERVICE_VERSION}" ] || [ "${SERVICE_VERSION}" = "${installed}" ] \
        || { echo "SERVICE_VERSION=${SERVICE_VERSION} but ${MEMBER} is ${installed}" >&2; exit 1; }; }

# --- runtime: the same slim Python, the venv, nothing else; each service's stage below adds
# only its package, port and health check.
FROM ${PYTHON_IMAGE} AS runtime
RUN groupadd --system --gid 10001 app \
    && useradd --system --uid 10001 --gid app --no-create-home --home-dir /app \
        --shell /usr/sbin/nologin app
WORKDIR /app
# Owned by root: the service cannot rewrite its own code. var/ is writable for the SQLite
# default only (a bare `docker run`); the stack itself uses PostgreSQL.
COPY --from=builder /app/.venv /app/.venv
RUN mkdir /app/var && chown app:app /app/var
ENV PATH="/app/.venv/bin:${PATH}" \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    APP_ENV=production \
    HOST=0.0.0.0
USER 10001:10001

# --- the services. Each is labelled with its name and version (OCI annotations; without
# SERVICE_VERSION, "unversioned"). HEALTHCHECK is liveness (/health on the service port):
# the gateway's /ready and /metrics are served on its admin port only (GATEWAY_ADMIN_PORT).
FROM runtime AS gateway
ARG SERVICE_VERSION=""
LABEL org.opencontainers.image.title="gateway" \
      org.opencontainers.image.version="${SERVICE_VERSION:-unversioned}"
ENV GATEWAY_PORT=8000
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request as r; r.urlopen('http://127.0.0.1:' + os.environ['GATEWAY_PORT'] + '/health', timeout=2)"]
ENTRYPOINT ["python", "-m", "gateway"]
CMD ["serve"]

FROM runtime AS users-service
ARG SERVICE_VERSION=""
LABEL org.opencontainers.image.title="users-service" \
      org.opencontainers.image.version="${SERVICE_VERSION:-unversioned}"
ENV USERS_PORT=8001
EXPOSE 8001
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request as r; r.urlopen('http://127.0.0.1:' + os.environ['USERS_PORT'] + '/health', timeout=2)"]
ENTRYPOINT ["python", "-m", "users_service"]
CMD ["serve"]

FROM runtime AS orders-service
ARG SERVICE_VERSION=""
LABEL org.opencontainers.image.title="orders-service" \
      org.opencontainers.image.version="${SERVICE_VERSION:-unversioned}"
ENV ORDERS_PORT=8002
EXPOSE 8002
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request as r; r.urlopen('http://127.0.0.1:' + os.environ['ORDERS_PORT'] + '/health', timeout=2)"]
ENTRYPOINT ["python", "-m", "orders_service"]
CMD ["serve"]

FROM runtime AS books-graphql
ARG SERVICE_VERSION=""
LABEL org.opencontainers.image.title="books-graphql" \
      org.opencontainers.image.version="${SERVICE_VERSION:-unversioned}"
ENV BOOKS_PORT=4000
EXPOSE 4000
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request as r; r.urlopen('http://127.0.0.1:' + os.environ['BOOKS_PORT'] + '/health', timeout=2)"]
ENTRYPOINT ["python", "-m", "books_graphql"]
CMD ["serve"]

# `dispatch` as the command runs the dispatcher (its probes on WEBHOOKS_DISPATCHER_PORT).
FROM runtime AS webhooks-service
ARG SERVICE_VERSION=""
LABEL org.opencontainers.image.title="webhooks-service" \
      org.opencontainers.image.version="${SERVICE_VERSION:-unversioned}"
ENV WEBHOOKS_PORT=8003 WEBHOOKS_DISPATCHER_PORT=8004
EXPOSE 8003 8004
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request as r; r.urlopen('http://127.0.0.1:' + os.environ['WEBHOOKS_PORT'] + '/health', timeout=2)"]
ENTRYPOINT ["python", "-m", "webhooks_service"]
CMD ["serve"]

# --- development only: the mail catcher (api_devservers.mail_catcher) that docker-compose.yml
# and the Kubernetes dev overlay run where production has a mail server. SMTP on 1025, its page
# and Mailpit's HTTP API on 8025; it keeps mail in memory and takes any login.
FROM runtime AS dev-mail
LABEL org.opencontainers.image.title="dev-mail"
ENV MAIL_CATCHER_HOST=0.0.0.0
EXPOSE 1025 8025
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import urllib.request as r; r.urlopen('http://127.0.0.1:8025/health', timeout=2)"]
ENTRYPOINT ["python", "-m", "api_devservers.mail_catcher"]
CMD ["serve"]
