"""Models of the annotation app (none yet)."""
