"""The static files' storage: WhiteNoise's compressed storage, remembering the URL of each file asked for.

Every page asks for the same few files (`{% static %}` in base.html and the pages' heads), and building a URL
(joining it to STATIC_URL, quoting it) costs more than the rest of a short template. The URLs depend only on the file's
name and STATIC_URL, which a changed setting replaces with a new storage (and so a new memory).
"""

from whitenoise.storage import CompressedStaticFilesStorage


class StaticFilesStorage(CompressedStaticFilesStorage):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._urls: dict[str, str] = {}

    def url(self, name: str | None) -> str:
        if name is None:
            return super().url(name)
        url = self._urls.get(name)
        if url is None:
            url = self._urls[name] = super().url(name)
        return url
