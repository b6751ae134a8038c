"""``reportgen compare A B``: two runs side by side, with what each cost (see docs/compare.md)."""
