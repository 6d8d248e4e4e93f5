"""The cluster capability's error types.

Every message says what happened and what to do about it, in one or two sentences a user can act
on; the ``workbench`` command prints it as one line and windows show it as it is.
"""

from __future__ import annotations


class ClusterError(Exception):
    """A cluster profile, connection or remote operation failed; the message says why and what to do.

    ``details`` keeps raw output (a command's stderr, a library's message) for a "details" view.
    """

    def __init__(self, message: str, details: str = ""):
        super().__init__(message)
        self.details = details


class UnknownHostKey(ClusterError):
    """The host presented a key that no known_hosts file records: nothing was sent to it.

    The user compares ``fingerprint`` with the one the cluster's administrators publish; if it is
    the same, ``workbench.cluster.host_keys.remember_host_key(error)`` records exactly this key
    (or connecting again with ``accept_new_host=True`` records whatever key the host shows then).
    """

    def __init__(self, host: str, fingerprint: str, *, port: int = 22, key_type: str = "", profile: str = "",
                 known_hosts_line: str = "", known_hosts: str = ""):
        self.host = host
        self.port = port
        self.fingerprint = fingerprint
        self.key_type = key_type
        self.profile = profile
        self.known_hosts_line = known_hosts_line
        """The line that trusting this key adds to ``known_hosts`` (Workbench's own file)."""
        self.known_hosts = known_hosts
        where = host if port == 22 else f"{host}:{port}"
        kind = f"{key_type} " if key_type else ""
        trust = (f"`workbench cluster test {profile} --trust`" if profile
                 else "`workbench cluster test NAME --trust`")
        super().__init__(f"The authenticity of host {where} can't be established: its {kind}key fingerprint is "
                         f"{fingerprint}. If the cluster's administrators confirm this fingerprint, trust it "
                         f"with {trust}.")


class HostKeyChanged(ClusterError):
    """The host presented a key other than the one recorded for it (or one marked revoked):
    the connection was refused before anything was sent."""

    def __init__(self, message: str, *, host: str = "", port: int = 22, fingerprint: str = "",
                 known_hosts: str = "", line: int = 0):
        super().__init__(message)
        self.host = host
        self.port = port
        self.fingerprint = fingerprint
        self.known_hosts = known_hosts
        """The file that records the old key, and its 1-based ``line``."""
        self.line = line


class AuthenticationFailed(ClusterError):
    """The host did not accept any of the keys (key file, agent), or a key could not be unlocked."""


class ConnectionLost(ClusterError):
    """The SSH connection dropped (network, sshd restart, login node reboot). Retrying after
    ``ClusterConnection.reconnect()`` is the remedy; a command that was running may or may not
    have finished on the cluster."""


class CommandFailed(ClusterError):
    """A command run with ``check=True`` exited non-zero; ``result`` is its CommandResult."""

    def __init__(self, message: str, result, details: str = ""):
        super().__init__(message, details)
        self.result = result


class CommandTimedOut(ClusterError):
    """A command ran past its timeout and was ended; ``stdout``/``stderr`` hold what it printed."""

    def __init__(self, message: str, stdout: str = "", stderr: str = ""):
        super().__init__(message, details=stderr)
        self.stdout = stdout
        self.stderr = stderr
