from django.conf import settings
from django.urls import NoReverseMatch, get_script_prefix, get_urlconf, reverse

from reviewapp.core import roles as role_checks


def roles(request):
    user = request.user
    return {
        "user_can_review": role_checks.can_review(user),
        "user_can_coordinate": role_checks.can_coordinate(user),
        "user_can_read_all": role_checks.can_read_all(user),
    }


# The main menu's pages that a URL configuration may leave out (a configuration without one hides its link), and
# the account's pages, always there.
OPTIONAL_NAV_PAGES = {
    "review_queue": "review-queue",
    "cohort_list": "cohort-list",
    "user_list": "user-list",
    "benchmark_list": "benchmark-list",
    "literature": "literature-home",
    "corpus": "literature-corpus",
    "inspiration": "inspiration-home",
    "screening_runs": "screening-run-list",
}
ACCOUNT_NAV_PAGES = {"password_change": "password_change", "tokens": "tokens", "logout": "logout", "login": "login"}

# Reversed once per URL configuration and script prefix: the same for every request and every user.
_NAV_URLS: dict[tuple[str, str], dict[str, str]] = {}


def _optional_url(name: str) -> str:
    try:
        return reverse(name)
    except NoReverseMatch:
        return ""


def navigation(request):
    """The addresses of the main menu's links (base.html)."""
    key = (str(get_urlconf() or settings.ROOT_URLCONF), get_script_prefix())
    urls = _NAV_URLS.get(key)
    if urls is None:
        urls = {name: _optional_url(url_name) for name, url_name in OPTIONAL_NAV_PAGES.items()}
        urls.update({name: reverse(url_name) for name, url_name in ACCOUNT_NAV_PAGES.items()})
        _NAV_URLS[key] = urls
    return {"nav_urls": urls}
