"""The chart specs of one page share their repeated parts (issue 32).

A page of many nodes draws the same charts for each node: the traces' styles, legend names and hover
templates, the layouts' axes, margins and legends, a heatmap's 96 row names, are the same JSON in every
node's spec (a third of a 64-node page's chart bytes). Each top-level attribute of a trace or layout whose
JSON occurs more than once on the page moves into one ``<script type="application/json" id="chart-parts">``
list; the trace or layout keeps its own attributes and ``"$parts": i``, the index of its shared attributes.
The page's chart loader (charts.js) puts them back, a fresh copy for each chart (plotly changes a layout as
it is zoomed), before plotly sees the spec; ``expand`` does the same here, for tests and readers.
"""

from __future__ import annotations

import json
import re
from collections import Counter

SPEC = re.compile(r'(<script type="application/json" class="chart-spec">)(.*?)(</script>)', re.S)
# Where the list goes: before the page's packed plotly.js, which the chart loader inflates first.
ANCHOR = '<script type="application/gzip-base64" id="plotly-js">'
REF = "$parts"
# A shared part smaller than this stays in its spec (the reference would cost about as much).
MIN_PART = 24


def escape(text: str) -> str:
    """As ``render.blocks.script_json``: nothing in the JSON can end its <script> element."""
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _dump(value) -> str:
    return json.dumps(value, separators=(",", ":"), allow_nan=False)  # as script_json writes the specs


def _objects(spec: dict) -> list[dict]:
    """The dicts whose attributes may be shared: every trace and the layout."""
    found = [t for t in spec.get("data") or [] if isinstance(t, dict)]
    return found + ([spec["layout"]] if isinstance(spec.get("layout"), dict) else [])


def share(html: str) -> str:
    """The page with its chart specs' repeated attributes in one shared list (the page unchanged when it
    has fewer than two charts, no packed plotly.js, or a spec that does not parse)."""
    texts = [m.group(2) for m in SPEC.finditer(html)]
    if len(texts) < 2 or ANCHOR not in html or any(REF in t for t in texts):
        return html
    try:
        specs = [json.loads(t) for t in texts]
    except ValueError:
        return html
    if not all(isinstance(s, dict) for s in specs):
        return html
    objects = [(obj, [(key, _dump(value)) for key, value in obj.items()]) for s in specs for obj in _objects(s)]
    counts = Counter(pair for _, pairs in objects for pair in pairs)
    parts: dict[str, int] = {}  # the JSON of a shared group of attributes -> its index
    for obj, pairs in objects:
        shared = [(key, text) for key, text in pairs if counts[(key, text)] > 1]
        text = "{" + ",".join(f"{_dump(key)}:{value}" for key, value in shared) + "}"
        if len(text) < MIN_PART:
            continue
        index = parts.setdefault(text, len(parts))
        for key, _ in shared:
            del obj[key]
        obj[REF] = index
    if not parts:
        return html
    out = iter(specs)
    html = SPEC.sub(lambda m: m.group(1) + escape(_dump(next(out))) + m.group(3), html)
    listed = "[" + ",".join(parts) + "]"  # in index order: dicts keep insertion order
    block = f'<script type="application/json" id="chart-parts">{escape(listed)}</script>\n'
    return html.replace(ANCHOR, block + ANCHOR, 1)


def expand(spec: dict, parts: list) -> dict:
    """A chart spec with its shared attributes put back (what charts.js does before drawing)."""
    spec = json.loads(_dump(spec))
    for obj in _objects(spec):
        index = obj.pop(REF, None)
        if index is not None:
            for key, value in json.loads(_dump(parts[index])).items():
                obj.setdefault(key, value)
    return spec


def page_specs(html: str) -> list[dict]:
    """Every chart spec of a page, whole (shared attributes put back)."""
    found = re.search(r'<script type="application/json" id="chart-parts">(.*?)</script>', html, re.S)
    parts = json.loads(found.group(1)) if found else []
    return [expand(json.loads(m.group(2)), parts) for m in SPEC.finditer(html)]
