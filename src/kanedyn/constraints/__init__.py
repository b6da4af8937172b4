"""kanedyn.constraints (see DESIGN.md)."""
