"""REST API of the leaderboard app."""
