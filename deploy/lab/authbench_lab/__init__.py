"""The embedded lab: a clustered SAML IdP with real servers on loopback.

It knows nothing of the authbench framework; the framework talks to it through URLs and the
`authbench lab …` commands, exactly as it would talk to a real IdP cluster.
"""
