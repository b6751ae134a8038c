"""Rule parameters: frozen dataclasses with the rule container's real defaults (spec Appendix 1).

Overrides come from the CLI (``Rule.param=value``, repeatable) or a TOML/YAML file shaped
``{Rule: {param: value}}``; anything unknown or out of range raises ``InputError`` naming it.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, fields, replace
from pathlib import Path

from reportgen.errors import InputError
from reportgen.rulebook import RULES
from reportgen.terminal_text import has_unsafe, printable
from reportgen.user_file import SETTINGS_MAX_BYTES, UserFileError, read_user_file

PERCENT = "percent"  # 0..100
POSITIVE = "positive"  # > 0
COUNT = "count"  # integer >= 0
WINDOW = "window"  # integer >= 1
ANY = "any"


def _p(default, kind=PERCENT):
    return dataclasses.field(default=default, metadata={"kind": kind})


def _fmt(v) -> str:
    return str(v)


@dataclass(frozen=True)
class RuleParams:
    """Base: ``RuleParameters`` is ``name:value`` lines in field order (Python ``str`` of each value)."""

    def rule_parameters(self) -> str:
        return "\n".join(f"{f.name}:{_fmt(getattr(self, f.name))}" for f in fields(self))


@dataclass(frozen=True)
class CPUBottleneckParams(RuleParams):
    threshold: float = _p(50)
    cpu_threshold: float = _p(90)
    gpu_threshold: float = _p(10)
    patience: int = _p(1000, COUNT)


@dataclass(frozen=True)
class IOBottleneckParams(RuleParams):
    threshold: float = _p(50)
    io_threshold: float = _p(50)
    gpu_threshold: float = _p(10)
    patience: int = _p(1000, COUNT)


@dataclass(frozen=True)
class LowGPUUtilizationParams(RuleParams):
    threshold_p95: float = _p(70)
    threshold_p5: float = _p(10)
    window: int = _p(500, WINDOW)
    patience: int = _p(1000, COUNT)


@dataclass(frozen=True)
class StepOutlierParams(RuleParams):
    stddev: float = _p(3, POSITIVE)
    mode: str | None = _p(None, ANY)
    n_outliers: int = _p(10, COUNT)

    def rule_parameters(self) -> str:
        # The original prints stddev twice (as "threshold" first); the report parses by position.
        return f"threshold:{self.stddev}\nmode:{self.mode}\nn_outliers:{self.n_outliers}\nstddev:{self.stddev}"


@dataclass(frozen=True)
class GPUMemoryIncreaseParams(RuleParams):
    increase: float = _p(5, POSITIVE)
    patience: int = _p(1000, COUNT)
    window: int = _p(10, WINDOW)


@dataclass(frozen=True)
class BatchSizeParams(RuleParams):
    cpu_threshold_p95: float = _p(70)
    gpu_threshold_p95: float = _p(70)
    gpu_memory_threshold_p95: float = _p(70)
    patience: int = _p(1000, COUNT)
    window: int = _p(500, WINDOW)


@dataclass(frozen=True)
class MaxInitializationTimeParams(RuleParams):
    threshold: float = _p(20, POSITIVE)  # minutes


@dataclass(frozen=True)
class LoadBalancingParams(RuleParams):
    # Jensen-Shannon distance, 0..1; calibrated (docs/deviations.md #15; the container's 0.2 fires on noise)
    threshold: float = _p(0.4, POSITIVE)
    patience: int = _p(1000, COUNT)


@dataclass(frozen=True)
class OverallSystemUsageParams(RuleParams):
    def rule_parameters(self) -> str:
        return ""


@dataclass(frozen=True)
class DataloaderParams(RuleParams):
    min_threshold: float = _p(70, POSITIVE)  # % of cores
    max_threshold: float = _p(200, POSITIVE)
    patience: int = _p(10, COUNT)  # seconds with dataloader data (not printed, as in the original)

    def rule_parameters(self) -> str:
        return f"min_threshold:{self.min_threshold}\nmax_threshold:{self.max_threshold}"


@dataclass(frozen=True)
class OverallFrameworkMetricsParams(RuleParams):
    def rule_parameters(self) -> str:
        return ""


# Each rule's parameter class, as the rulebook names it, in the rulebook's order.
PARAMS_CLASSES: dict[str, type[RuleParams]] = {rule.name: globals()[rule.params] for rule in RULES}


def default_params() -> dict[str, RuleParams]:
    return {name: cls() for name, cls in PARAMS_CLASSES.items()}


def _rule_name(name: str) -> str:
    for r in PARAMS_CLASSES:
        if r.lower() == name.strip().lower():
            return r
    raise InputError(f"unknown rule {name!r} (known: {', '.join(PARAMS_CLASSES)})")


def _convert(rule: str, f: dataclasses.Field, value):
    """Validate one value for field ``f`` (strings from the CLI are parsed here)."""
    kind = f.metadata.get("kind", ANY)
    where = f"{rule}.{f.name}"
    if kind == ANY:
        if value is None or (isinstance(value, str) and value.strip() in ("", "None", "none", "null")):
            return None
        text = str(value)
        # written as a ``name:value`` line of RuleParameters, read back up to the line's first ':' (so a
        # colon in the value is safe, e.g. Step:ModeKeys.TRAIN): a line break, the separator, would forge
        # another parameter (``x\nstddev:999``), a control character would reach terminals. Refused before
        # anything is written.
        if has_unsafe(text):
            raise InputError(f"bad value '{printable(text)}' for {where}: no line break or control character "
                             "allowed (it is written as one name:value line)")
        return text
    if isinstance(value, str):
        text = value.strip()
        try:
            value = int(text)
        except ValueError:
            try:
                value = float(text)
            except ValueError:
                raise InputError(f"bad value {text!r} for {where}: expected a number") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"bad value {value!r} for {where}: expected a finite number")
    if isinstance(value, float) and value.is_integer() and kind in (COUNT, WINDOW):
        value = int(value)
    if kind in (COUNT, WINDOW) and not isinstance(value, int):
        raise InputError(f"bad value {value!r} for {where}: expected an integer")
    if kind == PERCENT and not 0 <= value <= 100:
        raise InputError(f"bad value {value!r} for {where}: expected a percentage in [0, 100]")
    if kind == POSITIVE and value <= 0:
        raise InputError(f"bad value {value!r} for {where}: expected a number > 0")
    if kind == COUNT and value < 0:
        raise InputError(f"bad value {value!r} for {where}: expected an integer >= 0")
    if kind == WINDOW and value < 1:
        raise InputError(f"bad value {value!r} for {where}: expected an integer >= 1")
    return value


def apply_overrides(base: dict[str, RuleParams], overrides: dict[str, dict]) -> dict[str, RuleParams]:
    out = dict(base)
    for rule_in, values in overrides.items():
        rule = _rule_name(rule_in)
        if not isinstance(values, dict):
            raise InputError(f"parameters for {rule} must be a table of name = value")
        known = {f.name: f for f in fields(PARAMS_CLASSES[rule])}
        changes = {}
        for pname, value in values.items():
            if pname not in known:
                choices = ", ".join(known) or "none"
                raise InputError(f"unknown parameter {rule}.{pname} (known: {choices})")
            changes[pname] = _convert(rule, known[pname], value)
        out[rule] = replace(out[rule], **changes)
    return out


def parse_overrides(items, base: dict[str, RuleParams] | None = None) -> dict[str, RuleParams]:
    """``["LowGPUUtilization.threshold_p95=80", ...]`` -> validated params for every rule."""
    table: dict[str, dict] = {}
    for item in items or ():
        text = str(item)
        key, sep, value = text.partition("=")
        rule, dot, pname = key.strip().partition(".")
        if not sep or not dot or not rule or not pname.strip():
            raise InputError(f"bad rule parameter {text!r}: expected Rule.parameter=value")
        table.setdefault(rule, {})[pname.strip()] = value
    return apply_overrides(base or default_params(), table)


def load_config(path, base: dict[str, RuleParams] | None = None) -> dict[str, RuleParams]:
    """TOML (``.toml``) or YAML (``.yaml``/``.yml``) file ``{Rule: {param: value}}`` -> params.

    A top-level ``rules`` table is also accepted, so the file can hold other sections."""
    path = Path(path)
    try:
        raw = read_user_file(path, SETTINGS_MAX_BYTES, "a config file")
    except UserFileError as e:
        raise InputError(f"config {path}: {e}") from None
    except OSError as e:
        raise InputError(f"cannot read config {path}: {e.strerror or e}") from None
    try:
        if path.suffix.lower() == ".toml":
            import tomllib

            doc = tomllib.loads(raw.decode("utf-8"))
        elif path.suffix.lower() in (".yaml", ".yml"):
            import yaml

            doc = yaml.safe_load(raw.decode("utf-8")) or {}
        else:
            raise InputError(f"config {path}: unsupported extension (use .toml, .yaml or .yml)")
    except InputError:
        raise
    except Exception as e:  # parser errors of either format
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise InputError(f"config {path}: {msg}") from None
    if not isinstance(doc, dict):
        raise InputError(f"config {path}: expected a table of rules")
    if isinstance(doc.get("rules"), dict):
        doc = doc["rules"]
    return apply_overrides(base or default_params(), doc)
