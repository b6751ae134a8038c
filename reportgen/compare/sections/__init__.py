"""One module per comparison section; ``reportgen.compare.build`` puts them in the page's order."""
