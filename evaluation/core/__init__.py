"""Core numerical and data-handling code for on-demand evaluation (no Django)."""

# Recorded with every stored plan and estimate; bump when a change can move either.
ENGINE_VERSION = "1.6"
