"""The web UI: Locust's, extended with a page to start plans, watch them live and read the last campaign."""
