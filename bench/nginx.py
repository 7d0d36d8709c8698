"""nginx (the Debian package) as the reverse proxy a user would otherwise put in front.

Configured the way one would for an API: one worker (the gateway is one process too),
HTTP/1.1 keep-alive to the upstream, the client's address and a request id passed on. The
access log is off (as the services' at WARNING), or on: one JSON line per request to a
file, with the fields the services' access line has (``access_log``). It runs as a
non-daemon child of the benchmark, from a generated config in a temporary folder, on a
free port.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness import LOAD_CORE, LOGS, Process, ensure_apt, started

from api_testkit.readiness import wait_ready

CONFIG = """\
worker_processes 1;
daemon off;
pid {folder}/nginx.pid;
error_log {folder}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    log_format json escape=json '{{"time":"$time_iso8601","level":"info","service":"nginx",'
        '"logger":"access","message":"request","requestId":"$request_id",'
        '"method":"$request_method","path":"$uri","status":$status,'
        '"durationS":$request_time,"client":"$remote_addr","upstream":"$upstream_addr",'
        '"upstreamDurationS":"$upstream_response_time","responseBytes":$body_bytes_sent}}';
    access_log {access_log};
    client_body_temp_path {folder}/body;
    proxy_temp_path {folder}/proxy;
    fastcgi_temp_path {folder}/fastcgi;
    uwsgi_temp_path {folder}/uwsgi;
    scgi_temp_path {folder}/scgi;
    upstream service {{
        server {upstream};
        keepalive 64;
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://service;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Request-ID $request_id;
        }}
    }}
}}
"""


def install_nginx() -> str:
    """The nginx binary, installed with apt (nginx-light, else nginx) when missing."""
    try:
        return ensure_apt("nginx-light", "nginx")
    except SystemExit:
        return ensure_apt("nginx", "nginx")


def nginx_version(binary: str) -> str:
    output = subprocess.run([binary, "-v"], capture_output=True, text=True, check=False).stderr
    return output.strip().rpartition("/")[2] or "unknown"


@contextmanager
def nginx_proxy(
    binary: str,
    port: int,
    upstream_url: str,
    folder: Path,
    *,
    name: str = "nginx",
    access_log: bool = False,
) -> Iterator[Process]:
    """nginx on ``port`` proxying everything to ``upstream_url``, pinned to the load core;
    with ``access_log``, a JSON line per request to ``<LOGS>/<name>-access.log``."""
    folder.mkdir(parents=True, exist_ok=True)
    LOGS.mkdir(parents=True, exist_ok=True)
    config = folder / "nginx.conf"
    log = f"{LOGS / f'{name}-access.log'} json" if access_log else "off"
    config.write_text(
        CONFIG.format(
            folder=folder,
            port=port,
            upstream=upstream_url.removeprefix("http://"),
            access_log=log,
        )
    )
    command = [binary, "-p", str(folder), "-c", str(config), "-e", str(folder / "error.log")]
    with started(name, command, {}, LOAD_CORE) as process:
        wait_ready(f"http://127.0.0.1:{port}/health", process.exited)
        yield process
