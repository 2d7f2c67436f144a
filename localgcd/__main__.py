"""``python -m localgcd``: the command line (see ``localgcd --help``)."""

from localgcd.cli.app import app

if __name__ == "__main__":
    app(prog_name="localgcd")
