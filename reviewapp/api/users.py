"""API: accounts. GET /api/v1/users lists them; POST /api/v1/users {username, email, role} → the account, its id
and its one-time password."""

from django.urls import path
from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from reviewapp.core.errors import validated
from reviewapp.core.paging import PageFilter, page_data
from reviewapp.core.roles import ROLES, IsCoordinator
from reviewapp.core.routing import by_method
from reviewapp.selectors.users import user_list, user_roles
from reviewapp.services.accounts import address_unlock, user_set_active, user_unlock
from reviewapp.services.users import user_create


class UserListApi(APIView):
    """Every account, by username, with its id (for `POST /api/v1/users/{id}/active` and `?user=` of the tokens)."""

    permission_classes = [IsCoordinator]
    FilterSerializer = PageFilter
    paged = True

    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        username = serializers.CharField()
        email = serializers.CharField()
        roles = serializers.SerializerMethodField()
        active = serializers.BooleanField(source="is_active")
        last_login = serializers.DateTimeField(allow_null=True)

        def get_roles(self, account) -> list[str]:
            return user_roles(account)

    def get(self, request):
        return Response(page_data(self.OutputSerializer, user_list(), request.query_params))


class UserCreateApi(APIView):
    permission_classes = [IsCoordinator]

    class InputSerializer(serializers.Serializer):
        username = serializers.CharField(max_length=150)
        email = serializers.CharField(required=False, allow_blank=True, default="", max_length=254)
        role = serializers.ChoiceField(choices=ROLES)

    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        username = serializers.CharField()
        email = serializers.CharField()
        role = serializers.CharField()
        password = serializers.CharField(help_text="one-time: its owner chooses their own at the first login")

    success_status = 201
    error_codes = {400: ("invalid_user",)}

    def post(self, request):
        data = validated(self.InputSerializer, request.data)
        account, password = user_create(**data, user=request.user)

        body = {"id": account.pk, "username": account.username, "email": account.email, "role": data["role"]}
        # The only time the password leaves the server; it is stored hashed.
        return Response(self.OutputSerializer({**body, "password": password}).data, status=status.HTTP_201_CREATED)


class UserUnlockApi(APIView):
    """POST /api/v1/users/unlock {username} or {address}: clear a username's failed logins, or a client address's
    (django-axes)."""

    permission_classes = [IsCoordinator]

    class InputSerializer(serializers.Serializer):
        username = serializers.CharField(max_length=150, required=False)
        address = serializers.CharField(max_length=45, required=False)

        def validate(self, attrs):
            if len(attrs) != 1:
                raise serializers.ValidationError("Give either a username or an address.")
            return attrs

    # The schema says what `validate` checks: one of the two.
    class ByUsernameSerializer(serializers.Serializer):
        username = serializers.CharField(max_length=150)

    class ByAddressSerializer(serializers.Serializer):
        address = serializers.CharField(max_length=45, help_text="an IPv4 or IPv6 address")

    error_codes = {400: ("invalid_address",)}

    class OutputSerializer(serializers.Serializer):
        username = serializers.CharField(required=False, help_text="the username unlocked")
        address = serializers.CharField(required=False, help_text="the address (IPv6: its network) unlocked")
        cleared = serializers.IntegerField(help_text="failed-login records cleared")

    @extend_schema(
        request=PolymorphicProxySerializer(
            component_name="UserUnlockInput",
            serializers=[ByUsernameSerializer, ByAddressSerializer],
            resource_type_field_name=None,
        )
    )
    def post(self, request):
        data = validated(self.InputSerializer, request.data)
        if "address" in data:
            network, cleared = address_unlock(address=data["address"], user=request.user)
            return Response(self.OutputSerializer({"address": network, "cleared": cleared}).data)
        cleared = user_unlock(**data, user=request.user)
        return Response(self.OutputSerializer({"username": data["username"], "cleared": cleared}).data)


class UserActiveApi(APIView):
    """POST /api/v1/users/<id>/active {active}: deactivate (revoking the account's API tokens) or reactivate."""

    permission_classes = [IsCoordinator]

    class InputSerializer(serializers.Serializer):
        active = serializers.BooleanField()

    class OutputSerializer(serializers.Serializer):
        username = serializers.CharField()
        active = serializers.BooleanField()

    error_codes = {400: ("invalid_request",)}

    def post(self, request, account_id: int):
        data = validated(self.InputSerializer, request.data)
        account = user_set_active(account_id=account_id, active=data["active"], user=request.user)
        return Response(self.OutputSerializer({"username": account.username, "active": account.is_active}).data)


urlpatterns = [
    path("users", by_method(get=UserListApi, post=UserCreateApi), name="api-users"),
    path("users/unlock", UserUnlockApi.as_view(), name="api-user-unlock"),
    path("users/<int:account_id>/active", UserActiveApi.as_view(), name="api-user-active"),
]
