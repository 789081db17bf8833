"""``leaderboard``: the participant command line client of the on-demand evaluation leaderboard.

Standard library only: it talks to the REST API over HTTP and imports nothing of the server.
"""

__version__ = "0.1.0"
