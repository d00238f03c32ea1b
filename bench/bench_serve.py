"""How fast the site starts and answers over a large build, and what it holds.

    .venv/bin/python bench/bench_serve.py --workdir BUILD [--claims 10] [--command 'CMD']

Starts ``claimtrace serve --workdir BUILD`` in its own process on 127.0.0.1 (a free port) and
measures, against the targets of the one-source-of-truth work (on the 1,208,827-passage
synthetic build, ``bench/synthetic.py`` then ``claimtrace build --evidence``):

* from start to the first page (``/``) answered: target 3 s;
* each of ``--claims`` dev claim pages never asked for before (their whole trace assembled then):
  target under 100 ms at the median;
* the server's resident memory (VmRSS) after those pages: target under 1 GB.

``--typed-claim`` also posts a new typed claim to ``/api/trace`` right after the first page and
times its answer (whether or not the typed-claims processes are ready yet).

``--command`` runs another server command line instead (for example an older checkout's
``claimtrace serve``, to measure the ratio on the same build); ``{workdir}`` and ``{port}`` in it
are filled in. Loopback only; the server is stopped at the end. Prints one JSON summary.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx
from bench_web import free_port, stop_server
from proctree import memory_kib

REPO = Path(__file__).resolve().parents[1]


def dev_claims(data_dir: Path, n: int) -> list[str]:
    claims = json.loads((data_dir / "comp90042-2024" / "dev-claims.json").read_text(encoding="utf-8"))
    return [cid for cid in claims if cid != "claim-752"][:n]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", required=True, type=Path)
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--claims", type=int, default=10)
    parser.add_argument(
        "--command", default=None, help="the server command line, one string ({workdir} and {port} are filled in)"
    )
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument(
        "--typed-claim", action="store_true", help="time a typed claim posted right after the first page"
    )
    args = parser.parse_args()

    port = free_port()
    command = (
        shlex.split(args.command)
        if args.command
        else [
            str(REPO / ".venv" / "bin" / "claimtrace"),
            "--data",
            str(args.data),
            "serve",
            "--workdir",
            "{workdir}",
            "--port",
            "{port}",
        ]
    )
    command = [part.format(workdir=args.workdir, port=port) for part in command]
    started = time.monotonic()
    server = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "OMP_WAIT_POLICY": "PASSIVE"},
    )
    result: dict = {"command": command, "workdir": str(args.workdir)}
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=args.timeout) as client:
            while True:
                if server.poll() is not None:
                    raise SystemExit(f"the server exited: {server.stderr.read()[-3000:]}")
                if time.monotonic() - started > args.timeout:
                    raise SystemExit("the server did not answer in time")
                try:
                    response = client.get("/")
                    break
                except httpx.TransportError:
                    time.sleep(0.05)
            result["first_page_s"] = round(time.monotonic() - started, 2)
            result["first_page_status"] = response.status_code
            if args.typed_claim:
                t0 = time.perf_counter()
                typed = client.post("/api/trace", json={"text": "Sea ice in the Arctic shrank by a third since 1979."})
                result["typed_claim_after_first_page_ms"] = round((time.perf_counter() - t0) * 1000, 1)
                result["typed_claim_status"] = typed.status_code
            latencies = []
            for claim_id in dev_claims(args.data, args.claims):
                t0 = time.perf_counter()
                page = client.get(f"/claim/{claim_id}.html")
                latencies.append((time.perf_counter() - t0) * 1000)
                if page.status_code != 200:
                    raise SystemExit(f"{claim_id}: status {page.status_code}")
            result["claim_pages_ms"] = {
                "n": len(latencies),
                "median": round(statistics.median(latencies), 1),
                "max": round(max(latencies), 1),
                "each": [round(x, 1) for x in latencies],
            }
            result["rss_mb_after"] = round(memory_kib([server.pid]) * 1024 / 1e6, 1)
    finally:
        stop_server(server)
    result["load_average"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    sys.exit(main())
