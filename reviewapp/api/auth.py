"""API: tokens. POST /api/v1/auth/token {username, password, name?} → {"token", "id", "expires_at"};
GET /api/v1/auth/tokens (own; a coordinator may add ?user=<id>); DELETE /api/v1/auth/tokens/<id>."""

from django.contrib.auth import authenticate
from django.urls import path
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from reviewapp.core import roles
from reviewapp.core.errors import ServiceError, validated, validated_query
from reviewapp.core.paging import PageFilter, page_data
from reviewapp.models import ApiToken
from reviewapp.selectors.users import api_tokens
from reviewapp.services.accounts import token_create, token_revoke


class TokenNameInput(serializers.Serializer):
    """What names a new token, here and on the API tokens page (reviewapp.views.accounts)."""

    name = serializers.CharField(required=False, allow_blank=True, default="", max_length=100)


class TokenCreateApi(APIView):
    authentication_classes = []
    permission_classes = [AllowAny]

    class InputSerializer(TokenNameInput):
        username = serializers.CharField()
        password = serializers.CharField(trim_whitespace=False)

    class OutputSerializer(serializers.Serializer):
        token = serializers.CharField(help_text="the key: shown once, stored only as a hash")
        id = serializers.IntegerField()
        expires_at = serializers.DateTimeField()

    error_codes = {400: ("invalid_credentials",), 403: ("password_change_required",), 429: ("locked_out",)}

    def post(self, request):
        data = validated(self.InputSerializer, request.data)
        # django-axes reads and marks the Django request, not DRF's wrapper; when it locks the username or address,
        # its middleware answers 429 in the API's format (reviewapp.views.accounts.locked_out).
        user = authenticate(request._request, username=data["username"], password=data["password"])
        if user is None or not user.is_active:
            raise ServiceError(
                "Unknown username or wrong password.", code="invalid_credentials", status=status.HTTP_400_BAD_REQUEST
            )
        token, key = token_create(user=user, name=data["name"])
        return Response(self.OutputSerializer({"token": key, "id": token.pk, "expires_at": token.expires_at}).data)


class TokenOutputSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username")

    class Meta:
        model = ApiToken
        fields = ["id", "username", "name", "prefix", "created_at", "expires_at", "last_used_at"]


class TokenListApi(APIView):
    """Your own tokens; a coordinator may ask for one account's (?user=<id>) or everyone's (?user=all)."""

    class FilterSerializer(PageFilter):
        # An id a 64-bit key can hold (18 digits always can), or "all".
        user = serializers.RegexField(
            r"^(all|[1-9][0-9]{0,17})$", required=False, help_text="coordinators: an account id or “all”"
        )

    OutputSerializer = TokenOutputSerializer
    paged = True
    error_codes = {403: ("forbidden",)}

    def get(self, request):
        filters = validated_query(self.FilterSerializer, request.query_params)
        owner = filters.get("user")
        if owner is not None and not roles.can_coordinate(request.user):
            raise ServiceError("forbidden", "Only coordinators see other accounts' tokens.", status=403)
        tokens = api_tokens(user_id=None if owner == "all" else int(owner) if owner else request.user.pk)
        return Response(page_data(TokenOutputSerializer, tokens, request.query_params, filters=filters))


class TokenRevokeApi(APIView):
    @extend_schema(responses={204: None})
    def delete(self, request, token_id: int):
        token_revoke(token_id=token_id, user=request.user, may_revoke_others=roles.can_coordinate(request.user))
        return Response(status=status.HTTP_204_NO_CONTENT)


urlpatterns = [
    path("auth/token", TokenCreateApi.as_view(), name="api-token"),
    path("auth/tokens", TokenListApi.as_view(), name="api-tokens"),
    path("auth/tokens/<int:token_id>", TokenRevokeApi.as_view(), name="api-token-revoke"),
]
