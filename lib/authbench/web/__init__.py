"""The web UI: Locust's, extended with a page to start plans, watch them live and read the last campaign."""

AUTH_ENV = "AUTHBENCH_WEB_AUTH"  # "user:password" of the UI's login; here so the CLI can name it without Flask
