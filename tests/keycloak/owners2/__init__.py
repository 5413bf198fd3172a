"""`keycloak-owners2`, the replicated design, tested over SAML (test_lab.py) and OpenID Connect (test_oidc.py) on one
lab: its two JVMs start once for both (a Keycloak start costs a minute or more), and the last test takes it down."""
