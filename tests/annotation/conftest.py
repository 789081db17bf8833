"""Fixtures for the annotation tests."""

import pytest


@pytest.fixture(autouse=True)
def no_broker(sent_messages):
    """Answers enqueue the pipeline's jobs: record them (``sent_messages``), send nothing."""
    return sent_messages
