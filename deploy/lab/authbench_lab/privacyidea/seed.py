"""Run by privacyIDEA's own Python (its venv, not authbench's): the LDAP resolver, the realm and the tokens.

Reads a JSON spec (argv[1]) written by the lab; the token secrets come from the lab's tokens file, which
only the lab and the load generator read. Prints counts, never a secret. Standalone on purpose: it
imports privacyIDEA, which authbench's environment does not have.
"""

import json
import sys
import time
from pathlib import Path

from privacyidea.app import create_app
from privacyidea.lib.config import set_privacyidea_config
from privacyidea.lib.realm import set_realm
from privacyidea.lib.resolver import save_resolver
from privacyidea.lib.token import get_tokens, init_token
from privacyidea.lib.user import User
from privacyidea.models import db
from sqlalchemy import event


def _fast_sqlite(connection, _record) -> None:
    """WAL (kept in the file: the server's readers stop blocking its writers) and no fsync while enrolling."""
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=OFF")
    cursor.close()


def main(spec_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text())
    began = time.perf_counter()
    app = create_app("production", config_file=spec["config_file"], silent=True)
    with app.app_context():
        event.listen(db.engine, "connect", _fast_sqlite)
        db.engine.dispose()  # connections made from here on get the pragmas
        db.create_all()
        ldap = spec["ldap"]
        save_resolver({
            "resolver": spec["resolver"], "type": "ldapresolver", "LDAPURI": ldap["uri"], "LDAPBASE": ldap["base"],
            "BINDDN": ldap["bind_dn"], "BINDPW": Path(ldap["bind_password_file"]).read_text().strip(),
            "LOGINNAMEATTRIBUTE": "uid", "LDAPSEARCHFILTER": "(objectClass=inetOrgPerson)",
            "USERINFO": json.dumps({"username": "uid", "givenname": "givenName", "surname": "sn",
                                    "email": "mail"}),
            "UIDTYPE": "DN", "TIMEOUT": "5", "SIZELIMIT": "2000", "NOREFERRALS": "True",
            "CACHE_TIMEOUT": str(spec["cache_timeout"]), "AUTHTYPE": "Simple", "START_TLS": "0",
            "TLS_VERIFY": "0",
        })
        set_realm(spec["realm"], resolvers=[{"name": spec["resolver"]}])
        set_privacyidea_config("DefaultRealm", spec["realm"])
        set_privacyidea_config("UserCacheExpiration", str(spec["user_cache_seconds"]))  # 0: the user cache is off
        tokens = json.loads(Path(spec["tokens_file"]).read_text())
        enrolled = 0
        for login, kinds in tokens.items():
            user = User(login, spec["realm"])
            have = {token.token.serial for token in get_tokens(user=user)}
            for kind, token in kinds.items():
                if token["serial"] in have:
                    continue
                params = {"type": kind, "serial": token["serial"], "pin": token["pin"]}
                if kind in ("hotp", "totp"):
                    params.update({"otpkey": token["key"], "genkey": 0, "otplen": token["digits"],
                                   "hashlib": "sha1"})
                    if kind == "totp":
                        params["timeStep"] = token["step"]
                else:
                    params["genkey"] = 1  # a SPASS token is its PIN alone
                init_token(params, user=user)
                enrolled += 1
    print(json.dumps({"users": len(tokens), "enrolled": enrolled, "seconds": round(time.perf_counter() - began, 2)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
