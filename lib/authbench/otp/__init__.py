"""One-time passwords computed by the load generator: RFC 4226 HOTP, RFC 6238 TOTP, and HOTP counters."""
