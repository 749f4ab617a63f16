"""A lab just opened in JupyterLab is not modified (issue 20): once its kernel is idle, the tab shows no unsaved-changes
dot and the notebook model is the notebook the server sent, kernel metadata included. After Run All the notebook IS
modified, by its outputs and execution counts only: the model with those cleared is still the notebook the server
sent. Headless Debian chromium, the JupyterLab server of tests/browser/test_browser.py."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest
from playwright.sync_api import Error as PlaywrightError
from test_browser import (
    KERNEL_IDLE_MS,
    NOTEBOOKS,
    RUN_ALL_MS,
    _lab_id,
    _screenshot,
    _settle,
    _wait_for_run_all,
    browser_context,  # noqa: F401  (a fixture)
    lab_server,  # noqa: F401  (a fixture)
)

pytestmark = pytest.mark.browser

# two labs without Spark (Run All stays short): lab 03 with its cursor views, lab 04 with two players
LABS = [p for p in NOTEBOOKS if _lab_id(p) in {"03", "04"}]

# The notebook once the kernel has connected: JupyterLab's NotebookPanel writes metadata.language_info (from the
# kernel's info reply) and metadata.kernelspec (from its spec) in callbacks on `kernel.info` and `kernel.spec`,
# registered when the kernel changed; awaiting the same promises here runs after them.
NOTEBOOK_STATE_JS = """async () => {
  const panel = window.jupyterapp.shell.currentWidget;
  const kernel = panel.sessionContext.session.kernel;
  const info = await kernel.info;
  await kernel.spec;
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  const tab = Array.from(document.querySelectorAll('.lm-DockPanel-tabBar .lm-TabBar-tab'))
    .find(t => t.title.includes(panel.context.path) || t.innerText.includes(panel.title.label));
  return {
    dirty: panel.context.model.dirty,
    tabDirty: tab ? tab.classList.contains('jp-mod-dirty') : null,
    model: panel.context.model.toJSON(),
    kernelLanguageInfo: info.language_info,
  };
}"""


def _served(server, name: str) -> dict:
    """The notebook as the server sends it to JupyterLab (what the document opens with)."""
    return json.loads(server.api(f"/api/contents/{quote(name)}?content=1&type=notebook"))["content"]


def _cell(cell: dict, outputs: bool) -> dict:
    """A cell as a save would store it: no ``attachments`` key when it has none (JupyterLab's model lists an unset
    one), no ``metadata.trusted`` (the server's trust mark, which nbformat strips when it writes a notebook); without
    its outputs and execution count unless ``outputs``."""
    kept = {k: v for k, v in cell.items() if k != "attachments" or v}
    kept["metadata"] = {k: v for k, v in cell["metadata"].items() if k != "trusted"}
    if not outputs and cell["cell_type"] == "code":
        kept.update(outputs=[], execution_count=None)
    return kept


def _stored(nb: dict, outputs: bool = True) -> dict:
    return {**nb, "cells": [_cell(c, outputs) for c in nb["cells"]]}


def _differences(model: dict, served: dict) -> list[str]:
    """Where JupyterLab's model and the served notebook differ: top-level keys, metadata keys, cells."""
    keys = sorted((set(model) | set(served)) - {"cells", "metadata"})
    diffs = [f"{k}: {served.get(k)!r} -> {model.get(k)!r}" for k in keys if model.get(k) != served.get(k)]
    m, s = model.get("metadata", {}), served.get("metadata", {})
    diffs += [f"metadata.{k}: {s.get(k)!r} -> {m.get(k)!r}" for k in sorted(set(m) | set(s)) if m.get(k) != s.get(k)]
    mc, sc = model.get("cells", []), served.get("cells", [])
    if len(mc) != len(sc):
        diffs.append(f"cells: {len(sc)} -> {len(mc)}")
    diffs += [f"cell {i}: {b!r} -> {a!r}"[:400] for i, (a, b) in enumerate(zip(mc, sc)) if a != b]
    return diffs


@pytest.mark.parametrize("notebook", LABS, ids=[p.stem for p in LABS])
def test_an_opened_lab_is_not_modified(notebook, lab_server, browser_context):  # noqa: F811
    lab = _lab_id(notebook)
    tag = f"{lab}-unsaved-dot"
    served = _served(lab_server, notebook.name)
    pg = browser_context.new_page()
    try:
        pg.goto(
            f"{lab_server.base}/lab/workspaces/lab-{tag}/tree/{quote(notebook.name)}?token={lab_server.token}",
            wait_until="domcontentloaded",
        )
        try:
            pg.get_by_text("Python 3 (ipykernel) | Idle", exact=True).wait_for(state="visible", timeout=KERNEL_IDLE_MS)
        except PlaywrightError:
            _screenshot(pg, f"lab-{tag}-no-kernel.png")
            pytest.fail(f"lab {lab}: the status bar never read 'Python 3 (ipykernel) | Idle'", pytrace=False)

        opened = pg.evaluate(NOTEBOOK_STATE_JS)
        assert opened["model"]["metadata"]["language_info"] == opened["kernelLanguageInfo"], (
            f"lab {lab}: JupyterLab has not written the kernel's language_info yet: {opened['model']['metadata']}"
        )
        changed = _differences(_stored(opened["model"]), _stored(served))
        assert not opened["dirty"] and opened["tabDirty"] is False and not changed, (
            f"lab {lab} is marked modified right after opening (model.dirty {opened['dirty']}, tab dirty "
            f"{opened['tabDirty']}); JupyterLab changed:\n" + "\n".join(changed)
        )

        pg.get_by_role("menuitem", name="Run", exact=True).click()
        pg.get_by_role("menuitem", name="Run All Cells", exact=True).click()
        cells = _wait_for_run_all(pg, tag, RUN_ALL_MS)
        assert not [c for c in cells if c["errors"]], f"lab {lab}: cells raised in JupyterLab"
        _settle(pg)
        ran = pg.evaluate(NOTEBOOK_STATE_JS)
        assert ran["dirty"] and ran["tabDirty"], f"lab {lab}: Run All's outputs did not mark the notebook modified"
        changed = _differences(_stored(ran["model"], outputs=False), _stored(served))
        assert not changed, f"lab {lab}: Run All changed more than outputs and counts:\n" + "\n".join(changed)
    finally:
        pg.close()
        lab_server.shutdown_kernels()
