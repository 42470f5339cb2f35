"""The three roles and every check of them: for code, for page views (403) and for API views (DRF permissions).

The roles are Django groups (made after every migrate, see reviewapp.apps), each holding one permission of the review
app; a superuser holds them all.
"""

from django.core.exceptions import PermissionDenied
from rest_framework.permissions import BasePermission

REVIEWER, COORDINATOR, ANALYST = "reviewer", "coordinator", "analyst"
ROLES = (REVIEWER, COORDINATOR, ANALYST)
ROLE_PERMISSION = {REVIEWER: "review", COORDINATOR: "coordinate", ANALYST: "analyse"}
PERMISSION_APP = "reviewapp"


def can_review(user) -> bool:
    return user.is_authenticated and user.has_perm(f"{PERMISSION_APP}.review")


def can_coordinate(user) -> bool:
    return user.is_authenticated and user.has_perm(f"{PERMISSION_APP}.coordinate")


def can_read_all(user) -> bool:
    """Coordinators and analysts read every cohort; analysts only read."""
    return user.is_authenticated and (
        user.has_perm(f"{PERMISSION_APP}.coordinate") or user.has_perm(f"{PERMISSION_APP}.analyse")
    )


def require_read_all(user) -> None:
    """For views: 403 unless the user is a coordinator or an analyst."""
    if not can_read_all(user):
        raise PermissionDenied("Only coordinators and analysts may see this page.")


def require_coordinator(user) -> None:
    """For views: 403 unless the user is a coordinator."""
    if not can_coordinate(user):
        raise PermissionDenied("Only coordinators may do this.")


class IsCoordinator(BasePermission):
    message = "Only coordinators may do this."

    def has_permission(self, request, view):
        return can_coordinate(request.user)


class CanReadAll(BasePermission):
    """Coordinators and analysts (read-only for analysts: pair with safe methods)."""

    message = "Only coordinators and analysts may read this."

    def has_permission(self, request, view):
        return can_read_all(request.user)
