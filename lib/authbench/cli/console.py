"""What the CLI prints: one line at a time, flushed (progress lines interleave with Locust's log)."""

from __future__ import annotations


def say(text: str = "") -> None:
    print(text, flush=True)


def one_line(text: str) -> str:
    return " ".join(text.split())
