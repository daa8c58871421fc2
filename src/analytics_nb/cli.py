"""The `analytics-nb` command line: `analytics-nb sandbox ...` runs a local sandbox server until Ctrl-C."""

from __future__ import annotations

import argparse
import importlib.util
import signal
import sys
import threading
from collections.abc import Sequence


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="analytics-nb", description="PostHog-style analytics from notebooks."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sb = sub.add_parser("sandbox", help="run a local PostHog-compatible sandbox server until Ctrl-C")
    sb.add_argument(
        "--port", type=int, default=8010, help="port to listen on (0 = any free port; default 8010)"
    )
    sb.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    sb.add_argument(
        "--db", default=None, metavar="FILE", help="SQLite file to keep data in (default: in memory)"
    )
    sb.add_argument(
        "--seed", choices=("demo", "empty"), default="demo", help="data to start with (default demo)"
    )
    sb.add_argument(
        "--profile",
        choices=("spec", "cloud"),
        default="spec",
        help="spec: follow the API spec; cloud: add PostHog Cloud's refusals and rate limits",
    )
    sb.add_argument(
        "--admin", action="store_true", help="enable the /_sandbox/faults admin endpoint (owner key only)"
    )
    sb.add_argument(
        "--rotate-key",
        action="store_true",
        help="make a new owner key and revoke the stored one (a restart on the same --db reuses the key)",
    )
    sb.add_argument(
        "--rate-limits",
        choices=("auto", "on", "off"),
        default="auto",
        help="per-key rate limits: auto = on in the cloud profile only (default)",
    )
    sb.add_argument("--fault-seed", type=int, default=0, help="seed of the fault-injection random draws")
    # -- `demo` subcommand: added by the demo part; runs analytics_nb.demo.main(argv) when that module
    # exists --
    sub.add_parser(
        "demo",
        help="run the main workflows against the embedded sandbox (offline), writing CSVs and a chart "
        "to --out DIR",
        add_help=False,
    )
    return parser


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _run_sandbox(args: argparse.Namespace) -> int:
    from analytics_nb.sandbox import launch

    try:
        sb = launch(
            seed=args.seed,
            profile=args.profile,
            db=args.db,
            port=args.port,
            host=args.host,
            admin=args.admin,
            rotate_key=args.rotate_key,
            rate_limits={"auto": None, "on": True, "off": False}[args.rate_limits],
            fault_seed=args.fault_seed,
        )
    except OSError as exc:
        print(
            f"analytics-nb sandbox: cannot listen on {args.host}:{args.port} ({exc.strerror}); "
            f"choose another port with --port N (0 picks a free one)",
            file=sys.stderr,
        )
        return 2
    print(f"analytics-nb sandbox ({sb.profile} profile, {args.seed} seed) running at {sb.url}")
    print(f"  POSTHOG_HOST={sb.url}")
    print(f"  POSTHOG_PERSONAL_API_KEY={sb.personal_api_key}")
    print(f"  POSTHOG_PROJECT_API_KEY={sb.project_api_key}")
    print(f"  POSTHOG_PROJECT_ID={sb.project_id}")
    print(f"  organization id: {sb.organization_id}")
    print("Press Ctrl-C to stop.", flush=True)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        print("stopping sandbox", file=sys.stderr)
    finally:
        sb.stop()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `analytics-nb` command; returns the exit status."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    # ---- demo subcommand (owned by the demo part): delegate everything after "demo" ----
    if args_list[:1] == ["demo"]:
        if importlib.util.find_spec("analytics_nb.demo") is None:
            print("analytics-nb demo: the demo module is not installed in this build", file=sys.stderr)
            return 2
        from analytics_nb import demo

        result = demo.main(args_list[1:])
        return int(result or 0)
    # ---- end of demo subcommand ----
    parser = _build_parser()
    args = parser.parse_args(args_list)
    if args.command == "sandbox":
        return _run_sandbox(args)
    parser.print_help()
    return 1


if __name__ == "__main__":
    sys.exit(main())
