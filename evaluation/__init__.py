"""Evaluation: the pure numerical engine (core/) and, around it, the tasks that drive it."""
