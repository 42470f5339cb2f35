"""API: token authentication. POST /api/v1/auth/token {username, password} → {"token"}."""

from django.contrib.auth import authenticate
from django.urls import path
from rest_framework import serializers, status
from rest_framework.authtoken.models import Token
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from reviewapp.core.errors import ServiceError, validated


class TokenCreateApi(APIView):
    authentication_classes = []
    permission_classes = [AllowAny]

    class InputSerializer(serializers.Serializer):
        username = serializers.CharField()
        password = serializers.CharField(trim_whitespace=False)

    def post(self, request):
        data = validated(self.InputSerializer, request.data)
        user = authenticate(request, **data)
        if user is None or not user.is_active:
            raise ServiceError(
                "Unknown username or wrong password.", code="invalid_credentials", status=status.HTTP_400_BAD_REQUEST
            )
        token, _ = Token.objects.get_or_create(user=user)
        return Response({"token": token.key})


urlpatterns = [path("auth/token", TokenCreateApi.as_view(), name="api-token")]
