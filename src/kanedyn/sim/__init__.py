"""kanedyn.sim (see DESIGN.md)."""
