"""Samples, the recorder that writes them as the run goes, and the Grinder-style summaries."""
