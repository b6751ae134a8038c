"""The page's templates kept compiled (render.template_cache): a second environment compiles nothing it finds, a
changed template or setting is a new entry, a damaged entry is compiled again, a link or a FIFO under an entry's
name is never opened nor replaced, and the folder's bound covers the entries. The worker's page with the cache is
tested in tests/e2e/test_page_worker.py."""

from __future__ import annotations

import marshal
import os

import jinja2
import pytest

from reportgen.readers.trace_cache import TraceCache, evict
from reportgen.render.blocks import environment as block_environment
from reportgen.render.template_cache import TEMPLATE_SUFFIX, TemplateCache, entry_path, template_cache_in, template_key

TEMPLATE = "{% for x in items %}<li>{{ x | upper }}</li>{% endfor %}"


def _environment(folder, cache: TemplateCache | None, **settings) -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(folder)), autoescape=True,
                              bytecode_cache=cache, **settings)


@pytest.fixture
def setup(tmp_path):
    templates, entries = tmp_path / "templates", tmp_path / "cache"
    templates.mkdir()
    entries.mkdir()
    (templates / "list.j2").write_text(TEMPLATE, encoding="utf-8")
    return templates, TemplateCache(TraceCache(entries, 1 << 30))


def _no_compiling(env: jinja2.Environment) -> None:
    def compile_refused(*args, **kwargs):
        raise AssertionError("compiled although the cache holds it")

    env.compile = compile_refused  # type: ignore[method-assign]


def _entries(cache: TemplateCache) -> list:
    return sorted(p.name for p in cache.cache.folder.iterdir() if p.name.endswith(TEMPLATE_SUFFIX))


def test_a_template_compiled_once_is_loaded_compiled_after(setup):
    templates, cache = setup
    first = _environment(templates, cache).get_template("list.j2").render(items=["a", "<b>"])
    assert first == "<li>A</li><li>&lt;B&gt;</li>"
    assert len(_entries(cache)) == 1
    again = _environment(templates, cache)
    _no_compiling(again)
    assert again.get_template("list.j2").render(items=["a", "<b>"]) == first


def test_a_changed_template_or_setting_is_a_new_entry(setup):
    templates, cache = setup
    _environment(templates, cache).get_template("list.j2")
    (templates / "list.j2").write_text(TEMPLATE + "!", encoding="utf-8")
    assert _environment(templates, cache).get_template("list.j2").render(items=["a"]) == "<li>A</li>!"
    _environment(templates, cache, trim_blocks=True).get_template("list.j2")
    plain = _environment(templates, cache)
    plain.autoescape = False
    assert plain.get_template("list.j2").render(items=["<b>"]) == "<li><B></li>!"  # not the escaping code
    assert len(_entries(cache)) == 4


def test_a_filter_passed_the_context_is_another_entry(setup):
    templates, cache = setup
    env = _environment(templates, cache)
    before = template_key(env, "list.j2", None, "0")
    env.filters["upper"] = jinja2.pass_context(lambda context, value: value.upper())
    assert template_key(env, "list.j2", None, "0") != before


@pytest.mark.parametrize("damage", [lambda raw: raw[:len(raw) // 2], lambda raw: raw[:-3] + b"xyz",
                                    lambda raw: b"not an entry", lambda raw: b""])
def test_a_damaged_entry_is_compiled_again_and_replaced(setup, damage):
    templates, cache = setup
    _environment(templates, cache).get_template("list.j2")
    (name,) = _entries(cache)
    where = cache.cache.folder / name
    where.write_bytes(damage(where.read_bytes()))
    assert _environment(templates, cache).get_template("list.j2").render(items=["a"]) == "<li>A</li>"
    again = _environment(templates, cache)  # the entry was made again, whole
    _no_compiling(again)
    assert again.get_template("list.j2").render(items=["a"]) == "<li>A</li>"


def test_a_link_or_a_fifo_under_the_name_is_never_opened_nor_replaced(setup, tmp_path):
    templates, cache = setup
    env = _environment(templates, None)
    source = (templates / "list.j2").read_text(encoding="utf-8")
    where = entry_path(cache.cache, template_key(env, "list.j2", str(templates / "list.j2"),
                                                 cache.get_source_checksum(source)))
    outside = tmp_path / "elsewhere"
    outside.write_bytes(b"kept")
    where.symlink_to(outside)
    assert _environment(templates, cache).get_template("list.j2").render(items=["a"]) == "<li>A</li>"
    assert where.is_symlink() and outside.read_bytes() == b"kept"
    where.unlink()
    os.mkfifo(where)
    assert _environment(templates, cache).get_template("list.j2").render(items=["a"]) == "<li>A</li>"  # no wait
    assert where.exists() and not where.is_file()


def test_a_read_only_folder_is_read_and_never_written(setup):
    templates, cache = setup
    reader = TemplateCache(TraceCache(cache.cache.folder, 1 << 30, writable=False))
    _environment(templates, reader).get_template("list.j2")
    assert _entries(cache) == []
    _environment(templates, cache).get_template("list.j2")
    kept = _environment(templates, reader)
    _no_compiling(kept)
    assert kept.get_template("list.j2").render(items=["a"]) == "<li>A</li>"


def test_the_folders_bound_covers_the_entries(setup):
    templates, cache = setup
    _environment(templates, cache).get_template("list.j2")
    assert evict(TraceCache(cache.cache.folder, 0)) == 1 and _entries(cache) == []


def test_the_block_templates_kept_are_the_code_jinja_compiles(tmp_path, monkeypatch):
    monkeypatch.delenv("REPORTGEN_CACHE_MAX_MB", raising=False)
    cache = template_cache_in(tmp_path)
    assert cache is not None and template_cache_in(tmp_path / "absent") is None and template_cache_in(None) is None
    blocks = block_environment()

    def like_blocks() -> jinja2.Environment:
        env = jinja2.Environment(loader=blocks.loader, autoescape=True, trim_blocks=True, lstrip_blocks=True,
                                 undefined=jinja2.StrictUndefined, bytecode_cache=cache)
        env.filters.update(blocks.filters)
        return env

    names = blocks.list_templates(extensions=["j2"])
    env = like_blocks()
    for name in names:
        env.get_template(name)
    assert len(_entries(cache)) == len(names) >= 10
    for name in names:
        source, filename, _ = blocks.loader.get_source(blocks, name)
        where = entry_path(cache.cache, template_key(env, name, filename, cache.get_source_checksum(source)))
        body = where.read_bytes().partition(b"\n")[2]
        assert body == marshal.dumps(env.compile(source, name, filename))
    loaded = like_blocks()
    _no_compiling(loaded)
    assert [loaded.get_template(name).name for name in names] == names
