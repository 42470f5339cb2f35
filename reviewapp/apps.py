from django.apps import AppConfig
from django.db.models.signals import post_migrate


def create_role_groups(sender, using="default", **kwargs):
    """The three roles are groups holding one permission each.

    Made after every migrate and flush (both send post_migrate), so a database never lacks them.
    """
    from django.contrib.auth.models import Group, Permission

    from reviewapp.roles import ROLE_PERMISSION

    for role, codename in ROLE_PERMISSION.items():
        group, _ = Group.objects.using(using).get_or_create(name=role)
        group.permissions.add(
            Permission.objects.using(using).get(content_type__app_label="reviewapp", codename=codename)
        )


class ReviewappConfig(AppConfig):
    name = "reviewapp"
    verbose_name = "Review"

    def ready(self):
        # Django creates permissions in its own post_migrate handler (auth app), which runs before ours.
        post_migrate.connect(create_role_groups, sender=self)
