"""Bundled generated datasets and the scripts that generate them (deterministic, seeded)."""
