from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError

from reviewapp.demo.banner import banner_text, banner_write
from reviewapp.demo.cohort import demo_load
from reviewapp.demo.work import demo_work_start
from reviewapp.services.cohorts import CohortError
from reviewapp.services.imports import ImportInvalid
from reviewapp.services.reviews import ReviewError


class Command(BaseCommand):
    help = (
        "Load the demo (biology of ageing, written for demonstration), queue its simulated automated work and write "
        "fresh demo logins to the start-up banner file."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--no-logins",
            action="store_true",
            help="write the logins only to the banner file (bin/run-local prints it once the servers are up)",
        )

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
        ]
        work = demo_work_start(cohort)
        if work.queued:
            lines += ["Queued for the worker (simulated models, labelled simulated wherever they show):"]
            lines += [f"  - {label}" for label in work.queued]
            lines += ["Their pages fill within a few minutes of the start."]
        lines += [f"Not queued: {reason}" for reason in work.skipped]
        if not User.objects.filter(is_superuser=True).exists():
            lines.append("No administrator account exists yet; create one with `python manage.py createsuperuser`.")
        banner = banner_text(loaded.logins)
        path = banner_write(banner)
        if options["no_logins"]:
            lines.append(f"The demo logins are in {path}; they are printed once the servers are up.")
        else:
            lines += ["", banner.rstrip("\n")]
        self.stdout.write("\n".join([*lines, ""]))
