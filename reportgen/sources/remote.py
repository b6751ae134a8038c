"""Remote resolution: an s3:// prefix, a processing-job ARN or a training job -> the S3 keys chosen (rule outputs,
raw data, traces) and downloaded into the cache (boto3 only here, imported when a remote source is resolved)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Iterable

from reportgen.errors import InputError, expanduser
from reportgen.sources.layout import (RAW_DIR_NAMES, RULE_DIR_NAMES, RULE_JSON_NAMES, SKIP_DIRS,
                                      TRACE_NAME_SUFFIXES, is_framework_trace, traces_named)
from reportgen.sources.arn import is_job_name, job_name_of, looks_like_arn, parse_arn
from reportgen.sources.local import has_end_marker
from reportgen.sources.resolved import ResolvedSource


@dataclass
class _Selection:
    rule_groups: dict[str, list[Any]] = field(default_factory=dict)  # parent key -> rule JSON objects
    raw_roots: dict[str, list[Any]] = field(default_factory=dict)  # root key ("" or ".../") -> objects
    refused: list[str] = field(default_factory=list)  # "key (reason)" for keys that cannot be stored safely
    traces: list[Any] = field(default_factory=list)  # PyTorch profiler traces (by name: *.pt.trace.json[.gz])


def _select(objects: Iterable[Any], base_key: str) -> _Selection:
    """Group listed objects into rule-output folders and raw-data roots.

    Rule JSONs: ``<Rule>.json`` (a known ProfilerReport sub-rule) in any folder, preferring
    ``profiler-reports/``. Raw data: keys under ``<root>/system/`` or ``<root>/framework/`` where
    ``<root>`` is the listed prefix itself or a ``.../profiler-output`` folder in it. PyTorch profiler
    traces: ``*.pt.trace.json[.gz]`` outside those trees (in S3 a trace is known by its name only; a
    local folder is also sniffed, see ``reportgen.sources.layout``).
    """
    from reportgen.sources.s3 import UnsafeKey, key_segments

    sel = _Selection()
    base = base_key.strip("/")
    for obj in objects:
        key = obj.key
        if key.endswith("/"):
            continue
        try:
            key_segments(key)
        except UnsafeKey as err:
            sel.refused.append(f"{key!r} ({err})")
            continue
        path = PurePosixPath(key)
        if path.name in RULE_JSON_NAMES:
            sel.rule_groups.setdefault(str(path.parent), []).append(obj)
            continue
        parts = key.split("/")
        if path.name.endswith(TRACE_NAME_SUFFIXES) and not SKIP_DIRS.intersection(parts[:-1]):
            sel.traces.append(obj)
            continue
        for i, part in enumerate(parts[:-1]):
            if part not in RAW_DIR_NAMES:
                continue
            root = "/".join(parts[:i])
            if root == base or (parts[i - 1:i] == ["profiler-output"]):
                sel.raw_roots.setdefault(root, []).append(obj)
                break
    return sel


def _prefix_uri(where: str, key: str) -> str:
    """The S3 prefix of ``key`` (a full key of the bucket ``where`` starts with), as one could give it:
    the listed prefix was written twice before (``s3://b/job/job/sub/profiler-output/``, which does not exist)."""
    bucket = where.split("/", 1)[0]
    return f"s3://{bucket}/{key.strip('/')}/" if key.strip("/") else f"s3://{bucket}/"


def _pick_rule_group(sel: _Selection, where: str) -> tuple[str | None, list[str]]:
    if not sel.rule_groups:
        return None, []
    ranked = sorted(
        sel.rule_groups,
        key=lambda k: (PurePosixPath(k).name not in RULE_DIR_NAMES, -len(sel.rule_groups[k]), [-ord(c) for c in k]),
    )
    notes = []
    if len(ranked) > 1:
        jobs = {k.split("/rule-output/")[0] for k in ranked}
        if len(jobs) > 1:
            listed = ", ".join(_prefix_uri(where, k) for k in ranked[:3])
            raise InputError(f"s3://{where}/ holds rule outputs of several jobs ({listed}, ...): give one job's prefix.")
        notes.append(f"{len(ranked)} rule-output folders found; using {ranked[0]}")
    return ranked[0], notes


def _pick_raw_root(sel: _Selection, where: str) -> str | None:
    if not sel.raw_roots:
        return None
    if len(sel.raw_roots) > 1:
        listed = ", ".join(_prefix_uri(where, k) for k in sorted(sel.raw_roots)[:3])
        raise InputError(f"s3://{where}/ holds raw profiler data of several jobs ({listed}): give one job's prefix.")
    return next(iter(sel.raw_roots))


# ------------------------------------------------------------------------------------ remote sources


class RemoteSource:
    def __init__(self, source, cache_dir, recompute, progress, session_kwargs, max_workers):
        from reportgen.sources.aws import make_session
        from reportgen.sources.s3 import default_cache_dir

        self.source = source
        self.cache_root = expanduser(cache_dir) if cache_dir is not None else default_cache_dir()
        self.recompute = recompute
        self.progress = progress
        self.max_workers = max_workers
        self.session = make_session(session_kwargs)
        self.downloads = 0
        self.bytes = 0
        self.refused: list[str] = []
        self.vanished: list[str] = []  # listed, then deleted before their download
        self.notes: list[str] = []
        self._s3 = None
        self._s3_region: str | None = None
        self.defer_system = False
        self.system_objects: tuple | None = None
        self.defer_traces = False
        self.trace_objects: tuple | None = None
        self.framework_objects: tuple | None = None

    def s3_cache(self, region: str | None):
        from reportgen.sources.aws import make_client
        from reportgen.sources.s3 import S3Cache

        if self._s3 is None:
            client = make_client(self.session, "s3", region, max_pool=max(10, self.max_workers + 2))
            self._s3 = S3Cache(self.cache_root, client, max_workers=self.max_workers)
        return self._s3

    def resolve(self, kind: str) -> ResolvedSource:
        from reportgen.sources.s3 import parse_s3_uri

        if kind == "s3":
            return self._resolve_s3(parse_s3_uri(self.source))
        return self._resolve_job(kind)

    # -- helpers
    def _list(self, cache, uri):
        from reportgen.sources.s3 import list_objects

        return list_objects(cache.client, uri)

    def _sync(self, cache, bucket: str, objects: list[Any], prune_prefix: str | None) -> None:
        from reportgen.sources.s3 import S3Uri

        result = cache.sync(bucket, objects, progress=self.progress)
        self.downloads += result.downloaded
        self.bytes += result.bytes_downloaded
        self.refused += [f"{key!r} ({reason})" for key, reason in result.refused]
        self.vanished += result.vanished
        if prune_prefix is not None:
            cache.prune(S3Uri(bucket, prune_prefix), [o.key for o in objects])

    def _fetch_rules(self, cache, bucket: str, objects: list[Any], group: str) -> Path:
        wanted = [o for o in objects if str(PurePosixPath(o.key).parent) == group]
        self._sync(cache, bucket, wanted, group + "/")
        return cache.local_path(bucket, group)

    def _fetch_raw(self, cache, bucket: str, objects: list[Any], root: str) -> Path:
        from reportgen.sources.s3 import S3Uri

        if self.defer_system:
            system = (root + "/system/") if root else "system/"
            framework = (root + "/framework/") if root else "framework/"

            def is_metrics(o) -> bool:  # the JSON-lines files; small markers (training_job_end.ts) are fetched
                return o.key.startswith(system) and o.key.endswith(".json")

            def is_trace(o) -> bool:  # the traces; the TF profiler's .metadata markers are fetched
                return o.key.startswith(framework) and is_framework_trace(tuple(o.key.split("/")))

            self.system_objects = (bucket, root, tuple((o.key, o.size, o.etag) for o in objects if is_metrics(o)))
            self.framework_objects = (bucket, root, tuple((o.key, o.size, o.etag) for o in objects if is_trace(o)))
            objects = [o for o in objects if not is_metrics(o) and not is_trace(o)]
            self._sync(cache, bucket, objects, None)  # no prune: cached system files stay for later runs
            folder = cache.prefix_dir(S3Uri(bucket, root))
            folder.mkdir(parents=True, exist_ok=True)
            return folder
        self._sync(cache, bucket, objects, (root + "/") if root else None)
        return cache.prefix_dir(S3Uri(bucket, root))

    # -- s3://
    def _resolve_s3(self, uri) -> ResolvedSource:
        cache = self.s3_cache(self.session.region_name)
        prefix = uri.as_prefix()
        objects = self._list(cache, prefix)
        if not objects:
            raise InputError(f"Nothing found under {prefix}: the prefix is empty or does not exist.")
        sel = _select(objects, prefix.key)
        self.refused += sel.refused
        where = f"{prefix.bucket}/{prefix.key.strip('/')}".rstrip("/")
        group, notes = _pick_rule_group(sel, where)
        root = _pick_raw_root(sel, where)
        self.notes += notes
        if group is None and root is None and not sel.traces:
            raise InputError(
                f"No profiler data under {prefix}: {len(objects)} object{'' if len(objects) == 1 else 's'} but no rule outputs "
                "(profiler-output/profiler-reports/*.json), no raw profiler data (profiler-output/system/, framework/) "
                "and no PyTorch profiler traces (*.pt.trace.json[.gz])."
            )
        rule_dir = raw_dir = None
        if group is not None:
            rule_dir = self._fetch_rules(cache, prefix.bucket, sel.rule_groups[group], group)
        if (self.recompute and not (root is None and sel.traces)) or (group is None and root is not None):
            if root is None:
                raise InputError(f"--recompute needs raw profiler data (system/, framework/) but none is under {prefix}.")
            raw_dir = self._fetch_raw(cache, prefix.bucket, sel.raw_roots[root], root)
        traces = self._fetch_traces(cache, prefix.bucket, sel.traces)
        n_traces = len(self.trace_objects[1]) if self.trace_objects else len(traces)
        job = _job_from_key(group or root or prefix.key)
        parts = []
        if group is not None:
            parts.append(f"rule outputs from s3://{prefix.bucket}/{group}/")
        if root is not None:
            state = "" if raw_dir is not None else " (not downloaded)"
            parts.append(f"raw profiler data at s3://{prefix.bucket}/{root + '/' if root else ''}{state}")
        if n_traces:
            folder = str(PurePosixPath(sel.traces[0].key).parent)
            parts.append(f"{n_traces} {traces_named(o.key for o in sel.traces)} trace file(s) from s3://{prefix.bucket}/"
                         + (f"{folder}/" if folder != "." else "")
                         + (" (read there by the Dask workers)" if self.trace_objects else ""))
        return self._result(
            kind="s3",
            rule_dir=rule_dir,
            raw_dir=raw_dir,
            job_name=job,
            description=f"{prefix}: " + "; ".join(parts),
            rule_output_uri=f"s3://{prefix.bucket}/{group}/" if group is not None else None,
            raw_uri=f"s3://{prefix.bucket}/{root + '/' if root else ''}" if root is not None else None,
            raw_available=root is not None,
            trace_files=traces,
        )

    def _fetch_traces(self, cache, bucket: str, objects: list[Any]) -> tuple[Path, ...]:
        """Download the PyTorch profiler traces (into the cache, like everything else); their local paths."""
        if not objects:
            return ()
        if self.defer_traces:  # the Dask workers fetch them; sorted as the local paths below would be
            listed = sorted(objects, key=lambda o: PurePosixPath(o.key).parts)
            self.trace_objects = (bucket, tuple((o.key, o.size, o.etag) for o in listed))
            return ()
        self._sync(cache, bucket, objects, None)
        paths = (cache.local_path(bucket, o.key) for o in objects)
        return tuple(sorted(p for p in paths if p.is_file()))  # a refused key has no local file

    # -- jobs
    def _resolve_job(self, kind: str) -> ResolvedSource:
        from reportgen.sources.aws import make_client
        from reportgen.sources.jobs import describe_processing_job, describe_training_job

        if looks_like_arn(self.source):
            arn = parse_arn(self.source)
            sm = make_client(self.session, "sagemaker", arn.region)
            region = arn.region
            info = describe_processing_job(sm, arn) if kind == "processing-job" else describe_training_job(sm, arn.name, region)
        else:
            sm = make_client(self.session, "sagemaker")
            region = sm.meta.region_name
            info = describe_training_job(sm, job_name_of(self.source), region)
        self.notes += list(info.notes)
        cache = self.s3_cache(region)

        rule_uri = group = None
        rule_objects: list[Any] = []
        for candidate in info.rule_output_uris:
            objects = self._list(cache, candidate)
            sel = _select(objects, candidate.key)
            self.refused += sel.refused
            group, notes = _pick_rule_group(sel, f"{candidate.bucket}/{candidate.key.strip('/')}")
            if group is not None:
                self.notes += notes
                rule_uri, rule_objects = candidate, sel.rule_groups[group]
                break
        raw_objects: list[Any] = []
        root = None
        if info.raw_uri is not None and (self.recompute or group is None):
            raw_objects = self._list(cache, info.raw_uri)
            sel = _select(raw_objects, info.raw_uri.key)
            self.refused += sel.refused
            root = _pick_raw_root(sel, f"{info.raw_uri.bucket}/{info.raw_uri.key.strip('/')}")
            raw_objects = sel.raw_roots.get(root, []) if root is not None else []
        elif info.raw_uri is not None:
            root = info.raw_uri.key.rstrip("/") if self._exists(cache, info.raw_uri) else None

        label = f"{kind.replace('-', ' ')} {info.name} ({region}"
        label += f", {info.processing_job_status or info.training_job_status})" if (info.processing_job_status or info.training_job_status) else ")"
        if group is None and root is None:
            looked = [str(u) for u in info.rule_output_uris] + ([str(info.raw_uri)] if info.raw_uri else [])
            why = "; ".join(info.notes)
            raise InputError(
                f"No profiler data for {label}: "
                + ("nothing under " + ", ".join(looked) if looked else "no profiler locations")
                + (f" ({why})" if why else "")
                + "."
            )
        if self.recompute and root is None:
            raise InputError(f"--recompute needs raw profiler data but there is none for {label} (looked under {info.raw_uri}).")

        rule_dir = raw_dir = None
        if group is not None:
            rule_dir = self._fetch_rules(cache, rule_uri.bucket, rule_objects, group)
        if self.recompute or group is None:
            raw_dir = self._fetch_raw(cache, info.raw_uri.bucket, raw_objects, root)
        parts = []
        if info.training_job_name and kind == "processing-job":
            parts.append(f"rule job of training job {info.training_job_name}")
        if group is not None:
            status = f" ({info.rule.status})" if info.rule is not None and info.rule.status else ""
            parts.append(f"rule outputs{status} from s3://{rule_uri.bucket}/{group}/")
        if root is not None:
            parts.append(f"raw profiler data at {info.raw_uri}" + ("" if raw_dir is not None else " (not downloaded)"))
        return self._result(
            kind=kind,
            rule_dir=rule_dir,
            raw_dir=raw_dir,
            job_name=info.training_job_name or info.name,
            description=f"{label}: " + "; ".join(parts),
            rule_output_uri=f"s3://{rule_uri.bucket}/{group}/" if group is not None else None,
            raw_uri=str(info.raw_uri) if root is not None else None,
            raw_available=root is not None,
            instance_type=info.instance_type,
            instance_count=info.instance_count,
            incomplete=info.incomplete,
            region=region,
            processing_job_name=info.processing_job_name,
            rule_name=info.rule.name if info.rule else None,
            rule_status=info.rule.status if info.rule else None,
            hyperparameters=info.hyperparameters,
        )

    def _exists(self, cache, uri) -> bool:
        from reportgen.sources.aws import aws_errors

        with aws_errors(f"listing {uri}"):
            page = cache.client.list_objects_v2(Bucket=uri.bucket, Prefix=uri.key, MaxKeys=1)
        return bool(page.get("KeyCount") or page.get("Contents"))

    def _result(self, *, kind, rule_dir, raw_dir, job_name, description, **extra) -> ResolvedSource:
        if self.refused:
            self.notes.append(f"{len(self.refused)} S3 keys skipped: unsafe or conflicting names")
        if self.vanished:
            first = ", ".join(repr(k) for k in sorted(self.vanished)[:3]) + (", ..." if len(self.vanished) > 3 else "")
            self.notes.append(f"{len(self.vanished)} S3 object(s) deleted between listing and download, skipped: "
                              f"{first}")
        return ResolvedSource(
            kind=kind,
            rule_output_dir=rule_dir,
            raw_dir=raw_dir,
            job_name=job_name,
            instance_type=extra.pop("instance_type", None),
            instance_count=extra.pop("instance_count", None),
            incomplete=extra.pop("incomplete", False),
            description=description,
            downloads=self.downloads,
            source=self.source,
            notes=tuple(dict.fromkeys(self.notes)),
            refused_keys=tuple(self.refused),
            bytes_downloaded=self.bytes,
            end_marker=has_end_marker(raw_dir) if raw_dir is not None else None,
            system_objects=self.system_objects,
            trace_objects=self.trace_objects,
            framework_objects=self.framework_objects,
            **extra,
        )


def _job_from_key(key: str) -> str | None:
    """The training-job name in ``.../<job>/rule-output/...`` or ``.../<job>/profiler-output...``."""
    parts = key.strip("/").split("/")
    for i, part in enumerate(parts):
        if part in ("rule-output", "profiler-output") and i >= 1 and is_job_name(parts[i - 1]):
            return parts[i - 1]
    return None
