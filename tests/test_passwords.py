"""Password hashing: new passwords and every login end with an Argon2id hash; older hashes keep working."""

import pytest
from django.contrib.auth.hashers import make_password

from tests import factories
from tests.test_production_defaults import settings_of

PASSWORD = "a long passphrase of my own"


@pytest.fixture(scope="module")
def configured_hashers(tmp_path_factory) -> list[str]:
    """The hashers the settings name, read once by a fresh process (the suite itself hashes with MD5 for speed)."""
    return settings_of(tmp_path_factory.mktemp("hashers"), ["PASSWORD_HASHERS"])["PASSWORD_HASHERS"]


@pytest.fixture
def production_hashers(settings, configured_hashers):
    settings.PASSWORD_HASHERS = configured_hashers
    return settings.PASSWORD_HASHERS


def test_new_passwords_are_hashed_with_argon2id_at_the_documented_parameters(db, production_hashers):
    user = factories.make_user("reviewer", password=PASSWORD)
    assert user.password.startswith("argon2$argon2id$v=19$m=19456,t=2,p=1$")
    assert user.check_password(PASSWORD)


@pytest.mark.parametrize("old_hasher", ["pbkdf2_sha256", "pbkdf2_sha1", "argon2"])
def test_a_web_login_with_an_older_hash_works_and_upgrades_it_to_argon2id(client, db, production_hashers, old_hasher):
    user = factories.make_user("reviewer", password=PASSWORD)
    user.password = make_password(PASSWORD, hasher=old_hasher)
    if old_hasher == "argon2":  # Django's own parameters: the same algorithm, other costs
        from django.contrib.auth.hashers import Argon2PasswordHasher

        user.password = Argon2PasswordHasher().encode(PASSWORD, Argon2PasswordHasher().salt())
    user.save(update_fields=["password"])
    answer = client.post("/accounts/login/", {"username": user.username, "password": PASSWORD})
    assert answer.status_code == 302
    user.refresh_from_db()
    assert user.password.startswith("argon2$argon2id$v=19$m=19456,t=2,p=1$")


def test_an_api_token_login_upgrades_an_older_hash_too(client, db, production_hashers):
    user = factories.make_user("analyst", password=PASSWORD)
    user.password = make_password(PASSWORD, hasher="pbkdf2_sha256")
    user.save(update_fields=["password"])
    answer = client.post(
        "/api/v1/auth/token", {"username": user.username, "password": PASSWORD}, content_type="application/json"
    )
    assert answer.status_code in (200, 201), answer.content
    user.refresh_from_db()
    assert user.password.startswith("argon2$argon2id$")
