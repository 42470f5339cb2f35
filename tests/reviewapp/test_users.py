"""Coordinators create accounts with one-time passwords, one at a time or from a CSV, and declare conflicts."""

import pytest
from django.contrib.auth import authenticate
from django.contrib.auth.models import User
from django.test import RequestFactory
from rest_framework.test import APIClient

from reviewapp.core import roles
from reviewapp.models import AuditEvent, Conflict
from reviewapp.services.users import UserInvalid, user_create, users_bulk_create
from tests import factories


def test_a_new_account_logs_in_with_its_one_time_password_which_is_stored_only_hashed(client, coordinator):
    account, password = user_create(username="rev-jane", email="jane@example.org", role="reviewer", user=coordinator)

    assert len(password) >= 16
    assert password not in account.password
    assert roles.can_review(account) and not roles.can_read_all(account)
    assert authenticate(RequestFactory().post("/accounts/login/"), username="rev-jane", password=password) == account
    response = client.post("/accounts/login/", {"username": "rev-jane", "password": password})
    assert response.status_code == 302 and client.session.get("_auth_user_id") == str(account.pk)
    event = AuditEvent.objects.get(action="user_create")
    assert password not in str(event.data)


def test_each_account_gets_a_different_password(coordinator):
    _, first = user_create(username="a1", email="", role="analyst", user=coordinator)
    _, second = user_create(username="a2", email="", role="analyst", user=coordinator)
    assert first != second


@pytest.mark.parametrize(
    "username, email, role, field",
    [
        ("coord-carol", "c@example.org", "reviewer", "username"),  # taken
        ("COORD-CAROL", "c@example.org", "reviewer", "username"),  # taken, whatever the case
        ("has space", "", "reviewer", "username"),
        ("", "", "reviewer", "username"),
        ("rev-x", "not-an-email", "reviewer", "email"),
        ("rev-x", "", "owner", "role"),
    ],
)
def test_invalid_account_details_are_refused(coordinator, username, email, role, field):
    with pytest.raises(UserInvalid) as refused:
        user_create(username=username, email=email, role=role, user=coordinator)
    assert [error["field"] for error in refused.value.errors] == [field]
    assert not User.objects.filter(username="rev-x").exists()


def test_a_csv_creates_every_account_with_its_role(coordinator):
    csv_text = "username,email,role\nrev-jane,jane@example.org,reviewer\nana-li,,Analyst\n\n"

    created = users_bulk_create(csv_text=csv_text, user=coordinator)

    assert [(account.username, account.groups.get().name) for account, _ in created] == [
        ("rev-jane", "reviewer"),
        ("ana-li", "analyst"),
    ]
    for account, password in created:
        assert authenticate(RequestFactory().post("/"), username=account.username, password=password) == account


def test_a_csv_with_any_bad_row_creates_nothing_and_names_every_bad_row(coordinator):
    csv_text = (
        "username,email,role\n"
        "rev-good,good@example.org,reviewer\n"
        "rev-bad,bad-email,reviewer\n"
        "rev-role,,superhero\n"
        "coord-carol,,coordinator\n"
        "rev-good,,reviewer\n"
    )

    with pytest.raises(UserInvalid) as refused:
        users_bulk_create(csv_text=csv_text, user=coordinator)

    assert [(e["row"], e["field"]) for e in refused.value.errors] == [
        (3, "email"),
        (4, "role"),
        (5, "username"),
        (6, "username"),
    ]
    assert "also on row 2" in refused.value.errors[-1]["message"]
    assert not User.objects.filter(username__in=["rev-good", "rev-bad", "rev-role"]).exists()


def test_a_csv_without_the_header_is_refused(coordinator):
    with pytest.raises(UserInvalid, match="missing: role"):
        users_bulk_create(csv_text="username,email\nrev-a,a@example.org\n", user=coordinator)


# API


def api(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def test_api_creates_an_account_whose_owner_sets_a_password_before_getting_a_token(coordinator, client):
    response = api(coordinator).post(
        "/api/v1/users", {"username": "rev-jane", "email": "jane@example.org", "role": "reviewer"}, format="json"
    )

    assert response.status_code == 201
    body = response.json()
    assert set(body) == {"id", "username", "email", "role", "password"}
    assert (body["username"], body["role"]) == ("rev-jane", "reviewer")
    listed = api(coordinator).get("/api/v1/users").json()
    jane = next(row for row in listed["results"] if row["username"] == "rev-jane")
    assert (jane["id"], jane["roles"], jane["active"]) == (body["id"], ["reviewer"], True)
    token = APIClient().post("/api/v1/auth/token", {"username": "rev-jane", "password": body["password"]})
    assert token.status_code == 403 and token.json()["error"] == "password_change_required"

    client.post("/accounts/login/", {"username": "rev-jane", "password": body["password"]})
    new_password = "a-password-of-my-own-42"
    changed = client.post(
        "/accounts/password_change/",
        {"old_password": body["password"], "new_password1": new_password, "new_password2": new_password},
    )
    assert changed.status_code == 302
    token = APIClient().post("/api/v1/auth/token", {"username": "rev-jane", "password": new_password})
    assert token.status_code == 200 and token.json()["token"]


def test_api_refuses_a_taken_username_with_a_clear_error(coordinator):
    response = api(coordinator).post("/api/v1/users", {"username": "coord-carol", "email": "", "role": "analyst"})
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_user" and "taken" in response.json()["detail"]


def test_only_coordinators_create_accounts_through_the_api(analyst, reviewer):
    body = {"username": "rev-new", "email": "", "role": "reviewer"}
    assert api().post("/api/v1/users", body).status_code == 401
    assert api(analyst).post("/api/v1/users", body).status_code == 403
    assert api(analyst).get("/api/v1/users").status_code == 403
    assert api(reviewer).post("/api/v1/users", body).status_code == 403
    assert not User.objects.filter(username="rev-new").exists()


# Pages


def test_people_page_creates_an_account_and_shows_its_password_once(client, coordinator):
    client.force_login(coordinator)

    response = client.post("/people/create/", {"username": "rev-jane", "email": "", "role": "reviewer"})

    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    password = response.content.decode().split('<code class="one-time-password">')[1].split("</code>")[0]
    assert authenticate(RequestFactory().post("/"), username="rev-jane", password=password) is not None
    assert password not in client.get("/people/").content.decode()


def test_people_page_creates_accounts_from_an_uploaded_csv(client, coordinator):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client.force_login(coordinator)
    upload = SimpleUploadedFile("people.csv", b"username,email,role\nrev-a,,reviewer\nrev-b,,reviewer\n")

    response = client.post("/people/bulk/", {"file": upload})

    html = response.content.decode()
    assert response.status_code == 200
    assert html.count('class="one-time-password"') == 2 and "rev-a" in html and "rev-b" in html


def test_people_page_shows_csv_row_errors_and_creates_nothing(client, coordinator):
    client.force_login(coordinator)

    response = client.post("/people/bulk/", {"csv_text": "username,email,role\nrev-a,,reviewer\nrev-b,,wizard\n"})

    assert response.status_code == 400
    assert "Row 3, role" in response.content.decode()
    assert not User.objects.filter(username="rev-a").exists()


def test_people_page_declares_a_conflict(client, coordinator, reviewer):
    proposal = factories.make_proposal(external_id="P-77")
    client.force_login(coordinator)

    response = client.post(
        "/people/conflicts/", {"reviewer": reviewer.username, "kind": "advisor", "proposal": "P-77", "note": "PhD"}
    )

    assert response.status_code == 302
    assert Conflict.objects.get().proposal == proposal
    assert "proposal P-77" in client.get("/people/").content.decode()
    refused = client.post("/people/conflicts/", {"reviewer": reviewer.username, "kind": "advisor"})
    assert refused.status_code == 400 and "names a proposal or an author" in refused.content.decode()


@pytest.mark.parametrize(
    "method, url, data",
    [
        ("get", "/people/", None),
        ("post", "/people/create/", {"username": "x", "role": "reviewer"}),
        ("post", "/people/bulk/", {"csv_text": "username,email,role\nx,,reviewer\n"}),
        ("post", "/people/conflicts/", {"reviewer": "rev-alice", "kind": "other", "author": "m"}),
    ],
)
def test_people_pages_are_for_coordinators_only(client, method, url, data, coordinator, analyst, reviewer):
    response = getattr(client, method)(url, data)
    assert response.status_code == 302 and response.url.startswith("/accounts/login/")
    for user in (analyst, reviewer):
        client.force_login(user)
        assert getattr(client, method)(url, data).status_code == 403, user
    if method == "get":
        client.force_login(coordinator)
        assert client.get(url).status_code == 200
    assert not User.objects.filter(username="x").exists()
