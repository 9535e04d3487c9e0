"""The server's Prometheus series (:class:`Metrics`), one registry per app; served by :mod:`plait.server._metrics`."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

__all__ = ["Metrics"]

_DURATIONS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)
"""Buckets of the run duration histogram, in seconds."""


class Metrics:
    """The series of one app, in a registry of their own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        reg = self.registry
        self.runs = Counter(
            "plait_runs", "Runs this process executed to an end, by final status", ["status"], registry=reg
        )
        self.run_seconds = Histogram(
            "plait_run_duration_seconds",
            "Seconds this process spent executing a run, by final status",
            ["status"],
            buckets=_DURATIONS,
            registry=reg,
        )
        self.queued = Gauge("plait_runs_queued", "Runs waiting in the queue (all workers)", registry=reg)
        self.running = Gauge("plait_runs_running", "Runs running (all workers)", registry=reg)
        self.executing = Gauge("plait_runs_executing", "Runs this process is executing now", registry=reg)
        self.requests = Counter(
            "plait_http_requests",
            "HTTP requests answered, by method, route template and status code",
            ["method", "route", "status"],
            registry=reg,
        )

    def run_ended(self, status: str, seconds: float) -> None:
        """Count a run this process executed, ending with ``status`` after ``seconds``."""
        self.runs.labels(status).inc()
        self.run_seconds.labels(status).observe(seconds)
