"""Create or update the default roster (docs/protocol.md#default-roster); endpoints whose key variable is unset use the
simulated server."""

import os
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from screening.llm.models import ModelEndpoint, Roster, RosterMember

DEFAULT_ROSTER_NAME = "Open Hypothesis default roster"
# The name earlier releases gave the same roster. A database that has it keeps it under that name: the roster's
# name is part of a benchmark set's published data (report.json), so renaming it would change published checksums.
FORMER_DEFAULT_ROSTER_NAME = "Open Hypothesis (seed 000)"


@dataclass(frozen=True)
class DefaultEndpoint:
    display_name: str
    company: str
    protocol: str
    base_url_setting: str
    model_setting: str
    api_key_env: str
    is_grok: bool = False
    max_tokens_field: str = ModelEndpoint.MaxTokensField.MAX_COMPLETION_TOKENS
    system_role: str = ModelEndpoint.SystemRole.SYSTEM
    supports_json_mode: bool = True


ASTRA = DefaultEndpoint(
    "GPT-6 Astra", "OpenAI", "openai", "OPENAI_BASE_URL", "GPT6_ASTRA_MODEL", "OPENAI_API_KEY",
    system_role=ModelEndpoint.SystemRole.DEVELOPER,
)  # fmt: skip
GROK = DefaultEndpoint(
    "Grok 4.5", "xAI", "openai", "XAI_BASE_URL", "GROK_45_MODEL", "XAI_API_KEY",
    is_grok=True, max_tokens_field=ModelEndpoint.MaxTokensField.MAX_TOKENS,
)  # fmt: skip
# Anthropic's native JSON output needs a schema per request: the prompt asks for JSON and the reply is parsed.
OPUS = DefaultEndpoint(
    "Claude Opus 5.5", "Anthropic", "anthropic", "ANTHROPIC_BASE_URL", "CLAUDE_OPUS_55_MODEL", "ANTHROPIC_API_KEY",
    supports_json_mode=False,
)  # fmt: skip
SONNET = DefaultEndpoint(
    "Claude Sonnet 5.5", "Anthropic", "anthropic", "ANTHROPIC_BASE_URL", "CLAUDE_SONNET_55_MODEL", "ANTHROPIC_API_KEY",
    supports_json_mode=False,
)  # fmt: skip
ARGON = DefaultEndpoint(
    "Gemini 4 Argon", "Google", "gemini", "GEMINI_BASE_URL", "GEMINI_4_ARGON_MODEL", "GEMINI_API_KEY"
)
# The models DFM-Bench names: GPT-6 Luna judges inspiration by later literature, GPT-5.6 Sol holds the AI panel.
LUNA = DefaultEndpoint(
    "GPT-6 Luna", "OpenAI", "openai", "OPENAI_BASE_URL", "GPT6_LUNA_MODEL", "OPENAI_API_KEY",
    system_role=ModelEndpoint.SystemRole.DEVELOPER,
)  # fmt: skip
SOL = DefaultEndpoint(
    "GPT-5.6 Sol", "OpenAI", "openai", "OPENAI_BASE_URL", "GPT56_SOL_MODEL", "OPENAI_API_KEY",
    system_role=ModelEndpoint.SystemRole.DEVELOPER,
)  # fmt: skip

# Four generators (10 hypotheses each), stage 1 GPT-6 Astra, stage 2 Sonnet, Argon and Grok; Sonnet translates and
# judges novelty; GPT-6 Luna judges inspiration by later literature and GPT-5.6 Sol holds the AI panel's roles, as in
# DFM-Bench (docs/protocol.md#default-roster).
DEFAULT_MEMBERS = {
    RosterMember.Role.GENERATOR: [ASTRA, GROK, OPUS, ARGON],
    RosterMember.Role.STAGE1: [ASTRA],
    RosterMember.Role.STAGE2: [SONNET, ARGON, GROK],
    RosterMember.Role.TRANSLATOR: [SONNET],
    RosterMember.Role.NOVELTY: [SONNET],
    RosterMember.Role.INSPIRATION_JUDGE: [LUNA],
    # The AI review panel: separate prompts to one model family, as in the DFM-Bench profile; also its critique and
    # revision judge.
    RosterMember.Role.RUBRIC_JUDGE: [SOL],
    RosterMember.Role.DOMAIN_SCIENTIST: [SOL],
    RosterMember.Role.METHODS_REVIEWER: [SOL],
    RosterMember.Role.CRITIC: [SOL],
    RosterMember.Role.REVISION_JUDGE: [SOL],
    # The judges of development paths and whole research runs (the levels above a single hypothesis).
    RosterMember.Role.PATH_JUDGE: [SOL],
    RosterMember.Role.RUN_JUDGE: [SOL],
    # The fresh-context reference of the calibration's development diagnostics: the panel's model without a role.
    RosterMember.Role.REFERENCE_REVIEWER: [SOL],
}


def _simulator_base_url(protocol: str) -> str:
    base = f"http://127.0.0.1:{settings.SIMULATOR_PORT}"
    return f"{base}/v1" if protocol == ModelEndpoint.Protocol.OPENAI else base


def _endpoint_setup(spec: DefaultEndpoint) -> ModelEndpoint:
    """Where the endpoint points follows the environment on every call; limits edited in the admin are kept."""
    model_id = getattr(settings, spec.model_setting)
    simulated = not os.environ.get(spec.api_key_env)
    identity = {
        "company": spec.company,
        "protocol": spec.protocol,
        "api_key_env": spec.api_key_env,
        "is_grok": spec.is_grok,
        "is_simulated": simulated,
        "base_url": _simulator_base_url(spec.protocol) if simulated else getattr(settings, spec.base_url_setting),
        "model_id": f"simulated-{model_id}" if simulated else model_id,
    }
    limits = {
        "max_tokens": 32000,
        "max_tokens_field": spec.max_tokens_field,
        "system_role": spec.system_role,
        "supports_json_mode": spec.supports_json_mode,
        "concurrency_limit": 4,
        "timeout_seconds": 600,
    }
    endpoint = ModelEndpoint.objects.filter(display_name=spec.display_name).first()
    endpoint = endpoint or ModelEndpoint(display_name=spec.display_name, **limits)
    for name, value in identity.items():
        setattr(endpoint, name, value)
    try:
        endpoint.full_clean()
    except ValidationError as error:
        problems = "; ".join(f"{field}: {' '.join(messages)}" for field, messages in error.message_dict.items())
        raise CommandError(f"{spec.display_name}: {problems}") from None
    endpoint.save()
    return endpoint


@transaction.atomic
def roster_setup_default() -> Roster:
    """The protocol's roster with exactly its members; it becomes the default unless another roster is."""
    endpoints = {spec: _endpoint_setup(spec) for spec in (ASTRA, GROK, OPUS, SONNET, ARGON, LUNA, SOL)}
    roster = Roster.objects.filter(name=DEFAULT_ROSTER_NAME).first()
    roster = roster or Roster.objects.filter(name=FORMER_DEFAULT_ROSTER_NAME).first()
    roster = roster or Roster.objects.create(name=DEFAULT_ROSTER_NAME)
    if not Roster.objects.filter(is_default=True).exclude(pk=roster.pk).exists():
        roster.is_default = True
        roster.save(update_fields=["is_default"])
    wanted = set()
    for role, specs in DEFAULT_MEMBERS.items():
        for order, spec in enumerate(specs):
            member, _ = RosterMember.objects.update_or_create(
                roster=roster, role=role, endpoint=endpoints[spec], defaults={"order": order}
            )
            wanted.add(member.pk)
    roster.members.exclude(pk__in=wanted).delete()
    return roster


class Command(BaseCommand):
    help = "Create or update the default roster; providers without a key use the simulated server."

    def handle(self, *args, **options):
        roster = roster_setup_default()
        default = " (default)" if roster.is_default else ""
        self.stdout.write(f"Roster {roster.name}{default}:")
        for member in roster.members.select_related("endpoint"):
            endpoint = member.endpoint
            where = (
                f"SIMULATED ({endpoint.api_key_env} not set) at {endpoint.base_url}"
                if endpoint.is_simulated
                else f"{endpoint.base_url} as {endpoint.model_id}"
            )
            self.stdout.write(f"  {member.role:<10} {endpoint.display_name:<18} {where}")
