"""kanedyn.viz (see DESIGN.md)."""
