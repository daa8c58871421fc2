"""``scripts/test``'s system packages (issue 38): it gave up at once when another process held the dpkg lock,
and the browser tests then skipped, even under CI. ``scripts/apt_install`` now waits (bounded) for the lock;
under ``CI=true`` a browser that cannot be installed fails the run. A fake ``apt-get`` on ``PATH`` plays
the lock holder; nothing is installed."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOCKED = "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (unattended-upgr)"


def _fake_apt(tmp_path: Path, *, locked_tries: int, other_error: str = "") -> Path:
    """A bin folder with an ``apt-get`` that logs each call, reports the lock ``locked_tries`` times (or
    ``other_error`` every time), then succeeds; and a ``sudo`` that runs its arguments."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log, count = tmp_path / "calls.log", tmp_path / "count"
    count.write_text("0")
    script = f"""#!/usr/bin/env bash
echo "$*" >> {log}
n=$(cat {count}); echo $((n + 1)) > {count}
if [ -n "{other_error}" ]; then echo "{other_error}" >&2; exit 100; fi
if [ "$n" -lt {locked_tries} ]; then echo "{LOCKED}" >&2; exit 100; fi
exit 0
"""
    for name, text in (("apt-get", script), ("sudo", '#!/usr/bin/env bash\nexec "$@"\n')):
        path = bin_dir / name
        path.write_text(text)
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return bin_dir


def _run(tmp_path: Path, bin_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "ANALYTICS_NB_APT_RETRY": "0.1",
        **env,
    }
    return subprocess.run(["bash", *args], cwd=ROOT, env=environ, capture_output=True, text=True, timeout=120)


def test_apt_install_waits_for_the_dpkg_lock_then_installs(tmp_path: Path) -> None:
    bin_dir = _fake_apt(tmp_path, locked_tries=3)
    done = _run(tmp_path, bin_dir, "scripts/apt_install", "chromium", ANALYTICS_NB_APT_WAIT="60")
    assert done.returncode == 0, done.stderr
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert calls[-1].endswith("install -y -qq chromium") and len(calls) == 5  # 3 locked updates, then both
    assert all("DPkg::Lock::Timeout=" in call for call in calls)
    assert done.stderr.count("holds the dpkg lock; waiting") == 3


def test_apt_install_gives_up_after_the_bounded_wait(tmp_path: Path) -> None:
    bin_dir = _fake_apt(tmp_path, locked_tries=10_000)
    done = _run(tmp_path, bin_dir, "scripts/apt_install", "chromium", ANALYTICS_NB_APT_WAIT="1")
    assert done.returncode == 1
    assert "held the dpkg lock for 1 s; chromium not installed" in done.stderr


def test_apt_install_does_not_wait_on_another_error(tmp_path: Path) -> None:
    bin_dir = _fake_apt(tmp_path, locked_tries=0, other_error="E: Unable to locate package chromium")
    done = _run(tmp_path, bin_dir, "scripts/apt_install", "chromium", ANALYTICS_NB_APT_WAIT="60")
    assert done.returncode == 1 and "Unable to locate package chromium" in done.stderr
    assert len((tmp_path / "calls.log").read_text().splitlines()) == 1


def test_under_ci_a_browser_that_cannot_be_installed_fails_the_run(tmp_path: Path) -> None:
    """Before anything else runs: the fake ``python3`` exits 99 if the script goes on to make its venv."""
    bin_dir = _fake_apt(tmp_path, locked_tries=0, other_error="E: Unable to locate package chromium")
    (bin_dir / "python3").write_text("#!/usr/bin/env bash\nexit 99\n")
    (bin_dir / "python3").chmod(0o755)
    env = {
        "ANALYTICS_NB_CHROMIUM": str(tmp_path / "no-chromium"),
        "ANALYTICS_NB_VENV": str(tmp_path / "venv"),
        "ANALYTICS_NB_APT_WAIT": "1",
    }
    ci = _run(tmp_path, bin_dir, "scripts/test", CI="true", **env)
    assert ci.returncode == 1, ci.stderr
    assert "under CI=true the browser tests must run" in ci.stderr
    local = _run(tmp_path, bin_dir, "scripts/test", CI="false", **env)
    assert (
        local.returncode == 99
    )  # outside CI it goes on (to the fake python3) with the browser tests skipped
    assert "browser tests will skip" in local.stderr
