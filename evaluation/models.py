"""Models of the evaluation app (none yet)."""
