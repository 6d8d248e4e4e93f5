"""``workbench cluster …``: cluster profiles from a terminal (add, edit, list, show, remove, test,
passphrase).

Errors and ``--json`` are the CLI kit's (workbench.clikit): an error (ClusterError) is one line
and exit status 1 (with ``--json``, stdout gets ``{"error": …}`` too). The service modules are
imported inside the commands: ``--help`` needs none of them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from workbench.clikit import emit, print_json, reports_errors

_JSON = click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
_NAME = click.argument("name")


def _profile_options(adding: bool):
    """The options that describe a profile; for ``edit`` every one is optional and only the
    ones given change."""
    def unset(default):
        return default if adding else None

    options = [
        click.option("--host", required=adding, help="The cluster's login node (name or address)."),
        click.option("--port", type=click.IntRange(1, 65535), default=unset(22), show_default=adding,
                     help="Its SSH port."),
        click.option("--user", default=unset(""), help="Login name on the cluster (default: your local name)."),
        click.option("--key", "key_file", type=click.Path(path_type=Path), default=None,
                     help="Private key file (default: the keys of your ssh-agent)."),
        click.option("--jump", "jump_host", default=unset(""), metavar="[USER@]HOST[:PORT]",
                     help="A bastion host to connect through (like ssh -J)."),
        click.option("--work-root", default=unset("~/workbench"), show_default=adding,
                     help="Folder on the cluster for code and run folders."),
        click.option("--data-root", default=unset(""),
                     help="Folder on the cluster's shared storage for datasets (default: WORK_ROOT/data)."),
        click.option("--python-setup", default=unset(""),
                     help="Shell lines that activate Python before a job, e.g. 'source ~/venv/bin/activate'."),
        click.option("--scheduler", type=click.Choice(["slurm", "ssh"]), default=unset("slurm"),
                     show_default=adding, help="slurm, or ssh for one machine without a scheduler."),
        click.option("--partition", default=unset(""), help="Default Slurm partition."),
        click.option("--account", default=unset(""), help="Default Slurm account."),
        click.option("--qos", default=unset(""), help="Default Slurm QoS."),
        click.option("--env", "env", multiple=True, metavar="NAME=VALUE",
                     help="A variable exported for every command on the cluster (repeatable)."),
    ]
    if not adding:
        options.append(click.option("--unset-env", multiple=True, metavar="NAME",
                                    help="Stop exporting this variable (repeatable)."))
        options.append(click.option("--no-key", is_flag=True, help="Use the ssh-agent instead of a key file."))

    def decorate(function):
        for option in reversed(options):
            function = option(function)
        return function

    return decorate


@click.group("cluster", context_settings={"help_option_names": ["-h", "--help"]})
def cluster_group() -> None:
    """Cluster profiles: how Workbench reaches the clusters you train on.

    Profiles live in your user settings (clusters.toml), never in a project. Passphrases are
    never written anywhere: keep them in the OS keyring (`workbench cluster passphrase NAME`)
    or load the key into ssh-agent.
    """


@cluster_group.command("add")
@_NAME
@_profile_options(adding=True)
@_JSON
@reports_errors
def add_command(name: str, key_file: Path | None, env: tuple[str, ...], as_json: bool, **values) -> None:
    """Add a cluster profile called NAME."""
    from workbench.cluster.errors import ClusterError
    from workbench.cluster.profiles import ClusterProfile, load_profiles, save_profile

    if any(p.name == name for p in load_profiles()):
        raise ClusterError(f"There is already a cluster profile named {name!r}. Change it with "
                           f"`workbench cluster edit {name} …`, or remove it first.")
    profile = ClusterProfile(name=name, key_file=_key_path(key_file), env=_env(env), **values)
    path = save_profile(profile)
    emit(profile.to_json(), as_json,
          f"Added {name} ({profile.destination}) to {path}. Check it with `workbench cluster test {name}`.")


@cluster_group.command("edit")
@_NAME
@_profile_options(adding=False)
@_JSON
@reports_errors
def edit_command(name: str, key_file: Path | None, no_key: bool, env: tuple[str, ...], unset_env: tuple[str, ...],
                 as_json: bool, **values) -> None:
    """Change the options given of the cluster profile NAME; the others stay."""
    from workbench.cluster.profiles import get_profile, save_profile

    profile = get_profile(name)
    data_follows_work = profile.data_root == profile.work_root.rstrip("/") + "/data"
    for field_name, value in values.items():
        if value is not None:
            setattr(profile, field_name, value)
    if values["work_root"] is not None and values["data_root"] is None and data_follows_work:
        profile.data_root = profile.work_root.rstrip("/") + "/data"
    if no_key:
        profile.key_file = ""
    elif key_file is not None:
        profile.key_file = _key_path(key_file)
    for variable in unset_env:
        profile.env.pop(variable, None)
    profile.env.update(_env(env))
    path = save_profile(profile)
    emit(profile.to_json(), as_json, f"Saved {name} in {path}.")


@cluster_group.command("list")
@_JSON
@reports_errors
def list_command(as_json: bool) -> None:
    """List the cluster profiles."""
    from workbench.cluster.profiles import load_profiles

    profiles = load_profiles()
    if as_json:
        print_json([p.to_json() for p in profiles])
        return
    if not profiles:
        click.echo("No cluster profiles yet. Add one with `workbench cluster add NAME --host HOST`.")
        return
    rows = [("NAME", "DESTINATION", "SCHEDULER", "WORK ROOT")]
    rows += [(p.name, p.destination + (f" via {p.jump_host}" if p.jump_host else ""), p.scheduler, p.work_root)
             for p in profiles]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        click.echo("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:3])) + "  " + row[3])


@cluster_group.command("show")
@_NAME
@_JSON
@reports_errors
def show_command(name: str, as_json: bool) -> None:
    """Show the cluster profile NAME."""
    from workbench.cluster.profiles import get_profile, profiles_file

    profile = get_profile(name)
    if as_json:
        print_json(profile.to_json())
        return
    rows = [("name", profile.name), ("destination", profile.destination), ("host", profile.host),
            ("port", str(profile.port)), ("user", profile.user or f"{profile.login_user} (your local name)"),
            ("key file", profile.key_file or "the keys of ssh-agent"), ("jump host", profile.jump_host or "none"),
            ("work root", profile.work_root), ("data root", profile.data_root),
            ("python setup", profile.python_setup or "none"), ("scheduler", profile.scheduler),
            ("partition", profile.partition or "default"), ("account", profile.account or "default"),
            ("qos", profile.qos or "default")]
    rows += [("env", f"{k}={v}") for k, v in profile.env.items()] or [("env", "none")]
    rows.append(("stored in", str(profiles_file())))
    for label, value in rows:
        lines = value.splitlines() or [""]
        click.echo(f"{label:13} {lines[0]}")
        for more in lines[1:]:
            click.echo(f"{'':13} {more}")


@cluster_group.command("remove")
@_NAME
@click.option("--yes", "-y", is_flag=True, help="Remove it without asking, even while runs still use it.")
@reports_errors
def remove_command(name: str, yes: bool) -> None:
    """Remove the cluster profile NAME (runs made with it stay).

    Runs still active on it, in the projects opened recently or the one here, are listed first,
    and you are asked whether to remove it all the same."""
    from workbench.cluster.profiles import get_profile, remove_profile
    from workbench.cluster.remote_run import active_runs_on

    get_profile(name)  # a missing profile is named with the existing ones before anything else
    active = active_runs_on(name, _projects_in_use())
    if active and not yes:
        click.echo(f"{len(active)} run(s) still use {name}:")
        for info in active:
            click.echo(f"  {info.id}  {info.state:<9} {info.project_dir}")
        click.echo("They go on there, followed with the copy of the profile kept in each run folder, but resuming "
                   "them needs the profile.")
        click.confirm(f"Remove the cluster profile {name} anyway?", default=False, abort=True)
    remove_profile(name)
    click.echo(f"Removed the cluster profile {name}.")


def _projects_in_use() -> list[Path]:
    """The projects whose runs a change of profile may concern: those opened recently (an open
    project is among them) and the one that holds the current folder."""
    from workbench.project import RecentProjects

    projects = [recent.path for recent in RecentProjects().list() if recent.exists]
    here = Path.cwd()
    for folder in (here, *here.parents):
        if (folder / "workbench.toml").is_file():
            projects.append(folder)
            break
    return projects


@cluster_group.command("test")
@_NAME
@click.option("--trust", is_flag=True,
              help="Trust and remember the cluster's host key if it is not known yet (never a changed one).")
@_JSON
@reports_errors
def test_command(name: str, trust: bool, as_json: bool) -> None:
    """Check that the cluster NAME is ready for runs: connection, folders, git, Python and
    torch, and the scheduler. Prints each check with what to do when it failed; exits 1 then."""
    from workbench.cluster.checks import check_profile
    from workbench.cluster.errors import ClusterError
    from workbench.cluster.host_keys import remember_host_key
    from workbench.cluster.profiles import get_profile

    profile = get_profile(name)
    if not as_json:
        click.echo(f"Testing {name} ({profile.destination})")
    # At a terminal, a host key seen for the first time is asked about before any check is shown.
    report = None if as_json else _CheckReport(hold_unknown_host=not trust and sys.stdin.isatty())
    checks = check_profile(profile, accept_new_host=trust, on_check=report)
    if report is not None and report.held:
        unknown = report.held[0].error
        kind = f"{unknown.key_type} " if unknown.key_type else ""
        click.echo(f"The authenticity of host {_host_and_port(unknown.host, unknown.port)} can't be established.")
        click.echo(f"Its {kind}key fingerprint is {unknown.fingerprint}.")
        if click.confirm("Trust this key and remember it?", default=False):
            remember_host_key(unknown)
            report = _CheckReport(hold_unknown_host=False)
            checks = check_profile(profile, on_check=report)
        else:
            report.show_held()
    failed = [c for c in checks if not c.ok and not c.skipped]
    if as_json:
        print_json([{"name": c.name, "ok": c.ok, "skipped": c.skipped, "detail": c.detail, "advice": c.advice}
                    for c in checks])
        if failed:
            sys.exit(1)
        return
    if failed:
        raise ClusterError(f"{len(failed)} of {len(checks)} checks failed for {name} (see above).")
    click.echo(f"{name} is ready for runs.")


@cluster_group.command("passphrase")
@_NAME
@click.option("--forget", is_flag=True, help="Delete the stored passphrase instead.")
@reports_errors
def passphrase_command(name: str, forget: bool) -> None:
    """Keep the passphrase of NAME's key file in the OS keyring (asked without echo; checked
    against the key first). It is never written to a file."""
    from workbench.cluster.connection import forget_passphrase, store_passphrase
    from workbench.cluster.errors import ClusterError
    from workbench.cluster.profiles import get_profile

    profile = get_profile(name)
    if not profile.key_file:
        raise ClusterError(f"{name} logs in with the ssh-agent's keys, not a key file: there is no passphrase to "
                           f"keep. Give it a key with `workbench cluster edit {name} --key FILE`.")
    if forget:
        done = forget_passphrase(profile.key_file)
        click.echo(f"Forgot the passphrase of {profile.key_file}." if done
                   else f"No passphrase was stored for {profile.key_file}.")
        return
    passphrase = click.prompt(f"Passphrase of {profile.key_file}", hide_input=True)
    _check_unlocks(Path(profile.key_file).expanduser(), passphrase)
    store_passphrase(profile.key_file, passphrase)
    click.echo(f"Stored the passphrase of {profile.key_file} in the OS keyring.")


def _check_unlocks(key_file: Path, passphrase: str) -> None:
    import paramiko  # only here: loading it costs more than the rest of the command

    from workbench.cluster.errors import ClusterError

    try:
        paramiko.PKey.from_path(key_file, passphrase.encode("utf-8"))
    except FileNotFoundError:
        raise ClusterError(f"The key file {key_file} does not exist.") from None
    except Exception:
        raise ClusterError(f"That passphrase does not unlock {key_file}; nothing was stored.") from None


class _CheckReport:
    """Prints each check as it ends. With ``hold_unknown_host``, a connection stopped by a host
    key seen for the first time is held back, with the checks skipped after it, so that the user
    is asked about the key first; ``show_held`` prints them when the key is not trusted."""

    def __init__(self, hold_unknown_host: bool):
        self._hold = hold_unknown_host
        self.held: list = []

    def __call__(self, check) -> None:
        from workbench.cluster.errors import UnknownHostKey

        if self.held or (self._hold and isinstance(check.error, UnknownHostKey)):
            self.held.append(check)
            return
        _print_check(check)

    def show_held(self) -> None:
        for check in self.held:
            _print_check(check)
        self.held = []


def _host_and_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _print_check(check) -> None:
    status = "skipped" if check.skipped else "ok" if check.ok else "failed"
    click.echo(f"  {status:8}{check.name:11}{check.detail}")
    if check.advice:
        click.echo(f"  {'':8}{'':11}→ {check.advice}")


def _key_path(key_file: Path | None) -> str:
    if key_file is None:
        return ""
    from workbench.cluster.errors import ClusterError

    path = key_file.expanduser().absolute()
    if not path.is_file():
        raise ClusterError(f"The key file {path} does not exist. Give the private key (not the .pub), or leave "
                           f"--key out to use ssh-agent.")
    return str(path)


def _env(assignments: tuple[str, ...]) -> dict[str, str]:
    from workbench.cluster.profiles import parse_env_assignment

    return dict(parse_env_assignment(text) for text in assignments)
