"""``python -m pytreekit.migrate``: see ``pytreekit.migrate``."""

from pytreekit.migrate import main

if __name__ == "__main__":  # importing the module (pydoc, pkgutil) runs nothing
    raise SystemExit(main())
