"""The report's computation: rule outputs in, a renderer-neutral model of sections out.

Rendering (HTML fragments, the notebook, nbconvert) is kept apart in ``reportgen.render``.
"""
