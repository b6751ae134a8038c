"""Rendering: report model -> HTML fragments (blocks), notebook execution, nbconvert to one file."""
