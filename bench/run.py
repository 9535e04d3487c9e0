#!/usr/bin/env python
"""plait vs LangGraph micro-benchmarks (W1 invoke overhead, W2 fan-out/fan-in, W3 loop, W4 history listing),
plus W1 and W3 against the plain-Python floor, Apache Burr and pydantic-graph.

Every (workload, implementation, run) executes ``bench/workloads.py`` in a fresh
subprocess; runs are interleaved (plait, langgraph, floor, ..., then the next
run with the order rotated by one) so slow drift on a shared machine hits every
side alike.  plait runs under ``--plait-python`` (default: this interpreter) and
must import as ``plait``; the floor (stdlib only) runs under the same
interpreter.  LangGraph, Burr and pydantic-graph run under
``--langgraph-python``, ``--burr-python`` and ``--pydantic-graph-python`` and
are skipped, with a note, when the option is not given or that interpreter
cannot import the library.  The floor, Burr and pydantic-graph implement W1 and
W3 only (``bench/rivals.py``).

Output: markdown tables on stdout (median and p90 over all pooled samples,
min..max of the per-run medians as a noise indicator, the speed-up of plait
over LangGraph, and for W1/W3 every implementation's ratio to the floor), then
one JSON document (also written to ``--json`` if given).

    .venv/bin/python bench/run.py --langgraph-python /tmp/lgref/bin/python
    .venv/bin/python bench/run.py --only W1,W3 --langgraph-python /tmp/lgref/bin/python \
        --burr-python /tmp/burr/bin/python --pydantic-graph-python /tmp/pgraph/bin/python
    .venv/bin/python bench/run.py --quick --runs 1            # smoke test
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import subprocess
import sys
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "workloads.py")
REPO = os.path.dirname(HERE)
WORKLOADS = ("W1", "W2", "W3", "W4")
# workload -> (label, unit, ns per unit or None for a rate, higher is better)
UNITS: dict[str, tuple[str, str, float | None]] = {
    "W1": ("3-node chain, 1 str field", "µs/invoke", 1e3),
    "W2": ("64-way fan-out + join", "ms/invoke", 1e6),
    "W3": ("self-loop to 500", "steps/s", None),
    "W4": ("InMemorySaver history of 3000 checkpoints", "ms/listing", 1e6),
}
W3_STEPS = 500
# impl -> (label, module its objects must come from, workloads it implements)
IMPLS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "plait": ("plait", "plait.", WORKLOADS),
    "langgraph": ("LangGraph", "langgraph.", WORKLOADS),
    "floor": ("plain-Python floor", "rivals", ("W1", "W3")),
    "burr": ("Burr", "burr.", ("W1", "W3")),
    "pydantic-graph": ("pydantic-graph", "pydantic_graph.", ("W1", "W3")),
}
# impl -> (option naming its interpreter, module to import, distribution) for the probed ones
PROBED = {
    "langgraph": ("--langgraph-python", "langgraph.graph", "langgraph"),
    "burr": ("--burr-python", "burr.core", "apache-burr"),
    "pydantic-graph": ("--pydantic-graph-python", "pydantic_graph", "pydantic-graph"),
}
# issue 31: the most a runtime may cost, as a multiple of the floor
FLOOR_TARGETS = {"W1": 10.0, "W3": 15.0}


def log(*a: Any) -> None:
    print(*a, file=sys.stderr, flush=True)


def pct(values: list[float], p: float) -> float:
    """Linear-interpolated percentile of ``values`` (0 <= p <= 100)."""
    s = sorted(values)
    k = (len(s) - 1) * p / 100.0
    f, c = math.floor(k), math.ceil(k)
    return s[f] if f == c else s[f] + (s[c] - s[f]) * (k - f)


def to_unit(workload: str, ns: float) -> float:
    """A duration in ns -> the workload's reporting unit."""
    scale = UNITS[workload][2]
    return W3_STEPS / (ns / 1e9) if scale is None else ns / scale


def probe(impl: str, python: str | None) -> tuple[bool, str]:
    """Whether ``python`` can import ``impl``'s library; a note either way."""
    label = IMPLS[impl][0]
    option, module, dist = PROBED[impl]
    if not python:
        return False, f"{label} skipped: {option} not given"
    try:
        p = subprocess.run(
            [python, "-c", f"import {module}, importlib.metadata as m;print(m.version({dist!r}))"],
            capture_output=True,
            text=True,
            timeout=120,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"{label} skipped: cannot run {python}: {exc}"
    if p.returncode != 0:
        return (
            False,
            f"{label} skipped: {python} cannot import {module} "
            f"({(p.stderr.strip().splitlines() or ['?'])[-1][:200]})",
        )
    return True, f"{label} {p.stdout.strip()} via {python}"


def plait_env() -> dict[str, str]:
    """Environment for the plait worker: the checkout first on PYTHONPATH, no import aliasing."""
    env = dict(os.environ)
    env.pop("BENCH_ALIAS", None)
    env["PYTHONPATH"] = os.pathsep.join(
        [REPO] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    )
    return env


def run_worker(python: str, workload: str, impl: str, extra: list[str], timeout: float) -> dict[str, Any]:
    """One subprocess run; returns the worker's JSON record (raises on failure)."""
    cmd = [python, WORKER, workload, "--impl", impl, *extra]
    env = plait_env() if impl == "plait" else {k: v for k, v in os.environ.items() if k != "BENCH_ALIAS"}
    env["PYTHONHASHSEED"] = "0"
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=HERE)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed (rc={p.returncode}):\n{p.stderr[-2000:]}")
    rec = json.loads(p.stdout.strip().splitlines()[-1])
    if not str(rec.get("impl_module", "")).startswith(IMPLS[impl][1]):
        raise RuntimeError(f"{impl} run imported {rec.get('impl_module')!r}")
    return rec


def summarize(workload: str, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Pool the samples of all runs; median/p90 in the workload's unit, run medians for noise."""
    pooled = [float(x) for r in runs for x in r["samples_ns"]]
    run_meds = [to_unit(workload, pct([float(x) for x in r["samples_ns"]], 50)) for r in runs]
    rate = UNITS[workload][2] is None
    return {
        "n_samples": len(pooled),
        "n_runs": len(runs),
        "median": to_unit(workload, pct(pooled, 50)),
        # p90 of the time; for a rate that is the slow tail, i.e. the 10th percentile of the rate
        "p90": to_unit(workload, pct(pooled, 90)),
        "run_medians": run_meds,
        "run_spread_pct": 100.0 * (max(run_meds) - min(run_meds)) / min(run_meds),
        "higher_is_better": rate,
        "impl_version": runs[0].get("impl_version"),
        "impl_file": runs[0].get("impl_file"),
        "executable": runs[0].get("executable"),
        "timer_overhead_ns": pct([float(r.get("timer_overhead_ns", 0)) for r in runs], 50),
    }


def per_work_us(workload: str, ns: float) -> float:
    """W1: µs per invoke; W3: µs per node step (the invoke's time over its 500 steps)."""
    return ns / 1e3 / (W3_STEPS if workload == "W3" else 1)


def versus_floor(workload: str, runs: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Each implementation's time per unit of work (µs) and its ratio to the plain-Python floor.

    ``ratio_runs`` pairs run i of the implementation with run i of the floor
    (the same interleaved round, so the same machine load); ``ratio`` is their
    median.  ``us`` is the median over the pooled samples, like the first table.
    """
    out: dict[str, dict[str, Any]] = {}
    floor_runs = [pct([float(x) for x in r["samples_ns"]], 50) for r in runs["floor"]]
    for impl, recs in runs.items():
        pooled = [float(x) for r in recs for x in r["samples_ns"]]
        meds = [pct([float(x) for x in r["samples_ns"]], 50) for r in recs]
        ratios = [m / f for m, f in zip(meds, floor_runs, strict=True)]
        ratio = pct(ratios, 50)
        target = FLOOR_TARGETS.get(workload) if impl == "plait" else None
        out[impl] = {
            "us": per_work_us(workload, pct(pooled, 50)),
            "p90_us": per_work_us(workload, pct(pooled, 90)),
            "run_medians_us": [per_work_us(workload, m) for m in meds],
            "ratio": ratio,
            "ratio_runs": ratios,
            "target": target,
            "target_met": None if target is None else ratio <= target,
        }
    return out


def speedup(workload: str, plait: dict[str, Any], lg: dict[str, Any] | None) -> float | None:
    """How many times faster plait is than LangGraph (> 1: plait faster)."""
    if lg is None:
        return None
    if UNITS[workload][2] is None:
        return plait["median"] / lg["median"]
    return lg["median"] / plait["median"]


def fmt(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"


def markdown(results: dict[str, dict[str, Any]], notes: list[str]) -> str:
    lines = [
        "| workload | unit | plait median (p90) [run medians min..max] | "
        "LangGraph median (p90) [run medians min..max] | plait speed-up |",
        "|---|---|---|---|---|",
    ]
    for w, res in results.items():
        label, unit, _ = UNITS[w]
        cells = []
        for impl in ("plait", "langgraph"):
            s = res.get(impl)
            if s is None:
                cells.append("skipped")
                continue
            rm = s["run_medians"]
            tail = "p10" if s["higher_is_better"] else "p90"
            cells.append(f"{fmt(s['median'])} ({tail} {fmt(s['p90'])}) [{fmt(min(rm))}..{fmt(max(rm))}]")
        ratio = res.get("speedup")
        lines.append(
            f"| {w} {label} | {unit} | {cells[0]} | {cells[1]} | "
            f"{'-' if ratio is None else f'{ratio:.1f}x'} |"
        )
    lines += floor_markdown(results)
    return "\n".join(lines + [""] + [f"- {n}" for n in notes])


def floor_markdown(results: dict[str, dict[str, Any]]) -> list[str]:
    """The W1/W3 table against the plain-Python floor (nothing when the floor did not run)."""
    rows = [(w, res["vs_floor"]) for w, res in results.items() if res.get("vs_floor")]
    if not rows:
        return []
    lines = [
        "",
        "| workload | implementation | µs median (p90) [run medians min..max] | "
        "x floor, median of per-run ratios [min..max] | issue 31 target |",
        "|---|---|---|---|---|",
    ]
    for w, vf in rows:
        unit = "µs/invoke" if w == "W1" else "µs/step"
        for impl in IMPLS:
            v = vf.get(impl)
            if v is None:
                lines.append(f"| {w} | {IMPLS[impl][0]} | skipped | - | - |")
                continue
            rm, rr = v["run_medians_us"], v["ratio_runs"]
            target = (
                "-"
                if v["target"] is None
                else f"<= {v['target']:.0f}x: {'met' if v['target_met'] else 'NOT met'}"
            )
            lines.append(
                f"| {w} | {IMPLS[impl][0]} | {fmt(v['us'])} {unit} (p90 {fmt(v['p90_us'])}) "
                f"[{fmt(min(rm))}..{fmt(max(rm))}] | {v['ratio']:.1f}x [{min(rr):.1f}..{max(rr):.1f}] | {target} |"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--langgraph-python",
        default=None,
        help="interpreter with LangGraph installed (default: skip LangGraph)",
    )
    ap.add_argument(
        "--plait-python",
        default=sys.executable,
        help="interpreter for plait and the plain-Python floor (default: this one)",
    )
    ap.add_argument(
        "--burr-python", default=None, help="interpreter with apache-burr installed (W1, W3; default: skip)"
    )
    ap.add_argument(
        "--pydantic-graph-python",
        default=None,
        help="interpreter with pydantic-graph installed (W1, W3; default: skip)",
    )
    ap.add_argument("--only", default=",".join(WORKLOADS), help="comma list, e.g. W1,W3")
    ap.add_argument("--runs", type=int, default=3, help="subprocess runs per workload and implementation")
    ap.add_argument("--quick", action="store_true", help="tiny sample counts (numbers meaningless)")
    ap.add_argument("--invokes", type=int, default=None, help="override timed invokes per run")
    ap.add_argument("--timeout", type=float, default=900.0, help="per subprocess (s)")
    ap.add_argument("--json", default=None, help="also write the JSON document here")
    a = ap.parse_args(argv)

    only = [w.strip().upper() for w in a.only.split(",") if w.strip()]
    bad = [w for w in only if w not in WORKLOADS]
    if bad:
        ap.error(f"unknown workload(s) {bad}; choose from {WORKLOADS}")
    notes: list[str] = []
    impls = [("plait", a.plait_python)]
    pythons = {
        "langgraph": a.langgraph_python,
        "floor": a.plait_python,  # stdlib only
        "burr": a.burr_python,
        "pydantic-graph": a.pydantic_graph_python,
    }
    for impl, python in pythons.items():
        label, _, implemented = IMPLS[impl]
        if not set(implemented) & set(only):
            notes.append(f"{label} not run: it implements {', '.join(implemented)} only")
            continue
        ok, note = (
            (True, f"{label} (stdlib, bench/rivals.py) via {python}")
            if impl == "floor"
            else probe(impl, python)
        )
        notes.append(note)
        if ok:
            impls.append((impl, python))
    extra = (["--quick"] if a.quick else []) + (["--invokes", str(a.invokes)] if a.invokes else [])
    started = dt.datetime.now(dt.timezone.utc)
    load_before = os.getloadavg()
    raw: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for w in only:
        todo = [(impl, python) for impl, python in impls if w in IMPLS[impl][2]]
        for r in range(a.runs):
            k = r % len(todo)  # rotate the order each run: nobody always goes first
            for impl, python in todo[k:] + todo[:k]:
                log(f"[{w} {impl} run {r + 1}/{a.runs}]")
                rec = run_worker(python, w, impl, extra, a.timeout)
                raw.setdefault(w, {}).setdefault(impl, []).append(rec)
                log(
                    f"   median {fmt(to_unit(w, pct([float(x) for x in rec['samples_ns']], 50)))} "
                    f"{UNITS[w][1]}  loadavg {rec['loadavg_end'][0]:.2f}"
                )
    results: dict[str, dict[str, Any]] = {}
    for w in only:
        res: dict[str, Any] = {impl: summarize(w, runs) for impl, runs in raw[w].items()}
        res["speedup"] = speedup(w, res["plait"], res.get("langgraph"))
        res["unit"] = UNITS[w][1]
        if "floor" in raw[w]:
            res["vs_floor"] = versus_floor(w, raw[w])
        results[w] = res
    overheads = [
        r.get("timer_overhead_ns", 0) for impls_ in raw.values() for rs in impls_.values() for r in rs
    ]
    notes.append(
        f"timer overhead (a no-op call timed on its own, median over runs): {pct(overheads, 50):.0f} ns per sample, "
        "included in every sample and not subtracted (it weighs most on the floor's W1)"
    )
    notes.append(
        f"{started:%Y-%m-%d %H:%M} UTC, {platform.node()}, {platform.platform()}, "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"loadavg before {load_before[0]:.2f} / after {os.getloadavg()[0]:.2f}"
    )
    notes.append(
        f"{a.runs} run(s) per workload and implementation, each in a fresh subprocess, interleaved; "
        "medians/p90 over the pooled per-invoke samples; [..] = spread of the per-run medians"
    )
    doc = {
        "started_utc": started.isoformat(timespec="seconds"),
        "host": platform.node(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "runs": a.runs,
        "quick": a.quick,
        "notes": notes,
        "results": results,
    }
    print(markdown(results, notes))
    print()
    print(json.dumps(doc, indent=1))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
