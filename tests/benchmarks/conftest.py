import pytest

from tests.screening_support import Script, ScriptedModelServer


@pytest.fixture
def scripted():
    """The scripted model server (tests.screening_support) and its script, stopped after the test."""
    script = Script()
    server = ScriptedModelServer(script)
    yield script, server
    server.stop()
