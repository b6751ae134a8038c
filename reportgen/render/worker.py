"""``python -m reportgen.render.worker [--template-cache FOLDER]``: the process that makes the page (see
``render.process``).

It imports what executing and converting the notebook needs, then reads one request (a JSON line:
the notebook's parameters, where to write the page), runs the notebook in this process, converts it,
writes the page and answers with one JSON line: ``{"ok": true}`` or ``{"error": "input"|"render",
"message": ...}``. End of input before a request (the run failed before its page): it exits at once.
"""

from __future__ import annotations

import json
import os
import sys

TEMPLATE_CACHE_OPTION = "--template-cache"  # FOLDER: the trace cache's, where compiled templates are kept


def warm_up(template_folder: str | None = None) -> None:
    """The imports and template compilation that make this process worth starting early; the packages those
    imports name that a page never uses stay unexecuted or stood in for, and the optional ones are left out
    (``render.lazy_imports``, ``render.stand_ins``). ``template_folder``: the trace cache's folder, where the templates are kept
    compiled (``render.template_cache``)."""
    from reportgen.blas_threads import import_numpy_with_one_blas_thread
    from reportgen.render.lazy_imports import lazy, left_out
    from reportgen.render.stand_ins import no_plugins, stand_ins

    import_numpy_with_one_blas_thread()  # before anything imports numpy
    from reportgen.render.html import warm_up as html_warm_up
    from reportgen.render.template_cache import template_cache_in

    with lazy(), left_out(), stand_ins(), no_plugins():
        html_warm_up(template_cache_in(template_folder))


def serve(stdin, stdout, template_folder: str | None = None) -> int:
    from pathlib import Path

    from reportgen.atomic import write_text_atomic
    from reportgen.errors import InputError, RenderError, environment_message
    from reportgen.garbage_collector import freeze_imported_objects, paused

    try:
        # The imports make ~78 thousand objects that live as long as the process, and no garbage: the collector's
        # ~240 collections during them found nothing to free and cost 0.03-0.07 of the warm-up's ~0.65 CPU s.
        with paused():
            warm_up(template_folder)
    except Exception:  # noqa: BLE001 - the request below fails with the real error, worded
        pass
    # This process is ours alone: what the warm-up imported (IPython, nbconvert, papermill, the report builders)
    # leaves the collector's scans; a medium page's one full collection took 40 ms of 0.56 CPU s.
    freeze_imported_objects()
    line = stdin.readline()
    if not line.strip():
        return 0
    try:
        request = json.loads(line)
        from reportgen.render.html import render_page
        from reportgen.render.page_cache import fixed_generation_time

        notebook = Path(request["notebook"]) if request.get("notebook") else None
        with fixed_generation_time(request.get("generated_at")):  # the page cache's placeholder for the time
            page = render_page(request["parameters"], notebook=notebook, keep_notebook=bool(request.get("ipynb")))
        write_text_atomic(Path(request["html"]), page.html)  # a full $TMPDIR: an OSError naming the page
        if request.get("ipynb"):
            write_text_atomic(Path(request["ipynb"]), page.notebook)
        reply = {"ok": True}
    except InputError as err:
        reply = {"error": "input", "message": str(err)}
    except RenderError as err:
        reply = {"error": "render", "message": str(err)}
    except Exception as err:  # noqa: BLE001 - a full $TMPDIR, a path this system cannot encode: the environment
        message = environment_message(err)
        if message is None:
            reply = {"error": "render", "message": f"making the page failed: {type(err).__name__}: {err}"}
        else:
            reply = {"error": "input", "message": message}
    stdout.write(json.dumps(reply) + "\n")
    stdout.flush()
    return 0


def main() -> int:
    reply_to = sys.stdout
    sys.stdout = sys.stderr  # nothing printed on the way may garble the one reply line
    arguments = sys.argv[1:]
    template_folder = arguments[1] if arguments[:1] == [TEMPLATE_CACHE_OPTION] and len(arguments) > 1 else None
    try:
        return serve(sys.stdin, reply_to, template_folder)
    except KeyboardInterrupt:  # Ctrl-C reaches the whole process group: the run reports it
        return 130


if __name__ == "__main__":
    code = main()
    # The page and the answer are written and flushed: skip the interpreter's teardown of pandas, IPython and
    # the rest (0.2 s the run would otherwise wait for).
    sys.stderr.flush()
    os._exit(code)
