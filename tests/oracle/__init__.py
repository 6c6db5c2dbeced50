"""Oracle tests: meshtopo's groups checked against XLA by executing programs on CPU devices."""
