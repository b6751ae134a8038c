"""An S3 object deleted between listing and download costs that object only, as a local file deleted
between listing and reading does (the corpus case ``sys_file_vanishes``): the others are downloaded, the
source resolves, and a note names the object. Before, its NoSuchKey ended the whole run."""

from __future__ import annotations

import uuid

import pytest

from reportgen.sources import resolve_source
from reportgen.sources import s3 as s3_module
from tests.support.sources_testlib import client, tree

FILES = {f"system/incremental/2021122220/{1640205540 + 60 * i}.algo-1.json": (f'{{"i": {i}}}\n' * 40).encode()
         for i in range(4)}


@pytest.mark.parametrize("gone", [1, 3])
def test_objects_deleted_after_listing_cost_only_themselves(moto_endpoint, tmp_path, monkeypatch, gone):
    name = f"vanish-{uuid.uuid4().hex[:12]}"
    s3 = client("s3")
    s3.create_bucket(Bucket=name)
    for rel, data in FILES.items():
        s3.put_object(Bucket=name, Key=f"job/profiler-output/{rel}", Body=data)
    victims = sorted(FILES)[:gone]
    listed = s3_module.list_objects

    def list_then_delete(cli, uri):
        objects = listed(cli, uri)
        for rel in victims:  # a cleanup job runs right after the listing
            s3.delete_object(Bucket=name, Key=f"job/profiler-output/{rel}")
        return objects

    monkeypatch.setattr(s3_module, "list_objects", list_then_delete)
    resolved = resolve_source(f"s3://{name}/job/profiler-output/", cache_dir=tmp_path)
    assert resolved.downloads == len(FILES) - gone
    assert tree(resolved.raw_dir) == {k: v for k, v in FILES.items() if k not in victims}
    [note] = [n for n in resolved.notes if "deleted between listing and download" in n]
    assert note.startswith(f"{gone} S3 object(s) deleted between listing and download, skipped: ")
    assert all(f"job/profiler-output/{rel}" in note for rel in victims)
