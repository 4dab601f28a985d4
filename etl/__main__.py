import os
import sys

# `python etl/__main__.py` and `spark-submit .../etl/__main__.py` put this folder first on sys.path: its modules
# (secrets.py, ...) would then stand for the standard library's; the checkout's root serves `import etl` instead
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [os.path.dirname(_here) if os.path.abspath(p or os.curdir) == _here else p for p in sys.path]

from etl.cli import main  # noqa: E402 - after the path is mended

if __name__ == "__main__":
    main()
