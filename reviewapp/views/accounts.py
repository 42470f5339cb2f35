"""Pages and request handling of signing in: the password an account must change first, the lockout answer of
django-axes, one's own API tokens, and a coordinator's unlocking, deactivating and revoking."""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from reviewapp.api.auth import TokenNameInput
from reviewapp.api.users import UserActiveApi, UserUnlockApi
from reviewapp.core import roles
from reviewapp.core.errors import page_errors, validated
from reviewapp.core.requests import API_PREFIX, api_error
from reviewapp.selectors.users import api_tokens, user_get
from reviewapp.services.accounts import (
    address_unlock,
    password_change_due,
    password_changed,
    token_create,
    token_revoke,
    tokens_revoke_all,
    user_set_active,
    user_unlock,
)

# The session remembers, from the login on, that the password is due: no query per request.
DUE = "password_change_due"


class PasswordChangeFirstMiddleware:
    """An account with a password someone else chose reaches only the password change (and logging out) until its
    owner has chosen their own; the API answers 403 password_change_required."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        allowed = (reverse("password_change"), reverse("password_change_done"), reverse("logout"), settings.STATIC_URL)
        if request.session.get(DUE) and not request.path.startswith(allowed) and request.user.is_authenticated:
            if request.path.startswith(API_PREFIX):
                detail = "Choose your own password on the web (Password) before using the API."
                return api_error(403, detail, code="password_change_required")
            return redirect("password_change")
        return self.get_response(request)


class LoginView(auth_views.LoginView):
    """Django's login, which notes in the session when the account must choose its own password first."""

    def form_valid(self, form):
        response = super().form_valid(form)
        if password_change_due(self.request.user):
            self.request.session[DUE] = True
        return response


class PasswordChangeView(auth_views.PasswordChangeView):
    """Django's password change, which also ends what was due and the tokens made under the old password."""

    def get_context_data(self, **kwargs):
        return {**super().get_context_data(**kwargs), "password_change_due": password_change_due(self.request.user)}

    def form_valid(self, form):
        response = super().form_valid(form)
        password_changed(user=self.request.user)
        self.request.session.pop(DUE, None)
        return response


def locked_out(request, original_response=None, credentials=None):
    """django-axes' lockout answer (AXES_LOCKOUT_CALLABLE): 429 with Retry-After; JSON for the API."""
    seconds = int(settings.AXES_COOLOFF_TIME.total_seconds())
    if request.path.startswith(API_PREFIX):
        detail = (
            f"Too many failed logins: this account or address is locked for {seconds // 60} minutes. "
            "A coordinator can unlock it."
        )
        response = api_error(429, detail, code="locked_out")
    else:
        response = render(request, "registration/locked_out.html", {"minutes": seconds // 60}, status=429)
    response["Retry-After"] = str(seconds)
    return response


@never_cache  # the answer may carry a new token
@login_required
def token_list_page(request):
    """One's own API tokens: make one (its key shown once), see when each was used, revoke."""
    context = {"new_key": None}
    if request.method == "POST":
        with page_errors(request):
            values = validated(TokenNameInput, request.POST)
            token, context["new_key"] = token_create(user=request.user, name=values["name"])
    context["tokens"] = api_tokens(user_id=request.user.pk)
    context["token_days"] = settings.OH_API_TOKEN_DAYS
    return render(request, "registration/tokens.html", context)


@login_required
@require_POST
def token_revoke_page(request, token_id: int):
    with page_errors(request):
        token_revoke(token_id=token_id, user=request.user, may_revoke_others=roles.can_coordinate(request.user))
        messages.success(request, "The token was revoked.")
    return redirect(request.POST.get("next") == "people" and "user-list" or "tokens")


@login_required
@require_POST
def user_unlock_page(request):
    """Unlock a username, or (field `address`) a client address."""
    roles.require_coordinator(request.user)
    with page_errors(request):
        values = validated(UserUnlockApi.InputSerializer, request.POST)
        if "address" in values:
            network, _ = address_unlock(address=values["address"], user=request.user)
            messages.success(request, f"Logins from {network} are possible again.")
        else:
            user_unlock(username=values["username"], user=request.user)
            messages.success(request, f"{values['username']} can log in again.")
    return redirect("user-list")


@login_required
@require_POST
def user_active_page(request, account_id: int):
    roles.require_coordinator(request.user)
    with page_errors(request):
        active = validated(UserActiveApi.InputSerializer, request.POST)["active"]
        account = user_set_active(account_id=account_id, active=active, user=request.user)
        state = "reactivated" if account.is_active else "deactivated; its API tokens were revoked"
        messages.success(request, f"{account.username} was {state}.")
    return redirect("user-list")


@login_required
@require_POST
def user_tokens_revoke_page(request, account_id: int):
    roles.require_coordinator(request.user)
    account = user_get(user_id=account_id)
    revoked = tokens_revoke_all(owner=account)
    messages.success(request, f"{revoked} API token(s) of {account.username} revoked.")
    return redirect("user-list")


urlpatterns = [
    path("accounts/login/", LoginView.as_view(), name="login"),
    path("accounts/password_change/", PasswordChangeView.as_view(), name="password_change"),
    path("accounts/tokens/", token_list_page, name="tokens"),
    path("accounts/tokens/<int:token_id>/revoke/", token_revoke_page, name="token-revoke"),
    path("people/unlock/", user_unlock_page, name="user-unlock"),
    path("people/<int:account_id>/active/", user_active_page, name="user-active"),
    path("people/<int:account_id>/tokens/revoke/", user_tokens_revoke_page, name="user-tokens-revoke"),
]
