"""What a training run cost: instance type × count × duration × hourly price.

Prices come from a small table shipped with the package (``reportgen/data/prices.toml``: per region,
with the date they were taken and their source), overridable by a user file of the same layout.
Costs are estimates from the profiled job duration, not AWS's bill.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from reportgen.errors import InputError
from reportgen.formatting import money_text
from reportgen.user_file import SETTINGS_MAX_BYTES, UserFileError, read_user_file

DEFAULT_REGION = "us-east-1"
PRICES_FILE = Path(__file__).resolve().parent / "data" / "prices.toml"


def _toml_loads(text: str) -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    return tomllib.loads(text)


@dataclass
class PriceTable:
    """``prices[region][instance_type]`` = USD per instance-hour, plus where the numbers come from."""

    prices: dict[str, dict[str, float]]
    currency: str = "USD"
    taken: str = ""
    source: str = ""
    approximate: bool = True
    files: list[str] = field(default_factory=list)

    def price(self, instance_type: str | None, region: str | None) -> float | None:
        if not instance_type:
            return None
        return self.prices.get(region or DEFAULT_REGION, {}).get(instance_type)

    def provenance(self) -> dict:
        return {"currency": self.currency, "taken": self.taken, "source": self.source,
                "approximate": self.approximate, "files": list(self.files)}


def _read_table(path: Path) -> dict:
    try:
        doc = _toml_loads(read_user_file(Path(path), SETTINGS_MAX_BYTES, "a prices file").decode("utf-8"))
    except UserFileError as err:
        raise InputError(f"prices file {path}: {err}") from None
    except UnicodeDecodeError:
        raise InputError(f"prices file {path}: not UTF-8 text") from None
    except OSError as err:
        raise InputError(f"prices file {path}: cannot read it ({err.strerror or err})") from None
    except ValueError as err:  # tomllib.TOMLDecodeError
        raise InputError(f"prices file {path}: not valid TOML ({err})") from None
    regions = doc.get("regions", {})
    if not isinstance(regions, dict):
        raise InputError(f"prices file {path}: [regions] must be a table of regions")
    for region, table in regions.items():
        if not isinstance(table, dict):
            raise InputError(f"prices file {path}: [regions.{region}] must map instance types to prices")
        for instance, value in table.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise InputError(f"prices file {path}: {region} {instance}: the price must be a number ≥ 0")
    return doc


def load_prices(user_file: str | Path | None = None) -> PriceTable:
    """The shipped table, with ``user_file``'s entries (same layout) laid over it."""
    base = _read_table(PRICES_FILE)
    meta = dict(base.get("meta", {}))
    prices = {r: {k: float(v) for k, v in t.items()} for r, t in base.get("regions", {}).items()}
    files = [str(PRICES_FILE)]
    if user_file:
        user = _read_table(Path(user_file))
        for region, table in user.get("regions", {}).items():
            prices.setdefault(region, {}).update({k: float(v) for k, v in table.items()})
        user_meta = user.get("meta", {}) if isinstance(user.get("meta"), dict) else {}
        meta.update(user_meta)
        if not user_meta:
            meta["source"] = f"{meta.get('source', '')}; overridden by {user_file}".strip("; ")
        files.append(str(user_file))
    return PriceTable(prices=prices, currency=str(meta.get("currency", "USD")), taken=str(meta.get("taken", "")),
                      source=str(meta.get("source", "")), approximate=bool(meta.get("approximate", True)),
                      files=files)


def shipped_table_note() -> str:
    """One line on the shipped table for --help: its size, date and source (the file says the same)."""
    try:
        table = load_prices()
    except InputError as err:  # a damaged installation: the help still prints
        return f"the shipped price table cannot be read ({err})"
    types = {t for region in table.prices.values() for t in region}
    approx = "approximate " if table.approximate else ""
    return (f"shipped table: {approx}on-demand list prices of {len(types)} instance types in "
            f"{len(table.prices)} region(s) ({', '.join(sorted(table.prices))}), taken {table.taken or 'on an unknown date'}, "
            f"from {table.source or 'an unknown source'}")


def run_cost(duration_s: float, count: int, price_per_hour: float) -> float:
    """Cost of one run: duration_s × count × price/h ÷ 3600 (unrounded)."""
    return duration_s * count * price_per_hour / 3600.0


def money(value: float) -> float:
    """Rounded to cents, as costs are printed (half up, not banker's rounding)."""
    return math.floor(value * 100 + 0.5) / 100


def cost_text(value: float | None, currency: str = "USD") -> str:
    """A cost as printed: "$1.52", "1.52 EUR"; "< $0.01" for a cost above zero that rounds to no cent (a short
    run on a small instance is not free); "unknown" for None."""
    return "unknown" if value is None else money_text(value, currency, grouping=False)


def saving_pct(cost_a: float, cost_b: float) -> float | None:
    """How much cheaper B is than A, in % of A (negative: B costs more)."""
    if not cost_a:
        return None
    return (cost_a - cost_b) / cost_a * 100.0


@dataclass
class RunCost:
    instance_type: str | None
    instance_count: int | None
    region: str
    price_per_hour: float | None
    duration_s: float | None
    instance_from: str = ""  # "command line", "job description" or ""
    currency: str = "USD"  # the price table's, shown as given

    @property
    def cost(self) -> float | None:
        if None in (self.instance_count, self.price_per_hour, self.duration_s):
            return None
        return run_cost(self.duration_s, self.instance_count, self.price_per_hour)

    @property
    def cost_rounded(self) -> float | None:
        cost = self.cost
        return None if cost is None else money(cost)

    def missing(self) -> str:
        """Why there is no cost ("" when there is one)."""
        if not self.instance_type:
            return "the instance type is unknown"
        if not self.instance_count:
            return "the instance count is unknown"
        if self.price_per_hour is None:
            return f"no price for {self.instance_type} in {self.region} in the price table"
        if self.duration_s is None:
            return "the job duration is unknown"
        return ""

    def to_data(self) -> dict:
        return {"instance_type": self.instance_type, "instance_count": self.instance_count, "region": self.region,
                "price_per_hour": self.price_per_hour, "duration_s": self.duration_s,
                "instance_from": self.instance_from, "cost": self.cost, "cost_rounded": self.cost_rounded,
                "missing": self.missing() or None}


def compare_costs(a: RunCost, b: RunCost) -> dict:
    """Saving of B against A: from the unrounded costs and from the cent-rounded ones (as printed)."""
    if a.cost is None or b.cost is None:
        return {"saving": None, "saving_rounded": None, "saving_pct": None, "saving_pct_from_rounded": None}
    return {"saving": a.cost - b.cost, "saving_rounded": money(a.cost_rounded - b.cost_rounded),
            "saving_pct": saving_pct(a.cost, b.cost),
            "saving_pct_from_rounded": saving_pct(a.cost_rounded, b.cost_rounded)}


def make_run_cost(duration_s, instance_type: str | None, instance_count: int | None, region: str | None,
                  prices: PriceTable, instance_from: str = "") -> RunCost:
    region = region or DEFAULT_REGION
    return RunCost(instance_type or None, instance_count or None, region, prices.price(instance_type, region),
                   duration_s, instance_from, prices.currency)


def price_note(prices: PriceTable) -> str:
    approx = "approximate " if prices.approximate else ""
    taken = f", taken {prices.taken}" if prices.taken else ""
    return (f"Hourly prices are {approx}on-demand list prices in {prices.currency}{taken} ({prices.source}). "
            "Costs are estimates from the profiled job duration; override prices with --prices FILE.")
