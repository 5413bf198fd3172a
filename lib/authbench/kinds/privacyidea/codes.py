"""RFC 4226 HOTP and RFC 6238 TOTP values (SHA-1, as privacyIDEA's default tokens)."""

from __future__ import annotations

import hashlib
import hmac
import struct
import time


def hotp(key_hex: str, counter: int, digits: int = 6) -> str:
    digest = hmac.new(bytes.fromhex(key_hex), struct.pack(">Q", counter), hashlib.sha1).digest()
    offset = digest[-1] & 0x0F
    code = struct.unpack(">I", digest[offset:offset + 4])[0] & 0x7FFFFFFF
    return str(code % 10**digits).zfill(digits)


def totp(key_hex: str, step: int = 30, digits: int = 6, now: float | None = None) -> str:
    """The value of the current time window."""
    return hotp(key_hex, int((time.time() if now is None else now) // step), digits)
