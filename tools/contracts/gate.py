"""The contract gate (docs/releasing.md): ``make contracts`` / ``make contracts-update``.

    python tools/contracts/gate.py            # regenerate, compare; exit 1 on a violation
    python tools/contracts/gate.py --update   # rewrite the snapshots, then compare

(a) Drift: each service's snapshots (``<service>/contracts/``) must be what its code
generates now. (b) Compatibility: the snapshots are compared with those of the service's
previous release (``baseline``), the difference classified by real diff tools
(``classify``): a breaking change needs the major version moved past the baseline's, an
addition at least the minor. Comparing with the release, not the last commit, means that
regenerating a snapshot cannot hide a breaking change.

``--root`` and ``--no-generate`` check another checkout's committed snapshots without
building apps (the gate's own test uses them).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # tools/: releases

from baseline import Baseline, current_version, find_baseline, parse
from classify import difference, install_tools
from releases import SERVICES

ROOT = Path(__file__).resolve().parents[2]


def drift(root: Path, update: bool, services: tuple[str, ...]) -> list[str]:
    """Regenerate the snapshots of ``services``; write them (``update``) or name each one
    that differs."""
    from snapshots import generate_all

    problems = []
    for service, files in generate_all().items():
        if service not in services:
            continue
        for name, text in files.items():
            path = root / service / name
            if update:
                path.parent.mkdir(parents=True, exist_ok=True)
                if not path.exists() or path.read_text(encoding="utf-8") != text:
                    path.write_text(text, encoding="utf-8")
                    print(f"{service}/{name}: updated")
            elif not path.exists() or path.read_text(encoding="utf-8") != text:
                problems.append(
                    f"{service}/{name}: drift: the code now publishes another contract than "
                    "the committed snapshot; run `make contracts-update`, review and commit it"
                )
    return problems


def compatibility(root: Path, service: str) -> list[str]:
    """The violations of ``service``'s version rules against its previous release."""
    folder = root / service / "contracts"
    files = sorted(path.name for path in folder.glob("*") if path.is_file())
    names = [f"contracts/{name}" for name in files]
    version = current_version(root, service)
    baseline: Baseline | None = find_baseline(root, service, names)
    if baseline is None:
        print(f"{service} {version}: no previous release: nothing to compare (first release)")
        return []
    now, then = parse(version), parse(baseline.version)
    head = f"{service} {version} against {baseline.version} ({baseline.where})"
    if now < then:
        return [f"{head}: the version went back below the previous release's"]
    problems = []
    for name in names:
        if name not in baseline.snapshots:
            print(f"{head}: {name}: new (no baseline snapshot)")
            continue
        current = (root / service / name).read_text(encoding="utf-8")
        found = difference(name.removeprefix("contracts/"), baseline.snapshots[name], current)
        for item in found.breaking:
            print(f"{head}: {name}: breaking: {item}")
        for item in found.additive:
            print(f"{head}: {name}: non-breaking: {item}")
        if found.breaking and now[0] <= then[0]:
            problems.append(
                f"{head}: {name}: {len(found.breaking)} breaking change(s) need a major "
                f"version above {then[0]} (tools/release.py {service} {then[0] + 1}.0.0)"
            )
        elif found.additive and not found.breaking and now[:2] <= then[:2]:
            problems.append(
                f"{head}: {name}: {len(found.additive)} addition(s) need at least a minor "
                f"bump (tools/release.py {service} {then[0]}.{then[1] + 1}.0)"
            )
        elif found.empty:
            print(f"{head}: {name}: no contract change")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update", action="store_true", help="rewrite the snapshots first")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to check")
    parser.add_argument("--no-generate", action="store_true", help="skip (a), drift")
    parser.add_argument("--service", action="append", choices=SERVICES, help="default: all")
    args = parser.parse_args()
    started = time.monotonic()
    install_tools()
    services = tuple(args.service or SERVICES)
    problems = [] if args.no_generate else drift(args.root, args.update, services)
    for service in services:
        problems += compatibility(args.root, service)
    for problem in problems:
        print(f"contract gate: FAIL: {problem}", file=sys.stderr)
    verdict = "FAIL" if problems else "ok"
    print(f"contract gate: {verdict} ({time.monotonic() - started:.1f} s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
