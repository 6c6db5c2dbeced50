"""meshtopo."""
