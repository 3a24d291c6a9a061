"""The two dashboard views: ipywidgets, and a text/HTML display without widgets.

Both end the same way: the final state, the last lines of each replica and a static
SVG chart are written as plain display outputs (updated through display ids created
when the cell ran), so a saved or exported notebook shows them without widgets.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .chart import svg_chart
from .state import DashboardState
from .text import (
    final_bundle,
    header_html,
    live_bundle,
    log_html,
    resources_html,
    table_html,
)

DisplayFn = Callable[..., Any]


def _display() -> DisplayFn:
    from IPython.display import display

    return display


class FinalOutputs:
    """Two display slots created up front (summary, chart) and filled when the job ends."""

    def __init__(self, display: DisplayFn, initial: dict[str, Any] | None = None) -> None:
        self.summary = display(initial or {"text/plain": ""}, raw=True, display_id=True)
        self.chart = display({"text/plain": ""}, raw=True, display_id=True)

    def update(self, bundle: dict[str, Any], svg: str) -> None:
        if self.summary is not None:
            self.summary.update(bundle, raw=True)
        if svg and self.chart is not None:
            self.chart.update({"image/svg+xml": svg, "text/plain": "<metrics chart>"}, raw=True)


def _final_snapshot(state: DashboardState) -> tuple[dict[str, Any], str]:
    title = f"{state.name} · {state.state}"
    return final_bundle(state), svg_chart(state.series(), state.colors(), title)


class TextView:
    """Without widgets: one display output re-rendered (≤ refresh rate) in place."""

    def __init__(self, state: DashboardState, display: DisplayFn | None = None) -> None:
        self.outputs = FinalOutputs(display or _display(), live_bundle(state))

    def snapshot(self, state: DashboardState, final: bool) -> Any:
        return _final_snapshot(state) if final else (live_bundle(state), "")

    def push(self, snapshot: Any, final: bool) -> None:
        bundle, svg = snapshot
        if final:
            self.outputs.update(bundle, svg)
        elif self.outputs.summary is not None:
            self.outputs.summary.update(bundle, raw=True)


class WidgetView:
    """The live dashboard: header with Cancel/Detach, replica table, merged log and one
    tab per replica, live chart, resources."""

    def __init__(
        self,
        state: DashboardState,
        *,
        on_cancel: Callable[[], None],
        on_detach: Callable[[], None],
        display: DisplayFn | None = None,
    ) -> None:
        import ipywidgets as w

        self._w = w
        self.header = w.HTML(header_html(state))
        self.cancel_button = w.Button(description="Cancel", button_style="danger", icon="stop")
        self.detach_button = w.Button(description="Detach", icon="unlink")
        self.cancel_button.on_click(lambda _b: on_cancel())
        self.detach_button.on_click(lambda _b: on_detach())
        self.table = w.HTML(table_html(state))
        self.merged = w.HTML()
        self.replica_logs: dict[str, Any] = {}
        self.tabs = w.Tab(children=[self.merged])
        self.tabs.titles = ("all",)
        self.chart = w.HTML()
        self.resources = w.HTML()
        self.box = w.VBox(
            [
                w.HBox([self.header, self.cancel_button, self.detach_button]),
                self.table,
                self.tabs,
                self.chart,
                self.resources,
            ]
        )
        show = display or _display()
        show(self.box)
        self.outputs = FinalOutputs(show)

    def snapshot(self, state: DashboardState, final: bool) -> Any:
        colors = state.colors()
        snap: dict[str, Any] = {
            "header": header_html(state),
            "table": table_html(state),
            "merged": log_html(list(state.merged), colors),
            "replicas": {
                rid: log_html([(rid, t) for t in v.lines], colors, prefix=False)
                for rid, v in state.replicas.items()
            },
            "chart": svg_chart(state.series(), state.colors()),
            "resources": resources_html(state),
            "finished": state.finished or state.detached or bool(state.error),
        }
        if final:
            snap["final"] = _final_snapshot(state)
        return snap

    def push(self, snapshot: Any, final: bool) -> None:
        for key in ("header", "table", "merged", "chart", "resources"):
            widget = getattr(self, key)
            if widget.value != snapshot[key]:
                widget.value = snapshot[key]
        self._push_replicas(snapshot["replicas"])
        if snapshot["finished"]:
            self.cancel_button.disabled = True
            self.detach_button.disabled = True
        if final:
            self.outputs.update(*snapshot["final"])

    def _push_replicas(self, logs: dict[str, str]) -> None:
        new = [rid for rid in logs if rid not in self.replica_logs]
        for rid in new:
            self.replica_logs[rid] = self._w.HTML()
        if new:
            self.tabs.children = [self.merged, *self.replica_logs.values()]
            self.tabs.titles = ("all", *self.replica_logs)
        for rid, html in logs.items():
            widget = self.replica_logs[rid]
            if widget.value != html:
                widget.value = html
