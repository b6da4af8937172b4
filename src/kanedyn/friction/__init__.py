"""kanedyn.friction (see DESIGN.md)."""
