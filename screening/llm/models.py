"""Model endpoints, rosters, recorded model calls and the per-endpoint concurrency slots."""

import ipaddress
import re
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from reviewapp.core.env import names_read

__all__ = ["ModelEndpoint", "Roster", "RosterMember", "ModelCall", "EndpointSlot"]

# What a key variable may be called (docs/protocol.md#model-providers): a name ending in _API_KEY, and none of the
# variables the server reads for itself (its settings, the literature sources' NCBI key), so an endpoint can never send
# a server secret to a model host.
KEY_VARIABLE_PATTERN = re.compile(r"[A-Z][A-Z0-9_]*_API_KEY")
SERVER_KEY_VARIABLES = frozenset({"SECRET_KEY", "DATABASE_URL", "CELERY_BROKER_URL", "NCBI_API_KEY"})


def key_variable_problem(name: str) -> str:
    """Why a key variable name is refused, or "" (no name: a server without authentication)."""
    if not name:
        return ""
    if not KEY_VARIABLE_PATTERN.fullmatch(name):
        return f"A key variable is a name in capitals ending in _API_KEY (e.g. OPENAI_API_KEY), not “{name}”."
    if name in SERVER_KEY_VARIABLES or name in names_read():
        return f"{name} is read by the server itself and may not be sent to a model."
    return ""


def base_url_problem(url: str) -> str:
    """Why a base URL is refused, or "": https, or plain http to a loopback host (the simulator, a local server) or
    anywhere when the operator allows it (OH_MODEL_ALLOW_HTTP)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"A base URL is an https address with a host, e.g. https://api.openai.com/v1, not “{url}”."
    if parts.scheme == "http" and not _loopback(parts.hostname) and not settings.OH_MODEL_ALLOW_HTTP:
        return (
            "A base URL must use https unless its host is this machine (127.0.0.1, ::1, localhost); "
            "the operator may allow plain http with OH_MODEL_ALLOW_HTTP=true."
        )
    return ""


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ModelEndpoint(models.Model):
    """One model behind one wire protocol. The key is read from the environment variable named here, never stored."""

    class Protocol(models.TextChoices):
        OPENAI = "openai", "OpenAI-compatible chat completions"
        ANTHROPIC = "anthropic", "Anthropic messages"
        GEMINI = "gemini", "Gemini generateContent"

    class MaxTokensField(models.TextChoices):
        MAX_COMPLETION_TOKENS = "max_completion_tokens", "max_completion_tokens (current OpenAI API)"
        MAX_TOKENS = "max_tokens", "max_tokens (older OpenAI-compatible servers)"

    class SystemRole(models.TextChoices):
        SYSTEM = "system", "system"
        DEVELOPER = "developer", "developer (newest OpenAI models)"

    display_name = models.CharField(max_length=100, unique=True, help_text='e.g. "GPT-6 Astra"')
    company = models.CharField(max_length=100)
    protocol = models.CharField(max_length=20, choices=Protocol.choices)
    # A CharField, not a URLField: local servers often have bare host names (http://vllm:8000/v1).
    base_url = models.CharField(max_length=300, help_text="e.g. https://api.openai.com/v1")
    model_id = models.CharField(max_length=200)
    api_key_env = models.CharField(
        max_length=100, blank=True, help_text="name of the environment variable holding the key (never the key)"
    )
    max_tokens = models.PositiveIntegerField(default=16000, help_text="reasoning and answer together")
    # Only the OpenAI-compatible protocol has a choice of field name and of the system message's role.
    max_tokens_field = models.CharField(
        max_length=30, choices=MaxTokensField.choices, default=MaxTokensField.MAX_COMPLETION_TOKENS
    )
    system_role = models.CharField(max_length=20, choices=SystemRole.choices, default=SystemRole.SYSTEM)
    concurrency_limit = models.PositiveSmallIntegerField(default=4, help_text="requests in flight across all workers")
    supports_json_mode = models.BooleanField(default=True, help_text="ask the provider for JSON output natively")
    # Reasoning models reject a non-default temperature: it is sent only when accepted and set.
    accepts_temperature = models.BooleanField(default=False)
    temperature = models.FloatField(null=True, blank=True)
    is_grok = models.BooleanField(default=False, help_text="append the Grok sentence to forecast requests")
    is_simulated = models.BooleanField(default=False, help_text="the project's simulated server, not a real model")
    timeout_seconds = models.PositiveIntegerField(default=600, help_text="for one HTTP request")
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["display_name"]
        constraints = [
            models.CheckConstraint(condition=Q(concurrency_limit__gte=1), name="endpoint_concurrency_at_least_one"),
            models.CheckConstraint(condition=Q(protocol__in=["openai", "anthropic", "gemini"]), name="known_protocol"),
        ]

    def __str__(self):
        return f"{self.display_name} (simulated)" if self.is_simulated else self.display_name

    def clean(self):
        problems = {"api_key_env": key_variable_problem(self.api_key_env), "base_url": base_url_problem(self.base_url)}
        problems = {name: problem for name, problem in problems.items() if problem}
        if problems:
            raise ValidationError(problems)


class Roster(models.Model):
    """Which endpoints generate, forecast at each stage, translate and check novelty."""

    name = models.CharField(max_length=100, unique=True)
    is_default = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["is_default"], condition=Q(is_default=True), name="one_default_roster")
        ]

    def __str__(self):
        return self.name


class RosterMember(models.Model):
    class Role(models.TextChoices):
        GENERATOR = "generator", "generator"
        STAGE1 = "stage1", "stage 1 forecaster"
        STAGE2 = "stage2", "stage 2 forecaster"
        TRANSLATOR = "translator", "translator"
        NOVELTY = "novelty", "literature novelty judge"
        INSPIRATION_JUDGE = "inspiration_judge", "inspiration judge (later literature)"
        # The AI review panel (reviewapp.panel): three reviewer roles, the pairwise critique and the revision judge.
        RUBRIC_JUDGE = "rubric_judge", "AI panel: rubric judge"
        DOMAIN_SCIENTIST = "domain_scientist", "AI panel: domain scientist"
        METHODS_REVIEWER = "methods_reviewer", "AI panel: methods reviewer"
        CRITIC = "critic", "AI panel: pairwise critique"
        REVISION_JUDGE = "revision_judge", "AI panel: revision judge"
        REFERENCE_REVIEWER = "reference_reviewer", "AI panel: fresh-context reference (calibration diagnostics)"
        PATH_JUDGE = "path_judge", "AI panel: development path judge"
        RUN_JUDGE = "run_judge", "AI panel: research run judge"

    roster = models.ForeignKey(Roster, on_delete=models.CASCADE, related_name="members")
    endpoint = models.ForeignKey(ModelEndpoint, on_delete=models.PROTECT, related_name="roster_memberships")
    role = models.CharField(max_length=20, choices=Role.choices)
    order = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["roster", "role", "order", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["roster", "role", "endpoint"], name="endpoint_once_per_role"),
        ]

    def __str__(self):
        return f"{self.roster}: {self.role} {self.endpoint}"


class ModelCall(models.Model):
    """One HTTP request to a model (one transport attempt), as sent and as answered. Never holds a key."""

    endpoint = models.ForeignKey(ModelEndpoint, on_delete=models.PROTECT, related_name="calls")
    run = models.ForeignKey("screening.Run", null=True, blank=True, on_delete=models.CASCADE, related_name="calls")
    purpose = models.CharField(max_length=50, help_text="e.g. generate, stage1, stage2, translate, novelty")
    # The protocol's own "ask once more" (1 or 2), separate from the transport's retries.
    protocol_attempt = models.PositiveSmallIntegerField(default=1)
    transport_attempt = models.PositiveSmallIntegerField(default=1)
    # The endpoint as it was at call time: the endpoint record may be edited later.
    url = models.CharField(max_length=500)
    model_id = models.CharField(max_length=200)
    request_body = models.JSONField()
    request_sha256 = models.CharField(max_length=64, help_text="sha256 of the request body bytes as sent")
    response_body = models.TextField(blank=True)
    http_status = models.PositiveSmallIntegerField(null=True, blank=True)
    finish_reason = models.CharField(max_length=50, blank=True)
    usable = models.BooleanField(default=False, help_text="a complete reply text that was neither cut nor refused")
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    input_tokens = models.PositiveIntegerField(null=True, blank=True)
    output_tokens = models.PositiveIntegerField(null=True, blank=True)
    tools_disabled = models.BooleanField(default=True)
    error = models.TextField(blank=True)
    simulated = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["created_at", "pk"]

    def __str__(self):
        return f"{self.purpose} → {self.model_id} (try {self.protocol_attempt}.{self.transport_attempt})"


class EndpointSlot(models.Model):
    """One of an endpoint's concurrency slots. A worker holds a slot for one HTTP request; the lease expiry
    frees the slot of a worker that died while holding it."""

    endpoint = models.ForeignKey(ModelEndpoint, on_delete=models.CASCADE, related_name="slots")
    number = models.PositiveSmallIntegerField()
    holder = models.CharField(max_length=64, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["endpoint", "number"], name="one_slot_per_number")]

    def __str__(self):
        return f"{self.endpoint} slot {self.number}"
