"""Fixtures of the engine wings' tests: ``empty_state_cache``, each test starting and ending with
no cached task state in this process, within a small memory budget."""

import pytest

from evaluation.kinds.open_world.state import forget_cached_states


@pytest.fixture
def empty_state_cache(settings):
    settings.ENGINE_STATE_CACHE_MB = 64
    forget_cached_states()
    yield
    forget_cached_states()
