"""Writes samples in SageMaker's system-metrics layout (spec A.1/A.2), flushed sample by sample.

``<out>/system/incremental/<YYYYMMDDHH>/<EPOCH_S>.algo-1.json``: JSON lines, one file per minute
(``EPOCH_S`` = the minute's first second, UTC hour folder), and ``system/training_job_end.ts`` at the
end. Every sample is flushed to the OS as soon as it is written, so an interrupted recording keeps
everything up to its last sample.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from reportgen.errors import naming


class MetricsWriter:
    def __init__(self, out_dir: Path, node_id: str = "algo-1"):
        self.root = Path(out_dir) / "system"
        self.node_id = node_id
        self._minute = None
        self._handle = None
        self.files: list[Path] = []
        self.samples = 0

    def _open(self, minute: int):
        if self._handle is not None:
            self._handle.close()
        hour = time.strftime("%Y%m%d%H", time.gmtime(minute))
        path = self.root / "incremental" / hour / f"{minute:010d}.{self.node_id}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = open(path, "a", encoding="utf-8")
        self._minute = minute
        self.files.append(path)

    def write(self, records: list[dict]) -> None:
        if not records:
            return
        minute = int(records[0]["Timestamp"] // 60 * 60)
        if minute != self._minute:
            self._open(minute)
        with naming(self.files[-1]):  # a full disk: the one line names the metrics file
            self._handle.write("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records))
            self._handle.flush()
        self.samples += 1

    def close(self, end_ts: float | None = None) -> None:
        if self._handle is not None:
            with naming(self.files[-1]):
                handle, self._handle = self._handle, None
                handle.close()
        self.root.mkdir(parents=True, exist_ok=True)
        with naming(self.root / "training_job_end.ts"):
            (self.root / "training_job_end.ts").write_text(f"{end_ts if end_ts is not None else time.time():.6f}\n")
