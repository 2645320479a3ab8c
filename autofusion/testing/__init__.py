"""What afc ships for testing compilers built on it (see autofusion.testing.lit)."""
