"""The cluster capability: training runs on a cluster reached over SSH (Slurm or a plain host).

Qt-free services here (profiles, the SSH connection, host keys, code and data sync, jobs), the
``workbench cluster …`` commands in ``cli.py``, and the window parts in ``widgets/``.

Names are imported from their modules on first use (PEP 562): paramiko and keyring load only
when a connection is made.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench.project.lazy_exports import lazy_exports

_WHERE = {
    "ClusterError": "errors",
    "UnknownHostKey": "errors",
    "HostKeyChanged": "errors",
    "AuthenticationFailed": "errors",
    "ConnectionLost": "errors",
    "CommandFailed": "errors",
    "CommandTimedOut": "errors",
    "ClusterProfile": "profiles",
    "SCHEDULERS": "profiles",
    "load_profiles": "profiles",
    "get_profile": "profiles",
    "save_profile": "profiles",
    "remove_profile": "profiles",
    "profiles_file": "profiles",
    "ClusterConnection": "connection",
    "CommandResult": "connection",
    "store_passphrase": "connection",
    "forget_passphrase": "connection",
    "remember_host_key": "host_keys",
    "workbench_known_hosts": "host_keys",
    "ProfileCheck": "checks",
    "check_profile": "checks",
    "test_profile": "checks",
    "ship_code": "code_sync",
    "ship_trainkit": "code_sync",
    "CodeSnapshot": "code_sync",
    "plan_sync": "data_sync",
    "sync_data": "data_sync",
    "SyncPlan": "data_sync",
    "SyncReport": "data_sync",
    "SyncProgress": "data_sync",
    "Resources": "jobs",
    "JobState": "jobs",
    "get_backend": "jobs",
    "STAGES": "remote_run",
    "RunProgress": "remote_run",
    "start_cluster_run": "remote_run",
    "resume_cluster_run": "remote_run",
    "pull": "remote_run",
    "active_runs_on": "remote_run",
    "LastChoice": "last_choice",
    "read_choice": "last_choice",
    "remember_choice": "last_choice",
}

__all__ = sorted(_WHERE)


__getattr__, __dir__ = lazy_exports(__name__, _WHERE, globals())


if TYPE_CHECKING:
    from workbench.cluster.checks import ProfileCheck, check_profile, test_profile
    from workbench.cluster.code_sync import CodeSnapshot, ship_code, ship_trainkit
    from workbench.cluster.data_sync import SyncPlan, SyncProgress, SyncReport, plan_sync, sync_data
    from workbench.cluster.jobs import JobState, Resources, get_backend
    from workbench.cluster.last_choice import LastChoice, read_choice, remember_choice
    from workbench.cluster.remote_run import (STAGES, RunProgress, active_runs_on, pull, resume_cluster_run,
                                              start_cluster_run)
    from workbench.cluster.connection import ClusterConnection, CommandResult, forget_passphrase, store_passphrase
    from workbench.cluster.errors import (AuthenticationFailed, ClusterError, CommandFailed, CommandTimedOut,
                                          ConnectionLost, HostKeyChanged, UnknownHostKey)
    from workbench.cluster.host_keys import remember_host_key, workbench_known_hosts
    from workbench.cluster.profiles import (SCHEDULERS, ClusterProfile, get_profile, load_profiles, profiles_file,
                                            remove_profile, save_profile)
