"""Every page at a phone's, a laptop's and a wide monitor's width, on the demo user's memory: no page
scrolls sideways, nothing reaches past the viewport's right edge, a dialog's actions can be reached
(it scrolls inside the viewport, traps focus, closes on Escape), and axe-core finds no serious or
critical WCAG 2.1 AA violation. One live server and one seeded user for all of it.

axe-core is the npm package (`make install` puts it in node_modules/); without it and without npm to
fetch it, the layout checks still run and the test then skips, naming what is missing.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.browser.conftest import ROOT

pytestmark = [pytest.mark.browser, pytest.mark.slow]

WIDTHS = (390, 1280, 1920)
HEIGHT = 800
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"

# Elements reaching past the right edge, and the page's own sideways scroll. An element clipped by an
# ancestor that scrolls or hides its overflow (a wide table in its scroll box) is not past the edge.
OVERFLOW = """() => {
  const width = document.documentElement.clientWidth;
  const found = [];
  if (document.documentElement.scrollWidth > width + 1)
    found.push(`the page scrolls sideways: ${document.documentElement.scrollWidth} px wide in ${width}`);
  const clipped = (el) => {
    for (let up = el.parentElement; up && up !== document.body; up = up.parentElement) {
      const style = getComputedStyle(up);
      if (style.overflowX !== 'visible' && up.getBoundingClientRect().right <= width + 1) return true;
    }
    return false;
  };
  for (const el of document.body.querySelectorAll('*')) {
    const box = el.getBoundingClientRect();
    if (!box.width || !box.height || box.right <= width + 1) continue;
    if (getComputedStyle(el).visibility === 'hidden' || clipped(el)) continue;
    const name = el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
      (el.className && typeof el.className === 'string' ? '.' + el.className.trim().split(/\\s+/).join('.') : '');
    found.push(`${name} ends at ${Math.round(box.right)} px`);
    if (found.length > 8) break;
  }
  return found;
}"""

AXE_RUN = """async () => {
  const result = await axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']},
                                          resultTypes: ['violations']});
  return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.help}: ` + v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(' | '));
}"""


def axe_script() -> tuple[Path | None, str]:
    """axe.min.js, installed with npm when it is missing and npm is there; else why not."""
    if AXE.exists():
        return AXE, ""
    npm = shutil.which("npm")
    if npm is None:
        return None, "axe-core is not installed (node_modules/axe-core) and npm is not available to install it"
    done = subprocess.run([npm, "install", "--no-save", "--no-package-lock", "--no-audit", "--no-fund", "axe-core"],
                          cwd=ROOT, capture_output=True, text=True, timeout=180)
    if AXE.exists():
        return AXE, ""
    return None, f"`npm install axe-core` failed: {(done.stderr or done.stdout)[-400:]}"


@pytest.fixture(scope="module")
def seeded(demo_server, browser):
    """The demo user's pages, found once: every inspector page, one of each page reached from them."""
    context = browser.new_context(viewport={"width": 1280, "height": HEIGHT})
    page = context.new_page()
    sign_in(page, demo_server)
    base = "/inspector/demo"
    page.goto(f"{demo_server.url}{base}/mtm/")
    segment = page.locator("#segment-table tbody a[href*='/mtm/']").first.get_attribute("href")
    page.goto(f"{demo_server.url}{base}/lpm/")
    trait = page.locator("a[href*='/lpm/traits/']").first.get_attribute("href")
    fact = page.locator("a[href*='/provenance/fact/']").first.get_attribute("href")
    state = context.storage_state()
    context.close()
    signed_in = {
        "chat": "/", "overview": f"{base}/", "short-term": f"{base}/stm/", "mid-term": f"{base}/mtm/",
        "segment": segment, "long-term": f"{base}/lpm/", "trait": trait, "provenance": fact,
        "recalls": f"{base}/recalls/?q=what+is+my+cat%27s+name", "lifecycle": f"{base}/events/",
        "edits": f"{base}/events/?group=edits", "replay": f"{base}/replay/", "changes": f"{base}/changes/",
        "profile": "/profile/", "tokens": "/settings/tokens/", "404": "/no-such-page/",
    }
    signed_out = {"sign-in": "/accounts/login/", "sign-up": "/accounts/signup/", "404 signed out": "/no/such/page/"}
    return {"state": state, "signed_in": signed_in, "signed_out": signed_out}


def sign_in(page, server) -> None:
    page.goto(f"{server.url}/accounts/login/")
    page.fill("input[name=username]", "demo")
    page.fill("input[name=password]", "demo-memory")
    page.click("button[type=submit]")
    page.wait_for_url(f"{server.url}/")


def open_and_check(page, url: str, name: str, axe: Path | None) -> list[str]:
    page.goto(url)
    page.wait_for_load_state("networkidle")
    if page.locator("[data-figure]").count():
        page.wait_for_function("() => [...document.querySelectorAll('[data-figure]')]"
                               ".every((el) => el.classList.contains('figure-ready'))", timeout=30_000)
    problems = [f"{name}: {p}" for p in page.evaluate(OVERFLOW)]
    if axe is not None:
        page.add_script_tag(path=str(axe))
        problems += [f"{name}: {v}" for v in page.evaluate(AXE_RUN)]
    return problems


def check_delete_dialog(page, url: str, width: int) -> list[str]:
    """The segment's delete dialog at this width: inside the viewport, its buttons reachable by
    scrolling the dialog, Tab kept inside it, Escape closing it."""
    page.goto(url)
    page.locator("section.panel .memory-actions button[data-action=delete]").first.click()
    dialog = page.locator("dialog.confirm")
    dialog.wait_for()
    problems = []
    box = dialog.bounding_box()
    if box["y"] < 0 or box["y"] + box["height"] > HEIGHT + 1 or box["x"] + box["width"] > width + 1:
        problems.append(f"delete dialog at {width}: outside the viewport {box}")
    for label in ("Delete for good", "Keep it"):
        button = dialog.get_by_role("button", name=label)
        button.scroll_into_view_if_needed()
        inside = page.evaluate("(el) => { const r = el.getBoundingClientRect();"
                               " return r.top >= 0 && r.bottom <= innerHeight && r.right <= innerWidth; }",
                               button.element_handle())
        if not inside:
            problems.append(f"delete dialog at {width}: {label!r} cannot be reached")
    for _ in range(12):
        page.keyboard.press("Tab")
        if not page.evaluate("() => !!document.activeElement.closest('dialog[open]')"):
            problems.append(f"delete dialog at {width}: Tab left the dialog")
            break
    page.keyboard.press("Escape")
    if page.locator("dialog.confirm").count() and dialog.is_visible():
        problems.append(f"delete dialog at {width}: Escape did not close it")
    return problems


@pytest.mark.parametrize("width", WIDTHS)
def test_every_page_fits_and_passes_axe(demo_server, browser, seeded, width):
    axe, missing = axe_script()
    problems: list[str] = []
    context = browser.new_context(viewport={"width": width, "height": HEIGHT}, storage_state=seeded["state"])
    page = context.new_page()
    for name, path in seeded["signed_in"].items():
        problems += open_and_check(page, f"{demo_server.url}{path}", name, axe)
    problems += check_delete_dialog(page, f"{demo_server.url}{seeded['signed_in']['segment']}", width)
    context.close()
    context = browser.new_context(viewport={"width": width, "height": HEIGHT})
    page = context.new_page()
    for name, path in seeded["signed_out"].items():
        problems += open_and_check(page, f"{demo_server.url}{path}", name, axe)
    context.close()
    assert not problems, "\n".join(problems)
    if axe is None:
        pytest.skip(f"layout checked; accessibility not checked: {missing}")
