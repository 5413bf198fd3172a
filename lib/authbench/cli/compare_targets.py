"""The targets `compare` measures: clusters of the user's (`--target NAME=URL` with `--lb`/`--node`) or the
embedded lab's (`--backends`), each a `cluster.campaign.Target`; bad names and URLs refused in one line."""

from __future__ import annotations

import argparse
import os
from typing import Any

from ..errors import AuthbenchError
from .options import check_url, lab_cluster


def _pairs(items: list[str] | None, option: str) -> dict[str, str] | dict[str, list[str]]:
    pairs: dict[str, Any] = {}
    for item in items or []:
        name, sep, url = item.partition("=")
        if not sep or not name or not url:
            raise AuthbenchError(f"{option} {item!r} is not NAME=URL")
        pairs.setdefault(name, []).append(url)
    return pairs


def user_targets(args: argparse.Namespace) -> list:
    from ..cluster.campaign import Target

    urls, lbs, nodes = _pairs(args.target, "--target"), _pairs(args.lb, "--lb"), _pairs(args.node, "--node")
    for option, named in (("--lb", lbs), ("--node", nodes)):
        unknown = set(named) - set(urls)
        if unknown:
            raise AuthbenchError(f"{option} names {', '.join(sorted(unknown))}, which no --target has")
    targets = []
    for name, (url, *more) in urls.items():
        _safe(name, "--target name")
        if more:
            raise AuthbenchError(f"--target {name} is given twice")
        check_url(url, f"--target {name}")
        node_urls = nodes.get(name, [])
        for node_url in [*lbs.get(name, []), *node_urls]:
            check_url(node_url, f"--lb/--node of {name}")
        letters = [chr(ord("A") + i) for i in range(len(node_urls))]
        targets.append(Target(name, url, "url", (lbs.get(name) or [None])[0], dict(zip(letters, node_urls,
                                                                                        strict=True))))
    return targets


def lab_targets(args: argparse.Namespace) -> tuple[list, Any, bool]:
    """The lab's clusters as targets, its config, and whether this command must start it."""
    from authbench_lab import lab
    from authbench_lab.config import LabConfig

    from ..cluster.campaign import Target
    from .lab import lab_call

    backends = lab_call(lab.parse_backends, "all" if args.backends is None else args.backends)
    state = lab.read_state(args.lab_dir)
    running = bool(state) and any(row["healthy"] for row in lab.status(args.lab_dir))
    if running:
        config = LabConfig.from_dict(state["config"])
        missing = [b for b in backends if b not in config.backends]
        if missing:
            raise AuthbenchError(f"the lab running in {os.path.abspath(args.lab_dir)} has no {', '.join(missing)} "
                           f"cluster; stop it ('authbench lab down') or give --backends from {config.backends}")
    else:
        config = LabConfig(run_dir=args.lab_dir, base_port=args.base_port, backends=backends, users=args.users)
    clusters = {backend: lab_cluster(config, backend) for backend in backends}
    targets = [Target(b, c.sp_url, "lab", c.lb_url, c.nodes) for b, c in clusters.items()]
    return targets, config, not running


def _safe(name: str, what: str) -> str:
    from ..names import UnsafeName, safe_name

    try:
        return safe_name(name, what)
    except UnsafeName as exc:
        raise AuthbenchError(str(exc)) from None
