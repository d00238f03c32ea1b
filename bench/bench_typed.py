"""Typed claims under concurrent load: N closed-loop clients against ``claimtrace serve`` with
1 and 2 worker processes, beside the one-at-a-time latency.

    python bench/bench_typed.py --workdir BUILD [--claims 40] [--clients 1 8] [--workers 1 2]
        [--typed-processes 0 2] [--load wrk --seconds 5]

For each typed-processes count and worker count, starts ``claimtrace serve --workdir BUILD
--workers W --typed-processes T`` on a free
loopback port, waits until every worker has warmed up (``bench_web.wait_warm``) and traces a
few typed claims on each, then for each client count sends
``--claims`` typed claims per client, each POST /api/trace of a new sentence (course words in a
new order: every one a new trace), a client sending its next as soon as its last is answered.
Prints the machine's calibration (``python ../shared/bench/calibrate.py ../shared/data``), then
one JSON line per (workers, clients): median, p95 and p99 in ms, throughput (claims/s), the
ratio of p99 to the one-at-a-time median (the 1-client run of that server: the goal is at most
8x with one worker and 5x with two, at 8 clients), and the load average (the machine may be
shared).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import re
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench_statistics import calibrate
from bench_web import free_port, percentile, start_server, stop_server, wait_warm
from proctree import cpu_seconds, process_tree

REPO = Path(__file__).resolve().parents[1]
WORDS = (
    "sea level ice sheet glacier arctic warming carbon dioxide emissions ocean heat temperature "
    "record decade climate models rainfall drought hurricane coral reef forest fire solar volcano"
).split()


def sentences(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.sample(WORDS, 8)).capitalize() + f" in {1900 + i}." for i in range(n)]


def client(base: str, texts: list[str]) -> list[float]:
    """One closed-loop client: each text posted as a typed claim on one kept-alive connection,
    the next sent when the last is answered whole; each answer's latency in ms. The standard
    library's client, not httpx: the load generator shares the server's two cores, and httpx's
    own work per request was a large part of what eight clients cost them."""
    host, port = base.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=60)
    latencies = []
    try:
        for text in texts:
            body = json.dumps({"text": text}).encode()
            started = time.perf_counter()
            connection.request("POST", "/api/trace", body, {"Content-Type": "application/json"})
            response = connection.getresponse()
            response.read()
            latencies.append((time.perf_counter() - started) * 1e3)
            if response.status != 200:
                raise SystemExit(f"a typed claim was answered {response.status}")
    finally:
        connection.close()
    return latencies


def run_clients(base: str, count: int, claims: int) -> dict:
    """``count`` closed-loop clients, ``claims`` distinct typed claims each: latencies and rate."""
    batches = [sentences(claims, seed=100 * count + c) for c in range(count)]
    load = os.getloadavg()[0]
    started = time.perf_counter()
    with ThreadPoolExecutor(count) as pool:
        latencies = [ms for batch in pool.map(lambda texts: client(base, texts), batches) for ms in batch]
    seconds = time.perf_counter() - started
    return {
        "clients": count,
        "claims": len(latencies),
        "median_ms": round(percentile(latencies, 50), 1),
        "p95_ms": round(percentile(latencies, 95), 1),
        "p99_ms": round(percentile(latencies, 99), 1),
        "per_second": round(len(latencies) / seconds, 1),
        "load_before": round(load, 2),
        "load_after": round(os.getloadavg()[0], 2),
    }


#: wrk's script: each request a new typed claim, eight of the course words in a new order and a
#: year, as :func:`sentences` makes them (one Lua state with ``-t 1``: every text distinct).
WRK_SCRIPT = """
local words = {%(words)s}
local sent = 0
math.randomseed(%(seed)d)
request = function()
  sent = sent + 1
  local pool, picked = {}, {}
  for i, w in ipairs(words) do pool[i] = w end
  for i = 1, 8 do picked[i] = table.remove(pool, math.random(#pool)) end
  local text = table.concat(picked, " ")
  text = text:sub(1, 1):upper() .. text:sub(2) .. " in " .. (1900 + sent) .. "."
  return wrk.format("POST", "/api/trace", {["Content-Type"] = "application/json"}, '{"text": "' .. text .. '"}')
end
"""


def _milliseconds(value: str) -> float:
    number, unit = re.fullmatch(r"([0-9.]+)(us|ms|s)", value).groups()
    return float(number) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[unit]


def run_wrk(base: str, count: int, seconds: float, seed: int, server_pid: int | None = None) -> dict:
    """``count`` closed-loop connections of wrk (one thread of C, a few percent of a core) for
    ``seconds``, each request a new typed claim: its latency percentiles and rate, and with
    ``server_pid`` the server's CPU milliseconds per claim (all its processes)."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(WRK_SCRIPT % {"words": ", ".join(f'"{w}"' for w in WORDS), "seed": seed})
    load = os.getloadavg()[0]
    cpu_before = cpu_seconds(process_tree(server_pid)) if server_pid else None
    try:
        command = ["wrk", "-t", "1", "-c", str(count), "-d", f"{seconds:g}s", "--latency", "-s", script.name, base]
        out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(script.name)
    if "Non-2xx" in out or "Socket errors" in out:
        raise SystemExit(f"wrk saw failed requests:\n{out}")
    shares = dict(re.findall(r"^\s+(50|75|90|99)%\s+(\S+)$", out, re.M))
    claims = int(re.search(r"(\d+) requests in", out).group(1))
    cpu = {}
    if server_pid:
        cpu["server_cpu_ms_per_claim"] = round((cpu_seconds(process_tree(server_pid)) - cpu_before) / claims * 1e3, 2)
    return {
        "clients": count,
        "claims": claims,
        **cpu,
        "median_ms": round(_milliseconds(shares["50"]), 1),
        "p90_ms": round(_milliseconds(shares["90"]), 1),
        "p99_ms": round(_milliseconds(shares["99"]), 1),
        "per_second": float(re.search(r"Requests/sec:\s+([0-9.]+)", out).group(1)),
        "load_before": round(load, 2),
        "load_after": round(os.getloadavg()[0], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", required=True, type=Path)
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--claims", type=int, default=40, help="typed claims per client")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="server processes")
    parser.add_argument(
        "--typed-processes",
        type=int,
        nargs="+",
        default=[2],
        help="serve --typed-processes: each value measured (0: typed claims traced in the server process)",
    )
    parser.add_argument(
        "--load",
        choices=["python", "wrk"],
        default="python",
        help="the clients: threads of this script (the standard library's HTTP client), or wrk's "
        "connections (Debian's wrk: one thread of C, so the load generator takes little of the two cores)",
    )
    parser.add_argument("--seconds", type=float, default=5.0, help="with --load wrk: seconds per client count")
    parser.add_argument(
        "--settle",
        type=float,
        default=0.0,
        help="seconds to wait once warm (a version that does not say when it is warm)",
    )
    args = parser.parse_args()
    print(json.dumps({"calibrate_s": calibrate(args.data)}), flush=True)
    for workers, typed in [(w, t) for t in args.typed_processes for w in args.workers]:
        port = free_port()
        serve = ["--data", str(args.data), "serve", "--workdir", str(args.workdir), "--port", str(port)]
        server = start_server([*serve, "--workers", str(workers), "--typed-processes", str(typed)], port)
        base = f"http://127.0.0.1:{port}"
        try:
            warm_up = wait_warm(base, workers)  # each worker's model loaded (and rows checked) first
            time.sleep(args.settle)
            with ThreadPoolExecutor(workers) as pool:  # and the caches of words
                list(pool.map(client, [base] * workers, [sentences(3, seed=seed) for seed in range(workers)]))
            print(
                json.dumps({"workers": workers, "typed_processes": typed, "warm_up_s": round(warm_up, 1)}), flush=True
            )
            alone = None
            for count in sorted(set([1, *args.clients])):
                if args.load == "wrk":
                    measured = run_wrk(base, count, args.seconds, seed=100 * count + workers, server_pid=server.pid)
                else:
                    measured = run_clients(base, count, args.claims)
                summary = {"workers": workers, "typed_processes": typed, "load": args.load, **measured}
                alone = summary["median_ms"] if count == 1 else alone
                summary["p99_over_alone_median"] = round(summary["p99_ms"] / alone, 2)
                print(json.dumps(summary), flush=True)
        finally:
            stop_server(server)


if __name__ == "__main__":
    main()
