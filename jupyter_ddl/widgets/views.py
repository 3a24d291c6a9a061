"""The two dashboard views (ipywidgets, and text/HTML without widgets) and the display
slot they draw into.

Both draw into ONE display output created when the cell ran (a display id), updated in
place while the job runs, and replaced by the job's record (``record.py``) when it
ends: a saved notebook keeps the record and no widget, and a live session never shows
the summary twice. A kernel that goes away leaves the live widget behind: its front
end marks every view ``jupyter-widgets-disconnected``, and the dashboard's own style
rules then show "disconnected — `%ddl attach NAME`" and make its buttons inert.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from html import escape
from typing import Any, Protocol

from jupyter_ddl.i18n import tr
from jupyter_ddl.present.chart import svg_charts
from jupyter_ddl.present.record import record_bundle
from jupyter_ddl.present.state import DashboardState
from jupyter_ddl.present.text import (
    diagnosis_of,
    header_html,
    live_bundle,
    log_html,
    replica_log_html,
    root_cause_html,
    table_html,
)

DisplayFn = Callable[..., Any]


def _display() -> DisplayFn:
    from IPython.display import display

    return display


def widget_bundle(widget: Any, text: str) -> dict[str, Any]:
    """The display bundle of a live widget, with a line of text for plain front ends."""
    data = dict(widget._repr_mimebundle_())
    data["text/plain"] = text
    return data


class Slot(Protocol):
    """Where one dashboard draws: ``show`` a bundle (live text view, the record) or
    ``live`` a widget."""

    def show(self, bundle: dict[str, Any]) -> None: ...

    def live(self, widget: Any, text: str) -> None: ...


class DisplaySlot:
    """One display output of the cell, created now and updated from any thread later
    (front ends route updates of a display id to the output that holds it)."""

    def __init__(self, display: DisplayFn | None = None, initial: dict[str, Any] | None = None):
        show = display or _display()
        self.handle = show(initial or {"text/plain": ""}, raw=True, display_id=True)

    def show(self, bundle: dict[str, Any]) -> None:
        if self.handle is not None:
            self.handle.update(bundle, raw=True)

    def live(self, widget: Any, text: str) -> None:
        self.show(widget_bundle(widget, text))


class JobSlots:
    """Every job a form starts, in the order they were submitted, in ONE display output
    of the form's cell (created with the form, so later clicks can still write there):
    their live dashboards while any runs, all their records once none does."""

    def __init__(self, display: DisplayFn | None = None) -> None:
        self.slot = DisplaySlot(display)
        self.parts: list[_Part] = []
        self._lock = threading.Lock()
        self._box: Any = None
        self._showing_box = False

    def part(self) -> Slot:
        with self._lock:
            part = _Part(self)
            self.parts.append(part)
            return part

    def render(self) -> None:
        with self._lock:
            live = any(p.widget is not None for p in self.parts)
            if not live:
                self._showing_box = False
                self.slot.show(
                    {
                        "text/html": "".join(p.bundle.get("text/html", "") for p in self.parts),
                        "text/plain": "\n\n".join(
                            p.bundle.get("text/plain", "") for p in self.parts
                        ),
                    }
                )
                return
            import ipywidgets as w

            if self._box is None:
                self._box = w.VBox()
            self._box.children = [
                p.widget if p.widget is not None else w.HTML(p.bundle.get("text/html", ""))
                for p in self.parts
            ]
            if not self._showing_box:
                self._showing_box = True
                self.slot.live(self._box, tr("jobs submitted from the form above (live)"))


class _Part:
    """One job's place in a JobSlots."""

    def __init__(self, owner: JobSlots) -> None:
        self.owner = owner
        self.widget: Any = None
        self.bundle: dict[str, Any] = {}

    def show(self, bundle: dict[str, Any]) -> None:
        self.widget, self.bundle = None, bundle
        self.owner.render()

    def live(self, widget: Any, text: str) -> None:
        self.widget, self.bundle = widget, {"text/plain": text}
        self.owner.render()


class TextView:
    """Without widgets: the slot re-rendered (≤ refresh rate) in place, then the record."""

    def __init__(self, state: DashboardState, slot: Slot) -> None:
        self.slot = slot
        slot.show(live_bundle(state))

    def snapshot(self, state: DashboardState, final: bool) -> Any:
        return record_bundle(state) if final else live_bundle(state)

    def push(self, snapshot: Any, final: bool) -> None:
        self.slot.show(snapshot)


#: rules the dashboard carries itself: shown or inert once the kernel is gone
_OFFLINE_STYLE = """<style>
.ddl-dashboard .ddl-offline { display: none; }
.jupyter-widgets-disconnected .ddl-offline { display: block; }
.ddl-live-button.jupyter-widgets-disconnected,
.jupyter-widgets-disconnected .ddl-live-button { pointer-events: none; opacity: 0.4; }
.jupyter-widgets-disconnected .ddl-state { text-decoration: line-through; }
.ddl-dashboard .jupyter-widgets-disconnected::before { display: none; }
</style>"""


def offline_html(name: str) -> str:
    return (
        f"{_OFFLINE_STYLE}<div class='ddl-offline' style='color:#d62728;font-weight:bold'>"
        + tr(
            "disconnected — the kernel that followed this job went away; {code} in a cell "
            "follows it again (the job itself keeps running)",
            code=f"<code>%ddl attach {escape(name)}</code>",
        )
        + "</div>"
    )


class WidgetView:
    """The live dashboard: header with Cancel/Detach, the root cause of a failure, the
    replica table, the merged log and one tab per replica, the charts."""

    def __init__(
        self,
        state: DashboardState,
        slot: Slot,
        *,
        on_cancel: Callable[[], None],
        on_detach: Callable[[], None],
    ) -> None:
        import ipywidgets as w

        self._w = w
        self.slot = slot
        self.header = w.HTML(header_html(state))
        self.cancel_button = w.Button(description=tr("Cancel"), button_style="danger", icon="stop")
        self.detach_button = w.Button(description=tr("Detach"), icon="unlink")
        # Cancel asks first, inline (as the job view's dialog does): a stray click on
        # a red button must not end hours of training
        self.confirm_button = w.Button(description=tr("Stop the job"), button_style="danger")
        self.keep_button = w.Button(description=tr("Keep running"))
        self.confirm = w.HBox(
            [w.Label(tr("Stop {name}?", name=state.name)), self.confirm_button, self.keep_button],
            layout=w.Layout(display="none"),
        )
        for b in (self.cancel_button, self.detach_button, self.confirm_button, self.keep_button):
            b.add_class("ddl-live-button")
        self.cancel_button.on_click(lambda _b: self._ask(True))
        self.keep_button.on_click(lambda _b: self._ask(False))
        self.confirm_button.on_click(lambda _b: self._confirmed(on_cancel))
        self.detach_button.on_click(lambda _b: on_detach())
        self.offline = w.HTML(offline_html(state.name))
        self.cause = w.HTML()
        self.table = w.HTML(table_html(state))
        self.merged = w.HTML()
        self.replica_logs: dict[str, Any] = {}
        self.tabs = w.Tab(children=[self.merged])
        self.tabs.titles = ("all",)
        self.chart = w.HTML()
        self.box = w.VBox(
            [
                w.HBox([self.header, self.cancel_button, self.detach_button]),
                self.confirm,
                self.offline,
                self.cause,
                self.table,
                self.tabs,
                self.chart,
            ]
        )
        self.box.add_class("ddl-dashboard")
        self._root: str | None = None
        said = tr("live dashboard (needs the kernel that started it)")
        slot.live(self.box, f"{state.name}: {said}")

    def _ask(self, asking: bool) -> None:
        """Show the inline "Stop the job?" question instead of Cancel, or put Cancel back."""
        self.confirm.layout.display = "flex" if asking else "none"
        self.cancel_button.layout.display = "none" if asking else None

    def _confirmed(self, on_cancel: Callable[[], None]) -> None:
        self._ask(False)
        on_cancel()

    def snapshot(self, state: DashboardState, final: bool) -> Any:
        if final:
            return {"final": record_bundle(state)}
        colors = state.colors()
        found = diagnosis_of(state)
        return {
            "header": header_html(state),
            "cause": root_cause_html(found),
            "root": found.root.replica if found and found.root else None,
            "table": table_html(state),
            "merged": log_html(list(state.merged), colors),
            "replicas": {rid: replica_log_html(state, rid) for rid in state.replicas},
            "labels": state.labels(),
            "chart": svg_charts(state.charts(), colors, state.labels()),
            "finished": state.finished or state.detached or bool(state.error),
        }

    def push(self, snapshot: Any, final: bool) -> None:
        if final:
            self.cancel_button.disabled = self.detach_button.disabled = True
            self.confirm_button.disabled = True
            self.slot.show(snapshot["final"])  # the record replaces the live view
            return
        for key in ("header", "cause", "table", "merged", "chart"):
            widget = getattr(self, key)
            if widget.value != snapshot[key]:
                widget.value = snapshot[key]
        self._push_replicas(snapshot["replicas"], snapshot["labels"])
        if snapshot["root"] and snapshot["root"] != self._root:
            self._root = snapshot["root"]  # open the root cause's own log, once
            self.tabs.selected_index = 1 + list(self.replica_logs).index(self._root)
        if snapshot["finished"]:
            self.cancel_button.disabled = self.confirm_button.disabled = True
            self.detach_button.disabled = True

    def _push_replicas(self, logs: dict[str, str], labels: dict[str, str]) -> None:
        new = [rid for rid in logs if rid not in self.replica_logs]
        for rid in new:
            self.replica_logs[rid] = self._w.HTML()
        if new:
            self.tabs.children = [self.merged, *self.replica_logs.values()]
            self.tabs.titles = ("all", *(labels.get(rid, rid) for rid in self.replica_logs))
        for rid, html in logs.items():
            widget = self.replica_logs[rid]
            if widget.value != html:
                widget.value = html
