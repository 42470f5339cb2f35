"""The three roles are Django groups (made after every migrate, see reviewapp.apps); each holds one permission.

A superuser holds them all.
"""

from django.core.exceptions import PermissionDenied

REVIEWER, COORDINATOR, ANALYST = "reviewer", "coordinator", "analyst"
ROLES = (REVIEWER, COORDINATOR, ANALYST)
ROLE_PERMISSION = {REVIEWER: "review", COORDINATOR: "coordinate", ANALYST: "analyse"}


def can_review(user) -> bool:
    return user.is_authenticated and user.has_perm("reviewapp.review")


def can_coordinate(user) -> bool:
    return user.is_authenticated and user.has_perm("reviewapp.coordinate")


def can_read_all(user) -> bool:
    """Coordinators and analysts read every cohort; analysts only read."""
    return user.is_authenticated and (user.has_perm("reviewapp.coordinate") or user.has_perm("reviewapp.analyse"))


def require_read_all(user) -> None:
    """For views: 403 unless the user is a coordinator or an analyst."""
    if not can_read_all(user):
        raise PermissionDenied("Only coordinators and analysts may see this page.")


def require_coordinator(user) -> None:
    """For views: 403 unless the user is a coordinator."""
    if not can_coordinate(user):
        raise PermissionDenied("Only coordinators may do this.")
