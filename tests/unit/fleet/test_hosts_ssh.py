"""core.base.hosts ([[hosts]] in the config, HOST[:ROOT] arguments) and core.fleet.ssh (the
ssh argv, whose remote command line the remote shell reads back exactly as given)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rgpu_tui.core.base.config import ConfigError, load_settings
from rgpu_tui.core.base.hosts import HostSpec, parse_host_arg
from rgpu_tui.core.fleet.ssh import ssh_argv


def settings_from(tmp_path: Path, text: str):
    path = tmp_path / "config.toml"
    path.write_text(text)
    return load_settings(str(path), environ={}), str(path)


def test_hosts_tables_with_their_defaults(tmp_path: Path) -> None:
    settings, _ = settings_from(
        tmp_path,
        'price_per_hour = 2.0\n\n[[hosts]]\nname = "a100"\nssh = "gpu@203.0.113.7"\n'
        'root = "~/runs"\nprice_per_hour = 1.89\nremote_command = ["/opt/v/bin/rgpu-tui", '
        '"agent"]\n\n[[hosts]]\nssh = "box2"\n',
    )
    assert settings.price_per_hour == 2.0  # the file's own settings still count
    assert settings.hosts == (
        HostSpec("a100", "gpu@203.0.113.7", "~/runs", ("/opt/v/bin/rgpu-tui", "agent"), 1.89),
        HostSpec("box2", "box2", "./runs", "rgpu-tui agent", None),
    )


@pytest.mark.parametrize(
    "text, message",
    [
        ('[[hosts]]\nname = "a"\n', "line 1: [[hosts]] needs ssh = DESTINATION"),
        ('[[hosts]]\nssh = "a"\n\n[[hosts]]\nssh = "-oProxyCommand=x"\n', "line 4: ssh must be"),
        ('[[hosts]]\nssh = "a b"\n', "line 1: ssh must be an ssh destination"),
        ('[[hosts]]\nssh = "a"\nprice_per_hour = -1\n', "price_per_hour must be from 0"),
        ('[[hosts]]\nssh = "a"\nprice_per_hour = "2"\n', "price_per_hour must be a number"),
        ('[[hosts]]\nssh = "a"\nport = 22\n', "unknown key 'port' in [[hosts]]"),
        ('[[hosts]]\nssh = "a"\n[[hosts]]\nssh = "a"\n', "line 3: two hosts are named 'a'"),
        ('[[hosts]]\nssh = "a"\nname = "x y"\n', "name must be letters"),
        ('[[hosts]]\nssh = "a"\nremote_command = []\n', "remote_command must be a string"),
        ('[[hosts]]\nssh = "a"\nroot = "a\\nb"\n', "root must not hold control characters"),
        ('hosts = "h1"\n', "line 1: hosts must be [[hosts]] tables"),
    ],
)
def test_a_bad_host_is_one_line_naming_the_file_and_line(tmp_path: Path, text, message) -> None:
    with pytest.raises(ConfigError) as info:
        settings_from(tmp_path, text)
    error = str(info.value)
    assert error.startswith(str(tmp_path / "config.toml")) and message in error
    assert "\n" not in error


def test_host_arguments() -> None:
    configured = (HostSpec("a100", "gpu@203.0.113.7", "~/runs", "rgpu-tui agent", 1.89),)
    assert parse_host_arg("a100", configured) == configured[0]
    assert parse_host_arg("a100:/data/runs", configured).root == "/data/runs"
    assert parse_host_arg("a100:/data/runs", configured).price_per_hour == 1.89
    assert parse_host_arg("me@box:~/r") == HostSpec("me@box", "me@box", "~/r")
    assert parse_host_arg("box") == HostSpec("box", "box", "./runs")
    assert parse_host_arg("[2001:db8::1]:/r").ssh == "[2001:db8::1]"
    for bad in ("-oProxyCommand=sh", "box:", "[::1", "a b"):
        with pytest.raises(ValueError):
            parse_host_arg(bad)


@pytest.mark.parametrize(
    "root", ["~/runs", "/data/my runs", "it's $(touch pwned) `id` ;rm -rf x", "-rf", "ü/\\"]
)
def test_the_remote_shell_reads_the_root_back_exactly(tmp_path: Path, root: str) -> None:
    spec = HostSpec("h", "h", root, ("printf", "%s|"), 2.5)
    argv = ssh_argv(spec, ssh_config="/cfg", connect_timeout=7.5)
    assert argv[:10] == [
        "ssh", "-T", "-o", "BatchMode=yes", "-F", "/cfg", "-o", "ConnectTimeout=8", "-o",
        "RemoteCommand=none",
    ]  # fmt: skip
    assert argv[10:12] == ["--", "h"]
    # what a remote sshd does with the last argument: the user's shell runs it
    shown = subprocess.run(
        ["/bin/sh", "-c", argv[-1]], cwd=tmp_path, capture_output=True, text=True, check=True
    ).stdout
    expected = "./" + root if root.startswith("-") else root
    assert shown == f"--price-per-hour|2.5|{expected}|"
    assert not (tmp_path / "pwned").exists()


def test_fleet_without_hosts_or_with_a_bad_one_is_one_line_exit_2(tmp_path: Path) -> None:
    import sys

    from support.cli_env import clean_env

    env = clean_env(tmp_path)
    config = Path(env["XDG_CONFIG_HOME"]) / "rgpu-tui" / "config.toml"
    cases = [
        ((), f"rgpu-tui: no hosts: name them (rgpu-tui fleet h1 h2:~/runs) or add [[hosts]] "
         f"tables to {config}\n"),
        (("--", "-oProxyCommand=x"), "rgpu-tui: ssh must be an ssh destination ([user@]host "
         "or a Host alias)\n"),
        (("h1", "h1"), "rgpu-tui: a host is named twice\n"),
        (("h1", "--ssh-config", str(tmp_path / "none")), f"rgpu-tui: --ssh-config: "
         f"{tmp_path / 'none'} is not a file\n"),
    ]  # fmt: skip
    for args, expected in cases:
        proc = subprocess.run(
            [sys.executable, "-m", "rgpu_tui", "fleet", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", expected)
