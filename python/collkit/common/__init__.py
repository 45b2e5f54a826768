"""Common: errors, paths, argparse types, atomic writes, progress, tables, hostlists."""
