"""Reads about people: who holds which role."""

from django.contrib.auth.models import User
from django.db.models import Count, Q, QuerySet

from reviewapp.core.errors import ServiceError
from reviewapp.core.roles import REVIEWER, ROLE_PERMISSION, ROLES


def _holding(codename: str) -> Q:
    return Q(groups__permissions__codename=codename, groups__permissions__content_type__app_label="reviewapp") | Q(
        user_permissions__codename=codename, user_permissions__content_type__app_label="reviewapp"
    )


def reviewer_queryset() -> QuerySet[User]:
    """Active accounts holding the reviewer role (given through the group or directly), by username."""
    return User.objects.filter(_holding(ROLE_PERMISSION[REVIEWER]), is_active=True).distinct().order_by("username")


def user_list() -> QuerySet[User]:
    """Every account, by username, with its groups loaded (see `user_roles`) and its number of API tokens."""
    return User.objects.order_by("username").prefetch_related("groups").annotate(api_token_count=Count("api_tokens"))


def user_roles(user: User) -> list[str]:
    """The product roles a user holds through their groups (uses prefetched groups)."""
    return [group.name for group in user.groups.all() if group.name in ROLES]


def users_named(usernames: list[str]) -> list[User]:
    """The accounts with these usernames, in the same order; ServiceError naming any that does not exist."""
    users = {user.username: user for user in User.objects.filter(username__in=usernames)}
    unknown = [name for name in usernames if name not in users]
    if unknown:
        raise ServiceError(f"No account is named {', '.join(unknown)}.", code="unknown_reviewer")
    return [users[name] for name in usernames]


def reviewer_named(username: str) -> User:
    """The active reviewer with this username; ServiceError when there is none."""
    reviewer = reviewer_queryset().filter(username=username).first()
    if reviewer is None:
        raise ServiceError(f"No reviewer is named “{username}”.", code="unknown_reviewer")
    return reviewer
