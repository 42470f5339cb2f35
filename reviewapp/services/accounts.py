"""Signing in: login throttling (django-axes), API tokens, and passwords an account must change first.

- Throttling: django-axes counts failed logins of the web login, the admin and POST /api/v1/auth/token. A username is
  locked after AXES_FAILURE_LIMIT failures within AXES_COOLOFF_TIME, an address after OH_LOGIN_ADDRESS_FAILURE_LIMIT
  failures over any usernames (`LoginThrottle`); coordinators unlock a username with `user_unlock` and an address
  with `address_unlock` (`locked_usernames` and `locked_addresses` list what is locked now). A good login clears
  only that account's failures from its address, never those of other usernames.
- API tokens: `token_create` gives a key once and stores its sha256; `token_user` reads the user of a key, refusing
  one that expired, was revoked, or was made under a password since changed. Deactivating an account and the demo's
  new passwords revoke its tokens.
- A password a coordinator handed out is one-time: `PendingPasswordChange` marks the account until its owner sets
  their own (`password_changed`).
"""

import hashlib
import ipaddress
import secrets
from datetime import timedelta

from axes.handlers.database import AxesDatabaseHandler
from axes.models import AccessAttempt
from axes.utils import reset
from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from reviewapp.core.errors import NotFound, ServiceError
from reviewapp.core.requests import client_network
from reviewapp.models import ApiToken, AuditEvent, PendingPasswordChange

TOKEN_PREFIX = "oh_"


class LoginThrottle(AxesDatabaseHandler):
    """django-axes' database handler with a limit of its own per lockout parameter: the username's
    (AXES_FAILURE_LIMIT) and the address's (OH_LOGIN_ADDRESS_FAILURE_LIMIT, higher: people behind one address share
    it). Axes compares the failures it is given with AXES_FAILURE_LIMIT, so the address's count is scaled to it."""

    def get_failures(self, request, credentials=None) -> int:
        username_limit = settings.AXES_FAILURE_LIMIT
        limits = {"username": username_limit, "ip_address": settings.OH_LOGIN_ADDRESS_FAILURE_LIMIT}
        counts = []
        for parameter, attempts in zip(
            settings.AXES_LOCKOUT_PARAMETERS, self.get_user_attempts(request, credentials), strict=False
        ):
            failures = sum(attempts.values_list("failures_since_start", flat=True))
            counts.append(failures * username_limit // limits.get(parameter, username_limit))
        return max(counts, default=0)

    def user_logged_in(self, sender, request, user, **kwargs):
        """A good login clears only the failures of the account that logged in, from the address it logged in from
        (axes' own reset on success, AXES_RESET_ON_SUCCESS, would clear every failure of the address: one's own good
        login would then wipe the guesses at someone else's password)."""
        super().user_logged_in(sender, request, user, **kwargs)
        AccessAttempt.objects.filter(username=user.get_username(), ip_address=request.axes_ip_address).delete()


def _locked(parameter: str, limit: int) -> list[dict]:
    """Values of a lockout parameter (username, ip_address) locked now: their failures within the cool-off reach the
    limit. [{"value", "failures", "until"}], the most recent first."""
    since = timezone.now() - settings.AXES_COOLOFF_TIME
    rows: dict[str, dict] = {}
    attempts = AccessAttempt.objects.filter(attempt_time__gte=since).exclude(**{f"{parameter}__isnull": True})
    for attempt in attempts.order_by("-attempt_time"):
        value = getattr(attempt, parameter)
        if not value:
            continue
        row = rows.setdefault(
            value, {"value": value, "failures": 0, "until": attempt.attempt_time + settings.AXES_COOLOFF_TIME}
        )
        row["failures"] += attempt.failures_since_start
    return [row for row in rows.values() if row["failures"] >= limit]


def locked_usernames() -> list[dict]:
    """Usernames locked now: [{"value", "failures", "until"}], the most recent first."""
    return _locked("username", settings.AXES_FAILURE_LIMIT)


def locked_addresses() -> list[dict]:
    """Client addresses locked now, after OH_LOGIN_ADDRESS_FAILURE_LIMIT failures over any usernames (an IPv6 client
    by its network, as the lock counts it): [{"value", "failures", "until"}], the most recent first."""
    return _locked("ip_address", settings.OH_LOGIN_ADDRESS_FAILURE_LIMIT)


def user_unlock(*, username: str, user) -> int:
    """Clear a username's failed logins (from every address), so its owner can log in again; audit-logged."""
    cleared = reset(username=username)
    AuditEvent.objects.create(
        actor=user, action="login_unlock", target_type="username", target_id=username[:50], data={"cleared": cleared}
    )
    return cleared


def address_unlock(*, address: str, user) -> tuple[str, int]:
    """Clear the failed logins from a client address (any address of an IPv6 network counts for the whole network,
    as the lock does), so the people behind it can log in again; audit-logged. Returns (the address as the lock
    counts it, how many records were cleared)."""
    try:
        ipaddress.ip_address(address.strip().strip("[]"))
    except ValueError:
        raise ServiceError(f"“{address}” is not an IP address.", code="invalid_address") from None
    network = client_network(address)
    cleared = reset(ip=network)
    AuditEvent.objects.create(
        actor=user, action="login_unlock", target_type="address", target_id=network[:50], data={"cleared": cleared}
    )
    return network, cleared


# API tokens ---------------------------------------------------------------------------------------------------------


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def token_create(*, user: User, name: str = "") -> tuple[ApiToken, str]:
    """A new token of the user, valid for OH_API_TOKEN_DAYS; returns it with its key (shown once, stored hashed)."""
    if PendingPasswordChange.objects.filter(user=user).exists():
        raise ServiceError(
            "This account's password was given to you: log in on the web and choose your own first.",
            code="password_change_required",
            status=403,
        )
    key = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user,
        name=name,
        prefix=key[:10],
        key_sha256=_digest(key),
        password_fingerprint=user.get_session_auth_hash(),
        expires_at=timezone.now() + timedelta(days=settings.OH_API_TOKEN_DAYS),
    )
    return token, key


def token_user(key: str) -> User | None:
    """The user whose token this key is, while it is valid; None for an unknown, expired, revoked or outdated key."""
    token = ApiToken.objects.select_related("user").filter(key_sha256=_digest(key)).first()
    now = timezone.now()
    if token is None or token.expires_at <= now or not token.user.is_active:
        return None
    if not secrets.compare_digest(token.password_fingerprint, token.user.get_session_auth_hash()):
        return None
    # Written at most once a minute: reading the API must not mean a write per request.
    ApiToken.objects.filter(pk=token.pk, last_used_at__lt=now - timedelta(minutes=1)).update(last_used_at=now)
    ApiToken.objects.filter(pk=token.pk, last_used_at=None).update(last_used_at=now)
    return token.user


def token_revoke(*, token_id: int, user: User, may_revoke_others: bool) -> None:
    """Revoke one token: the user's own, or anyone's for a coordinator (may_revoke_others)."""
    tokens = ApiToken.objects.filter(pk=token_id)
    if not may_revoke_others:
        tokens = tokens.filter(user=user)
    token = tokens.first()
    if token is None:
        raise NotFound("There is no such token.")
    if token.user_id != user.pk:
        AuditEvent.objects.create(
            actor=user,
            action="token_revoke",
            target_type="user",
            target_id=str(token.user_id),
            data={"token": token.pk},
        )
    token.delete()


def tokens_revoke_all(*, owner: User) -> int:
    """Revoke every token of an account; how many there were."""
    deleted, _ = ApiToken.objects.filter(user=owner).delete()
    return deleted


# Accounts -------------------------------------------------------------------------------------------------------


def password_change_require(*, account: User) -> None:
    """Mark an account whose password someone else chose: its owner sets their own before anything else."""
    PendingPasswordChange.objects.get_or_create(user=account)


def password_change_due(user) -> bool:
    return user.is_authenticated and PendingPasswordChange.objects.filter(user_id=user.pk).exists()


@transaction.atomic
def password_changed(*, user: User) -> None:
    """After the owner changed their password: nothing more is due, and tokens made under the old one end."""
    PendingPasswordChange.objects.filter(user=user).delete()
    tokens_revoke_all(owner=user)


@transaction.atomic
def user_set_active(*, account_id: int, active: bool, user) -> User:
    """Deactivate (or reactivate) an account; deactivating revokes its API tokens. Audit-logged."""
    account = User.objects.filter(pk=account_id).first()
    if account is None:
        raise NotFound("There is no such account.")
    if account.pk == user.pk and not active:
        raise ServiceError("You cannot deactivate your own account.", code="invalid_request")
    account.is_active = active
    account.save(update_fields=["is_active"])
    if not active:
        tokens_revoke_all(owner=account)
    action = "user_activate" if active else "user_deactivate"
    AuditEvent.objects.create(actor=user, action=action, target_type="user", target_id=str(account.pk))
    return account
