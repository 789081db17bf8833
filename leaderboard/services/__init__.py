"""Writes of the leaderboard app (HackSoft style): tasks, runs, ingestion, run lifecycle."""
