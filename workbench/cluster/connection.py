"""An SSH connection to a cluster's login node, over paramiko.

``ClusterConnection(profile)`` connects (through the profile's jump host when it has one),
checks the host key against Workbench's known_hosts and ~/.ssh/known_hosts (host_keys.py), logs
in with the profile's key file or the ssh-agent, and then runs commands (``run``) and moves files
(``sftp``). A dropped connection raises ConnectionLost; ``reconnect()`` starts over.

paramiko is imported inside the functions that need it (it costs ~100 ms, and the CLI's
``--help`` and a window's start-up must not pay that).
"""

from __future__ import annotations

import base64
import logging
import select
import shlex
import socket
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from workbench.cluster.errors import (AuthenticationFailed, ClusterError, CommandFailed, CommandTimedOut,
                                      ConnectionLost, UnknownHostKey)
from workbench.cluster.host_keys import (PresentedKey, check_host_key, entries_for, host_key_name,
                                         preferred_key_types, remember_host_key, user_known_hosts,
                                         workbench_known_hosts)
from workbench.cluster.profiles import ClusterProfile, parse_jump_host
from workbench.cluster.sftp_client import open_tuned_sftp
from workbench.platform import secrets as os_keyring

log = logging.getLogger(__name__)

KEYRING_SERVICE = "workbench-ssh"
CONNECT_TIMEOUT_S = 15.0
# An idle connection sends a keepalive this often; with TCP_USER_TIMEOUT below, a network that
# silently went away is noticed within about a minute instead of TCP's quarter of an hour.
KEEPALIVE_S = 15
TCP_USER_TIMEOUT_MS = 60_000
# `timeout` sends SIGTERM at the deadline, then SIGKILL this much later.
KILL_AFTER_S = 5
# Past deadline + KILL_AFTER_S, this much more before giving up on hearing back at all.
TIMEOUT_GRACE_S = 10
_READ_CHUNK = 1 << 20
_USE_DEFAULT = object()


@dataclass(frozen=True)
class CommandResult:
    """How a command on the cluster ended: exit status (-1 when it was killed by a signal) and
    its output, decoded as UTF-8 (undecodable bytes replaced)."""

    code: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.code == 0


class ClusterConnection:
    """One SSH connection to the cluster of ``profile``. Not connected until ``connect()`` (or
    the first ``run``/``sftp``, or entering a ``with`` block).

    ``known_hosts`` is Workbench's own file (default: in the config folder): trusted keys are
    written there. ``user_known_hosts_file`` (default ~/.ssh/known_hosts, None to skip it) is
    only read. ``accept_new_host`` trusts and remembers a host key seen for the first time instead of
    raising UnknownHostKey; a changed key is refused whatever it says. ``passphrase`` unlocks the
    key file; without it the OS keyring is asked, then the ssh-agent is used.
    """

    def __init__(self, profile: ClusterProfile, known_hosts: Path | str | None = None, accept_new_host: bool = False,
                 passphrase: str | None = None, *, user_known_hosts_file=_USE_DEFAULT,
                 connect_timeout: float = CONNECT_TIMEOUT_S):
        self.profile = profile
        self.known_hosts = Path(known_hosts) if known_hosts is not None else workbench_known_hosts()
        self.user_known_hosts = (user_known_hosts() if user_known_hosts_file is _USE_DEFAULT
                                 else None if user_known_hosts_file is None else Path(user_known_hosts_file))
        self.accept_new_host = accept_new_host
        self.connect_timeout = connect_timeout
        self._passphrase = passphrase
        self._transport = None
        self._jump = None
        self._sftp = None
        self._home: str | None = None
        self._lock = threading.RLock()
        self.host_key: PresentedKey | None = None
        """The cluster's key as it presented it on the last connect."""

    # -- lifetime ------------------------------------------------------------------------------

    def connect(self) -> "ClusterConnection":
        """Connect and log in (nothing happens when already connected). Raises UnknownHostKey,
        HostKeyChanged, AuthenticationFailed, or ClusterError saying what to check."""
        with self._lock:
            if self.is_alive:
                return self
            self.close()
            profile = self.profile
            profile.validate()
            _paramiko()
            try:
                if profile.jump_host:
                    jump_user, jump_host, jump_port = parse_jump_host(profile.jump_host)
                    self._jump = self._open_transport(jump_host, jump_port, self._socket_to(jump_host, jump_port),
                                                      jump_user or profile.login_user)
                    sock = self._channel_through_jump(profile.host, profile.port)
                else:
                    sock = self._socket_to(profile.host, profile.port)
                self._transport = self._open_transport(profile.host, profile.port, sock, profile.login_user)
            except BaseException:
                self.close()
                raise
            return self

    def reconnect(self) -> "ClusterConnection":
        """Drop the connection (if any) and connect again."""
        with self._lock:
            self.close()
            return self.connect()

    def close(self) -> None:
        """End the connection; safe to call at any time, and again."""
        with self._lock:
            for closable in (self._sftp, self._transport, self._jump):
                if closable is not None:
                    try:
                        closable.close()
                    except Exception:  # closing a dead connection may fail in many ways; it is gone either way
                        pass
            self._sftp = self._transport = self._jump = None

    @property
    def is_alive(self) -> bool:
        """Connected, and the connection has not dropped (as far as this side knows)."""
        transport, jump = self._transport, self._jump
        return (transport is not None and transport.is_active() and transport.is_authenticated()
                and (jump is None or jump.is_active()))

    def __enter__(self) -> "ClusterConnection":
        return self.connect()

    def __exit__(self, *exc_info) -> None:
        self.close()

    # -- commands ------------------------------------------------------------------------------

    def run(self, command: str, timeout: float | None = None, check: bool = True,
            retry_if_dropped: bool = False) -> CommandResult:
        """Run ``command`` (bash) on the cluster under ``bash -lc``, the profile's env exported,
        and wait for it. ``timeout`` seconds ends it (SIGTERM to its process group, SIGKILL
        5 s later) and raises CommandTimedOut. ``check`` raises CommandFailed on a non-zero exit.
        ConnectionLost when the connection drops meanwhile (the command may have run or not).

        ``retry_if_dropped`` is for a command that is safe to run twice (a query, or a script
        written to be re-run): a connection that drops under it is made anew once and the
        command run again, so a single dropped connection costs the user nothing; a second
        drop raises ConnectionLost as usual."""
        if retry_if_dropped:
            try:
                return self.run(command, timeout=timeout, check=check)
            except ConnectionLost as lost:
                log.warning("%s; connecting again to run it once more", lost)
                try:
                    # connect(), not reconnect(): when another thread's command on this
                    # connection met the same drop and connected first, its connection serves.
                    self.connect()
                except ClusterError as exc:
                    raise lost from exc
        transport = self._live_transport()
        remote = self._remote_command(command)
        if timeout is not None:
            # coreutils `timeout` runs the command in its own process group and signals all of it.
            remote = f"timeout -k {KILL_AFTER_S} {max(timeout, 0.001):.3f} {remote}"
        started = time.monotonic()
        with self.drop_guard(f"running `{_short(command)}`"):
            channel = transport.open_session(timeout=self.connect_timeout)
            try:
                channel.exec_command(remote)
                channel.shutdown_write()  # stdin is empty, as with `ssh -n`: a command that reads it ends
                code, stdout, stderr = self._collect(channel, timeout, command)
            finally:
                channel.close()
        if code == -1 and self._dropped(transport):
            raise ConnectionLost(self._lost_message(f"running `{_short(command)}`", "the connection closed"))
        if timeout is not None and code in (124, 137) and time.monotonic() - started >= timeout:
            raise CommandTimedOut(f"`{_short(command)}` did not finish within {timeout:g} s on {self.profile.name} "
                                  f"and was stopped.", stdout, stderr)
        result = CommandResult(code, stdout, stderr)
        if check and code != 0:
            last = next((line.strip() for line in reversed((stderr or stdout).splitlines()) if line.strip()),
                        "no message")
            status = "was killed by a signal" if code == -1 else f"exited with status {code}"
            raise CommandFailed(f"`{_short(command)}` {status} on {self.profile.name}: {last}", result, details=stderr)
        return result

    def _remote_command(self, command: str) -> str:
        """``bash -lc SCRIPT`` for the login shell, whatever that shell is: a script of several
        lines goes base64-encoded, because csh-family shells reject newlines inside quotes."""
        exports = "".join(f"export {key}={shlex.quote(value)}; " for key, value in self.profile.env.items())
        script = exports + command
        if "\n" not in script and "\r" not in script:
            return "bash -lc " + shlex.quote(script)
        encoded = base64.b64encode(script.encode("utf-8")).decode("ascii")
        return f"bash -lc 'eval \"$(echo {encoded} | base64 -d)\"'"

    def _collect(self, channel, timeout: float | None, command: str) -> tuple[int, str, str]:
        """Read stdout and stderr as they come (a full window would stall the command) until the
        command has ended and both streams are closed."""
        stdout, stderr = bytearray(), bytearray()
        give_up = None if timeout is None else time.monotonic() + timeout + KILL_AFTER_S + TIMEOUT_GRACE_S
        while True:
            while channel.recv_ready():
                stdout += channel.recv(_READ_CHUNK)
            while channel.recv_stderr_ready():
                stderr += channel.recv_stderr(_READ_CHUNK)
            if channel.closed or (channel.eof_received and channel.exit_status_ready()):
                if not channel.recv_ready() and not channel.recv_stderr_ready():
                    break
                continue
            if give_up is not None and time.monotonic() > give_up:
                raise CommandTimedOut(f"`{_short(command)}` did not finish within {timeout:g} s on "
                                      f"{self.profile.name}, and the cluster did not answer after it was stopped.",
                                      stdout.decode("utf-8", "replace"), stderr.decode("utf-8", "replace"))
            if channel.eof_received:
                # The pipe below stays readable after EOF; wait for the exit status instead.
                channel.status_event.wait(0.2)
            else:
                select.select([channel], [], [], 0.2)
        code = channel.recv_exit_status()
        return code, stdout.decode("utf-8", "replace"), stderr.decode("utf-8", "replace")

    # -- files ---------------------------------------------------------------------------------

    def sftp(self):
        """The connection's SFTP client (paramiko's SFTPClient, opened on first use and shared):
        reads and writes use the largest request the server allows, ``get`` prefetches, and
        ``put``/``get`` move data in 1 MiB blocks. A dropped connection raises ConnectionLost
        from its calls."""
        with self._lock:
            if self._sftp is not None and not self._sftp.sock.closed and self.is_alive:
                return self._sftp
            transport = self._live_transport()
            with self.drop_guard("opening SFTP"):
                channel = transport.open_session(timeout=self.connect_timeout)
                channel.invoke_subsystem("sftp")
                self._sftp = open_tuned_sftp(channel, self._lost_message)
            return self._sftp

    @property
    def home(self) -> str:
        """The login user's home folder on the cluster (asked once per connection object)."""
        if self._home is None:
            with self.drop_guard("asking for the home folder"):
                self._home = self.sftp().normalize(".")
        return self._home

    def remote_path(self, path: str) -> str:
        """``path`` with a leading ``~`` (or no leading ``/``) made absolute under ``home``: SFTP
        and quoted shell words do not expand ``~``."""
        if path == "~":
            return self.home
        if path.startswith("~/"):
            return self.home.rstrip("/") + "/" + path[2:]
        if not path.startswith("/"):
            return self.home.rstrip("/") + "/" + path
        return path

    # -- dropped connections -------------------------------------------------------------------

    @contextmanager
    def drop_guard(self, doing: str = "talking to the cluster"):
        """Turn the errors a dropped connection causes inside the block into ConnectionLost.
        Other errors (a missing remote file while connected) pass through unchanged."""
        try:
            yield
        except ClusterError:
            raise
        except (EOFError, OSError) as exc:
            # An OSError with an errno is the server's answer (no such file) on a live connection.
            transport = self._transport
            if self._dropped(transport, wait=not (isinstance(exc, OSError) and exc.errno)):
                raise ConnectionLost(self._lost_message(doing, exc)) from exc
            raise
        except Exception as exc:
            if _is_ssh_error(exc) and self._dropped(self._transport, wait=True):
                raise ConnectionLost(self._lost_message(doing, exc)) from exc
            raise

    def _dropped(self, transport, wait: bool = True) -> bool:
        if transport is None:
            return True
        if wait and transport.is_active():
            # paramiko closes the channels a moment before it marks the transport inactive.
            transport.join(1.0)
        return not transport.is_active() or (self._jump is not None and not self._jump.is_active())

    def _lost_message(self, doing: str, cause) -> str:
        return (f"The connection to {self.profile.name} ({self.profile.destination}) was lost while {doing} "
                f"({cause}). Check the network and try again: Workbench connects anew when you retry.")

    def _live_transport(self):
        with self._lock:
            if self._transport is None:
                self.connect()
            elif not self.is_alive:
                raise ConnectionLost(self._lost_message("idle", "the connection closed"))
            return self._transport

    # -- connecting ----------------------------------------------------------------------------

    def _socket_to(self, host: str, port: int) -> socket.socket:
        where = host if port == 22 else f"{host}:{port}"
        try:
            sock = socket.create_connection((host, port), timeout=self.connect_timeout)
        except socket.gaierror:
            raise ClusterError(f"The host name {host!r} cannot be resolved. Check the profile's host, "
                               f"and your network or VPN.") from None
        except ConnectionRefusedError:
            raise ClusterError(f"{where} refused the connection: no SSH server listens there. "
                               f"Check the profile's host and port.") from None
        except (socket.timeout, TimeoutError):
            raise ClusterError(f"{where} did not answer within {self.connect_timeout:g} s. Check the host, "
                               f"your network or VPN, and any firewall.") from None
        except OSError as exc:
            raise ClusterError(f"Cannot reach {where}: {exc.strerror or exc}. Check the network.") from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        if hasattr(socket, "TCP_USER_TIMEOUT"):  # Linux: unacknowledged data for this long = dead peer
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, TCP_USER_TIMEOUT_MS)
        return sock

    def _channel_through_jump(self, host: str, port: int):
        paramiko = _paramiko()
        try:
            return self._jump.open_channel("direct-tcpip", (host, port), ("127.0.0.1", 0),
                                           timeout=self.connect_timeout)
        except paramiko.ChannelException as exc:
            raise ClusterError(f"The jump host {self.profile.jump_host} could not connect to {host}:{port} "
                               f"({exc.text or exc}). Check the host and port as the jump host sees them, and "
                               f"that it allows forwarding (AllowTcpForwarding).") from None
        except (paramiko.SSHException, EOFError, OSError) as exc:
            raise ConnectionLost(self._lost_message("opening the way through the jump host", exc)) from None

    def _open_transport(self, host: str, port: int, sock, user: str):
        """A logged-in paramiko Transport over ``sock``, after the host key was checked."""
        paramiko = _paramiko()
        where = host if port == 22 else f"{host}:{port}"
        transport = paramiko.Transport(sock)
        try:
            transport.banner_timeout = transport.handshake_timeout = self.connect_timeout
            transport.auth_timeout = 2 * self.connect_timeout
            files = [self.known_hosts] + ([self.user_known_hosts] if self.user_known_hosts else [])
            preferred = preferred_key_types(entries_for(host_key_name(host, port), files))
            options = transport.get_security_options()
            offered = list(options.key_types)
            options.key_types = [k for k in preferred if k in offered] + [k for k in offered if k not in preferred]
            try:
                transport.start_client(timeout=self.connect_timeout)
            except (paramiko.SSHException, EOFError, OSError) as exc:
                raise ClusterError(f"{where} did not complete the SSH handshake ({exc}). Check that the port "
                                   f"is the cluster's SSH port.") from None
            server_key = transport.get_remote_server_key()
            presented = PresentedKey(server_key.get_name(), server_key.get_base64())
            try:
                check_host_key(host, port, presented, files, profile=self.profile.name, remember_in=self.known_hosts)
            except UnknownHostKey as unknown:
                if not self.accept_new_host:
                    raise
                remember_host_key(unknown, self.known_hosts)
                log.info("trusted the host key %s of %s (in %s)", presented.fingerprint, where, self.known_hosts)
            if host == self.profile.host and port == self.profile.port:
                self.host_key = presented
            self._authenticate(transport, user, where)
            transport.set_keepalive(KEEPALIVE_S)
            return transport
        except BaseException:
            transport.close()
            raise

    def _authenticate(self, transport, user: str, where: str) -> None:
        """Log in with the key file, else with the agent's keys (only the one matching the key
        file when its .pub is there: servers stop after a few refused keys)."""
        paramiko = _paramiko()
        tried, notes = [], []
        key_path = Path(self.profile.key_file).expanduser() if self.profile.key_file else None
        key = self._file_key(key_path, notes) if key_path else None
        if key is not None:
            if self._try_key(transport, user, key):
                return
            tried.append(f"the key {key_path}")
        else:
            agent = paramiko.Agent()
            try:
                agent_keys = list(agent.get_keys())
                wanted = _public_key_blob(key_path) if key_path else None
                if wanted is not None:
                    agent_keys = [k for k in agent_keys if k.asbytes() == wanted]
                for agent_key in agent_keys:
                    if self._try_key(transport, user, agent_key):
                        return
                if agent_keys:
                    tried.append(f"{len(agent_keys)} key(s) of the ssh-agent")
                elif key_path:
                    notes.append(f"the ssh-agent does not hold {key_path} (add it with `ssh-add {key_path}`)")
                else:
                    notes.append("there is no key file in the profile and no ssh-agent key "
                                 "(start ssh-agent and `ssh-add` your key, or give the profile a key file)")
            finally:
                agent.close()
        message = f"{user}@{where} did not let Workbench in"
        if tried:
            message += (f": it refused {' and '.join(tried)}. Check the user name, and that the public key is in "
                        f"~/.ssh/authorized_keys on the cluster")
        if notes:
            message += ("; " if tried else ": ") + "; ".join(notes)
        raise AuthenticationFailed(message + ".")

    @staticmethod
    def _try_key(transport, user: str, key) -> bool:
        paramiko = _paramiko()
        try:
            remaining = transport.auth_publickey(user, key)
        except paramiko.BadAuthenticationType as exc:
            raise AuthenticationFailed(f"The cluster does not accept SSH keys (it allows: "
                                       f"{', '.join(exc.allowed_types)}); Workbench logs in with keys only.") from None
        except paramiko.AuthenticationException:
            return False
        except (paramiko.SSHException, EOFError, OSError) as exc:
            raise ClusterError(f"The connection closed while logging in ({exc}).") from None
        if remaining:
            raise AuthenticationFailed(f"The cluster wants a second login step ({', '.join(remaining)}) after the "
                                       f"key; Workbench cannot do that: ask for key-only access.")
        return True

    def _file_key(self, path: Path, notes: list[str]):
        """The private key at ``path``, unlocked with the given passphrase or the keyring's;
        None (with a note why) when it is locked and no passphrase is known."""
        paramiko = _paramiko()
        if not path.is_file():
            raise AuthenticationFailed(f"The key file {path} does not exist. Fix the profile "
                                       f"(`workbench cluster edit {self.profile.name} --key FILE`).")
        try:
            return paramiko.PKey.from_path(path)
        except (paramiko.PasswordRequiredException, TypeError):
            pass  # locked: paramiko 5 says so with a TypeError ("password was not provided")
        except Exception as exc:  # unknown type, unreadable, corrupt: paramiko raises several kinds
            raise AuthenticationFailed(f"Cannot read the key file {path}: {exc}.") from None
        source = "given"
        passphrase = self._passphrase
        if passphrase is None:
            passphrase, source = keyring_passphrase(path), "from the OS keyring"
        if passphrase is None:
            notes.append(f"{path} needs its passphrase: add the key to the ssh-agent (`ssh-add {path}`) or store "
                         f"the passphrase in the OS keyring (`workbench cluster passphrase {self.profile.name}`)")
            return None
        try:
            return paramiko.PKey.from_path(path, passphrase.encode("utf-8"))
        except Exception:
            notes.append(f"the passphrase {source} does not unlock {path}")
            return None


# ---------------------------------------------------------------------------------------------
# Passphrases in the OS keyring


def keyring_passphrase(key_file: Path | str) -> str | None:
    """The passphrase stored for ``key_file`` in the OS keyring, or None (also when there is no
    usable keyring: the agent may still hold the key)."""
    try:
        return os_keyring.load_secret(KEYRING_SERVICE, _keyring_user(key_file))
    except os_keyring.KeyringUnavailable as exc:  # no backend, locked, D-Bus down: "not from here"
        log.info("no passphrase from the keyring for %s: %s", key_file, exc.reason)
        return None


def store_passphrase(key_file: Path | str, passphrase: str) -> None:
    """Keep ``passphrase`` for ``key_file`` in the OS keyring (service "workbench-ssh", the key's
    absolute path as user name). ClusterError when this machine has no usable keyring."""
    try:
        os_keyring.store_secret(KEYRING_SERVICE, _keyring_user(key_file), passphrase)
    except os_keyring.KeyringUnavailable as exc:
        raise ClusterError(f"The passphrase could not be stored: no OS keyring is usable here ({exc.reason}). "
                           f"Load the key into the ssh-agent instead (`ssh-add {key_file}`).") from None


def forget_passphrase(key_file: Path | str) -> bool:
    """Delete the stored passphrase of ``key_file``; False when none was stored."""
    return os_keyring.delete_secret(KEYRING_SERVICE, _keyring_user(key_file))


def _keyring_user(key_file: Path | str) -> str:
    return str(Path(key_file).expanduser().absolute())


# ---------------------------------------------------------------------------------------------
# paramiko, loaded on first use


def _paramiko():
    import paramiko

    # paramiko logs a dropped connection at ERROR level; with no handler of the app's own, Python
    # would print that on stderr. The ConnectionLost raised here says it better.
    logger = logging.getLogger("paramiko")
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
    return paramiko


def _is_ssh_error(exc: BaseException) -> bool:
    import paramiko

    return isinstance(exc, paramiko.SSHException)


def _public_key_blob(key_path: Path | None) -> bytes | None:
    """The key bytes of ``<key>.pub``, if that file is there and readable."""
    if key_path is None:
        return None
    try:
        fields = key_path.with_name(key_path.name + ".pub").read_text(encoding="utf-8").split()
        return base64.b64decode(fields[1])
    except (OSError, IndexError, ValueError):
        return None


def _short(command: str, limit: int = 60) -> str:
    line = " ".join(command.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def __getattr__(name: str):
    # The profile check is also importable from here, beside the connection it uses.
    if name in ("test_profile", "check_profile", "ProfileCheck"):
        from workbench.cluster import checks

        return getattr(checks, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
