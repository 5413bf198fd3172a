"""Database logins: PostgreSQL's wire protocol through pg8000, for the connect / authenticate / query loop."""
