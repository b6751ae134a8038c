"""Read the tables of a generated report back out of its HTML (what a user sees)."""

from __future__ import annotations

from html.parser import HTMLParser


class _TableReader(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tables: dict[str, list[list[str]]] = {}
        self._table_id = None
        self._row = None
        self._cell = None
        self._exact = None
        self._printed = None
        self.sagemaker: dict[str, list[list[str]]] = {}  # SageMaker's printed texts, where they differ
        self._printed_row = None
        self.shown: dict[str, list[list[str]]] = {}  # the displayed texts, where data-value differs
        self._shown_row = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table" and attrs.get("id"):
            self._table_id = attrs["id"]
            self.tables[self._table_id] = []
            self.shown[self._table_id] = []
            self.sagemaker[self._table_id] = []
        elif self._table_id and tag == "tr":
            self._row, self._shown_row, self._printed_row = [], [], []
        elif self._row is not None and tag in ("td", "th"):
            self._cell = []
            self._exact = attrs.get("data-value")
            self._printed = attrs.get("data-sagemaker")
        elif self._cell is not None and tag == "br":
            self._cell.append("\n")

    def handle_endtag(self, tag):
        if tag == "table":
            self._table_id = None
        elif tag == "tr" and self._row is not None:
            self.tables[self._table_id].append(self._row)
            self.shown[self._table_id].append(self._shown_row)
            self.sagemaker[self._table_id].append(self._printed_row)
            self._row = None
        elif tag in ("td", "th") and self._cell is not None:
            text = "".join(self._cell).strip()
            self._row.append(text if self._exact is None else self._exact)
            self._shown_row.append(text)
            self._printed_row.append(text if self._printed is None else self._printed)
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def read_tables(html: str) -> dict[str, list[list[str]]]:
    """{table id: rows (header row first) of cell values}: a cell's exact value (its ``data-value``,
    kept where the cell shows a rounded or humane form such as "596.3 MB/s") or else its text; <br>
    becomes a newline."""
    reader = _TableReader()
    reader.feed(html)
    return reader.tables


def read_shown_tables(html: str) -> dict[str, list[list[str]]]:
    """{table id: rows of cell texts as displayed} (humane units, not data-value)."""
    reader = _TableReader()
    reader.feed(html)
    return reader.shown


def read_sagemaker_tables(html: str) -> dict[str, list[list[str]]]:
    """{table id: rows of the texts SageMaker's report printed}: a cell's ``data-sagemaker`` where the
    report shows it otherwise ("22:14:00 11/14/2023", "11 %", "596310691.39"), else its text. What the
    fidelity tests compare with the original reports."""
    reader = _TableReader()
    reader.feed(html)
    return reader.sagemaker
