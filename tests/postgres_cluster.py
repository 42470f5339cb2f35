"""A PostgreSQL server of a test's own: a throwaway cluster (initdb, then pg_ctl on a free port under a temporary
folder) that the test may restart at will, without touching the shared server at 5432 that other tests and other
people's databases live on. As root (CI), the server runs as the user postgres, since PostgreSQL refuses root."""

import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

from django.db import connection

BIN_DIRS = "/usr/lib/postgresql"


def server_programs() -> Path | None:
    """The folder of initdb and pg_ctl: Debian's newest /usr/lib/postgresql/<version>/bin, else the PATH's."""
    versions = sorted(Path(BIN_DIRS).glob("*/bin/initdb"), key=lambda path: int(path.parent.parent.name), reverse=True)
    if versions:
        return versions[0].parent
    found = shutil.which("initdb")
    return Path(found).parent if found else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class ThrowawayCluster:
    def __init__(self, programs: Path):
        self.programs = programs
        self.folder = Path(tempfile.mkdtemp(prefix="oh-test-postgres-"))
        self.data = self.folder / "data"
        self.port = _free_port()
        self.as_server_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        self._replaced: dict | None = None
        if self.as_server_user:
            shutil.chown(self.folder, "postgres")
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8")

    def _run(self, program: str, *arguments: str, server_user: bool = True) -> None:
        command = [*(self.as_server_user if server_user else []), str(self.programs / program), *arguments]
        result = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            log = (self.folder / "server.log").read_text() if (self.folder / "server.log").exists() else ""
            raise RuntimeError(f"{program} failed: {result.stdout}{result.stderr}{log[-2000:]}")

    def _pg_ctl(self, action: str, *options: str) -> None:
        server_options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run(
            "pg_ctl", action, "-D", str(self.data), "-w", "-t", "60", "-l", str(self.folder / "server.log"),
            "-o", server_options, *options,
        )  # fmt: skip

    def start(self) -> None:
        self._pg_ctl("start")

    def restart(self) -> None:
        """A real restart: every connection is ended, the server is down for a moment, then accepts new ones."""
        self._pg_ctl("restart", "-m", "fast")

    def destroy(self) -> None:
        try:
            self._run("pg_ctl", "stop", "-D", str(self.data), "-m", "immediate", "-w")
        except RuntimeError:
            pass  # not running
        shutil.rmtree(self.folder, ignore_errors=True)

    def adopt_test_database(self, name: str = "oh_restarted") -> None:
        """Copy the test database (schema and the data the test has committed so far) into this cluster and point
        Django's default connection at the copy (worker processes started afterwards use it too)."""
        source = connection.settings_dict
        environment = {**os.environ, "PGPASSWORD": source.get("PASSWORD") or ""}
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", name, server_user=False)
        dump = subprocess.Popen(
            [
                str(self.programs / "pg_dump"), "--no-owner", "--no-privileges",
                "-h", source["HOST"] or "127.0.0.1", "-p", str(source["PORT"] or 5432), "-U", source["USER"],
                source["NAME"],
            ],
            stdout=subprocess.PIPE,
            env=environment,
        )  # fmt: skip
        restore = subprocess.run(
            [
                str(self.programs / "psql"), "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", str(self.port),
                "-U", "postgres", "-d", name,
            ],
            stdin=dump.stdout,
            capture_output=True,
            text=True,
            timeout=300,
        )  # fmt: skip
        dump.stdout.close()
        if dump.wait(timeout=60) != 0 or restore.returncode != 0:
            raise RuntimeError(f"copying the test database failed: {restore.stderr[-2000:]}")
        self._replaced = {key: source[key] for key in ("HOST", "PORT", "NAME", "USER", "PASSWORD")}
        connection.close()
        source.update(HOST="127.0.0.1", PORT=str(self.port), NAME=name, USER="postgres", PASSWORD="")

    def give_back_test_database(self) -> None:
        """Point the default connection at the test database again (it is flushed there as after any test)."""
        if self._replaced is not None:
            connection.close()
            connection.settings_dict.update(self._replaced)
            self._replaced = None
