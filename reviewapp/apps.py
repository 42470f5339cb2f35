from django.apps import AppConfig
from django.apps import apps as global_apps
from django.core import checks
from django.db.models.signals import post_migrate

from reviewapp.core.roles import PERMISSION_APP, ROLE_PERMISSION


def create_role_groups(sender, apps=global_apps, using="default", **kwargs):
    """The three roles are groups holding one permission each.

    Made after every migrate and flush (both send post_migrate), so a database never lacks them.
    """
    group_model, permission_model = apps.get_model("auth", "Group"), apps.get_model("auth", "Permission")
    for role, codename in ROLE_PERMISSION.items():
        group, _ = group_model.objects.using(using).get_or_create(name=role)
        group.permissions.add(
            permission_model.objects.using(using).get(content_type__app_label=PERMISSION_APP, codename=codename)
        )


class ReviewappConfig(AppConfig):
    name = "reviewapp"
    verbose_name = "Review"

    def ready(self):
        # Django creates permissions in its own post_migrate handler (auth app), which runs before ours.
        post_migrate.connect(create_role_groups, sender=self)
        # Registers the room's Celery tasks, which services send by name (reviewapp.core.queue), and the sweep of
        # its background jobs.
        from reviewapp import tasks  # noqa: F401
        from reviewapp.core.claims import sweep_register
        from reviewapp.core.secret_key import published_secret_key_check

        checks.register(published_secret_key_check, checks.Tags.security, deploy=True)
        from reviewapp.services.imports import staged_imports_sweep
        from reviewapp.services.jobs import jobs_sweep

        sweep_register("background jobs", jobs_sweep)
        sweep_register("staged imports", staged_imports_sweep)
