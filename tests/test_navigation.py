"""The main menu's addresses, reversed once per URL configuration: each link goes where `{% url %}` sent it, and a
configuration without a page hides that page's link."""

import pytest
from django.contrib.auth import views as auth_views
from django.test import override_settings
from django.urls import path, reverse

from reviewapp.views import accounts, home, review
from tests import factories

# A URL configuration with the accounts' pages and the reviewer's pages only (used by the second test).
urlpatterns = [
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/password_change/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    *accounts.urlpatterns,
    *home.urlpatterns,
    *review.urlpatterns,
]

MENU = {
    "My reviews": "review-queue",
    "Cohorts": "cohort-list",
    "Benchmarks": "benchmark-list",
    "Literature": "literature-home",
    "Corpus": "literature-corpus",
    "Inspiration": "inspiration-home",
    "People": "user-list",
    "Screening runs": "screening-run-list",
    "Password": "password_change",
    "API tokens": "tokens",
}


@pytest.fixture
def everyone(db):
    """A user who holds every role, and so sees every link."""
    user = factories.make_user(None, username="everyone")
    user.is_superuser = True
    user.save()
    return user


def test_every_link_of_the_menu_goes_to_its_page(client, everyone):
    client.force_login(everyone)
    html = client.get(reverse("tokens")).content.decode()
    for label, name in MENU.items():
        assert f'<a href="{reverse(name)}">{label}</a>' in html
    assert f'action="{reverse("logout")}"' in html


def test_a_url_configuration_without_a_page_hides_its_link(client, everyone):
    client.force_login(everyone)
    assert ">Screening runs</a>" in client.get("/review/").content.decode()
    with override_settings(ROOT_URLCONF=__name__):
        html = client.get("/review/").content.decode()
    assert '<a href="/review/">My reviews</a>' in html and 'action="/accounts/logout/"' in html
    assert ">Screening runs</a>" not in html and ">Cohorts</a>" not in html
