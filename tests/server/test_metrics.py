"""``GET /metrics``: Prometheus series of runs and HTTP requests, scraped from a real server."""

from __future__ import annotations

from collections.abc import Callable

import httpx
from _serve_proc import Gate, Server
from prometheus_client.parser import text_string_to_metric_families


def _scrape(server: Server) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of ``/metrics``: (name, sorted labels) -> value."""
    response = httpx.get(server.url + "/metrics", timeout=30)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def _say(text: str) -> dict[str, object]:
    return {"assistant_id": "agent", "input": {"messages": [{"role": "user", "content": text}]}}


def test_metrics_count_runs_by_status_and_requests_by_route(
    server_on_both: Server, gates: Callable[[], Gate]
) -> None:
    url = server_on_both.url
    with httpx.Client(base_url=url, timeout=120) as http:
        before = _scrape(server_on_both)
        thread = http.post("/threads", json={}).json()["thread_id"]
        for text in ("one", "two"):
            assert http.post(f"/threads/{thread}/runs/wait", json=_say(text)).status_code == 200
        assert http.post(f"/threads/{thread}/runs/wait", json=_say("fail")).status_code == 200

        gate = gates()
        busy = http.post("/threads", json={}).json()["thread_id"]
        first = http.post(f"/threads/{busy}/runs", json=_say(gate.text)).json()
        gate.started()
        queued = http.post(f"/threads/{busy}/runs", json={**_say("after"), "multitask_strategy": "enqueue"})
        during = _scrape(server_on_both)
        gate.open()
        for run in (first, queued.json()):
            assert http.get(f"/threads/{busy}/runs/{run['run_id']}/join").status_code == 200
        after = _scrape(server_on_both)

    def grew(name: str, by: float, **labels: str) -> None:
        key = (name, tuple(sorted(labels.items())))
        assert after.get(key, 0) - before.get(key, 0) == by, (key, before.get(key), after.get(key))

    grew("plait_runs_total", 4, status="success")
    grew("plait_runs_total", 1, status="error")
    grew("plait_run_duration_seconds_count", 4, status="success")
    grew("plait_run_duration_seconds_count", 1, status="error")
    assert after[("plait_run_duration_seconds_sum", (("status", "success"),))] > 0
    grew("plait_http_requests_total", 3, method="POST", route="/threads/{thread_id}/runs/wait", status="200")
    grew("plait_http_requests_total", 2, method="POST", route="/threads", status="200")
    assert during[("plait_runs_running", ())] >= 1
    assert during[("plait_runs_queued", ())] >= 1
    assert during[("plait_runs_executing", ())] == 1
    assert after[("plait_runs_executing", ())] == 0
    assert (
        after[("plait_http_requests_total", (("method", "GET"), ("route", "/metrics"), ("status", "200")))]
        >= 2
    )


def test_unknown_paths_share_one_label(server_on_both: Server) -> None:
    with httpx.Client(base_url=server_on_both.url, timeout=30) as http:
        for n in range(3):
            assert http.get(f"/no/such/path/{n}").status_code == 404
    samples = _scrape(server_on_both)
    assert (
        samples[("plait_http_requests_total", (("method", "GET"), ("route", "unmatched"), ("status", "404")))]
        >= 3
    )
    assert not any("/no/such" in str(labels) for _, labels in samples)
