"""`compare --backends` on the embedded lab: the labs it brings up, one after another, and what each start cost.

The reference IdP's clusters run side by side in one lab. Keycloak runs one design at a time (two JVMs with
bounded heaps on a small machine, `lab up --keycloak-design`), so each Keycloak design named gets a lab of its
own, brought up once the previous one is down: the same folder, ports, CA and built dist (`kc.sh build` runs once
per option set, install.py), and a fresh Keycloak database (each design has its own realm signing key). A
design's nodes keep their names, so a fault plan's `keycloak-b` is node B of the design being measured. The
reference backends' lab comes first, without Keycloak: no idle JVM shares the cores with their cells.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import AuthbenchError
from .options import lab_cluster

# A lab runs at least one reference cluster: a Keycloak design's lab runs this one beside it, idle, not compared.
KEYCLOAK_COMPANION = "stateless"
ESTIMATE_KEYCLOAK_UP_S = 75.0  # a Keycloak design's lab up, cache warm (docs/keycloak.md: 60-86 s on 2 busy cores)


@dataclass
class Stage:
    """One lab configuration and the targets measured while it runs."""

    config: Any  # authbench_lab.config.LabConfig; None for clusters of the user's (--target)
    targets: list  # cluster.campaign.Target, in campaign order
    start: bool  # this command brings the lab up (and takes it down before the next stage)

    @property
    def design(self) -> str | None:
        """The Keycloak cluster this lab runs, or None."""
        return self.config.keycloak_cluster if self.config and "keycloak" in self.config.extras else None

    def describe(self) -> str:
        names = [t.name for t in self.targets]
        idle = [b for b in self.config.backends if b not in names] if self.config else []
        return ", ".join(names) + (f" (with {', '.join(idle)} idle: a lab needs a reference cluster)" if idle else "")


def parse_names(text: str | None) -> tuple[list[str], list[str]]:
    """`--backends`: the reference IdP's backends (in the lab's order) and Keycloak clusters (as given, once each);
    `all` (the default) is the reference IdP's five. One line and exit 2 for an unknown name."""
    from authbench_lab import config as lab_config

    if text is None or text.strip() == "all":
        return list(lab_config.BACKENDS), []
    wanted = [part.strip() for part in text.split(",") if part.strip()]
    known = (*lab_config.BACKENDS, *lab_config.KEYCLOAK_CLUSTERS)
    unknown = [name for name in wanted if name not in known]
    if unknown or not wanted:
        raise AuthbenchError(f"--backends: unknown backend {', '.join(map(repr, unknown)) or repr(text)}: choose from "
                             f"{', '.join(known)} (a comma list), or all")
    designs = [name for name in dict.fromkeys(wanted) if name in lab_config.KEYCLOAK_CLUSTERS]
    return [name for name in lab_config.BACKENDS if name in wanted], designs


def stages(args: argparse.Namespace) -> list[Stage]:
    """The labs to measure in, in order: the one running in --lab-dir when it has every cluster named, else
    labs this command starts: the reference backends' (if any), then one per Keycloak design."""
    from authbench_lab import lab
    from authbench_lab.config import LabConfig

    backends, designs = parse_names(args.backends)
    state = lab.read_state(args.lab_dir)
    if state and any(row["healthy"] for row in lab.status(args.lab_dir)):
        config = LabConfig.from_dict(state["config"])
        missing = [name for name in (*backends, *designs) if name not in config.clusters()]
        if missing:
            raise AuthbenchError(f"the lab running in {os.path.abspath(args.lab_dir)} has no {', '.join(missing)} "
                                 "cluster (it runs one Keycloak design at a time; compare brings designs up one after "
                                 f"another in a lab it starts): stop it ('authbench lab down') or give --backends from "
                                 f"{','.join(config.clusters())}")
        return [_stage(config, [*backends, *designs], start=False)]

    def new(names: list[str], design: str | None) -> Stage:
        extras = {"extras": ["postgres", "keycloak"], "keycloak_design": design.removeprefix("keycloak-")} \
            if design else {}
        config = LabConfig(run_dir=args.lab_dir, base_port=args.base_port, users=args.users,
                           backends=names or [KEYCLOAK_COMPANION], **extras)
        return _stage(config, [*names, *([design] if design else [])], start=True)

    return [*([new(backends, None)] if backends else []), *(new([], design) for design in designs)]


def _stage(config: Any, names: list[str], *, start: bool) -> Stage:
    from ..cluster.campaign import Target

    clusters = {name: lab_cluster(config, name) for name in names}
    return Stage(config, [Target(n, c.sp_url, "lab", c.lb_url, c.nodes) for n, c in clusters.items()], start)


def bring_up(stage: Stage, say: Callable[[str], None]) -> dict[str, Any]:
    """Bring up the stage's lab; what its start cost, as campaign.json records it (`lab_starts`): seconds in all
    and, with Keycloak, from node A's launch until the cluster answered through HAProxy."""
    from authbench_lab import lab

    from .lab import lab_call

    began = time.time()
    result = lab_call(lab.up, stage.config)
    ended = time.time()
    record: dict[str, Any] = {"clusters": [t.name for t in stage.targets], "started": round(began, 3),
                              "seconds": round(ended - began, 1)}
    line = f"lab up with {stage.describe()} in {record['seconds']:.1f} s"
    node_a = result["state"]["components"].get("keycloak-a") or {}
    if stage.design and "keycloak-a" in result["started"] and node_a.get("started_at"):
        record["keycloak_seconds"] = round(ended - node_a["started_at"], 1)
        line += f"; {stage.design} ready {record['keycloak_seconds']:.1f} s after node A's launch"
    if install := result["state"].get("keycloak_install"):
        record["keycloak_install"] = install
        line += " (installed: " + ", ".join(f"{step} {seconds:.1f} s" for step, seconds in install.items()) + ")"
    say(line)
    return record


def take_down(stage: Stage, say: Callable[[str], None]) -> None:
    """`lab down` of a stage's lab (also of one whose start failed halfway)."""
    from authbench_lab import lab

    result = lab.down(stage.config.run_dir)
    say(f"lab down ({stage.describe()}) in {result.get('seconds', 0):.1f} s")
