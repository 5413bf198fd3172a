"""What authbench learns about a clustered target beyond its load figures.

- `checks`: the 2012 report's Tests 1–3 (login, SSO across nodes, a new SP session via the other node);
- `faults`: fault plans inside a measured run and their analysis (Test 4, failover under load);
- `resources`: the CPU and memory of the target's components and of the generator, per cell;
- `prometheus`: the same read from a Prometheus the user already runs;
- `campaign`: `compare`, which runs all of the above per backend and feeds one report.
"""
