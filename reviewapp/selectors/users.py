"""Reads about people: who holds which role."""

from django.contrib.auth.models import User
from django.db.models import Q, QuerySet

from reviewapp.roles import REVIEWER, ROLE_PERMISSION, ROLES


def _holding(codename: str) -> Q:
    return Q(groups__permissions__codename=codename, groups__permissions__content_type__app_label="reviewapp") | Q(
        user_permissions__codename=codename, user_permissions__content_type__app_label="reviewapp"
    )


def reviewer_queryset() -> QuerySet[User]:
    """Active accounts holding the reviewer role (given through the group or directly), by username."""
    return User.objects.filter(_holding(ROLE_PERMISSION[REVIEWER]), is_active=True).distinct().order_by("username")


def user_list() -> QuerySet[User]:
    """Every account, by username, with its groups loaded (see `user_roles`)."""
    return User.objects.order_by("username").prefetch_related("groups")


def user_roles(user: User) -> list[str]:
    """The product roles a user holds through their groups (uses prefetched groups)."""
    return [group.name for group in user.groups.all() if group.name in ROLES]
