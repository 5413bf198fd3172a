"""LDAP load: a gevent-cooperative python-ldap client, authrate's templates and its bind-rate loop."""
