"""A Docker Swarm stack file from the compose model: reads ``docker compose config --format
json`` (docker-compose.yml merged with deploy/swarm/stack.compose.yml) on stdin, writes the
stack file ``docker stack deploy -c`` takes (JSON, which is YAML) on stdout.

Only what Swarm reads differently changes; every setting of a service stays as compose has it:

- keys Swarm does not have are dropped (``build``, ``pull_policy``, ``restart``,
  ``depends_on``, ``security_opt``: Swarm ignores ``no-new-privileges``; deploy/README.md);
- a file bind-mounted from the checkout becomes a Swarm config (a node has no checkout);
- ``tmpfs`` becomes a tmpfs mount, published ports their number (host mode: stack.compose.yml);
- the default network is an overlay (attachable: a one-off container may join it);
- names compose gave secrets, configs and volumes go: the stack's name prefixes them.

    docker compose -f docker-compose.yml -f deploy/swarm/stack.compose.yml config --format json \\
        | python deploy/swarm/stack.py > stack.json
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

STACK_FILE_VERSION = "3.9"
DROPPED_KEYS = ("build", "pull_policy", "restart", "depends_on", "security_opt", "profiles")


def config_name(service: str, source: str) -> str:
    """The config a file bind mount becomes: ``<service>-<file name>``, in Swarm's alphabet."""
    return re.sub(r"[^A-Za-z0-9_.-]", "-", f"{service}-{Path(source).name}")


def swarm_service(name: str, service: dict[str, Any], configs: dict[str, Any]) -> dict[str, Any]:
    """One service as Swarm reads it; the configs its file mounts become go into ``configs``."""
    converted = {key: value for key, value in service.items() if key not in DROPPED_KEYS}
    mounts = []
    for volume in service.get("volumes", []):
        if volume["type"] == "bind":
            source = Path(volume["source"])
            if not source.is_file():
                raise SystemExit(f"stack.py: {name} mounts {source}, which a node does not have")
            config = config_name(name, volume["source"])
            configs[config] = {"file": str(source)}
            mount = {"source": config, "target": volume["target"]}
            converted.setdefault("configs", []).append(mount)
        else:
            mounts.append({key: value for key, value in volume.items() if key != "bind"})
    mounts += [{"type": "tmpfs", "target": target} for target in service.get("tmpfs", [])]
    converted.pop("tmpfs", None)
    if mounts:
        converted["volumes"] = mounts
    else:
        converted.pop("volumes", None)
    if "ports" in service:
        # Swarm binds a host-mode port on every address of its node: no host_ip.
        converted["ports"] = [
            {**{k: v for k, v in port.items() if k != "host_ip"}, "published": int(published)}
            for port in service["ports"]
            if (published := port["published"])
        ]
    return {key: value for key, value in converted.items() if value is not None}


def unnamed(entries: dict[str, Any]) -> dict[str, Any]:
    """Top-level secrets, configs or volumes without compose's project names."""
    return {key: {k: v for k, v in value.items() if k != "name"} for key, value in entries.items()}


def stack(model: dict[str, Any]) -> dict[str, Any]:
    """The stack file of the compose model ``model``."""
    configs = unnamed(model.get("configs", {}))
    services = {
        name: swarm_service(name, service, configs) for name, service in model["services"].items()
    }
    return {
        "version": STACK_FILE_VERSION,
        "services": services,
        "networks": {"default": {"driver": "overlay", "attachable": True}},
        "volumes": unnamed(model.get("volumes", {})),
        "secrets": unnamed(model.get("secrets", {})),
        "configs": configs,
    }


def main() -> None:
    json.dump(stack(json.load(sys.stdin)), sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
