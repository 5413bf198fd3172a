"""The package's shape, checked: imports go one way, the CLI is only an edge, the lab is reached through one door.

Every import counts, those inside functions too (only `if TYPE_CHECKING:` blocks are left out: they never
run): a cycle hidden in a function is still a cycle a newcomer has to untangle.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "lib" / "authbench"
LAB_API = "authbench.embedded_lab"  # the framework's one door to the embedded lab


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_nodes(tree: ast.AST):
    """Every import statement, except those under `if TYPE_CHECKING:`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", "")) == "TYPE_CHECKING":
            node.body = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node


def _imports(path: Path) -> set[str]:
    """Absolute names of the modules a file imports (relative imports resolved against its package)."""
    module = _module(path)
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    names = set()
    for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        else:
            base = package[: len(package) - node.level + 1] if node.level else []
            source = ".".join([*base, *(node.module.split(".") if node.module else [])])
            names.add(source)
            names.update(f"{source}.{alias.name}" for alias in node.names)
    return names


def _graph() -> dict[str, set[str]]:
    """module → the authbench modules it imports. `from package import module` is an edge to the module only
    (Python runs the package's __init__ first whatever one writes); a name that is not a module is dropped."""
    paths = {_module(path): path for path in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in paths.items():
        imported = {i for i in _imports(path) if i in paths and i != name}
        graph[name] = {i for i in imported if not any(other.startswith(i + ".") for other in imported)}
    return graph


def test_no_import_cycles():
    graph = _graph()
    cycles, state = [], {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                cycles.append(" → ".join([*stack[stack.index(nxt):], nxt]))
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert cycles == []


def test_nothing_outside_the_cli_imports_it():
    offenders = {name: sorted(i for i in imported if i.startswith("authbench.cli"))
                 for name, imported in _graph().items() if not name.startswith(("authbench.cli", "authbench.__main__"))}
    assert {name: bad for name, bad in offenders.items() if bad} == {}


def test_the_framework_reaches_the_lab_only_through_its_one_module():
    """Outside the CLI (whose `lab`, `compare` and `privacyidea-bench` start, stop and configure the lab), the
    framework asks the lab through `embedded_lab` only, so a real cluster could stand in for it."""
    offenders = {}
    for path in PACKAGE.rglob("*.py"):
        name = _module(path)
        if name == LAB_API or name.startswith("authbench.cli"):
            continue
        bad = sorted(i for i in _imports(path) if i == "authbench_lab" or i.startswith("authbench_lab."))
        if bad:
            offenders[name] = bad
    assert offenders == {}


def test_the_cli_holds_no_run_logic():
    """The CLI parses and prints: it never drives Locust, the recorder or the run's steps itself."""
    run_logic = ("authbench.headless", "authbench.runner", "authbench.distributed", "authbench.results.recorder",
                 "locust")
    offenders = {}
    for path in (PACKAGE / "cli").rglob("*.py"):
        if path.name == "__init__.py":
            continue  # imports Locust first for gevent's patching of the standard library, nothing else
        bad = sorted(name for name in _imports(path) if name.startswith(run_logic))
        if bad:
            offenders[_module(path)] = bad
    assert offenders == {}
