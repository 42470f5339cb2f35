from rest_framework.permissions import BasePermission

from reviewapp import roles


class IsCoordinator(BasePermission):
    message = "Only coordinators may do this."

    def has_permission(self, request, view):
        return roles.can_coordinate(request.user)


class CanReadAll(BasePermission):
    """Coordinators and analysts (read-only for analysts: pair with safe methods)."""

    message = "Only coordinators and analysts may read this."

    def has_permission(self, request, view):
        return roles.can_read_all(request.user)
