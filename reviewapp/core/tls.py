"""One TLS context for every outside HTTP request (model providers, literature sources): building one reads the
system's certificate store, which takes tens of milliseconds, longer than a call to a local model server."""

import functools
import ssl

import httpx


@functools.cache
def tls_context() -> ssl.SSLContext:
    return httpx.create_ssl_context()
