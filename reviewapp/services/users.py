"""Accounts: a coordinator creates reviewers, coordinators and analysts, one at a time or from a CSV.

Each new account gets a one-time password, returned once to the coordinator; only its hash is stored.
"""

import csv
import io
import secrets

from django.contrib.auth.models import Group, User
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.db.models.functions import Lower

from reviewapp.core.errors import ServiceError, as_problems
from reviewapp.core.roles import ROLES
from reviewapp.models import AuditEvent
from reviewapp.services.accounts import password_change_require

CSV_COLUMNS = ("username", "email", "role")
MAX_CSV_ROWS = 1000


class UserInvalid(ServiceError):
    """Account details that cannot be accepted; `errors` lists {"row", "field", "message"} (row is None for one)."""

    code = "invalid_user"

    def __init__(self, errors: list[dict]):
        self.errors = errors
        super().__init__("; ".join(_describe(error) for error in errors), problems=as_problems(errors))


def _describe(error: dict) -> str:
    where = f"row {error['row']}, " if error.get("row") else ""
    return f"{where}{error['field']}: {error['message']}"


def _new_password() -> str:
    return secrets.token_urlsafe(12)


def _field_errors(*, username: str, email: str, role: str) -> list[tuple[str, str]]:
    errors = []
    if not username:
        errors.append(("username", "A username is required."))
    else:
        try:
            UnicodeUsernameValidator()(username)
        except ValidationError:
            errors.append(("username", "Use at most 150 letters, digits and @ . + - _ only."))
        if len(username) > 150:
            errors.append(("username", "Use at most 150 characters."))
    if email:
        try:
            validate_email(email)
        except ValidationError:
            errors.append(("email", f"“{email}” is not an email address."))
    if role not in ROLES:
        errors.append(("role", f"“{role}” is not a role; use one of {', '.join(ROLES)}."))
    return errors


def _existing_usernames(usernames) -> set[str]:
    lowered = {name.lower() for name in usernames}
    return set(
        User.objects.annotate(lowered=Lower("username")).filter(lowered__in=lowered).values_list("lowered", flat=True)
    )


def _create(*, username: str, email: str, role: str, groups: dict[str, Group], user) -> tuple[User, str]:
    password = _new_password()
    account = User.objects.create_user(username=username, email=email, password=password)
    account.groups.add(groups[role])
    password_change_require(account=account)  # the password is one-time: its owner chooses their own first
    AuditEvent.objects.create(
        actor=user, action="user_create", target_type="user", target_id=str(account.pk), data={"role": role}
    )
    return account, password


@transaction.atomic
def user_create(*, username: str, email: str, role: str, user) -> tuple[User, str]:
    """Create one account with a role; returns it with its one-time password (shown once, never stored)."""
    username, email, role = username.strip(), email.strip(), role.strip().lower()
    errors = [
        {"row": None, "field": f, "message": m} for f, m in _field_errors(username=username, email=email, role=role)
    ]
    if username and _existing_usernames([username]):
        errors.append({"row": None, "field": "username", "message": f"The username “{username}” is taken."})
    if errors:
        raise UserInvalid(errors)
    groups = {group.name: group for group in Group.objects.filter(name__in=ROLES)}
    return _create(username=username, email=email, role=role, groups=groups, user=user)


def _parse_csv(csv_text: str) -> tuple[list[tuple[int, dict]], list[dict]]:
    reader = csv.DictReader(io.StringIO(csv_text.lstrip("\ufeff")))
    header = [(name or "").strip().lower() for name in (reader.fieldnames or [])]
    missing = [column for column in CSV_COLUMNS if column not in header]
    if missing:
        message = f"The first line must name the columns {', '.join(CSV_COLUMNS)}; missing: {', '.join(missing)}."
        return [], [{"row": 1, "field": missing[0], "message": message}]
    reader.fieldnames = header
    rows = []
    for record in reader:
        values = {column: (record.get(column) or "").strip() for column in CSV_COLUMNS}
        if any(values.values()):
            rows.append((reader.line_num, values))
    if not rows:
        return [], [{"row": 2, "field": "username", "message": "The file lists no users."}]
    if len(rows) > MAX_CSV_ROWS:
        return [], [{"row": rows[MAX_CSV_ROWS][0], "field": "username", "message": f"At most {MAX_CSV_ROWS} users."}]
    return rows, []


@transaction.atomic
def users_bulk_create(*, csv_text: str, user) -> list[tuple[User, str]]:
    """Create every account of a CSV (username,email,role) or none: all rows are checked before any is written."""
    rows, errors = _parse_csv(csv_text)
    if errors:
        raise UserInvalid(errors)
    taken = _existing_usernames(values["username"] for _, values in rows)
    seen: dict[str, int] = {}  # username → the row it is first on
    for line, values in rows:
        values["role"] = values["role"].lower()
        errors += [{"row": line, "field": f, "message": m} for f, m in _field_errors(**values)]
        name = values["username"].lower()
        if name in taken:
            errors.append(
                {"row": line, "field": "username", "message": f"The username “{values['username']}” is taken."}
            )
        elif name and name in seen:
            errors.append(
                {"row": line, "field": "username", "message": f"“{values['username']}” is also on row {seen[name]}."}
            )
        seen.setdefault(name, line)
    if errors:
        raise UserInvalid(errors)
    groups = {group.name: group for group in Group.objects.filter(name__in=ROLES)}
    return [_create(**values, groups=groups, user=user) for _, values in rows]
