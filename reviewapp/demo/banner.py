"""The start-up banner: where the app is, the public page, the API reference and the current demo logins.

`load_demo` writes it to a file under the state folder that only its owner can read (the passwords are in it), and
`bin/run-local` prints it as the last lines once every server is up. The next load replaces it, as the passwords it
holds stop working then.
"""

import os
from collections.abc import Iterable
from pathlib import Path

from django.conf import settings

from reviewapp.demo.cohort import DemoLogin

BANNER_FILE_NAME = "demo-logins.txt"


def banner_path() -> Path:
    return Path(settings.VAR_DIR) / BANNER_FILE_NAME


def site_address() -> str:
    """The address `make run` serves, as a browser on this machine opens it (HOST 0.0.0.0 listens everywhere)."""
    host = settings.HOST if settings.HOST not in ("0.0.0.0", "::") else "127.0.0.1"
    return f"http://{host}:{settings.PORT}/"


def banner_text(logins: Iterable[DemoLogin], address: str | None = None) -> str:
    address = address or site_address()
    lines = [
        f"Open Hypothesis: {address}",
        f"  Public Open Hypothesis page (no account needed): {address}open-hypothesis/",
        f"  API reference: {address}api/v1/docs",
        "",
        "Demo logins (demonstration data; new passwords at every start, earlier ones stop working):",
        f"  {'username':<18} {'role':<12} password",
        *(f"  {login.username:<18} {login.role:<12} {login.password}" for login in logins),
        "",
        f"These lines are kept in {banner_path()} (readable only by you) until the next start.",
    ]
    return "\n".join(lines) + "\n"


def banner_write(text: str) -> Path:
    """Write the banner readable by its owner only (0600), replacing the previous one in one step."""
    path = banner_path()
    partial = path.with_name(path.name + ".part")
    partial.unlink(missing_ok=True)
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(partial, 0o600)  # whatever the umask
    partial.replace(path)
    return path
