"""Password hashing: Argon2id at OWASP's first-listed parameters (19 MiB of memory, two passes, one lane).

Django's own Argon2 parameters (100 MiB, two passes, eight lanes) cost about as much CPU per login as its PBKDF2
(a million SHA-256 rounds) and 100 MiB of memory for each login in progress; these parameters are the password
storage baseline OWASP lists as equal in strength to PBKDF2 (memory-hard, so a GPU gains far less on them), at about
a tenth of the CPU (README "Production"). A stored hash names its own parameters, so hashes made with others still
verify, and Django rewrites them with these at their owner's next login.
"""

from django.contrib.auth.hashers import Argon2PasswordHasher


class Argon2idPasswordHasher(Argon2PasswordHasher):
    memory_cost = 19 * 1024  # KiB
    time_cost = 2
    parallelism = 1
