"""The static files' storage remembers each file's URL, and a changed STATIC_URL is not answered from that memory."""

from django.contrib.staticfiles.storage import staticfiles_storage
from django.templatetags.static import static
from django.test import override_settings


def test_a_files_url_is_the_storages_and_follows_static_url():
    assert static("css/app.css") == "/static/css/app.css"
    assert static("css/app.css") == "/static/css/app.css"
    assert static("css/a b.css") == "/static/css/a%20b.css"
    with override_settings(STATIC_URL="https://cdn.example.org/assets/"):
        assert static("css/app.css") == "https://cdn.example.org/assets/css/app.css"
    assert static("css/app.css") == "/static/css/app.css"
    assert type(staticfiles_storage._wrapped).__module__ == "reviewapp.core.staticfiles"
