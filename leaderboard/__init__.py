"""Tasks, runs, ingestion, the public board, participant and organizer pages, REST API."""
