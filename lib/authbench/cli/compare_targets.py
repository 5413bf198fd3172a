"""The targets `compare` measures given as clusters of the user's (`--target NAME=URL` with `--lb`/`--node`), each a
`cluster.campaign.Target`; bad names and URLs refused in one line. The embedded lab's (`--backends`): compare_lab."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import AuthbenchError
from .options import check_url


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


def _safe(name: str, what: str) -> str:
    from ..names import UnsafeName, safe_name

    try:
        return safe_name(name, what)
    except UnsafeName as exc:
        raise AuthbenchError(str(exc)) from None
