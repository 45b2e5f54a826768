"""`collkit report --html` / `--figures`: a campaign (or several) as one self-contained HTML file."""
