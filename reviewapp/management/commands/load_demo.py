from django.conf import settings
from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError

from reviewapp.demo import demo_load, demo_panel_start
from reviewapp.services.cohorts import CohortError
from reviewapp.services.imports import ImportInvalid
from reviewapp.services.reviews import ReviewError


class Command(BaseCommand):
    help = "Load the demo cohort (biology of ageing, written for demonstration) and print fresh demo logins."

    def handle(self, *args, **options):
        try:
            loaded = demo_load()
        except ImportInvalid as error:
            problems = "\n".join(
                f"  {p['table']} row {p['row'] or '-'}, {p['field'] or 'file'}: {p['message']}" for p in error.rows
            )
            raise CommandError(f"The demo file could not be imported:\n{problems}") from error
        except (CohortError, ReviewError) as error:
            raise CommandError(f"The demo could not be loaded: {error}") from error

        cohort = loaded.cohort
        state = "created" if loaded.cohort_created else "already present"
        tasks = cohort.proposals.values("task").distinct().count()
        lines = [
            "",
            f"Demo cohort “{cohort.name}” ({state}): {cohort.proposals.count()} proposals over {tasks} research "
            f"tasks, {cohort.reviewers_per_proposal} reviewers per proposal, {cohort.get_status_display().lower()}.",
            "",
            f"Open http://127.0.0.1:{settings.PORT}/ and log in with a demo account:",
            f"  {'username':<18} {'role':<12} password",
            *(f"  {login.username:<18} {login.role:<12} {login.password}" for login in loaded.logins),
            "These passwords are new each time `make run` starts (each run of load_demo); earlier ones stop working.",
        ]
        if demo_panel_start(cohort):
            lines += [
                "",
                "The simulated AI review panel and its pairwise critique of the demo cohort are queued; the worker "
                "fills the cohort's AI panel pages within a minute (labelled simulated).",
            ]
        if not User.objects.filter(is_superuser=True).exists():
            lines.append("No administrator account exists yet; create one with `python manage.py createsuperuser`.")
        self.stdout.write("\n".join([*lines, ""]))
