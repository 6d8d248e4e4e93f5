"""A real single-node Slurm on 127.0.0.1 for tests, and the way to reach it through the real sshd.

The fixtures are registered for every test by ``tests/conftest.py`` (``pytest_plugins``); ask for
them by name and do not import them into test modules: an imported session fixture belongs to the
importing module, so every such module would start a cluster of its own.

* ``slurm_cluster`` (session): ``munged``, ``slurmctld`` and ``slurmd`` running with their own key,
  config, state, spool and logs in one temporary folder, listening on loopback only. See
  ``SlurmCluster``.
* ``slurm_over_ssh`` (session): what a cluster profile needs to reach that Slurm through the
  ``sshd_server`` fixture (host, port, user, key file, and ``env`` with ``SLURM_CONF``). See
  ``SlurmOverSsh``.
* ``slurm_clean`` (per test): the same cluster; jobs the test leaves queued or running are cancelled
  when it ends, so a failed test does not keep the node busy for the next ones.

Every Slurm command needs ``SLURM_CONF``: without it the commands look their configuration up with
a DNS SRV query, which leaves the machine. ``SlurmCluster.run`` sets it; over SSH the command must
export it (``SlurmOverSsh.env``; the cluster code exports its profile's env in every command).

The daemons need root (``SlurmUser=root``, ``munged`` runs as user ``munge``). Missing programs fail
the test with what to install: CI installs ``slurm-wlm`` and ``munge`` (scripts/system-packages.txt),
so a silent skip would hide a broken set-up. At the end the jobs are cancelled, the daemons stopped
and any process still carrying this cluster's config in its environment (a job step, a job) killed.
"""

from __future__ import annotations

import os
import pwd
import re
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.services.sshd import SshServer  # the class only: the fixture comes from the plugin

PARTITION = "debug"
_START_TIMEOUT = 30.0
_STOP_TIMEOUT = 10.0
_TERMINAL_STATES = frozenset({
    "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED",
    "BOOT_FAIL", "DEADLINE", "REVOKED",
})
_PROGRAMS = {  # program -> Debian package
    "slurmctld": "slurm-wlm", "slurmd": "slurm-wlm", "sbatch": "slurm-wlm", "squeue": "slurm-wlm",
    "scontrol": "slurm-wlm", "scancel": "slurm-wlm", "sinfo": "slurm-wlm", "srun": "slurm-wlm",
    "munged": "munge", "mungekey": "munge", "munge": "munge", "setpriv": "util-linux",
}
_KEY = re.compile(r"[A-Za-z][\w:/]*")
_FOLDER_PREFIX = "wb-slurm-"
_MARKER = "WORKBENCH_TEST_SLURM"
"""Set in the daemons' environment to the cluster's folder, so leftovers can be found at the end."""


class SlurmStartError(RuntimeError):
    """The daemons did not come up; the message holds their logs."""


@dataclass
class SlurmCluster:
    """A running single-node Slurm: one node (``node``) with ``cpus`` CPUs in partition ``partition``."""

    conf: Path
    """The slurm.conf every Slurm command must be given (``SLURM_CONF``)."""
    env: dict[str, str]
    """``{"SLURM_CONF": str(conf)}``: what a command (local or over SSH) must have in its environment."""
    partition: str
    node: str
    cpus: int
    memory_mb: int
    """The node's RealMemory: the most a job may ask for with ``--mem``."""
    folder: Path
    """Config, munge key and socket, state, spool and logs."""
    munge_socket: Path
    processes: dict[str, subprocess.Popen] = field(default_factory=dict, repr=False)

    @property
    def logs(self) -> dict[str, Path]:
        return {name: self.folder / f"{name}.log" for name in ("munged", "slurmctld", "slurmd")}

    def command_env(self) -> dict[str, str]:
        return {**os.environ, **self.env}

    def run(self, *args: str, check: bool = False, timeout: float = 30,
            input: str | None = None) -> subprocess.CompletedProcess:
        """Run a Slurm command (``run("squeue", "-h")``) with ``SLURM_CONF`` set; text output."""
        result = subprocess.run(list(args), env=self.command_env(), capture_output=True, text=True,
                                timeout=timeout, input=input, stdin=None if input is not None else subprocess.DEVNULL)
        if check and result.returncode != 0:
            raise AssertionError(f"{shlex.join(args)} exited with {result.returncode}:\n"
                                 f"{result.stdout}{result.stderr}")
        return result

    def submit(self, script: str, *options: str) -> str:
        """``sbatch --parsable OPTIONS`` with ``script`` (text starting with ``#!``) on stdin; the job id."""
        result = self.run("sbatch", "--parsable", *options, input=script, check=True)
        return result.stdout.strip().split(";")[0]

    def job(self, job_id: str) -> dict[str, str]:
        """``scontrol show job`` as a dict (``JobState``, ``ExitCode`` "code:signal", ``Reason``, …)."""
        result = self.run("scontrol", "show", "job", "-o", str(job_id), check=True)
        return parse_scontrol(result.stdout)

    def wait_for_job(self, job_id: str, states=_TERMINAL_STATES, timeout: float = 60) -> dict[str, str]:
        """Poll until the job's state is one of ``states`` (by default: any end state); its record."""
        deadline = time.monotonic() + timeout
        while True:
            info = self.job(job_id)
            if info.get("JobState") in states:
                return info
            if time.monotonic() > deadline:
                raise AssertionError(f"job {job_id} still {info.get('JobState')} after {timeout} s "
                                     f"(wanted {sorted(states)}): {info}")
            time.sleep(0.1)

    def active_jobs(self) -> list[str]:
        """Ids of the jobs that are pending, running or completing."""
        result = self.run("squeue", "-h", "-o", "%i", "-t", "PENDING,RUNNING,SUSPENDED,COMPLETING,CONFIGURING")
        return result.stdout.split() if result.returncode == 0 else []

    def cancel_all(self, timeout: float = 20) -> None:
        """Cancel every job and wait until none is left pending, running or completing."""
        deadline = time.monotonic() + timeout
        jobs = self.active_jobs()
        if jobs:
            self.run("scancel", *jobs)
        while jobs and time.monotonic() < deadline:
            time.sleep(0.1)
            jobs = self.active_jobs()


@dataclass
class SlurmOverSsh:
    """What a cluster profile needs to reach ``cluster`` through ``ssh`` (the sshd fixture)."""

    host: str
    port: int
    user: str
    key_file: Path
    """Private key without a passphrase that the sshd accepts for ``user``."""
    env: dict[str, str]
    """Export these in every command on the login side (``SLURM_CONF``)."""
    partition: str
    host_public_key: str
    """The sshd's host key (``ssh-ed25519 AAAA…``), for a known_hosts file."""
    cluster: SlurmCluster
    ssh: SshServer

    @property
    def known_hosts_line(self) -> str:
        return f"[{self.host}]:{self.port} {self.host_public_key}"

    def run(self, command: str, timeout: float = 30) -> subprocess.CompletedProcess:
        """Run ``command`` over ssh the way the cluster code does: ``env`` exported, under ``bash -lc``."""
        exports = "".join(f"export {name}={shlex.quote(value)}; " for name, value in self.env.items())
        return self.ssh.run(f"bash -lc {shlex.quote(exports + command)}", timeout=timeout)


def parse_scontrol(text: str) -> dict[str, str]:
    """``Key=Value Key=Value …`` (one record, ``-o``) as a dict; a value may contain spaces."""
    record: dict[str, str] = {}
    last = None
    for token in text.strip().split(" "):
        key, equals, value = token.partition("=")
        if equals and _KEY.fullmatch(key):
            record[key] = value
            last = key
        elif last is not None:
            record[last] += " " + token
    return record


def start_slurm(folder: Path | None = None) -> SlurmCluster:
    """Start munged, slurmctld and slurmd under ``folder`` (a new one in /tmp by default); wait for idle.

    The folder must be reachable by user ``munge`` (pytest's own temporary folders are not), and the
    munge socket path must stay short, hence /tmp."""
    _check_prerequisites()
    _sweep_abandoned()
    if folder is None:
        folder = Path(tempfile.mkdtemp(prefix=_FOLDER_PREFIX, dir="/tmp"))
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o711)
    (folder / "owner").write_text(_process_identity(os.getpid()))
    last_error = ""
    for _ in range(3):  # another process may take a free port between our check and the daemons' bind
        cluster = _configure(folder)
        try:
            _start_daemons(cluster)
            return cluster
        except SlurmStartError as error:
            last_error = str(error)
            stop_slurm(cluster, remove=False)
            if "Address already in use" not in last_error:
                break
        except BaseException:
            stop_slurm(cluster)
            raise
    shutil.rmtree(folder, ignore_errors=True)
    raise SlurmStartError(last_error)


def stop_slurm(cluster: SlurmCluster, remove: bool = True) -> None:
    """Cancel the jobs, stop the daemons, kill whatever is left of this cluster; remove its folder."""
    ctld = cluster.processes.get("slurmctld")
    if ctld is not None and ctld.poll() is None:
        try:
            cluster.cancel_all()
        except (subprocess.SubprocessError, OSError):
            pass
    for name in ("slurmd", "slurmctld", "munged"):
        process = cluster.processes.get(name)
        if process is not None:
            _stop_process(process)
    _kill_leftovers([f"{_MARKER}={cluster.folder}".encode(), f"SLURM_CONF={cluster.conf}".encode()])
    if remove:
        shutil.rmtree(cluster.folder, ignore_errors=True)


@pytest.fixture(scope="session")
def slurm_cluster():
    """A real single-node Slurm for the whole session (see ``SlurmCluster``); stopped at the end."""
    try:
        cluster = start_slurm()
    except SlurmStartError as error:
        pytest.fail(str(error), pytrace=False)
    try:
        yield cluster
    finally:
        stop_slurm(cluster)


@pytest.fixture(scope="session")
def slurm_over_ssh(sshd_server, slurm_cluster) -> SlurmOverSsh:
    """The session's Slurm reached through the session's sshd (see ``SlurmOverSsh``)."""
    host_key = (sshd_server.folder / "host_ed25519.pub").read_text().split()
    return SlurmOverSsh(host=sshd_server.host, port=sshd_server.port, user=sshd_server.user,
                        key_file=sshd_server.client_key, env=dict(slurm_cluster.env),
                        partition=slurm_cluster.partition, host_public_key=" ".join(host_key[:2]),
                        cluster=slurm_cluster, ssh=sshd_server)


@pytest.fixture
def slurm_clean(slurm_cluster):
    """The session's Slurm; the jobs still queued or running when the test ends are cancelled."""
    yield slurm_cluster
    slurm_cluster.cancel_all()


# --- start-up -------------------------------------------------------------------------------------

def _check_prerequisites() -> None:
    missing = {program: package for program, package in _PROGRAMS.items()
               if shutil.which(program) is None
               and not os.path.exists(f"/usr/sbin/{program}")}
    if missing:
        packages = " ".join(sorted(set(missing.values())))
        pytest.fail(f"{', '.join(sorted(missing))} missing: install {packages} (apt-get install {packages}) "
                    f"to run the tests that need a real Slurm.", pytrace=False)
    try:
        pwd.getpwnam("munge")
    except KeyError:
        pytest.fail("user munge is missing: install munge (apt-get install munge).", pytrace=False)
    if os.geteuid() != 0:
        pytest.fail("the test Slurm needs root: slurmd runs jobs as their user and munged runs as user munge.",
                    pytrace=False)


def _program(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


def _short_hostname() -> str:
    try:
        name = subprocess.run(["hostname", "-s"], capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        name = ""
    return name or socket.gethostname().split(".")[0]


def _memory_mb() -> int:
    """Half the machine's memory: enough for tests' ``--mem``, never more than there is."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1024 * 1024)
    return max(256, total // 2)


def _configure(folder: Path) -> SlurmCluster:
    munge_folder = folder / "munge"
    munge_folder.mkdir(exist_ok=True)
    munge = pwd.getpwnam("munge")
    os.chown(munge_folder, munge.pw_uid, munge.pw_gid)
    munge_folder.chmod(0o711)  # munged wants its socket's folder searchable by everyone
    for name in ("state", "spool"):
        (folder / name).mkdir(exist_ok=True)
    (folder / "plugstack.conf").write_text("")  # not the machine's /etc/slurm/plugstack.conf
    node = _short_hostname()
    cpus = os.cpu_count() or 1
    memory = _memory_mb()
    ctld_port, slurmd_port = _free_ports(2)
    munge_socket = munge_folder / "munge.socket"
    conf = folder / "slurm.conf"
    conf.write_text("\n".join([
        "ClusterName=workbench-test",
        f"SlurmctldHost={node}(127.0.0.1)",
        f"SlurmctldPort={ctld_port}",
        f"SlurmdPort={slurmd_port}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={munge_socket}",
        "CommunicationParameters=NoInAddrAny,NoCtldInAddrAny",
        f"StateSaveLocation={folder / 'state'}",
        f"SlurmdSpoolDir={folder / 'spool'}",
        f"SlurmctldPidFile={folder / 'slurmctld.pid'}",
        f"SlurmdPidFile={folder / 'slurmd.pid'}",
        f"SlurmctldLogFile={folder / 'slurmctld.log'}",
        f"SlurmdLogFile={folder / 'slurmd.log'}",
        "SlurmctldDebug=info",
        "SlurmdDebug=info",
        f"PlugStackConfig={folder / 'plugstack.conf'}",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_CPU",
        "MpiDefault=none",
        "SwitchType=switch/none",
        "ReturnToService=2",
        "MailProg=/bin/true",
        # The node's CPUs and memory as written here, whatever slurmd detects (containers, cpusets).
        "SlurmdParameters=config_overrides",
        # Finished jobs stay visible to scontrol/squeue for an hour (there is no accounting database).
        "MinJobAge=3600",
        # scancel: SIGTERM, then SIGKILL after this many seconds.
        "KillWait=5",
        "SchedulerParameters=batch_sched_delay=0",
        f"NodeName={node} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory} State=UNKNOWN",
        f"PartitionName={PARTITION} Nodes={node} Default=YES MaxTime=INFINITE State=UP",
        "",
    ]))
    return SlurmCluster(conf=conf, env={"SLURM_CONF": str(conf)}, partition=PARTITION, node=node, cpus=cpus,
                        memory_mb=memory, folder=folder, munge_socket=munge_socket)


def _start_daemons(cluster: SlurmCluster) -> None:
    folder, conf = cluster.folder, str(cluster.conf)
    for log in cluster.logs.values():
        log.unlink(missing_ok=True)
    munge_folder = cluster.munge_socket.parent
    key = munge_folder / "munge.key"
    as_munge = [_program("setpriv"), "--reuid=munge", "--regid=munge", "--clear-groups"]
    if not key.exists():
        subprocess.run([*as_munge, _program("mungekey"), "--create", f"--keyfile={key}"],
                       check=True, capture_output=True, timeout=10)
    # --pdeathsig: the daemons go when the test process dies without its teardown.
    cluster.processes["munged"] = _spawn(
        [*as_munge, "--pdeathsig=TERM", _program("munged"), "--foreground", f"--socket={cluster.munge_socket}",
         f"--key-file={key}", f"--pid-file={munge_folder / 'munged.pid'}",
         f"--seed-file={munge_folder / 'munged.seed'}", f"--log-file={munge_folder / 'munged.log'}"],
        cluster, cluster.logs["munged"])
    _wait(cluster, lambda: subprocess.run([_program("munge"), "-n", "-S", str(cluster.munge_socket)],
                                          capture_output=True, timeout=5).returncode == 0, "munged to answer")
    daemon = [_program("setpriv"), "--pdeathsig=TERM"]
    cluster.processes["slurmctld"] = _spawn([*daemon, _program("slurmctld"), "-D", "-f", conf], cluster,
                                            folder / "slurmctld.stderr")
    cluster.processes["slurmd"] = _spawn([*daemon, _program("slurmd"), "-D", "-f", conf, "-N", cluster.node],
                                         cluster, folder / "slurmd.stderr")

    def idle() -> bool:
        result = cluster.run("sinfo", "-h", "-o", "%T", timeout=10)
        return result.returncode == 0 and result.stdout.strip() == "idle"

    _wait(cluster, idle, "the node to be idle")


def _spawn(argv: list[str], cluster: SlurmCluster, output: Path) -> subprocess.Popen:
    env = {**os.environ, **cluster.env, _MARKER: str(cluster.folder)}
    with output.open("ab") as out:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, env=env,
                                cwd=cluster.folder)


def _wait(cluster: SlurmCluster, ready, what: str) -> None:
    deadline = time.monotonic() + _START_TIMEOUT
    while True:
        dead = [name for name, process in cluster.processes.items() if process.poll() is not None]
        if dead:
            raise SlurmStartError(f"{', '.join(dead)} exited while waiting for {what}.\n{_daemon_logs(cluster)}")
        try:
            if ready():
                return
        except subprocess.TimeoutExpired:
            pass
        if time.monotonic() > deadline:
            raise SlurmStartError(f"Slurm did not start: gave up waiting for {what} after {_START_TIMEOUT:.0f} s."
                                  f"\n{_daemon_logs(cluster)}")
        time.sleep(0.1)


def _daemon_logs(cluster: SlurmCluster) -> str:
    parts = []
    for path in [*sorted(cluster.folder.glob("*.stderr")), *cluster.logs.values(),
                 cluster.munge_socket.parent / "munged.log"]:
        if path.exists() and path.stat().st_size:
            text = path.read_text(errors="replace")
            parts.append(f"--- {path.name} ---\n{text[-6000:]}")
    parts.append(f"--- {cluster.conf.name} ---\n{cluster.conf.read_text()}")
    return "\n".join(parts)


def _free_ports(count: int) -> list[int]:
    probes = []
    try:
        for _ in range(count):
            probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            probe.bind(("127.0.0.1", 0))
            probes.append(probe)
        return [probe.getsockname()[1] for probe in probes]
    finally:
        for probe in probes:
            probe.close()


# --- shut-down ------------------------------------------------------------------------------------

def _stop_process(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=_STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _process_identity(pid: int) -> str:
    """``pid`` and its start time: a pid alone may be reused by another process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return f"{pid} {stat.rsplit(')', 1)[1].split()[19]}"


def _sweep_abandoned() -> None:
    """Kill what is left of clusters whose test process died without its teardown (killed, or a
    hard timeout): the daemons go with it (parent-death signal), but job steps and jobs stay."""
    for folder in Path("/tmp").glob(f"{_FOLDER_PREFIX}*"):
        try:
            owner = (folder / "owner").read_text()
        except OSError:
            continue  # being set up, or not ours
        if owner and _process_identity(int(owner.split()[0])) == owner:
            continue  # another test session, still running
        _kill_leftovers([f"{_MARKER}={folder}".encode(), f"SLURM_CONF={folder / 'slurm.conf'}".encode()])
        shutil.rmtree(folder, ignore_errors=True)


def _kill_leftovers(markers: list[bytes]) -> None:
    """SIGKILL every process whose environment holds one of ``markers`` (job steps, jobs, daemons)."""
    me = os.getpid()
    for _ in range(3):
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == me:
                continue
            try:
                environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if any(marker in environ for marker in markers):
                found.append(int(entry))
        if not found:
            return
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.2)
