"""Models of the leaderboard app (none yet)."""
