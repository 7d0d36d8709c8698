"""``python -m api_devservers.mail_catcher``: see ``cli``."""

import sys

from api_devservers.mail_catcher.cli import main

if __name__ == "__main__":
    sys.exit(main())
