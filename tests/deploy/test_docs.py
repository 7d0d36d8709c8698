"""The documentation holds together: a short README, a full settings reference, links that land.

README.md introduces and sends the reader on; the reference material lives in docs/ (issue
#40). These checks keep that shape: the README short and keeping what the tools cite,
docs/configuration.md what tools/configuration_docs.py writes from the settings classes (its
tables regular, every variable a service's settings read in it), and every relative link
between the Markdown files naming a file that exists and, into a Markdown file, one of its
headings.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
CONFIGURATION = ROOT / "docs" / "configuration.md"
CONFIGURATION_GENERATOR = ROOT / "tools" / "configuration_docs.py"
README_MAX_LINES = 300
SKIPPED_DIRECTORIES = {".git", ".venv", "node_modules", "var", ".cache", ".tools", ".mypy_cache"}
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
README_CITATION = re.compile(r"(?<![\w/.])README[:,] ([A-Z][\w-]*)")
TABLE_HEADER = "| variable | default | meaning |"
TABLE_ROW = re.compile(r"^\| `([A-Z][A-Z0-9_]*)` \| .+ \| .+ \|$")
# Read by the OpenTelemetry SDK itself, not by a settings class; documented as standard.
READ_BY_THE_SDK = {"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_RESOURCE_ATTRIBUTES"}


def _markdown_files() -> list[Path]:
    """The project's own Markdown: README, docs/, and every member's README (no changelogs)."""
    files = [README, *sorted((ROOT / "docs").glob("*.md")), *sorted(ROOT.glob("*/README.md"))]
    return [path for path in files if not SKIPPED_DIRECTORIES.intersection(path.parts)]


def _prose(path: Path) -> str:
    """The file without its fenced code blocks (a shell comment there is no heading)."""
    return FENCE.sub("", path.read_text(encoding="utf-8"))


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    return {
        _anchor(line.lstrip("#"))
        for line in _prose(path).splitlines()
        if re.match(r"#{1,6} ", line)
    }


def _relative_links(path: Path) -> Iterator[str]:
    for target in LINK.findall(_prose(path)):
        if not re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:...
            yield target


def _configuration_tables() -> dict[str, list[str]]:
    """Each family (a ``##`` section of docs/configuration.md) -> its table's lines."""
    tables: dict[str, list[str]] = {}
    family = ""
    for line in CONFIGURATION.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            family = line[3:]
        elif line.startswith("|"):
            tables.setdefault(family, []).append(line)
    return tables


def _documented_variables() -> list[str]:
    return [
        match.group(1)
        for lines in _configuration_tables().values()
        for line in lines
        if (match := TABLE_ROW.match(line))
    ]


def _configuration_generator() -> ModuleType:
    """tools/configuration_docs.py, imported (tools/ is no package)."""
    spec = importlib.util.spec_from_file_location("configuration_docs", CONFIGURATION_GENERATOR)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _text_files() -> Iterator[Path]:
    for path in ROOT.rglob("*"):
        if SKIPPED_DIRECTORIES.intersection(path.relative_to(ROOT).parts):
            continue
        if path.is_file() and path.suffix in {".py", ".sh", ".md", ".yml", ".yaml", ".json", ""}:
            yield path


def test_the_readme_is_an_introduction() -> None:
    text = README.read_text(encoding="utf-8")
    headings = {line[3:] for line in text.splitlines() if line.startswith("## ")}

    assert len(text.splitlines()) <= README_MAX_LINES, "move reference material into docs/"
    assert {"Prerequisites", "The two commands", "A walk through the API"} <= headings
    assert "Where to go next" in headings
    assert "make run" in text
    assert "make test" in text


def test_every_citation_of_a_readme_section_names_one_of_its_sections() -> None:
    headings = {
        line.lstrip("#").strip() for line in _prose(README).splitlines() if line.startswith("#")
    }
    citations = [
        (path.relative_to(ROOT), section)
        for path in _text_files()
        for section in README_CITATION.findall(path.read_text(encoding="utf-8", errors="replace"))
    ]

    assert citations, "the scan found no citation (tools/bootstrap.sh cites README: Prerequisites)"
    broken = [
        f"{path}: README: {section}" for path, section in citations if section not in headings
    ]
    assert not broken, f"citations of README sections it no longer has: {broken}"


def test_every_relative_link_lands_on_a_file_and_heading() -> None:
    broken: list[str] = []
    for path in _markdown_files():
        for target in _relative_links(path):
            file_part, _, anchor = target.partition("#")
            linked = (path.parent / file_part).resolve() if file_part else path
            if not linked.exists():
                broken.append(f"{path.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
                broken.append(f"{path.relative_to(ROOT)}: {target} (no such heading)")

    assert not broken, f"links that do not land: {broken}"


def test_the_configuration_reference_has_one_regular_table_per_family() -> None:
    tables = _configuration_tables()

    assert len(tables) >= 8, f"families found: {sorted(tables)}"
    for family, lines in tables.items():
        assert lines[0] == TABLE_HEADER, f"{family}: the table's header is {lines[0]!r}"
        rows = lines[2:]
        irregular = [line for line in rows if not TABLE_ROW.match(line)]
        assert rows, f"{family}: an empty table"
        assert not irregular, f"{family}: rows not `| NAME | default | meaning |`: {irregular}"


def test_each_variable_is_documented_once() -> None:
    documented = _documented_variables()

    twice = sorted({name for name in documented if documented.count(name) > 1})
    assert not twice, f"documented in more than one row: {twice}"


def test_every_variable_the_services_read_is_in_the_configuration_reference(services) -> None:
    documented = set(_documented_variables())

    missing = {
        f"{name} ({service.member})"
        for service in services
        for name in service.reads
        if name not in documented
    }
    assert not missing, f"add these to docs/configuration.md: {sorted(missing)}"


def test_every_documented_variable_is_read_by_a_service_or_compose(
    services, env_example: dict[str, str]
) -> None:
    read = {name for service in services for name in service.reads}

    unknown = set(_documented_variables()) - read - set(env_example) - READ_BY_THE_SDK
    assert not unknown, (
        f"docs/configuration.md documents variables nothing reads: {sorted(unknown)}"
    )


def test_the_configuration_reference_is_what_the_settings_classes_say() -> None:
    difference: list[str] = _configuration_generator().drift()

    shown = "\n".join(difference[:60])
    assert not difference, (
        "docs/configuration.md is not what the settings classes say: run `make configuration` "
        f"(python tools/configuration_docs.py) and commit the result\n{shown}"
    )
