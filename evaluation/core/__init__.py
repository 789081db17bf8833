"""Core numerical and data-handling code for on-demand evaluation (no Django)."""
