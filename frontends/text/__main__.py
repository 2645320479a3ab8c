"""`python -m frontends.text`: list the ops an .afc file can call, with their attributes.

The list is read from the graph dialect, so it is always that of the installed afc.
"""

from __future__ import annotations

from frontends.text.builder import describe_ops

if __name__ == "__main__":
    print(describe_ops())
