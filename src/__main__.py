import sys

from rgpu_tui.cli import main

sys.exit(main())
