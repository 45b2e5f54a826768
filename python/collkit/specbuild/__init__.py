"""`collkit new`: build an experiment spec from what the platform offers.

choices.py   the builder's state (Choices) and the commented TOML it writes
offer.py     what a platform offers: MPIs with versions, their forcible algorithms,
             libcollkit's algorithms with constraints (the discovery `collkit list`
             and the planner use)
evaluate.py  a spec text through the spec loader and the planner: points, launches,
             time estimate, or the loader's one-line refusal
tui.py       the terminal interface (prompt_toolkit), 80x24, keyboard only
command.py   the subcommand: interactive or --non-interactive, bad input, writing

Both front-ends fill one Choices and go through evaluate.py: what is refused and
what is written do not depend on which one was used."""

# The terminal size the pages are laid out for: command.py refuses a smaller one at
# the start, tui.py says so when the terminal shrinks later.
MIN_COLUMNS, MIN_LINES = 80, 24
