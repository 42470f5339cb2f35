from django.db import migrations

ROLES = (
    ("reviewer", "review", "Can review assigned proposals"),
    ("coordinator", "coordinate", "Can import, assign, export and unblind"),
    ("analyst", "analyse", "Can read every cohort, review and analysis"),
)


def create_role_groups(apps, schema_editor):
    # Permissions are normally created after migrations run; create ours here so the groups can hold them.
    ContentType = apps.get_model("contenttypes", "ContentType")
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    cohort_type, _ = ContentType.objects.get_or_create(app_label="reviewapp", model="cohort")
    for role, codename, name in ROLES:
        permission, _ = Permission.objects.get_or_create(
            content_type=cohort_type, codename=codename, defaults={"name": name}
        )
        group, _ = Group.objects.get_or_create(name=role)
        group.permissions.add(permission)


class Migration(migrations.Migration):
    dependencies = [
        ("reviewapp", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]
    operations = [migrations.RunPython(create_role_groups, migrations.RunPython.noop)]
