"""kanedyn.verify (see DESIGN.md)."""
