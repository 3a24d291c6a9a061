"""axe-core (npm, the labextension's dev dependency) over the jobs panel and the job
view of a finished job, in the light and the dark theme: no serious or critical
violation. Screenshots: .test-artifacts/a11y-*.png."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from .labpage import LabPage, dark_theme

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(240)]

AXE = Path(__file__).resolve().parents[2] / "labextension/node_modules/axe-core/axe.min.js"
JOB = "ui-a11y"

#: the serious and critical violations under one element, a few nodes each
AXE_RUN = """async (selector) => {
  const found = await axe.run(document.querySelector(selector), {resultTypes: ['violations']});
  return found.violations
    .filter(v => v.impact === 'serious' || v.impact === 'critical')
    .map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.slice(0, 3).map(n => n.target.join(' '))}));
}"""


#: the contrast of an element's text against the first opaque background behind it
CONTRAST = """(node) => {
  const rgb = c => c.match(/[\\d.]+/g).map(Number);
  let bg = null;
  for (let n = node; n && !bg; n = n.parentElement) {
    const c = rgb(getComputedStyle(n).backgroundColor);
    if (c.length < 4 || c[3] === 1) { bg = c; }
  }
  bg = bg || [255, 255, 255];
  const lum = c => {
    const [r, g, b] = c.slice(0, 3).map(v => v / 255)
      .map(v => v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const [a, b] = [lum(rgb(getComputedStyle(node).color)), lum(bg)].sort((x, y) => y - x);
  return (a + 0.05) / (b + 0.05);
}"""


@pytest.fixture
def finished_job(data_dir, tmp_path, monkeypatch):
    """A finished local job, and a Kubernetes backend the user set up wrongly (a kube
    context the kubeconfig lacks): the panel's unavailable line, with the command its
    hint names, is checked too."""
    from tests.support import deadends

    kc = deadends.write_kubeconfig(tmp_path / "kc", deadends.closed_port_url())
    monkeypatch.setenv("KUBECONFIG", str(kc))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    (data_dir / "config.json").write_text('{"kube_context": "elsewhere"}')
    from jupyter_ddl.backends.local import LocalBackend
    from jupyter_ddl.core.bundle import build_bundle
    from jupyter_ddl.models import JobSpec

    b = LocalBackend()
    b.submit(JobSpec(name=JOB, strategy="tf-mirrored", replicas={"Worker": 1},
                     notebook="work/train.ipynb"),
             build_bundle("import sys\nprint('loss=0.5')\n"
                          "print('a warning on stderr', file=sys.stderr)\n"))  # fmt: skip
    deadline = time.monotonic() + 60
    while not b.get(JOB).state.finished:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    return JOB


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_panel_and_job_view_have_no_serious_axe_violation(
    theme, finished_job, lab, browser, artifacts
):
    if not AXE.exists():
        pytest.skip("axe-core is not installed (npm ci in labextension/ installs it)")
    if theme == "dark":
        dark_theme(lab["settings"])
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    lp = LabPage(page, lab)
    try:
        lp.open()
        if theme == "dark":
            page.wait_for_selector(
                'body[data-jp-theme-light="false"]', state="attached", timeout=60_000
            )
        lp.show_jobs()
        page.wait_for_selector(f'{lp.row(finished_job)}[data-state="Succeeded"]', timeout=60_000)
        line = page.wait_for_selector('.jp-DDL-unavailable-line[data-backend="kubernetes"]')
        # the command the server's hint names is code, not `backticks`
        assert "`" not in line.inner_text(), line.inner_text()
        assert (
            line.eval_on_selector("code", "c => c.textContent") == "%ddl config kube_context=NAME"
        )
        page.add_script_tag(path=str(AXE))
        found = {"panel": page.evaluate(AXE_RUN, "#jupyter-ddl-jobs")}
        view = lp.open_job(finished_job)
        page.wait_for_selector(f'{view} .jp-DDL-log[data-replica="worker-0"]', state="attached")
        # a line the job wrote on stderr is coloured: its contrast is checked too
        stderr = f"{view} .jp-DDL-stderr:has-text('a warning on stderr')"
        page.wait_for_selector(stderr)
        # axe leaves text in a scrolled box for review rather than failing it: measured here
        assert page.locator(stderr).first.evaluate(CONTRAST) >= 4.5
        page.wait_for_timeout(500)
        found["job view"] = page.evaluate(AXE_RUN, view)
        page.screenshot(path=str(artifacts / f"a11y-{theme}.png"))
        assert found == {"panel": [], "job view": []}
    finally:
        page.close()
