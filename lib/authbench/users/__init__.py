"""Locust user classes, one per journey; the locustfiles only import them."""
