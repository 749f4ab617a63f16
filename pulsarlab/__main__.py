import sys

from pulsarlab.cli import main

sys.exit(main())
