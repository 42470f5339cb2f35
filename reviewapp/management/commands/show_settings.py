"""`manage.py show_settings NAME...`: the value of each named setting, one a line, as the settings module resolved it
(the environment, then the `.env` file, then the default). `bin/run-local` reads its addresses and ports this way,
so the scripts and the application read every setting from one place."""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Print the value of each named setting, one a line."

    def add_arguments(self, parser):
        parser.add_argument("names", nargs="+", metavar="NAME")

    def handle(self, *args, names, **options):
        missing = [name for name in names if not hasattr(settings, name)]
        if missing:
            raise CommandError(f"No such setting: {', '.join(missing)}.")
        for name in names:
            value = str(getattr(settings, name))
            if "\n" in value:
                raise CommandError(f"The setting {name} holds a line break; it cannot be printed one a line.")
            self.stdout.write(value)
