"""Reads about people: who holds which role."""

from django.contrib.auth.models import User
from django.db.models import Count, Q, QuerySet

from reviewapp.core.errors import NotFound, ServiceError
from reviewapp.core.roles import REVIEWER, ROLE_PERMISSION, ROLES
from reviewapp.models import ApiToken


def _holding(codename: str) -> Q:
    return Q(groups__permissions__codename=codename, groups__permissions__content_type__app_label="reviewapp") | Q(
        user_permissions__codename=codename, user_permissions__content_type__app_label="reviewapp"
    )


def reviewer_queryset() -> QuerySet[User]:
    """Active accounts holding the reviewer role (given through the group or directly), by username."""
    return User.objects.filter(_holding(ROLE_PERMISSION[REVIEWER]), is_active=True).distinct().order_by("username")


def reviewer_choices() -> QuerySet[User]:
    """The reviewers a form offers: their ids and usernames."""
    return reviewer_queryset().only("pk", "username")


def reviewers_with_ids(ids) -> list[User]:
    """The active reviewers among these account ids, by username (ids of anyone else are left out)."""
    return list(reviewer_queryset().filter(pk__in=ids))


def user_get(*, user_id: int) -> User:
    """One account; NotFound when there is none."""
    user = User.objects.filter(pk=user_id).first()
    if user is None:
        raise NotFound(f"There is no account {user_id}.")
    return user


def api_tokens(*, user_id: int | None) -> QuerySet[ApiToken]:
    """API tokens, newest first, with their owners: one account's, or everyone's (None)."""
    tokens = ApiToken.objects.select_related("user").order_by("-created_at")
    return tokens if user_id is None else tokens.filter(user_id=user_id)


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
