"""Where a result came from: the machine and the versions that measured it, kept beside every run."""

from __future__ import annotations

import os
import platform
from typing import Any


def machine() -> dict[str, Any]:
    return {"python": platform.python_version(), "platform": platform.platform(), "cores": os.cpu_count(),
            "node": platform.node()}


def versions() -> dict[str, str]:
    import locust

    from .. import __version__

    return {"authbench": __version__, "locust": locust.__version__}
