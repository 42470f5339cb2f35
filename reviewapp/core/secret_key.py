"""The secret key: one of the operator's own (SECRET_KEY), else one made once per install and kept in the var folder,
so `make run` needs no configuration and no two installs share a key. The key earlier releases fell back to was
published with the code: it is refused without DEBUG (reviewapp.settings) and fails `check --deploy` (here)."""

import os
import secrets
from pathlib import Path

from django.conf import settings
from django.core import checks

PUBLISHED_SECRET_KEYS = frozenset({"insecure-local-only-key-set-SECRET_KEY-in-production"})
PUBLISHED_KEY_MESSAGE = (
    "SECRET_KEY is a key published with Open Hypothesis's code: anyone can forge sessions with it. Unset SECRET_KEY "
    "(each install then makes its own in OH_VAR_DIR/secret-key) or set one of your own, e.g. from "
    "`python -c 'import secrets; print(secrets.token_urlsafe(50))'`."
)


def install_secret_key(path: Path) -> str:
    """The key kept in this file, made (readable by its owner only) when there is none. Processes starting at once
    agree: a new key is written to a file of its own and linked into place only where no key is yet."""
    if not path.exists():
        draft = path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as file:
            file.write(secrets.token_urlsafe(50) + "\n")
        try:
            os.link(draft, path)
        except FileExistsError:
            pass  # another process made it first: its key counts
        finally:
            draft.unlink()
    return path.read_text().strip()


def published_secret_key_check(app_configs, **kwargs) -> list[checks.CheckMessage]:
    """`check --deploy`: an error while SECRET_KEY is a published key (only DEBUG lets such a process start)."""
    if settings.SECRET_KEY in PUBLISHED_SECRET_KEYS:
        return [checks.Error(PUBLISHED_KEY_MESSAGE, id="openhypothesis.E001")]
    return []
