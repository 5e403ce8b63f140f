#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The HTML report's layout in a real browser: headless Chromium loads each page at 1024x768 and
1440x900, a script added to a copy of the page measures it, and the check fails on:
  - a page wider than the window (it would scroll sideways);
  - an element of the page whose box reaches past the window's right edge;
  - HTML text that overflows its box (a cell, a note, a card);
  - SVG text outside its plot (a clipped tick, a label cut mid-word);
  - a table cell whose number wraps over two lines ("290.912" / "ms").
Pages: the embedded default's report (topo-demo traces, with the built-in H200 reference line) and
a real Kineto-only job (tests/data/truth-1xh200/kineto, kernel-level sections).

Usage: html_layout.py --report TOPO_REPORT --demo DIR --kineto DIR --work DIR [--chromium PATH]
Screenshots of every page and size are left in DIR (work) for a person to look at. Chromium runs
with --headless --no-sandbox --disable-gpu and a fresh profile directory, no network, with its
scrollbars shown (a laptop's page is the window less its scrollbar).
"""
import argparse
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SIZES = ((1024, 768), (1440, 900))

MEASURE = r"""
<script>
(function () {
  var W = window.innerWidth, out = [], de = document.documentElement;
  function say(kind, el, detail) {
    var t = (el.textContent || "").replace(/\s+/g, " ").trim().slice(0, 70);
    out.push(kind + ": '" + t + "' " + detail);
  }
  if (de.scrollWidth > W) say("page wider than the window", document.body, de.scrollWidth + " > " + W);
  document.querySelectorAll("main *").forEach(function (el) {
    if (el.closest("svg")) return;
    var r = el.getBoundingClientRect();
    if (r.width > 0 && r.right > W + 0.5) say("box past the right edge", el, "right " + r.right.toFixed(1));
    var d = getComputedStyle(el).display;
    if ((d === "block" || d === "table-cell" || d === "list-item") && el.scrollWidth > el.clientWidth + 1)
      say("text overflows its box", el, el.scrollWidth + " > " + el.clientWidth);
  });
  document.querySelectorAll("svg").forEach(function (svg) {
    var b = svg.getBoundingClientRect();
    svg.querySelectorAll("text").forEach(function (t) {
      var r = t.getBoundingClientRect();
      if (r.left < b.left - 0.5 || r.right > b.right + 0.5 || r.top < b.top - 0.5 || r.bottom > b.bottom + 0.5)
        say("SVG text outside its plot", t, "[" + r.left.toFixed(0) + ", " + r.right.toFixed(0) +
            "] not in [" + b.left.toFixed(0) + ", " + b.right.toFixed(0) + "]");
    });
  });
  var walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT), n, cells = 0;
  while ((n = walker.nextNode())) {
    var td = n.parentElement && n.parentElement.closest("td");
    if (!td || td.classList.contains("name") || !/\d/.test(n.nodeValue) || !n.nodeValue.trim()) continue;
    cells++;
    var range = document.createRange();
    range.selectNodeContents(n);
    var tops = {};
    Array.prototype.forEach.call(range.getClientRects(), function (q) { tops[Math.round(q.top)] = 1; });
    if (Object.keys(tops).length > 1) say("number wraps in its cell", td, Object.keys(tops).length + " lines");
  }
  var pre = document.createElement("pre");
  pre.id = "topo-layout";
  pre.textContent = JSON.stringify({width: W, scroll_width: de.scrollWidth, cells: cells, problems: out});
  document.body.appendChild(pre);
})();
</script>
"""


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def chromium_args(chromium, profile, w, h):
    return [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            f"--user-data-dir={profile}", f"--window-size={w},{h}"]


def measure(chromium, page, w, h, work, name):
    with open(page) as f:
        text = f.read()
    probe = os.path.join(work, f"{name}-{w}-probe.html")
    with open(probe, "w") as f:
        f.write(text.replace("</body>", MEASURE + "</body>"))
    profile = tempfile.mkdtemp(dir=work)
    try:
        p = subprocess.run(chromium_args(chromium, profile, w, h) +
                           ["--dump-dom", "file://" + os.path.abspath(probe)],
                           capture_output=True, text=True, timeout=120)
        m = re.search(r'<pre id="topo-layout">(.*?)</pre>', p.stdout, re.S)
        if not m:
            fail(f"{name} at {w}x{h}: no measurement from chromium (exit {p.returncode}): "
                 f"{p.stderr[-400:]}")
        shot = os.path.join(work, f"{name}-{w}x{h}.png")
        subprocess.run(chromium_args(chromium, profile, w, 4 * h) +
                       [f"--screenshot={shot}", "file://" + os.path.abspath(page)],
                       capture_output=True, timeout=120)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    return json.loads(html.unescape(m.group(1)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--report", required=True)
    ap.add_argument("--demo", required=True)
    ap.add_argument("--kineto", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    a = ap.parse_args()
    if not os.access(a.chromium, os.X_OK):
        fail(f"no Chromium at {a.chromium} (apt-get install chromium: a test dependency)")
    os.makedirs(a.work, exist_ok=True)
    pages = {"demo": [a.demo, "--gpu", "H200"], "kineto": [a.kineto]}
    bad = 0
    for name, args in pages.items():
        page = os.path.join(a.work, name + ".html")
        p = subprocess.run([a.report, "--quiet", "--html", page, *args], capture_output=True,
                           text=True)
        if p.returncode != 0:
            fail(f"topo-report {' '.join(args)}: exit {p.returncode}: {p.stderr}")
        for w, h in SIZES:
            m = measure(a.chromium, page, w, h, a.work, name)
            print(f"{name} at {w}x{h}: page {m['scroll_width']} px wide, {m['cells']} numbers "
                  f"checked, {len(m['problems'])} problems")
            for q in m["problems"][:12]:
                print("  " + q)
            bad += len(m["problems"])
    if bad:
        fail(f"{bad} layout problems (screenshots in {a.work})")
    print(f"layout holds at {', '.join(f'{w}x{h}' for w, h in SIZES)}; screenshots in {a.work}")


if __name__ == "__main__":
    main()
