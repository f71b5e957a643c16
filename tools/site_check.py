"""Look at the built documentation site in a real browser, as a visitor does.

    mkdocs build --strict -d site && python tools/site_check.py site [--screenshots DIR]

Serves the built site on 127.0.0.1 and opens every page in headless Chromium (Debian's
``chromium`` package, /usr/bin/chromium, driven by Playwright; Playwright's own browser
downloads are never used), with every request to another host refused: the site must work
offline. It fails, listing every problem, when:

- a page logs a console error or raises a JavaScript error, or a request of the site's own
  (a stylesheet, a script, an image) fails;
- an image does not load;
- at 1280 and 1920 px wide, a code block scrolls sideways (its lines are longer than the content
  column shows) or a table is wider than the content column;
- at 390 px wide (a phone), the page itself is wider than the screen (a code block or a wide
  table of figures may scroll inside its own box there, as code does), a table of the API
  reference does not fit, text is cut by a box that hides what overflows it, or an image is
  shown at under half its width without a link to it at full size;
- the site's search finds nothing on the Pitfalls page for an error text that page shows, or
  does not put it among the first 3 results for "unhashable type".

Before the browser, it reads every built page's HTML and fails on:

- a link (``<a href>``, ``<img src>``, a stylesheet, a script) into the site that names no file
  of the built site, or an anchor (``#name``) that its page does not define;
- a link to another host that mkdocs.yml does not name: its ``repo_url`` and ``site_url``, the
  hosts of the API reference's inventories, and ``extra.linked_sites`` (the other sites the pages
  cite). The project has no public repository or package index entry yet, so a link to either
  would be invented.

The pages generated from the repository's files (tests/, benchmarks/, pytreekit/: docs/_hooks/
repository_files.py) show those files as they are: they are checked for errors, at 1280 px only.
``--screenshots DIR`` also saves full-page screenshots at 1280 px of the pages a visitor sees
first (the front page, API reference, Speed and Why).
"""

from __future__ import annotations

import argparse
import functools
import html as htmllib
import http.server
import re
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
# What a closed network needs: nothing that phones home, a profile of its own (user_data_dir).
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
DESKTOPS = (1280, 1920)
PHONE = 390
SOURCE_PAGES = ("tests/", "benchmarks/", "pytreekit/")  # the repository's files, as they are
SCREENSHOTS = {"index": "", "api": "api/", "speed": "speed/", "why": "why/"}
PITFALLS = "pitfalls/"
# The Pitfalls page must be among the results of a search for each of its error texts, and
# among the first of them for these short ones, which a reader types from a traceback's last line.
FIRST_RESULTS = 3
SEARCHES = ("unhashable type",)
# Browsers at once, each in a thread of its own: one per core of the CI machines.
WORKERS = 2

# In the page: the code blocks and tables wider than what the content column shows of them.
MEASURE = """
() => {
  const problems = [];
  const column = document.querySelector(".md-content__inner");
  const width = column ? column.clientWidth : document.documentElement.clientWidth;
  for (const code of document.querySelectorAll(".md-content pre > code")) {
    if (code.offsetParent !== null && code.scrollWidth > code.clientWidth + 1) {
      const lines = code.innerText.split("\\n");
      const longest = lines.reduce((a, b) => (b.length > a.length ? b : a), "");
      problems.push(`a code block scrolls sideways (${code.scrollWidth} px of content in ` +
                    `${code.clientWidth} px): ${longest.trim().slice(0, 100)}`);
    }
  }
  for (const table of document.querySelectorAll(".md-content table")) {
    if (table.offsetParent !== null && table.getBoundingClientRect().width > width + 1) {
      const head = table.querySelector("tr") ? table.querySelector("tr").innerText : "";
      problems.push(`a table is ${Math.round(table.getBoundingClientRect().width)} px wide ` +
                    `in a ${width} px column: ${head.replace(/\\s+/g, " ").slice(0, 100)}`);
    }
  }
  return problems;
}
"""
BROKEN_IMAGES = """
() => [...document.querySelectorAll("img")]
  .filter((img) => !img.complete || img.naturalWidth === 0)
  .map((img) => img.getAttribute("src"))
"""
PAGE_WIDER_THAN_SCREEN = """
() => document.documentElement.scrollWidth > document.documentElement.clientWidth + 1
"""
# On a phone: what is cut or shrunk past reading. A table of the API reference must fit (it is
# laid out as one block per row there); a box whose content it hides is cut, unless it is a box
# made to scroll (code, a wide table of figures); an image shown at under half its width must
# link to itself at full size.
PHONE_MEASURE = """
() => {
  const problems = [];
  for (const table of document.querySelectorAll(".md-content .doc-contents table")) {
    const box = table.closest(".md-typeset__scrollwrap") || table;
    if (table.offsetParent !== null && box.scrollWidth > box.clientWidth + 1) {
      const text = table.innerText.replace(/\\s+/g, " ").slice(0, 60);
      problems.push(`an API table scrolls sideways (${box.scrollWidth} px in ` +
                    `${box.clientWidth} px): ${text}`);
    }
  }
  for (const element of document.querySelectorAll(".md-content *")) {
    if (element.closest("pre, code, svg, .md-typeset__scrollwrap, .tabbed-labels")) continue;
    const style = getComputedStyle(element);
    const hides = ["hidden", "clip"].includes(style.overflowX);
    if (hides && element.offsetParent !== null &&
        element.scrollWidth > element.clientWidth + 1 && element.innerText.trim()) {
      problems.push(`text is cut (${element.scrollWidth} px in ${element.clientWidth} px): ` +
                    element.innerText.replace(/\\s+/g, " ").slice(0, 60));
    }
  }
  for (const img of document.querySelectorAll(".md-content img")) {
    const shown = img.getBoundingClientRect().width;
    const link = img.closest("a");
    const linked = link && link.href === img.src;
    if (img.naturalWidth > 2 * shown && shown > 0 && !linked) {
      problems.push(`an image is shown at ${Math.round(shown)} of its ${img.naturalWidth} px ` +
                    `with no link to it at full size: ${img.getAttribute("src")}`);
    }
  }
  return problems;
}
"""


@dataclass
class Report:
    problems: dict[str, list[str]] = field(default_factory=dict)
    checked: int = 0

    def add(self, where: str, problem: str) -> None:
        self.problems.setdefault(where, []).append(problem)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def serve(directory: Path) -> Iterator[str]:
    """The built site, served on a free port of 127.0.0.1, while the block runs."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def pages(site: Path) -> list[str]:
    """Every page of the built site, as a path from its root ("", "guide/typing/")."""
    found = []
    for index in sorted(site.rglob("index.html")):
        relative = index.parent.relative_to(site).as_posix()
        found.append("" if relative == "." else relative + "/")
    return found


# Words a search index leaves out (lunr's English stop words, as Material's search uses them):
# a query made of an error's other words is what finds it.
_STOP_WORDS = """
    a able about across after all almost also am among an and any are as at be because been but by
    can cannot could dear did do does either else ever every for from get got had has have he her
    hers him his how however i if in into is it its just least let like likely may me might most
    must my neither no nor not of off often on only or other our own rather said say says she
    should since so some than that the their them then there these they this tis to too twas us
    wants was we were what when where which while who whom why will with would yet you your
"""
STOP_WORDS = frozenset(_STOP_WORDS.split())


def pitfalls_errors(site: Path) -> list[str]:
    """For each error text the Pitfalls page shows, a search for it: the words of the longest
    stretch of its message without a varying part (``...``, ``<...>``, a quoted name), less the
    words no search index keeps, up to 6."""
    html = (site / PITFALLS / "index.html").read_text(encoding="utf-8")
    queries: dict[str, None] = {}
    for block in re.findall(r'<div class="language-text highlight"><pre>(.*?)</pre>', html, re.S):
        for line in htmllib.unescape(re.sub(r"<[^>]+>", "", block)).splitlines():
            pieces = re.split(r"\.\.\.|<[^>]*>|'[^']*'", line.partition(": ")[2])
            words = re.findall(r"[A-Za-z_][\w.]*\w", max(pieces, key=lambda p: len(p.split())))
            kept = [word for word in words if word.lower() not in STOP_WORDS][:6]
            if len(kept) >= 3:
                queries[" ".join(kept)] = None
    return list(queries)


class Viewer:
    """One browser tab at one width, that collects what goes wrong while a page loads."""

    def __init__(self, context: Any, site: Path, base: str, width: int) -> None:
        self.base, self.width, self.messages = base, width, list[str]()
        self.page = context.new_page()
        self.page.set_viewport_size({"width": width, "height": 900})
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda error: self.messages.append(f"JavaScript error: {error}"))
        self.page.on("requestfailed", self._failed)
        self.page.on("response", self._response)
        self.allowed_to_fail = repository_facts(site)

    def _console(self, message: Any) -> None:
        url = message.location.get("url", "")
        if message.type == "error" and not (
            self.allowed_to_fail and url.startswith(self.allowed_to_fail)
        ):
            self.messages.append(f"console error: {message.text} ({url})")

    def _failed(self, request: Any) -> None:
        # ERR_ABORTED: the next page's navigation cancelled a request still under way.
        if request.url.startswith(self.base) and request.failure != "net::ERR_ABORTED":
            self.messages.append(f"request failed: {request.url} ({request.failure})")

    def _response(self, response: Any) -> None:
        if response.url.startswith(self.base) and response.status >= 400:
            self.messages.append(f"HTTP {response.status}: {response.url}")

    def check(self, path: str, report: Report) -> None:
        where = f"/{path} at {self.width} px"
        self.messages.clear()
        self.page.goto(self.base + path, wait_until="load")
        for message in self.messages:
            report.add(where, message)
        for src in self.page.evaluate(BROKEN_IMAGES):
            report.add(where, f"an image does not load: {src}")
        report.checked += 1
        if path.startswith(SOURCE_PAGES):
            return
        if self.width == PHONE:
            if self.page.evaluate(PAGE_WIDER_THAN_SCREEN):
                report.add(where, "the page is wider than the screen")
            for problem in self.page.evaluate(PHONE_MEASURE):
                report.add(where, problem)
            return
        for problem in self.page.evaluate(MEASURE):
            report.add(where, problem)


# What a page links to and what it can be linked to: tags whose address is followed, and ids.
TARGET = re.compile(
    r"<(?P<tag>a|img|link|script)\b[^>]*?\s(?P<attribute>href|src)=\"(?P<url>[^\"]*)\"", re.I
)
DEFINED = re.compile(r"\s(?:id|name)=\"([^\"]+)\"")
# Addresses that are not pages: the browser handles them, there is nothing to look up.
NOT_A_PAGE = ("mailto:", "javascript:", "data:", "tel:")


def configured_hosts(config_file: Path) -> set[str]:
    """The hosts mkdocs.yml names, that a page may link to."""
    from mkdocs.utils.yaml import yaml_load  # understands mkdocs.yml's !ENV

    with config_file.open(encoding="utf-8") as stream:
        config = yaml_load(stream)
    addresses = [config.get("repo_url") or "", config.get("site_url") or ""]
    addresses += (config.get("extra") or {}).get("linked_sites") or []
    for plugin in config.get("plugins") or []:
        if isinstance(plugin, dict) and "mkdocstrings" in plugin:
            for handler in plugin["mkdocstrings"].get("handlers", {}).values():
                for inventory in handler.get("inventories", []):
                    addresses.append(inventory if isinstance(inventory, str) else inventory["url"])
    return {urllib.parse.urlsplit(address).hostname or "" for address in addresses} - {""}


def _page_file(site: Path, path: str) -> Path | None:
    """The built file an address's path (from the site's root) names, if there is one."""
    candidate = site / urllib.parse.unquote(path).lstrip("/")
    if path.endswith("/") or candidate.is_dir():
        candidate = candidate / "index.html"
    return candidate if candidate.is_file() else None


def check_links(site: Path, hosts: set[str]) -> Report:
    """Every link of every built page: into the site, to a file and an anchor that exist;
    elsewhere, to a host of ``hosts``."""
    report = Report()
    ids: dict[Path, set[str]] = {}

    def defined(page: Path) -> set[str]:
        if page not in ids:
            ids[page] = set(DEFINED.findall(page.read_text(encoding="utf-8")))
        return ids[page]

    for page in sorted(site.rglob("*.html")):
        where = "/" + page.relative_to(site).as_posix()
        base = "http://site/" + page.relative_to(site).as_posix()
        html = page.read_text(encoding="utf-8")
        for match in TARGET.finditer(html):
            url = htmllib.unescape(match.group("url"))
            if not url or url.startswith(NOT_A_PAGE):
                continue
            parts = urllib.parse.urlsplit(urllib.parse.urljoin(base, url))
            if parts.netloc != "site":
                if match.group("tag") == "link" and "canonical" in match.group(0):
                    continue  # the page's own address where it is published (site_url)
                if parts.scheme in ("http", "https") and not parts.hostname:
                    report.add(where, f"a malformed address: {url}")
                elif parts.scheme in ("http", "https") and parts.hostname not in hosts:
                    report.add(where, f"a link to a host mkdocs.yml does not name: {url}")
                continue
            target = _page_file(site, parts.path)
            if target is None:
                report.add(where, f"a link to nothing: {url}")
            elif (
                parts.fragment
                and target.suffix == ".html"
                and urllib.parse.unquote(parts.fragment) not in defined(target)
            ):
                report.add(where, f"a link to an anchor its page lacks: {url}")
    return report


def repository_facts(site: Path) -> str:
    """The address of the repository's facts (stars, forks, latest release) that Material's
    header fetches from GitHub's API: refused here like every request off the site, and allowed
    to fail (the placeholder repository has none yet). Nothing else may fail."""
    html = (site / "index.html").read_text(encoding="utf-8")
    match = re.search(r'href="https://github\.com/([^/"]+/[^/"#?]+)"[^>]*class="md-source"', html)
    return f"https://api.github.com/repos/{match.group(1)}" if match else ""


def check_search(page: Any, error: str, report: Report, first: int | None = None) -> None:
    """Search the site for ``error`` as a reader does, in the search box of the page open: the
    Pitfalls page must be among the results (among the ``first`` ones, if given)."""
    page.click(".md-search__input")
    page.keyboard.press("Control+A")
    page.keyboard.press("Backspace")
    # The previous search's results gone, the next ones are this search's.
    page.wait_for_function("!document.querySelector('.md-search-result__item')", timeout=10000)
    page.fill(".md-search__input", error)
    # Material's search runs on a key press: one, once the whole text is in (typing it would
    # show the results of its first words for a while).
    page.keyboard.press("End")
    try:
        page.wait_for_selector(".md-search-result__item", timeout=10000)
    except Exception:  # Playwright's TimeoutError: no result appeared
        report.add("search", f"no result for {error!r}")
        return
    links = page.eval_on_selector_all(
        ".md-search-result__item > a", "links => links.map(a => a.getAttribute('href'))"
    )
    if not any(PITFALLS in (link or "") for link in links[:first]):
        shown = ", ".join(link.split("?")[0].removeprefix(page.url) for link in links[:5])
        among = f"the first {first} " if first else "the "
        report.add(
            "search", f"the Pitfalls page is not among {among}results for {error!r}: {shown}"
        )


@contextmanager
def browser(base: str) -> Iterator[Any]:
    """A browser context of its own (Playwright's API is per thread), that reaches nothing but
    the site: a page that needs the network is a problem to see here."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright, tempfile.TemporaryDirectory() as profile:
        context = playwright.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS
        )
        context.route(
            re.compile(r"^(?!" + re.escape(base) + ")"),
            lambda route: route.abort("blockedbyclient"),
        )
        try:
            yield context
        finally:
            context.close()


def view_every_page(site: Path, base: str, width: int) -> Report:
    """Every page at 1280 px; at the other widths, the pages of the site's own text."""
    report = Report()
    with browser(base) as context:
        viewer = Viewer(context, site, base, width)
        for path in pages(site):
            if width == DESKTOPS[0] or not path.startswith(SOURCE_PAGES):
                viewer.check(path, report)
    return report


def search_and_screenshots(site: Path, base: str, screenshots: Path | None) -> Report:
    report = Report()
    with browser(base) as context:
        page = context.new_page()
        page.set_viewport_size({"width": DESKTOPS[0], "height": 900})
        page.goto(base, wait_until="networkidle")
        for error in SEARCHES:
            check_search(page, error, report, FIRST_RESULTS)
        for error in pitfalls_errors(site):
            check_search(page, error, report)
        if screenshots is not None:
            screenshots.mkdir(parents=True, exist_ok=True)
            for name, path in SCREENSHOTS.items():
                page.goto(base + path, wait_until="networkidle")
                page.screenshot(path=str(screenshots / f"{name}-1280.png"), full_page=True)
    return report


def run(
    site: Path, screenshots: Path | None = None, config_file: Path = ROOT / "mkdocs.yml"
) -> Report:
    if not (site / "index.html").is_file():
        sys.exit(f"{site} has no index.html: build the site first (mkdocs build -d {site})")
    if not Path(CHROMIUM).is_file():
        sys.exit(f"no {CHROMIUM}: install Debian's chromium package (apt-get install chromium)")
    report = check_links(site, configured_hosts(config_file))
    with serve(site) as base, ThreadPoolExecutor(max_workers=WORKERS) as pool:
        jobs = [pool.submit(view_every_page, site, base, width) for width in (*DESKTOPS, PHONE)]
        jobs.append(pool.submit(search_and_screenshots, site, base, screenshots))
        for job in jobs:
            part = job.result()
            for where, problems in part.problems.items():
                for problem in problems:
                    report.add(where, problem)
            report.checked += part.checked
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", type=Path, help="the built site (mkdocs build -d SITE)")
    parser.add_argument("--screenshots", type=Path, help="save screenshots into this directory")
    parser.add_argument(
        "--config", type=Path, default=ROOT / "mkdocs.yml", help="the site's mkdocs.yml"
    )
    args = parser.parse_args(argv)
    start = time.monotonic()
    report = run(args.site, args.screenshots, args.config)
    seconds = time.monotonic() - start
    for where, problems in report.problems.items():
        print(where)
        for problem in problems:
            print(f"  {problem}")
    count = sum(len(problems) for problems in report.problems.values())
    print(f"{report.checked} page views checked in {seconds:.0f} s: {count} problems")
    return 1 if count else 0


if __name__ == "__main__":
    sys.exit(main())
