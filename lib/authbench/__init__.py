"""authbench: load tests for authentication systems (SAML SSO through IdP clusters, LDAP binds)."""

__version__ = "0.1.0"
