"""kanedyn.integrators (see DESIGN.md)."""
