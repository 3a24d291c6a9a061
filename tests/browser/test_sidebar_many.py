"""The sidebar with 200 jobs in a 900 px window at the default sidebar width: every
row reachable by scrolling, the Status column whole, short cell ids (the full one in
the tooltip), rows reachable and opened by keyboard, state icons with words."""

from __future__ import annotations

import json
import shutil
import time

import pytest

from .labpage import LabPage

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(240)]

COUNT = 200
CELL = "3f2c9a1b-7e4d-4a0c-9b1e-2f6d8c0a5e11"


def _rename(path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace(f'"{old}"', f'"{new}"'), encoding="utf-8")


@pytest.fixture
def many_jobs(data_dir):
    """One real finished local job, its directory copied under 199 more names (what
    the local backend lists is its job directories)."""
    from jupyter_ddl.backends.local import LocalBackend
    from jupyter_ddl.core.bundle import build_bundle
    from jupyter_ddl.models import JobSpec

    b = LocalBackend()
    first = "many-000"
    spec = JobSpec(name=first, strategy="tf-mirrored", replicas={"Worker": 1},
                   notebook="work/train.ipynb", cell_id=CELL)  # fmt: skip
    b.submit(spec, build_bundle("print('ran')\n"))
    deadline = time.monotonic() + 60
    while not b.get(first).state.finished:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    jobs = data_dir / "jobs"
    status = json.loads((jobs / first / "status.json").read_text(encoding="utf-8"))
    for i in range(1, COUNT):
        name = f"many-{i:03d}"
        target = jobs / name
        shutil.copytree(jobs / first, target, ignore=shutil.ignore_patterns("bundle"))
        for f in ("spec.json", "handle.json", "status.json"):
            if (target / f).exists():
                _rename(target / f, first, name)
        st = json.loads((target / "status.json").read_text(encoding="utf-8"))
        for k in ("created", "started", "ended"):  # one second apart: a stable order
            if isinstance(status.get(k), (int, float)):
                st[k] = status[k] - i
        (target / "status.json").write_text(json.dumps(st), encoding="utf-8")
    return [f"many-{i:03d}" for i in range(COUNT)]


def test_two_hundred_jobs_are_reachable_by_scroll_and_keyboard(many_jobs, lab, browser, artifacts):
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    lp = LabPage(page, lab)
    try:
        lp.open()
        lp.show_jobs()
        page.wait_for_selector(lp.row(many_jobs[0]), timeout=60_000)
        page.screenshot(path=str(artifacts / "sidebar-many-top.png"))

        # the Status column is whole at the default width: nothing scrolls sideways
        body = page.locator(".jp-DDL-panel-body")
        widths = body.evaluate("n => [n.scrollWidth, n.clientWidth]")
        assert widths[0] <= widths[1] + 1, f"the list scrolls sideways: {widths}"
        status = page.locator(f"{lp.row(many_jobs[0])} .jp-DDL-replicas-cell")
        assert status.evaluate("n => n.scrollWidth <= n.clientWidth + 1"), "status cut"
        assert status.inner_text().strip() == "Succeeded"

        # a short cell id, the full one in its tooltip
        cell = page.locator(f"{lp.row(many_jobs[0])} .jp-DDL-cell")
        assert cell.inner_text().strip() == "cell 3f2c9a1b"
        assert cell.get_attribute("title") == f"cell {CELL}"

        # the state icon has words
        icon = page.locator(f"{lp.row(many_jobs[0])} .jp-DDL-state-icon")
        assert icon.get_attribute("role") == "img"
        assert icon.get_attribute("aria-label") == "Succeeded"

        # the last (oldest) job is reachable: page through, then scroll it into view
        last = many_jobs[-1]
        for _ in range(10):
            if page.locator(lp.row(last)).count():
                break
            page.click(".jp-DDL-page-next")
        row = page.locator(lp.row(last))
        row.scroll_into_view_if_needed()
        box, view = row.bounding_box(), body.bounding_box()
        assert box and view and box["y"] + box["height"] <= view["y"] + view["height"] + 1, (
            box,
            view,
        )
        page.mouse.move(view["x"] + 20, view["y"] + 20)
        before = body.evaluate("n => n.scrollTop")
        page.mouse.wheel(0, -400)
        page.wait_for_function(
            "([b]) => document.querySelector('.jp-DDL-panel-body').scrollTop < b", arg=[before]
        )
        page.screenshot(path=str(artifacts / "sidebar-many-scrolled.png"))

        # keyboard: the row's open control takes focus and Enter opens the job
        opener = page.locator(f"{lp.row(last)} .jp-DDL-open")
        opener.focus()
        assert opener.get_attribute("aria-label", timeout=1000) or opener.inner_text()
        # a refresh re-renders every row; the focus stays on this row's control (it was
        # lost to the page's body, so Enter opened nothing, whenever a push came between)
        page.evaluate(
            """() => new Promise(done => {
                const list = document.querySelector('.jp-DDL-panel-body');
                const seen = new MutationObserver(() => { seen.disconnect(); done(); });
                seen.observe(list, { childList: true, subtree: true });
                setTimeout(() => { seen.disconnect(); done(); }, 5000);
                document.querySelector('.jp-DDL-refresh').dispatchEvent(new MouseEvent('click'));
            })"""
        )
        page.wait_for_timeout(300)
        focused = page.evaluate(
            "() => [document.activeElement.className,"
            " document.activeElement.closest('.jp-DDL-jobrow')?.dataset.job]"
        )
        assert focused == ["jp-DDL-open", last], focused
        page.keyboard.press("Enter")
        page.wait_for_selector(f'.jp-DDL-jobview[data-job="{last}"]', timeout=30_000)
    finally:
        page.close()
