"""Fixtures shared by the literature tests: the local stand-in for Europe PMC and NCBI E-utilities."""

from tests.literature.test_literature_sources import source_server  # noqa: F401 (a fixture)
