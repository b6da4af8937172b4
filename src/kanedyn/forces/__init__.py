"""kanedyn.forces (see DESIGN.md)."""
