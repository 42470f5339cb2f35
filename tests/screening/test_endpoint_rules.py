"""A model endpoint's key variable and base URL: a key variable is a name ending in _API_KEY that the server itself
does not read (so no server secret can be sent to a model host), and a base URL is https unless its host is loopback
or the operator allows plain HTTP. Refused in the model's validation, the admin, `setup_roster` and at call time."""

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from screening.llm.models import ModelCall, ModelEndpoint
from screening.llm.providers import complete

SECRET = "a-server-secret-never-to-be-sent-anywhere-0123456789-abcdef"


def endpoint(**fields) -> ModelEndpoint:
    values = {
        "display_name": "Probe",
        "company": "Test",
        "protocol": "openai",
        "base_url": "https://models.example.org/v1",
        "model_id": "probe",
        "api_key_env": "PROBE_API_KEY",
    }
    return ModelEndpoint(**{**values, **fields})


@pytest.mark.parametrize(
    "name",
    [
        "SECRET_KEY",
        "DATABASE_URL",
        "CELERY_BROKER_URL",
        "OH_TEST_PROVIDER_KEY",
        "openai_api_key",
        "API_KEY",
        "NCBI_API_KEY",
    ],
)
def test_a_key_variable_that_is_not_a_model_api_key_is_refused(db, name):
    with pytest.raises(ValidationError) as refused:
        endpoint(api_key_env=name).full_clean()
    assert "api_key_env" in refused.value.message_dict


def test_a_variable_the_settings_read_is_refused_even_when_it_ends_in_api_key(db, monkeypatch):
    # Every variable read through the settings' readers counts, whatever its name.
    from reviewapp.core.env import env_str

    env_str("OH_PROBE_SETTING_API_KEY")
    with pytest.raises(ValidationError):
        endpoint(api_key_env="OH_PROBE_SETTING_API_KEY").full_clean()


@pytest.mark.parametrize("name", ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MY_LAB_VLLM_API_KEY", ""])
def test_a_model_api_key_variable_or_none_is_accepted(db, name):
    endpoint(api_key_env=name).full_clean()


@pytest.mark.parametrize(
    "url", ["http://models.example.org/v1", "http://10.0.0.5:8000/v1", "ftp://models.example.org", "https://", "x"]
)
def test_a_base_url_that_is_not_https_to_a_remote_host_is_refused(db, url):
    with pytest.raises(ValidationError) as refused:
        endpoint(base_url=url).full_clean()
    assert "base_url" in refused.value.message_dict


@pytest.mark.parametrize("url", ["http://127.0.0.1:8765/v1", "http://localhost:8765", "http://[::1]:9/v1"])
def test_plain_http_to_a_loopback_host_is_accepted(db, url):
    endpoint(base_url=url).full_clean()


def test_the_operator_may_allow_plain_http(db, settings):
    settings.OH_MODEL_ALLOW_HTTP = True
    endpoint(base_url="http://vllm:8000/v1").full_clean()


def test_the_admin_refuses_a_server_secret_as_key_variable(admin_client):
    form = {
        "display_name": "Probe",
        "company": "Test",
        "enabled": "on",
        "protocol": "openai",
        "base_url": "http://127.0.0.1:9/v1",
        "model_id": "probe",
        "api_key_env": "SECRET_KEY",
        "timeout_seconds": 60,
        "max_tokens": 100,
        "max_tokens_field": "max_completion_tokens",
        "system_role": "system",
        "supports_json_mode": "on",
        "concurrency_limit": 1,
    }
    response = admin_client.post("/admin/screening/modelendpoint/add/", form)
    assert response.status_code == 200
    assert "_API_KEY" in response.content.decode()
    assert not ModelEndpoint.objects.filter(display_name="Probe").exists()
    response = admin_client.post("/admin/screening/modelendpoint/add/", {**form, "api_key_env": "PROBE_API_KEY"})
    assert response.status_code == 302
    assert ModelEndpoint.objects.filter(display_name="Probe").exists()


def test_setup_roster_refuses_a_plain_http_provider_address(db, settings, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    settings.OPENAI_BASE_URL = "http://proxy.example.org/v1"
    with pytest.raises(CommandError, match="base_url"):
        call_command("setup_roster", stdout=None)
    assert not ModelEndpoint.objects.filter(base_url="http://proxy.example.org/v1").exists()


def test_an_endpoint_stored_with_a_server_secret_as_key_variable_sends_nothing(db, fast_retries, monkeypatch):
    monkeypatch.setenv("SECRET_KEY", SECRET)
    stored = endpoint(api_key_env="SECRET_KEY", base_url="http://127.0.0.1:9/v1")
    stored.save()  # written past validation, as an older release could have
    result = complete(endpoint=stored, system="s", user="u", purpose="probe")
    assert not result.usable and "SECRET_KEY" in result.error
    call = ModelCall.objects.get()
    assert call.http_status is None and SECRET not in str(call.request_body)
