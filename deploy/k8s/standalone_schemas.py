"""Makes kubernetes-validate's JSON schemas self-contained, so kubeconform validates with no network.

The package's '-local' schemas refer to a shared _definitions.json through absolute URLs ($id/$ref);
each schema written here carries only the definitions it needs, under '#/$defs/...'.
Usage: python standalone_schemas.py OUT_DIR KUBERNETES_VERSION (e.g. 1.37.0)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import kubernetes_validate

SKIPPED = {"_definitions.json", "all.json"}
DEFS_PREFIX = "#/$defs/"


def localise(node: object) -> None:
    """Drops $id and rewrites every $ref to a fragment in the same document, in place."""
    if isinstance(node, dict):
        node.pop("$id", None)
        ref = node.get("$ref")
        if isinstance(ref, str) and "#" in ref:
            node["$ref"] = "#" + ref.split("#", 1)[1]
        for value in node.values():
            localise(value)
    elif isinstance(node, list):
        for value in node:
            localise(value)


def referenced(node: object, defs: dict, found: set[str]) -> set[str]:
    """The names of every definition `node` needs, following references transitively."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            ref = item.get("$ref")
            if isinstance(ref, str) and ref.startswith(DEFS_PREFIX) and ref[len(DEFS_PREFIX):] not in found:
                name = ref[len(DEFS_PREFIX):]
                found.add(name)
                stack.append(defs[name])
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def convert(src: Path, dst: Path) -> int:
    dst.mkdir(parents=True, exist_ok=True)
    defs = json.loads((src / "_definitions.json").read_text())["$defs"]
    localise(defs)
    count = 0
    for path in sorted(src.glob("*.json")):
        if path.name in SKIPPED:
            continue
        schema = json.loads(path.read_text())
        localise(schema)
        schema.pop("$schema", None)
        schema["$defs"] = {name: defs[name] for name in sorted(referenced(schema, defs, set()))}
        (dst / path.name).write_text(json.dumps(schema))
        count += 1
    return count


def main(out: str, version: str) -> None:
    base = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"
    for suffix in ("", "-strict"):
        # written under a temporary name and renamed, so an interrupted run is redone, not half-used
        final = Path(out) / f"v{version}-standalone{suffix}"
        partial = final.with_name(final.name + ".partial")
        count = convert(base / f"v{version}-local{suffix}", partial)
        if final.exists():
            continue
        partial.rename(final)
        print(f"{count} schemas -> {final}", file=sys.stderr)


if __name__ == "__main__":
    main(*sys.argv[1:3])
