"""`make run` shows the AI panel on the demo cohort: load_demo queues the panel and the critique once, and only when
every model they ask is the simulated server."""

import io

from django.core.management import call_command

from reviewapp.models import BackgroundJob
from screening.llm.models import ModelEndpoint
from screening.management.commands.setup_roster import roster_setup_default

PROVIDER_KEYS = ("OPENAI_API_KEY", "XAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY")


def load_demo() -> str:
    out = io.StringIO()
    call_command("load_demo", stdout=out)
    return out.getvalue()


def test_load_demo_queues_the_simulated_panel_once(db, monkeypatch):
    for name in PROVIDER_KEYS:
        monkeypatch.delenv(name, raising=False)
    roster_setup_default()
    output = load_demo()
    assert "simulated AI review panel" in output
    assert sorted(BackgroundJob.objects.values_list("kind", flat=True)) == ["ai_critique", "ai_panel"]
    assert "simulated AI review panel" not in load_demo()
    assert BackgroundJob.objects.count() == 2


def test_load_demo_never_sends_the_demo_to_a_real_provider(db, monkeypatch):
    for name in PROVIDER_KEYS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-key-for-the-test")
    roster_setup_default()
    assert not ModelEndpoint.objects.get(display_name="GPT-6 Astra").is_simulated
    output = load_demo()
    assert "AI review panel" not in output and not BackgroundJob.objects.exists()


def test_without_a_roster_the_demo_loads_without_the_panel(db):
    assert "AI review panel" not in load_demo()
    assert not BackgroundJob.objects.exists()
