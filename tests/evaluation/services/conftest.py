"""Fixtures of the pipeline service tests: ``driver``, the pipeline's messages run in this
process (``pipeline_support.PipelineDriver``)."""

import pytest

from pipeline_support import PipelineDriver


@pytest.fixture
def driver(monkeypatch):
    return PipelineDriver(monkeypatch)
