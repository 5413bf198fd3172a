"""privacyIDEA in the lab: its own virtual environment, config, keys, LDAP realm and tokens (see server.py)."""
