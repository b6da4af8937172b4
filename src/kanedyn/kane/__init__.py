"""kanedyn.kane (see DESIGN.md)."""
