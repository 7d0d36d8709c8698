"""docs/configuration.md, generated from the settings classes (``make configuration``).

    python tools/configuration_docs.py           # write docs/configuration.md
    python tools/configuration_docs.py --check   # exit 1 when it is not what the code says

Each process's ``Settings`` (and the ``TracingSettings`` every process reads) composes
families of settings by inheritance: a family is the ``family`` of the class that declares a
field, its meaning the field's ``description``, its default rendered from the value (or from
``json_schema_extra``'s ``shown_default`` / ``default_note``) followed by its bounds. A
variable several processes read is one row, its meaning prefixed with the processes; the
few variables no settings class reads are declared here (``DECLARED``).
tests/deploy/test_docs.py runs the check.
"""

from __future__ import annotations

import argparse
import difflib
import functools
import importlib
import inspect
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import Enum
from pathlib import Path, PurePath

import annotated_types
from pydantic import AliasChoices, AliasPath
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings

from api_shared.tracing import TracingSettings

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "docs" / "configuration.md"
COMMAND = "make configuration"

# Each process -> the module of its Settings. webhooks-service's dispatcher reads the same
# Settings as its API, so it is no process of its own here.
PROCESSES = {
    "gateway": "gateway.settings",
    "users-service": "users_service.settings",
    "orders-service": "orders_service.settings",
    "books-graphql": "books_graphql.settings",
    "webhooks-service": "webhooks_service.settings",
}
# Read by every process besides its Settings (api_shared.runner configures tracing).
READ_BY_EVERY_PROCESS: tuple[type[BaseSettings], ...] = (TracingSettings,)
EVERY_PROCESS = "every process"
INDEX_WIDTH = 95
EN_DASH = "\N{EN DASH}"  # between the bounds of a range


@dataclass(frozen=True)
class Family:
    """A section of the reference: its name (the ``family`` of settings classes), the prose
    before its table and after it."""

    name: str
    intro: str = ""
    outro: str = ""

    @property
    def anchor(self) -> str:
        return "".join(c for c in self.name.lower() if c.isalnum() or c in " -").replace(" ", "-")


FAMILIES = (
    Family("Common and databases"),
    Family("Ports, upstreams and callers"),
    Family(
        "Tokens and sessions",
        outro="Sessions, key rotation, the start-up admin and the order of checks are described "
        "in\n[users-service/README.md](../users-service/README.md).",
    ),
    Family("Passwords and the admin"),
    Family(
        "Rate limits",
        intro="The gateway limits by route and address; users-service keeps the budgets that "
        "need a body's\nmeaning or an account ([security](security.md#gateway)). Limits of the "
        "event streams are\nunder [event streams](#event-streams), mail budgets under "
        "[mail](#mail).",
    ),
    Family(
        "Events and NATS",
        intro="Read by users-service, orders-service and webhooks-service's dispatcher (the "
        "webhooks API and\nthe gateway do not connect to NATS). What the events are: "
        "[docs/api.md#events](api.md#events).",
    ),
    Family(
        "Event streams",
        intro="`GET /api/events/stream` ([docs/api.md#event-stream](api.md#event-stream)): "
        "served by\nwebhooks-service, passed through by the gateway.",
    ),
    Family(
        "Mail",
        intro="users-service's account mail: email verification and password reset\n"
        "([docs/api.md#email-verification-and-password-reset]"
        "(api.md#email-verification-and-password-reset)).",
    ),
    Family(
        "Webhooks",
        intro="webhooks-service (the API) and its dispatcher (`python -m webhooks_service "
        "dispatch`, any\nnumber of them: they share JetStream's durable consumers and, on "
        "PostgreSQL, the\ndeliveries; it finds NATS as [events and NATS](#events-and-nats) "
        "says). The rules are in\n[docs/api.md#webhooks](api.md#webhooks).",
    ),
    Family(
        "Books",
        intro="books-graphql. GraphQL-over-HTTP rules, CSRF protection and limits are described "
        "in\n[books-graphql/README.md](../books-graphql/README.md). Import more books:\n"
        "`uv run python -m books_graphql import books.csv` (CSV or JSON, with a progress bar).",
    ),
    Family(
        "Tracing and observability",
        intro="Every process. Tracing is off unless an OTLP endpoint is set; what it records "
        "and costs:\n[operations](operations.md#traces-opentelemetry).",
    ),
    Family(
        "Deployment",
        intro="Docker Compose's own variables, in `.env` (`deploy/init-secrets.sh` writes it;\n"
        "[`.env.example`](../.env.example) lists every variable `docker-compose.yml` reads: "
        "image tags,\ndatabase passwords, the NATS users' public keys...). How they are used:\n"
        "[deploy/README.md](../deploy/README.md).",
    ),
)
FAMILIES_BY_NAME = {family.name: family for family in FAMILIES}


@dataclass(frozen=True)
class Declared:
    """A variable no settings class reads: the OpenTelemetry SDK's, or Docker Compose's."""

    name: str
    family: str
    meaning: str
    readers: str
    default: str | None = None  # None: its value in .env.example

    def shown_default(self) -> str:
        if self.default is not None:
            return self.default
        value = _env_example().get(self.name)
        if not value:
            raise ConfigurationDocsError(f"{self.name}: no value in .env.example, none declared")
        return f"`{value}`"


SDK = "every process (the OpenTelemetry SDK)"
COMPOSE = "Docker Compose"

# Not read by a settings class: documented from here (Compose's defaults from .env.example).
DECLARED = (
    Declared(
        "OTEL_RESOURCE_ATTRIBUTES",
        "Tracing and observability",
        "the standard variable: more attributes of the spans' resource",
        SDK,
        default="unset",
    ),
    Declared(
        "OTEL_EXPORTER_OTLP_HEADERS",
        "Tracing and observability",
        "the standard variable, as are `OTEL_EXPORTER_OTLP_TIMEOUT`, `_COMPRESSION`, "
        "`_CERTIFICATE` and the batching's `OTEL_BSP_*`",
        SDK,
        default="unset",
    ),
    Declared(
        "PUBLISH_ADDRESS",
        "Deployment",
        "the address the published ports listen on; `0.0.0.0` (or one interface's address) "
        "publishes wider",
        COMPOSE,
    ),
    Declared("GATEWAY_PUBLISHED_PORT", "Deployment", "the gateway's host port", COMPOSE),
    Declared(
        "BOOKS_PUBLISHED_PORT",
        "Deployment",
        "the books sandbox's host port (it has no gateway limits in front: keep it local)",
        COMPOSE,
    ),
    Declared(
        "REDIS_PASSWORD",
        "Deployment",
        "the password Redis requires (a Secret on Kubernetes); the `REDIS_URL`s carry it",
        COMPOSE,
        default="generated by `deploy/init-secrets.sh`",
    ),
    Declared("PROMETHEUS_IMAGE", "Deployment", "the observability profile's Prometheus", COMPOSE),
    Declared("GRAFANA_IMAGE", "Deployment", "the observability profile's Grafana", COMPOSE),
    Declared(
        "JAEGER_IMAGE",
        "Deployment",
        "the observability profile's Jaeger (v2's all-in-one)",
        COMPOSE,
    ),
    Declared(
        "PROMETHEUS_PUBLISHED_PORT", "Deployment", "Prometheus's UI, on `PUBLISH_ADDRESS`", COMPOSE
    ),
    Declared("GRAFANA_PUBLISHED_PORT", "Deployment", "Grafana's UI, on `PUBLISH_ADDRESS`", COMPOSE),
    Declared("JAEGER_PUBLISHED_PORT", "Deployment", "Jaeger's UI, on `PUBLISH_ADDRESS`", COMPOSE),
)

HEADER = """\
# Configuration

> **Generated** from the services' settings classes by `tools/configuration_docs.py`: do not
> edit it by hand. A variable's meaning is its field's `Field(description=...)`, its section
> the `family` of the settings class that declares it; change those, then run
> `make configuration` (or `uv run python tools/configuration_docs.py`).
> `tests/deploy/test_docs.py` fails when this file and the code disagree.
>
> One section and one table per family; each row is `| variable | default | meaning |`. A
> meaning starts with the processes that read the variable (`every process:`, `gateway:`,
> `users-service and orders-service:`...), each process's own meaning when they differ;
> webhooks-service is both its processes, the API and the dispatcher. The bounds a process
> accepts follow the default, in brackets.

Everything is configured through environment variables (12-factor); `make run` passes its
environment through, so `RATE_LIMIT_RPS=100000 make run` works. Docker Compose passes each
service only the variables it reads, from `.env` ([`.env.example`](../.env.example) lists
every one); Kubernetes from ConfigMaps and Secrets ([deploy/README.md](../deploy/README.md)).
With `APP_ENV=production` a process refuses development defaults and unsafe values at start
(`APP_ENV` below; the `production` notes of each family).
"""


class ConfigurationDocsError(Exception):
    """A settings class the reference cannot be written from; the message says what to fix."""


@dataclass(frozen=True)
class Reading:
    """One process's reading of one variable."""

    process: str
    family: str
    default: str
    meaning: str
    order: tuple[int, int, int, int]  # where its row goes within its family


@dataclass(frozen=True)
class Row:
    name: str
    default: str
    meaning: str

    def markdown(self) -> str:
        return f"| `{self.name}` | {_cell(self.default)} | {_cell(self.meaning)} |"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


@functools.cache
def _env_example() -> dict[str, str]:
    """``.env.example``'s ``NAME=value`` lines."""
    lines = (ROOT / ".env.example").read_text(encoding="utf-8").splitlines()
    pairs = (line.partition("=") for line in lines if re.match(r"[A-Z][A-Z0-9_]*=", line))
    return {name: value.strip() for name, _, value in pairs}


def settings_of(process: str) -> tuple[type[BaseSettings], ...]:
    settings: type[BaseSettings] = importlib.import_module(PROCESSES[process]).Settings
    return (settings, *READ_BY_EVERY_PROCESS)


def environment_names(settings: type[BaseSettings], name: str, field: FieldInfo) -> list[str]:
    """The variables a field is read from, as pydantic-settings reads them."""
    alias = field.validation_alias or field.alias
    if isinstance(alias, str):
        return [alias]
    if isinstance(alias, AliasChoices):
        return [c if isinstance(c, str) else str(c.path[0]) for c in alias.choices]
    if isinstance(alias, AliasPath):
        return [str(alias.path[0])]
    return [f"{settings.model_config.get('env_prefix', '')}{name}".upper()]


def _declaring_class(settings: type[BaseSettings], name: str) -> type:
    """The class whose declaration of ``name`` the model uses: the first in its MRO."""
    for cls in settings.__mro__:
        if name in inspect.get_annotations(cls):
            return cls
    raise ConfigurationDocsError(f"{settings.__qualname__}.{name}: no class declares it")


def readings(process: str) -> Iterator[tuple[str, Reading]]:
    """Every variable ``process`` reads, with its family, default and meaning there."""
    for settings in settings_of(process):
        classes = list(reversed(settings.__mro__))
        for name, field in settings.model_fields.items():
            owner = _declaring_class(settings, name)
            where = f"{owner.__module__}.{owner.__qualname__}.{name}"
            family = getattr(owner, "family", None)
            if family not in FAMILIES_BY_NAME:
                raise ConfigurationDocsError(
                    f"{where}: its class's family {family!r} is none of {list(FAMILIES_BY_NAME)}"
                )
            if not field.description:
                raise ConfigurationDocsError(f"{where}: no Field(description=...)")
            shared = 0 if owner.__module__.startswith("api_shared.") else 1
            fields = list(inspect.get_annotations(owner))
            order = (
                shared,
                list(PROCESSES).index(process),
                classes.index(owner),
                fields.index(name),
            )
            for variable in environment_names(settings, name, field):
                yield (
                    variable,
                    Reading(process, family, shown_default(where, field), field.description, order),
                )


def shown_default(where: str, field: FieldInfo) -> str:
    """The default column: the value (or what stands for it), then notes and bounds."""
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    shown = extra.get("shown_default")
    if isinstance(shown, str):
        value = shown
    elif field.is_required():
        value = "**required**"
    else:
        value = _value(where, field.get_default(call_default_factory=True))
    notes = [note] if isinstance(note := extra.get("default_note"), str) else []
    if bounds := _bounds(field.metadata):
        notes.append(bounds)
    return f"{value} ({'; '.join(notes)})" if notes else value


def _value(where: str, value: object) -> str:
    if value is None or value in ((), [], ""):
        return "unset"
    if isinstance(value, PurePath) and value.is_absolute():
        raise ConfigurationDocsError(
            f"{where}: an absolute default path differs between checkouts; give the field a "
            'json_schema_extra={"shown_default": ...}'
        )
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, list | tuple):
        return f"`{','.join(_plain(item) for item in value)}`"
    return f"`{_plain(value)}`"


def _plain(value: object) -> str:
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, PurePath):
        return value.as_posix()
    return str(value)


def _bounds(metadata: Iterable[object]) -> str:
    """``above 0, at most 300``, ``60-3600`` (an en dash)...; a lone ``ge=0`` goes without
    saying."""
    lower = upper = ""
    low = high = None
    for item in metadata:
        if isinstance(item, annotated_types.Gt):
            lower = f"above {_plain(item.gt)}"
        elif isinstance(item, annotated_types.Ge):
            lower, low = f"at least {_plain(item.ge)}", item.ge
        elif isinstance(item, annotated_types.Lt):
            upper = f"below {_plain(item.lt)}"
        elif isinstance(item, annotated_types.Le):
            upper, high = f"at most {_plain(item.le)}", item.le
    if low is not None and high is not None:
        return f"{_plain(low)}{EN_DASH}{_plain(high)}"
    if low == 0 and not upper:
        return ""
    return ", ".join(part for part in (lower, upper) if part)


def _readers(processes: Iterable[str]) -> str:
    names = [process for process in PROCESSES if process in set(processes)]
    if len(names) == len(PROCESSES):
        return EVERY_PROCESS
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _by_readers(values: dict[str, str]) -> list[tuple[str, str]]:
    """(readers, value) for each distinct value of process -> value, in process order."""
    grouped: dict[str, list[str]] = {}
    for process, value in values.items():
        grouped.setdefault(value, []).append(process)
    return [(_readers(processes), value) for value, processes in grouped.items()]


def _row(name: str, read: list[Reading]) -> Row:
    families = {reading.family for reading in read}
    if len(families) > 1:
        raise ConfigurationDocsError(f"{name} is in several families: {sorted(families)}")
    meanings = _by_readers({reading.process: reading.meaning for reading in read})
    defaults = _by_readers({reading.process: reading.default for reading in read})
    meaning = "; ".join(f"{readers}: {text}" for readers, text in meanings)
    if len(defaults) == 1:
        default = defaults[0][1]
    else:
        default = "; ".join(f"{readers}: {text}" for readers, text in defaults)
    return Row(name, default, meaning)


def tables() -> dict[str, list[Row]]:
    """Each family -> its rows: the settings classes' variables, then the declared ones."""
    read: dict[str, list[Reading]] = {}
    for process in PROCESSES:
        for name, reading in readings(process):
            read.setdefault(name, []).append(reading)
    found: dict[str, list[Row]] = {family.name: [] for family in FAMILIES}
    for name in sorted(read, key=lambda name: min(reading.order for reading in read[name])):
        found[read[name][0].family].append(_row(name, read[name]))
    for declared in DECLARED:
        if declared.name in read:
            raise ConfigurationDocsError(
                f"{declared.name} is declared, yet a settings class reads it"
            )
        meaning = f"{declared.readers}: {declared.meaning}"
        found[declared.family].append(Row(declared.name, declared.shown_default(), meaning))
    return found


def _index() -> list[str]:
    """The families' links, wrapped without splitting one."""
    links = [f"[{f.name[0].lower()}{f.name[1:]}](#{f.anchor})" for f in FAMILIES]
    lines, line = [], "The families:"
    for number, link in enumerate(links):
        item = f"{link}." if number == len(links) - 1 else f"{link} ·"
        if len(line) + 1 + len(item) > INDEX_WIDTH:
            lines.append(line)
            line = item
        else:
            line = f"{line} {item}"
    return [*lines, line]


def render() -> str:
    parts = [HEADER, "\n".join(_index()), ""]
    for family, rows in tables().items():
        if not rows:
            raise ConfigurationDocsError(f"the family {family!r} has no variable")
        section = FAMILIES_BY_NAME[family]
        parts += [f"## {family}", ""]
        if section.intro:
            parts += [section.intro, ""]
        parts += ["| variable | default | meaning |", "|---|---|---|"]
        parts += [row.markdown() for row in rows]
        parts.append("")
        if section.outro:
            parts += [section.outro, ""]
    return "\n".join(parts)


def drift() -> list[str]:
    """The unified diff from docs/configuration.md to what the code says (empty: none)."""
    committed = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
    return list(
        difflib.unified_diff(
            committed.splitlines(),
            render().splitlines(),
            "docs/configuration.md (committed)",
            "docs/configuration.md (from the settings classes)",
            lineterm="",
        )
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 when the file is stale"
    )
    arguments = parser.parse_args(argv)
    if not arguments.check:
        TARGET.write_text(render(), encoding="utf-8")
        print(f"wrote {TARGET.relative_to(ROOT)}")
        return 0
    difference = drift()
    if difference:
        print("\n".join(difference))
        print(f"docs/configuration.md is not what the settings classes say: run `{COMMAND}`")
        return 1
    print("docs/configuration.md is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
