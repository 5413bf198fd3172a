"""`authbench authrate`: OpenDJ authrate's bind-rate loop over the LDAP kind's client, its templates and table."""
