"""What a request to the web UI may make this server read and load (docs/web.md: the threat model).

Anyone who can reach the start form can make the server put load on a target and read files to do it. So the
form never names a path: a file field names a file by its bare name inside a folder the operator gave when
starting the UI (`authbench web --files-dir DIR`), and a target must be the lab's, on loopback, or on a host the
operator allowed (`--allow-target HOST`). Secrets typed into the form stay in this process's memory for the run.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from ..errors import AuthbenchError
from ..names import is_safe_name

LAB_PREFIX = "lab:"
LOOPBACK_NAMES = ("localhost",)
URL_PREFIXES = ("oidc+",)  # a journey kind's marker before a URL target


@dataclass(frozen=True)
class WebPolicy:
    """The operator's limits on what the form may name."""

    files_dirs: tuple[Path, ...] = ()  # --files-dir: the only folders a form's file field names a file in
    allowed_hosts: tuple[str, ...] = ()  # --allow-target: hosts beyond the lab's and loopback, lower case

    def file(self, label: str, name: str) -> str:
        """The path of the file `name` in one of the files folders; AuthbenchError for anything else."""
        if not self.files_dirs:
            raise AuthbenchError(f"{label}: this web UI reads no file a form names; start it with --files-dir DIR "
                                 "and give the name of a file in DIR")
        if not is_safe_name(name):
            raise AuthbenchError(f"{label} {name!r}: give the bare name of a file in --files-dir (letters, digits, "
                                 "'.', '_' and '-'), never a path")
        for folder in self.files_dirs:
            path = (folder / name).resolve()
            if path.parent == folder and path.is_file():  # a link that leads out of the folder is no file of it
                return str(path)
        folders = ", ".join(str(folder) for folder in self.files_dirs)
        raise AuthbenchError(f"{label} {name!r}: no such file in --files-dir ({folders})")

    def check_target(self, target: str) -> None:
        """AuthbenchError unless `target` is a lab target, on loopback, or on a host of --allow-target."""
        if target.startswith(LAB_PREFIX):
            return
        url = next((target[len(p):] for p in URL_PREFIXES if target.startswith(p)), target)
        try:
            host = (urlsplit(url).hostname or "").lower()
        except ValueError:
            return  # not a URL: `authbench run`'s own checks refuse it in one line
        if not host or _is_loopback(host) or host in self.allowed_hosts:
            return
        raise AuthbenchError(f"target host {host!r} is not allowed here: this web UI loads the lab, loopback and "
                             "the hosts its operator allowed; start it with --allow-target " + host)


def _is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def policy(files_dirs: list[str], allowed: list[str]) -> WebPolicy:
    """`authbench web`'s --files-dir and --allow-target, checked; AuthbenchError naming a bad one."""
    folders = []
    for folder in files_dirs:
        path = Path(folder).resolve()
        if not path.is_dir():
            raise AuthbenchError(f"--files-dir {folder!r} is not a folder; give the folder whose files the form may "
                                 "name")
        folders.append(path)
    hosts = []
    for entry in (host.strip().lower() for text in allowed for host in text.split(",")):
        if not entry or "/" in entry or ":" in entry.strip("[]") and not _is_ip(entry.strip("[]")):
            raise AuthbenchError(f"--allow-target {entry!r}: give a host name or address, without scheme, port or "
                                 "path")
        hosts.append(entry.strip("[]"))
    return WebPolicy(tuple(folders), tuple(hosts))


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True
