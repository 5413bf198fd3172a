"""AES-GCM sealed values: the stateless IdP session cookie and the SP's own cookies.

Sealing binds the value to a purpose (the AAD), so a cookie sealed for one use cannot be replayed
as another, and carries an expiry that is checked on opening.
"""

from __future__ import annotations

import base64
import json
import os
import time

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

NONCE_BYTES = 12


class Sealer:
    def __init__(self, key_hex: str) -> None:
        self._aead = AESGCM(bytes.fromhex(key_hex))

    def seal(self, value: dict, purpose: str, lifetime: float) -> str:
        payload = json.dumps({"v": value, "exp": time.time() + lifetime}, separators=(",", ":"))
        nonce = os.urandom(NONCE_BYTES)
        sealed = nonce + self._aead.encrypt(nonce, payload.encode(), purpose.encode())
        return base64.urlsafe_b64encode(sealed).decode().rstrip("=")

    def open(self, token: str | None, purpose: str) -> dict | None:
        """The sealed value, or None when missing, tampered with, sealed for another purpose or expired."""
        if not token:
            return None
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
            payload = self._aead.decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:], purpose.encode())
            data = json.loads(payload)
        except (ValueError, InvalidTag):
            return None
        if data.get("exp", 0) < time.time():
            return None
        return data.get("v")
