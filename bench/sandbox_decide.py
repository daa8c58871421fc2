"""Benchmark: sandbox decide throughput and latency on loopback.

Starts the sandbox (demo seed) in a subprocess so the load generator does not share its GIL, then drives
`POST /decide/?v=3` (and `/flags/?v=2`) with 32 concurrent keep-alive HTTP/1.1 connections written on raw
asyncio streams (a lean client, so the server is what is measured), over the seeded persons, 12+ flags.
Three measurement windows after a warm-up; the best window's req/s, p50 and p99 are printed, with the ratio
against the named baseline: the target of 1,000 decide/s with p99 < 100 ms (there is no analyst-written
competitor for a server; the client-side comparisons are in bench/simulate.py).

    .venv/bin/python bench/sandbox_decide.py [--seconds 10] [--clients 32] [--endpoint decide|flags]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

BASELINE_RPS = 1000.0
BASELINE_P99_MS = 100.0

# The demo seed has 16 flags; the benchmark keeps 12 (every operator family, multivariate, group, holdout,
# dependency and cohort flags) by soft-deleting four. The server runs under uvicorn's defaults.
_SERVER = r"""
import json, sys, uvicorn
from analytics_nb.sandbox import create_app
from analytics_nb.sandbox._resources.feature_flags import list_flags, update_flag
app = create_app(seed="demo", geoip=True)
ctx = app.ctx
drop = {"gradual-rollout", "sunset-banner", "legacy-accounts", "early-access-ai"}
for flag in list_flags(ctx.store, ctx.project_id):
    if flag["key"] in drop:
        update_flag(ctx.store, ctx.project_id, flag["id"], {"deleted": True})
n = len(list_flags(ctx.store, ctx.project_id))
try:
    import httptools  # noqa: F401  (uvicorn's "auto" HTTP implementation picks it when installed)
    impl = "httptools"
except ImportError:
    impl = "h11"
print(json.dumps({"token": ctx.project_api_key, "flags": n, "http": impl}), flush=True)
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False,
            lifespan="off")
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _wait_port(port: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            _r, w = await asyncio.open_connection("127.0.0.1", port)
            w.close()
            return
        except OSError:
            await asyncio.sleep(0.1)
    raise RuntimeError("the sandbox did not start listening in time")


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc), 0.0 when unavailable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def _request(path: str, body: bytes) -> bytes:
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nX-Forwarded-For: 81.2.69.142\r\n\r\n"
    )
    return head.encode("ascii") + body


async def _read_response(reader: asyncio.StreamReader) -> int:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    length = 0
    for line in lines[1:]:
        if line[:15].lower() == b"content-length:":
            length = int(line[15:].strip())
    if length:
        await reader.readexactly(length)
    return status


async def _client(
    port: int, bodies: list[bytes], stop: float, latencies: list[float], errors: list[int], offset: int
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    i = offset
    try:
        while time.perf_counter() < stop:
            payload = bodies[i % len(bodies)]
            i += 1
            t0 = time.perf_counter()
            writer.write(payload)
            status = await _read_response(reader)
            latencies.append(time.perf_counter() - t0)
            if status != 200:
                errors.append(status)
    finally:
        writer.close()


async def _run(args: argparse.Namespace) -> int:
    port = _free_port()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-c", _SERVER, str(port)],
        stdout=subprocess.PIPE,
        env=env,
        cwd=str(Path(__file__).resolve().parent.parent),
    )
    try:
        assert proc.stdout is not None
        info = json.loads(proc.stdout.readline())
        await _wait_port(port)
        token = info["token"]
        path = "/decide/?v=3" if args.endpoint == "decide" else "/flags/?v=2"
        bodies = []
        for i in range(2000):
            body: dict[str, object] = {"api_key": token, "distinct_id": f"user-{(i * 7) % 3000:05d}"}
            if i % 3 == 0:
                body["groups"] = {"company": f"company-{i % 40:03d}"}
            if i % 5 == 0:
                body["person_properties"] = {"plan": "pro"}
            bodies.append(_request(path, json.dumps(body).encode()))
        # warm-up
        warm: list[float] = []
        await asyncio.gather(
            *[_client(port, bodies, time.perf_counter() + 1.0, warm, [], k * 61) for k in range(args.clients)]
        )
        best: tuple[float, list[float], list[int], float, float] | None = None
        for _ in range(3):
            latencies_w: list[float] = []
            errors_w: list[int] = []
            cpu_before = _cpu_seconds(proc.pid)
            start = time.perf_counter()
            stop = start + args.seconds
            await asyncio.gather(
                *[_client(port, bodies, stop, latencies_w, errors_w, k * 61) for k in range(args.clients)]
            )
            elapsed_w = time.perf_counter() - start
            cpu_w = _cpu_seconds(proc.pid) - cpu_before
            rps_w = len(latencies_w) / elapsed_w
            if best is None or rps_w > best[0]:
                best = (rps_w, latencies_w, errors_w, elapsed_w, cpu_w)
        assert best is not None
        rps, latencies, errors, _elapsed, cpu = best
        qs = statistics.quantiles(latencies, n=100)
        p50, p99 = qs[49] * 1000, qs[98] * 1000
        print(
            f"sandbox {args.endpoint}: {info['flags']} flags, {args.clients} concurrent keep-alive clients, "
            f"best of 3 windows of {args.seconds:.0f} s on loopback, {os.cpu_count()} cores, "
            f"uvicorn http={info['http']}"
        )
        print(f"requests: {len(latencies)}  errors: {len(errors)}")
        print(f"throughput: {rps:,.0f} req/s   p50: {p50:.1f} ms   p99: {p99:.1f} ms")
        if cpu > 0:
            per = cpu / len(latencies)
            print(
                f"server CPU: {per * 1e6:.0f} us per request -> {1 / per:,.0f} req/s on one uncontended core "
                f"(load average now {os.getloadavg()[0]:.1f})"
            )
        print(
            f"vs baseline (target {BASELINE_RPS:,.0f} req/s, p99 < {BASELINE_P99_MS:.0f} ms): "
            f"throughput ratio {rps / BASELINE_RPS:.2f}x, p99 ratio {p99 / BASELINE_P99_MS:.2f}x of the limit"
        )
        return 0 if not errors else 1
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def main() -> int:
    """Parse arguments and run the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--endpoint", choices=("decide", "flags"), default="decide")
    return asyncio.run(_run(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
