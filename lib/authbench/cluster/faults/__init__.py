"""Fault plans inside a measured run (lab components stopped and started, or commands run) and what they did to
the users: the failover analysis behind Test 4 (docs/failover.md)."""
