"""Campaign: from a spec and a platform to planned points, and the directory they land in."""
