"""The layers import downwards only: nothing outside `cli/` imports the CLI (it drives them, not the reverse)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "lib" / "authbench"


def _imports(path: Path) -> set[str]:
    """Absolute names of the modules a file imports (relative imports resolved against its package)."""
    package = path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1]
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = list(package[: len(package) - node.level + 1]) if node.level else []
            module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def test_nothing_outside_the_cli_imports_it():
    offenders = {}
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] == "cli" or relative.name == "__main__.py":
            continue
        bad = sorted(name for name in _imports(path) if name == "authbench.cli" or name.startswith("authbench.cli."))
        if bad:
            offenders[str(relative)] = bad
    assert offenders == {}
