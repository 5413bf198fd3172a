"""Loading a journey of your own from a Python file, and choosing its user class, with one-line errors."""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import sys
import traceback
from pathlib import Path

from ...errors import AuthbenchError

MODULE_PREFIX = "authbench_journeys_"  # sys.modules name of a loaded file: the prefix and a hash of its path


def load_user_class(path: str, name: str | None = None) -> type:
    """The JourneyUser class `name` of the file at `path` (or its only one); AuthbenchError when there is none."""
    from locust import User

    from ...user import JourneyUser

    module = _load(Path(path))
    found = {n: c for n, c in vars(module).items() if inspect.isclass(c) and issubclass(c, User)}
    journeys = {n: c for n, c in found.items() if issubclass(c, JourneyUser) and not c.__dict__.get("abstract")}
    if name is not None:
        if name in journeys:
            return journeys[name]
        if name in found:
            raise AuthbenchError(f"--user-class {name} in {path} is a Locust user but not an authbench journey: "
                                 "extend authbench.JourneyUser and return a JourneyOutcome from journey()")
        raise AuthbenchError(f"--user-class {name}: {path} has no such class; it has "
                             f"{', '.join(sorted(journeys)) or 'no JourneyUser class'}")
    own = {n: c for n, c in journeys.items() if c.__module__ == module.__name__} or journeys
    if len(own) == 1:
        return next(iter(own.values()))
    if not own:
        written = sorted(n for n, c in found.items() if c.__module__ == module.__name__)
        plain = f" ({', '.join(written)} extend Locust's User only)" if written else ""
        raise AuthbenchError(f"{path} defines no authbench journey{plain}: write a class extending "
                             "authbench.JourneyUser whose journey() returns a JourneyOutcome")
    raise AuthbenchError(f"{path} defines several journeys ({', '.join(sorted(own))}); choose one with --user-class")


def _load(path: Path):
    if not path.is_file():
        raise AuthbenchError(f"-f {str(path)!r} is not a readable file; give the Python file with your journey")
    resolved = path.resolve()
    name = MODULE_PREFIX + hashlib.sha256(str(resolved).encode()).hexdigest()[:12]
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, resolved)
    if spec is None or spec.loader is None:
        raise AuthbenchError(f"-f {str(path)!r} cannot be loaded as Python; give a .py file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the user's code: where it broke, in one line
        del sys.modules[name]
        frame = next((f for f in reversed(traceback.extract_tb(exc.__traceback__)) if f.filename == str(resolved)),
                     None)
        where = f" (line {frame.lineno})" if frame else ""
        if isinstance(exc, SyntaxError):
            where = f" (line {exc.lineno})"
        raise AuthbenchError(f"-f {path}: {type(exc).__name__}{where}: {exc}") from None
    return module
