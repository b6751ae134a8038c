"""Allow ``python -m reportgen``."""
from reportgen.cli import main

raise SystemExit(main())
