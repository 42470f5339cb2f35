"""API authentication by token: `Authorization: Token <key>` (reviewapp.services.accounts).

A module of its own: DRF imports authentication classes while it defines APIView, so this module imports no view.
"""

from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header

from reviewapp.services.accounts import token_user

KEYWORD = "Token"


class ApiTokenAuthentication(BaseAuthentication):
    def authenticate(self, request):
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() != KEYWORD.lower().encode():
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed("The Authorization header must be “Token <key>”.")
        try:
            key = parts[1].decode()
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("The token is not valid.") from None
        user = token_user(key)
        if user is None:
            raise exceptions.AuthenticationFailed(
                "The token is not valid: it is unknown, expired or revoked, or the password changed since it was made."
            )
        return user, key

    def authenticate_header(self, request):
        return KEYWORD
