"""A real SSH server on 127.0.0.1 for the fleet tests (asyncssh), reached with the real
OpenSSH client through a generated ssh_config.

Each `SshServer` is one "machine": its own port, its own generated host key, one
authorized client key, and an environment of its own for what it runs (PATH with the
test venv's bin first, so `rgpu-tui agent ROOT` runs this checkout's code; a private
HOME; RGPU_FAKE_GPUS; HF_ENDPOINT and HF_TOKEN for a push). As sshd does, it runs the
requested command through the shell (`/bin/sh -c COMMAND`) as a real subprocess, in a
session of its own, with the channel's stdin, stdout and stderr wired to it; a session
without a command (a login shell) is refused. When the client goes away the command's
stdin is closed, as sshd's is.

`SshKeys` makes the client key and writes `ssh_config` (Host aliases with HostName
127.0.0.1, Port, IdentityFile, UserKnownHostsFile holding each server's host key,
StrictHostKeyChecking yes, BatchMode yes) so the tests use `ssh -F ssh_config h1`.
`closed_port()` gives a port nothing listens on (a host that refuses the connection).
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import threading
from pathlib import Path

import asyncssh


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SshKeys:
    """The client key, the known_hosts file and the ssh_config of one test."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        os.chmod(folder, 0o700)
        self.client_key = asyncssh.generate_private_key("ssh-ed25519")
        self.identity = folder / "id_ed25519"
        self.identity.write_bytes(self.client_key.export_private_key())
        os.chmod(self.identity, 0o600)
        self.known_hosts = folder / "known_hosts"
        self.config = folder / "ssh_config"
        self._hosts: dict[str, tuple[int, str | None]] = {}

    def authorized(self) -> asyncssh.SSHAuthorizedKeys:
        return asyncssh.import_authorized_keys(self.client_key.export_public_key().decode())

    def add_host(self, alias: str, port: int, server: SshServer | None = None) -> None:
        """A Host alias for 127.0.0.1:port; with a server, its host key is trusted there
        (port may be a relay's in front of the server)."""
        line = server.known_hosts_line(port) if server is not None else None
        self._hosts[alias] = (port, line)
        self._write()

    def _write(self) -> None:
        self.known_hosts.write_text(
            "".join(line + "\n" for _port, line in self._hosts.values() if line)
        )
        blocks = []
        for alias, (port, _line) in self._hosts.items():
            blocks.append(
                f"Host {alias}\n"
                "    HostName 127.0.0.1\n"
                f"    Port {port}\n"
                "    User tester\n"
                f"    IdentityFile {self.identity}\n"
                "    IdentitiesOnly yes\n"
                f"    UserKnownHostsFile {self.known_hosts}\n"
                "    GlobalKnownHostsFile /dev/null\n"
                "    StrictHostKeyChecking yes\n"
                "    BatchMode yes\n"
                "    ControlMaster no\n"
                "    LogLevel ERROR\n"
            )
        self.config.write_text("\n".join(blocks))
        os.chmod(self.config, 0o600)


class SshServer:
    """One SSH server in a thread of its own (its own asyncio loop)."""

    def __init__(self, keys: SshKeys, env: dict[str, str], cwd: Path) -> None:
        self.keys = keys
        self.env = dict(env)
        self.cwd = cwd
        self.host_key = asyncssh.generate_private_key("ssh-ed25519")
        self.port = 0
        self.commands: list[str] = []  # every command asked for, in order
        self.processes: list[asyncio.subprocess.Process] = []  # what they started
        self.bytes_out = 0  # what the commands wrote on stdout, sent to the clients
        self.sent = bytearray()  # every byte sent back to the clients (stdout and stderr)
        self.client_env: list[dict] = []  # the variables each client asked to set (SendEnv)
        self._loop = asyncio.new_event_loop()
        self._server = None
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._lock = threading.Lock()

    def known_hosts_line(self, port: int | None = None) -> str:
        key = self.host_key.export_public_key().decode().strip()
        return f"[127.0.0.1]:{port or self.port} {key}"

    def start(self) -> SshServer:
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(self._listen(), self._loop)
        future.result(30)
        return self

    async def _listen(self) -> None:
        self._server = await asyncssh.create_server(
            asyncssh.SSHServer,
            "127.0.0.1",
            0,
            server_host_keys=[self.host_key],
            authorized_client_keys=self.keys.authorized(),
            process_factory=self._session,
            encoding=None,  # bytes, as sshd passes them
        )
        self.port = self._server.sockets[0].getsockname()[1]

    async def _session(self, process: asyncssh.SSHServerProcess) -> None:
        command = process.command
        if not command:
            process.stderr.write(b"this test server runs commands only\n")
            process.exit(1)
            return
        with self._lock:
            self.commands.append(command)
            self.client_env.append(dict(process.env or {}))
        proc = await asyncio.create_subprocess_exec(
            "/bin/sh",
            "-c",
            command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self.env,
            cwd=str(self.cwd),
            start_new_session=True,
        )
        with self._lock:
            self.processes.append(proc)

        async def pump_in() -> None:
            try:
                while data := await process.stdin.read(65536):
                    proc.stdin.write(data)
                    await proc.stdin.drain()
            except (asyncssh.Error, OSError):
                pass
            finally:  # the client sent EOF or went away: as sshd, close the command's stdin
                proc.stdin.close()

        async def pump_out(reader, writer, count: bool) -> None:
            try:
                while data := await reader.read(65536):
                    with self._lock:
                        self.sent += data
                        if count:
                            self.bytes_out += len(data)
                    writer.write(data)
                    await writer.drain()
            except (asyncssh.Error, OSError):
                pass

        feeding = asyncio.ensure_future(pump_in())
        try:
            # all of its output first, then its exit status (as sshd sends them)
            await asyncio.gather(
                pump_out(proc.stdout, process.stdout, True),
                pump_out(proc.stderr, process.stderr, False),
            )
            status = await proc.wait()
            process.exit(status if status >= 0 else 128 - status)
            await process.wait_closed()
        except (asyncssh.Error, OSError):
            pass
        finally:
            feeding.cancel()
            if proc.returncode is None:
                proc.stdin.close()

    def sent_bytes(self) -> bytes:
        """Everything the commands sent back over the link so far."""
        with self._lock:
            return bytes(self.sent)

    def pids(self) -> list[int]:
        """The pids of the shells it started that are still running."""
        with self._lock:
            return [p.pid for p in self.processes if p.returncode is None]

    def kill_commands(self, sig: int = signal.SIGKILL) -> list[int]:
        """Send `sig` to the process group of every command still running (the agent is
        its shell's child or the shell itself); returns the groups signalled."""
        killed = []
        for pid in self.pids():
            try:
                os.killpg(pid, sig)
                killed.append(pid)
            except ProcessLookupError:
                pass
        return killed

    def stop(self) -> None:
        self.kill_commands(signal.SIGKILL)

        async def close() -> None:
            if self._server is not None:
                self._server.close()
                await self._server.wait_closed()
            for proc in list(self.processes):
                if proc.returncode is None:
                    try:
                        await asyncio.wait_for(proc.wait(), 5)
                    except asyncio.TimeoutError:
                        pass

        try:
            asyncio.run_coroutine_threadsafe(close(), self._loop).result(15)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)
