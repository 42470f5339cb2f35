"""Signing in: failed logins lock a username or an address on the web login, the admin and the token API; API tokens
expire and end with a password change, a deactivation or a demo reset; owners list and revoke theirs and coordinators
anyone's; a password a coordinator handed out must be replaced before anything else."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from reviewapp.models import ApiToken, AuditEvent
from reviewapp.services.accounts import token_create, user_set_active
from reviewapp.services.users import user_create
from tests import factories

PASSWORD = "pw-for-tests-1"  # tests.factories.make_user's


@pytest.fixture
def alice(db):
    return factories.make_user("reviewer", username="alice")


def web_login(client, username, password, address="203.0.113.5"):
    return client.post("/accounts/login/", {"username": username, "password": password}, REMOTE_ADDR=address)


def api_token(username, password, address="203.0.113.5"):
    return APIClient().post("/api/v1/auth/token", {"username": username, "password": password}, REMOTE_ADDR=address)


def admin_login(client, username, password, address="203.0.113.5"):
    body = {"username": username, "password": password, "next": "/admin/"}
    return client.post("/admin/login/", body, REMOTE_ADDR=address)


def logged_in(client) -> bool:
    return "_auth_user_id" in client.session


# Throttling ----------------------------------------------------------------------------------------------------


def test_the_right_password_after_many_wrong_ones_does_not_log_in_on_the_web(client, alice, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert web_login(client, "alice", "wrong").status_code == 200  # the form again, with its error
    assert web_login(client, "alice", "wrong").status_code == 429  # the failure that reaches the limit locks
    response = web_login(client, "alice", PASSWORD)
    assert response.status_code == 429 and int(response["Retry-After"]) > 0
    assert "Too many failed logins" in response.content.decode()
    assert not logged_in(client)


def test_the_admin_login_is_throttled_too(client, db, settings):
    admin = User.objects.create_superuser("root", "root@example.org", PASSWORD)
    for _ in range(settings.AXES_FAILURE_LIMIT):
        admin_login(client, admin.username, "wrong")
    response = admin_login(client, admin.username, PASSWORD)
    assert response.status_code == 429
    assert not logged_in(client)


def test_the_token_api_answers_429_with_retry_after_in_the_json_format(alice, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert api_token("alice", "wrong").json()["error"] == "invalid_credentials"
    assert api_token("alice", "wrong").status_code == 429
    response = api_token("alice", PASSWORD)
    assert response.status_code == 429
    assert response.json()["error"] == "locked_out" and response.json()["detail"]
    assert int(response["Retry-After"]) == int(settings.AXES_COOLOFF_TIME.total_seconds())
    assert not ApiToken.objects.exists()


def test_a_good_login_to_another_account_does_not_clear_the_failures_against_a_username_on_the_web(alice, settings):
    factories.make_user("reviewer", username="mallory")
    for _ in range(3):  # four guesses at alice, then one's own good login, three times over: twelve failures
        for _ in range(settings.AXES_FAILURE_LIMIT - 1):
            web_login(Client(), "alice", "wrong")
        assert web_login(Client(), "mallory", PASSWORD).status_code == 302
    client = Client()
    assert web_login(client, "alice", PASSWORD).status_code == 429
    assert not logged_in(client)


def test_good_logins_to_another_account_do_not_clear_the_failures_against_a_username_on_the_token_api(alice, settings):
    factories.make_user("reviewer", username="mallory")
    for _ in range(3):
        for _ in range(settings.AXES_FAILURE_LIMIT - 1):
            api_token("alice", "wrong")
        assert api_token("mallory", PASSWORD).status_code == 200
        assert web_login(Client(), "mallory", PASSWORD).status_code == 302
    assert api_token("alice", PASSWORD).status_code == 429
    assert not ApiToken.objects.filter(user=alice).exists()


def test_a_good_login_does_not_clear_the_address_count_of_other_usernames(client, db, settings):
    settings.OH_LOGIN_ADDRESS_FAILURE_LIMIT = 8
    factories.make_user("reviewer", username="mallory")
    factories.make_user("reviewer", username="victim")
    for number in range(8):  # two failures each over many usernames, a good login of one's own between them
        for _ in range(2):
            web_login(Client(), f"guess-{number}", "wrong", address="203.0.113.9")
        assert web_login(Client(), "mallory", PASSWORD, address="203.0.113.9").status_code in (302, 429)
    assert web_login(Client(), "victim", PASSWORD, address="203.0.113.9").status_code == 429


def test_a_good_login_clears_the_own_failures_of_the_account_that_logged_in(alice, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        web_login(Client(), "alice", "wrong")
    assert web_login(Client(), "alice", PASSWORD).status_code == 302
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):  # a fresh count: four more typos do not lock
        assert web_login(Client(), "alice", "wrong").status_code == 200
    assert web_login(Client(), "alice", PASSWORD).status_code == 302


def test_a_locked_username_is_locked_from_every_address(client, alice, settings):
    for number in range(settings.AXES_FAILURE_LIMIT):
        web_login(client, "alice", "wrong", address=f"198.51.100.{number}")
    assert web_login(client, "alice", PASSWORD, address="192.0.2.77").status_code == 429


def test_an_address_trying_many_usernames_is_slowed(client, db, settings):
    settings.OH_LOGIN_ADDRESS_FAILURE_LIMIT = 8
    factories.make_user("reviewer", username="victim")
    for number in range(8):  # two failures each: no username reaches its own limit
        for _ in range(2):
            web_login(client, f"guess-{number}", "wrong", address="203.0.113.9")
    assert web_login(client, "victim", PASSWORD, address="203.0.113.9").status_code == 429
    assert web_login(client, "victim", PASSWORD, address="203.0.113.10").status_code == 302  # another address


def test_an_ipv6_host_cannot_rotate_addresses_past_the_lock(client, db, settings):
    settings.OH_LOGIN_ADDRESS_FAILURE_LIMIT = 4
    factories.make_user("reviewer", username="victim")
    for number in range(4):
        web_login(client, f"guess-{number}", "wrong", address=f"2001:db8:7:7::{number + 1}")
    assert web_login(client, "victim", PASSWORD, address="2001:db8:7:7::ffff").status_code == 429


def test_a_coordinator_unlocks_a_username_on_the_people_page(client, alice, coordinator, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        web_login(client, "alice", "wrong")
    client.force_login(coordinator)
    page = client.get("/people/").content.decode()
    assert 'id="locked"' in page and "alice" in page
    assert client.post("/people/unlock/", {"username": "alice"}).status_code == 302
    client.logout()
    assert web_login(client, "alice", PASSWORD).status_code == 302 and logged_in(client)


def test_a_coordinator_unlocks_a_username_through_the_api(alice, coordinator, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        api_token("alice", "wrong")
    staff = APIClient()
    staff.force_authenticate(coordinator)
    assert staff.post("/api/v1/users/unlock", {"username": "alice"}).json()["cleared"] >= 1
    assert api_token("alice", PASSWORD).status_code == 200
    reviewer = APIClient()
    reviewer.force_authenticate(alice)
    assert reviewer.post("/api/v1/users/unlock", {"username": "alice"}).status_code == 403


def lock_address(client, address: str, settings) -> None:
    """Failures over many usernames from one address, none reaching its own username's limit."""
    settings.OH_LOGIN_ADDRESS_FAILURE_LIMIT = 6
    for number in range(3):
        for _ in range(2):
            web_login(client, f"guess-{number}", "wrong", address=address)


def test_a_coordinator_sees_a_locked_address_on_the_people_page_and_unlocks_it(client, alice, coordinator, settings):
    lock_address(client, "203.0.113.9", settings)
    assert web_login(client, "alice", PASSWORD, address="203.0.113.9").status_code == 429
    staff = Client()
    staff.force_login(coordinator)
    page = staff.get("/people/").content.decode()
    assert 'id="locked-addresses"' in page and "203.0.113.9" in page
    assert 'id="locked"' not in page  # no username reached its own limit
    response = staff.post("/people/unlock/", {"address": "203.0.113.9"}, follow=True)
    assert "Logins from 203.0.113.9 are possible again." in response.content.decode()
    assert "203.0.113.9" not in staff.get("/people/").content.decode()
    assert web_login(client, "alice", PASSWORD, address="203.0.113.9").status_code == 302 and logged_in(client)
    event = AuditEvent.objects.get(action="login_unlock", target_type="address")
    assert (event.actor, event.target_id) == (coordinator, "203.0.113.9")


def test_a_locked_ipv6_network_is_unlocked_through_any_of_its_addresses_by_the_api(
    client, alice, coordinator, settings
):
    lock_address(client, "2001:db8:7:7::1", settings)
    assert web_login(client, "alice", PASSWORD, address="2001:db8:7:7::2").status_code == 429
    staff = APIClient()
    staff.force_authenticate(coordinator)
    response = staff.post("/api/v1/users/unlock", {"address": "2001:db8:7:7::abcd"}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["address"] == "2001:db8:7:7::" and response.json()["cleared"] >= 3
    assert web_login(client, "alice", PASSWORD, address="2001:db8:7:7::2").status_code == 302


def test_unlocking_needs_a_username_or_a_valid_address(coordinator, alice):
    staff = APIClient()
    staff.force_authenticate(coordinator)
    assert staff.post("/api/v1/users/unlock", {}, format="json").status_code == 400
    both = staff.post("/api/v1/users/unlock", {"username": "alice", "address": "192.0.2.1"}, format="json")
    assert both.status_code == 400
    wrong = staff.post("/api/v1/users/unlock", {"address": "not-an-address"}, format="json")
    assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_address"
    reviewer = APIClient()
    reviewer.force_authenticate(alice)
    assert reviewer.post("/api/v1/users/unlock", {"address": "192.0.2.1"}, format="json").status_code == 403


# Tokens ---------------------------------------------------------------------------------------------------------


def calls(key: str) -> int:
    return APIClient().get("/api/v1/auth/tokens", HTTP_AUTHORIZATION=f"Token {key}").status_code


def test_a_token_is_stored_only_as_a_hash_and_works(alice):
    response = api_token("alice", PASSWORD)
    key = response.json()["token"]
    token = ApiToken.objects.get()
    assert key not in (token.key_sha256, token.prefix) and token.prefix == key[:10]
    assert calls(key) == 200
    assert ApiToken.objects.get().last_used_at is not None


def test_a_token_expires(alice, settings):
    settings.OH_API_TOKEN_DAYS = 7
    token, key = token_create(user=alice)
    assert timedelta(days=6) < token.expires_at - timezone.now() <= timedelta(days=7)
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    response = APIClient().get("/api/v1/auth/tokens", HTTP_AUTHORIZATION=f"Token {key}")
    assert response.status_code == 401 and response.json()["error"] == "authentication_failed"


def test_a_password_change_ends_every_token(client, alice):
    _, key = token_create(user=alice)
    _, other_key = token_create(user=alice)
    client.force_login(alice)
    new = "another-long-password-7"
    client.post("/accounts/password_change/", {"old_password": PASSWORD, "new_password1": new, "new_password2": new})
    assert calls(key) == 401 and calls(other_key) == 401
    # Set anywhere else (the admin, a shell), the new password ends tokens all the same.
    _, key = token_create(user=alice)
    alice.set_password("yet-another-password-9")
    alice.save()
    assert calls(key) == 401


def test_deactivation_ends_tokens_for_good(alice, coordinator):
    _, key = token_create(user=alice)
    staff = APIClient()
    staff.force_authenticate(coordinator)
    assert staff.post(f"/api/v1/users/{alice.pk}/active", {"active": False}, format="json").status_code == 200
    assert calls(key) == 401
    user_set_active(account_id=alice.pk, active=True, user=coordinator)
    assert calls(key) == 401  # reactivated, the account needs a new token


def test_deactivation_in_the_admin_ends_tokens(client, alice):
    _, key = token_create(user=alice)
    admin = User.objects.create_superuser("root", "root@example.org", PASSWORD)
    client.force_login(admin)
    form = client.get(f"/admin/auth/user/{alice.pk}/change/").context["adminform"].form
    data = {name: value for name, value in form.initial.items() if value is not None and name != "password"}
    data.update(is_active="", date_joined_0="2025-01-01", date_joined_1="00:00:00", groups=[], user_permissions=[])
    data.pop("last_login", None)
    response = client.post(f"/admin/auth/user/{alice.pk}/change/", data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert not ApiToken.objects.filter(user=alice).exists()
    User.objects.filter(pk=alice.pk).update(is_active=True)
    assert calls(key) == 401


def test_a_demo_reset_ends_the_demo_accounts_tokens(db):
    from reviewapp.demo.cohort import demo_load

    login = next(login for login in demo_load().logins if login.role == "reviewer")
    response = api_token(login.username, login.password)
    key = response.json()["token"]
    assert calls(key) == 200
    demo_load()
    assert calls(key) == 401


def test_owners_list_and_revoke_their_own_tokens_only(alice, other_reviewer):
    mine, key = token_create(user=alice, name="laptop")
    theirs, _ = token_create(user=other_reviewer)
    me = APIClient(HTTP_AUTHORIZATION=f"Token {key}")
    listed = me.get("/api/v1/auth/tokens").json()["results"]
    assert [(row["id"], row["name"], row["username"]) for row in listed] == [(mine.pk, "laptop", "alice")]
    for other in (other_reviewer.pk, "all"):  # not a coordinator: refused, not ignored
        refused = me.get(f"/api/v1/auth/tokens?user={other}")
        assert refused.status_code == 403 and refused.json()["error"] == "forbidden"
    assert me.delete(f"/api/v1/auth/tokens/{theirs.pk}").status_code == 404
    assert me.delete(f"/api/v1/auth/tokens/{mine.pk}").status_code == 204
    assert me.get("/api/v1/auth/tokens").status_code == 401  # the token just revoked was this one
    assert ApiToken.objects.filter(pk=theirs.pk).exists()


def test_a_coordinator_lists_and_revokes_anyones_tokens(alice, coordinator):
    theirs, key = token_create(user=alice)
    staff = APIClient()
    staff.force_authenticate(coordinator)
    assert [row["id"] for row in staff.get(f"/api/v1/auth/tokens?user={alice.pk}").json()["results"]] == [theirs.pk]
    assert staff.delete(f"/api/v1/auth/tokens/{theirs.pk}").status_code == 204
    assert calls(key) == 401


def test_the_tokens_page_shows_a_new_key_once_and_revokes(client, alice):
    client.force_login(alice)
    page = client.post("/accounts/tokens/", {"name": "script"}).content.decode()
    key = page.split('id="new-token">')[1].split("<")[0]
    assert calls(key) == 200
    assert key not in client.get("/accounts/tokens/").content.decode()
    token = ApiToken.objects.get(user=alice)
    client.post(f"/accounts/tokens/{token.pk}/revoke/")
    assert calls(key) == 401


def test_the_tokens_page_and_the_api_refuse_the_same_long_name(client, alice):
    name = "n" * 101
    refused = APIClient().post("/api/v1/auth/token", {"username": "alice", "password": PASSWORD, "name": name})
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_body"
    client.force_login(alice)
    page = client.post("/accounts/tokens/", {"name": name}).content.decode()
    assert "no more than 100 characters" in page and 'id="new-token"' not in page
    assert not ApiToken.objects.exists()
    client.post("/accounts/tokens/", {"name": "n" * 100})
    assert ApiToken.objects.get().name == "n" * 100


# One-time passwords -------------------------------------------------------------------------------------------


def test_an_account_made_by_a_coordinator_must_set_its_own_password_first(client, coordinator):
    account, password = user_create(username="rev-new", email="", role="reviewer", user=coordinator)
    assert web_login(client, "rev-new", password).status_code == 302
    for path in ("/", "/review/", "/accounts/tokens/"):
        response = client.get(path)
        assert response.status_code == 302 and response["Location"] == "/accounts/password_change/", path
    api = client.get("/api/v1/auth/tokens")
    assert api.status_code == 403 and api.json()["error"] == "password_change_required"
    assert "choose your own" in client.get("/accounts/password_change/").content.decode()

    new = "a-password-of-my-own-42"
    changed = client.post(
        "/accounts/password_change/", {"old_password": password, "new_password1": new, "new_password2": new}
    )
    assert changed.status_code == 302
    assert client.get("/review/").status_code == 200
