"""microgrid package."""
