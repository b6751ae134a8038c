"""One small job of real trace files for the warm-run tests (trace heads, the warm plan): a GPU rank recorded in two
profiling cycles, the second file cut at 60 % (its damage goes to Data quality), and a CPU run."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

from tests.support.paths import RECORDINGS

WORKERS = sorted((RECORDINGS / "gpu-input").glob("w*/*.pt.trace.json.gz"))  # one GPU rank in two cycles
SHORT = RECORDINGS / "cpu-torch" / "short" / "pytorch-traces" / "vm_25557.1795718343710566171.pt.trace.json.gz"


def make_job_files(folder: Path) -> list[Path]:
    """The job's three files copied into ``folder`` (made here), the second worker file cut at 60 %."""
    folder.mkdir()
    first = Path(shutil.copyfile(WORKERS[0], folder / WORKERS[0].name))
    text = gzip.decompress(WORKERS[1].read_bytes())
    cut = folder / WORKERS[1].name.removesuffix(".gz")
    cut.write_bytes(text[: len(text) * 6 // 10])
    return [first, cut, Path(shutil.copyfile(SHORT, folder / SHORT.name))]
