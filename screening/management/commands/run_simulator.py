"""Serve the simulated model server (all three wire protocols) until interrupted."""

import json
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from screening.llm.simulator import SimulatedModelServer, SimulatorConfig


class Command(BaseCommand):
    help = "Serve simulated model replies on 127.0.0.1 (OpenAI-compatible, Anthropic and Gemini protocols)."

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=settings.SIMULATOR_PORT)
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument(
            "--config",
            default="",
            help='a JSON object or a JSON file, e.g. {"false_share": 0.5, "rate_limit_share": 0.1}; '
            "SIMULATOR_<FIELD> environment variables give the defaults",
        )

    def handle(self, *args, port, host, config, **options):
        try:
            text = config if config.lstrip().startswith("{") or not config else Path(config).read_text()
            simulator_config = SimulatorConfig.from_env(json.loads(text) if text else None)
        except (OSError, ValueError, TypeError) as exc:
            raise CommandError(f"bad simulator config: {exc}") from exc
        try:
            server = SimulatedModelServer((host, port), simulator_config)
        except OSError as exc:
            raise CommandError(
                f"The simulated model server cannot listen on {host}:{port} ({exc.strerror or exc}): the port is "
                "taken. Set SIMULATOR_PORT to a free port and start again."
            ) from None
        self.stdout.write(f"Simulated model server (not a real model) at {server.url}: {simulator_config}")
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
