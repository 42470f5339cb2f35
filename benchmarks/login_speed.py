"""What a login costs: CPU-seconds of checking a password with the hasher the settings put first (Argon2id,
reviewapp.core.passwords), against Django's default PBKDF2 (a million SHA-256 rounds), which hashed every password
before. Checking the password is nearly all of a login's CPU. No database.

    .venv/bin/python benchmarks/login_speed.py

CPU time (process_time), not wall time: thirty people signing in at once share the cores, so each login's CPU is
what their waits add up from. Exit status 1 when the goal is missed.
"""

import time

from support import Results, interleaved, setup_django

REPEATS = 15
PASSWORD = "a long passphrase of my own"


def cpu_seconds(call):
    def timed():
        started = time.process_time()
        call()
        return time.process_time() - started

    return timed


def main() -> int:
    setup_django()
    from django.contrib.auth.hashers import PBKDF2PasswordHasher, get_hasher

    configured, before = get_hasher(), PBKDF2PasswordHasher()
    configured_hash = configured.encode(PASSWORD, configured.salt())
    before_hash = before.encode(PASSWORD, before.salt())
    # interleaved() times each call with the wall clock: each call records its own CPU time instead.
    figure_cpu: list[float] = []
    floor_cpu: list[float] = []
    interleaved(
        lambda: figure_cpu.append(cpu_seconds(lambda: configured.verify(PASSWORD, configured_hash))()),
        lambda: floor_cpu.append(cpu_seconds(lambda: before.verify(PASSWORD, before_hash))()),
        REPEATS,
    )
    results = Results()
    results.ratio(
        f"one login's password check ({configured_hash.split('$', 3)[1]}, {configured_hash.split('$')[3]})",
        figure_cpu,
        floor_cpu,
        "CPU-s",
        0.25,
        floor_name=f"Django's PBKDF2, {before.iterations:,} rounds",
    )
    return results.report(__file__)


if __name__ == "__main__":
    raise SystemExit(main())
