"""The terminal interface of `collkit new`, on prompt_toolkit.

Six pages, one screen each at 80x24, keyboard only: Tab and Shift-Tab move
between fields, Space or Enter ticks a box or picks an option, arrows move
inside a list, Ctrl-N and Ctrl-P turn pages, Ctrl-W writes, Ctrl-C quits. Below
the page, the highlighted entry is described (an algorithm's origin, constraints
and traits, a library's native name and id, a [measure] key). The bottom lines show, after every key, what the plan of the current choices
holds (points, skipped, launches, the time estimate) or the loader's refusal:
evaluate.py runs the spec text the choices make through the spec loader and
the planner, as `collkit run` would, and a refused spec is never written."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from prompt_toolkit.application import Application
from prompt_toolkit.key_binding import KeyBindings
from prompt_toolkit.layout import DynamicContainer, HSplit, Layout, VSplit, Window
from prompt_toolkit.layout.controls import FormattedTextControl
from prompt_toolkit.styles import Style
from prompt_toolkit.widgets import Button, Checkbox, CheckboxList, Frame, RadioList, TextArea

from collkit.campaign import spec as specs
from collkit.specbuild import MIN_COLUMNS, MIN_LINES
from collkit.specbuild.choices import MEASURE_KEYS, Choices
from collkit.specbuild.evaluate import Evaluation
from collkit.specbuild.offer import PlatformOffer

STYLE = Style.from_dict({
    "title": "bold",
    "tab": "",
    "tab.current": "reverse bold",
    "ok": "ansigreen",
    "refused": "ansired bold",
    "help": "ansibrightblack",
    "label": "",
    "field": "underline",
})

# evaluate(choices, spec file) for the status; write(choices, spec file) -> (message, written).
Evaluate = Callable[[Choices, str], Evaluation]
Write = Callable[[Choices, str], tuple[str, bool]]


def _refresh(widget: CheckboxList, values: list[tuple[str, str]]) -> None:
    """New entries for a list whose offer changed (other collectives or MPIs): ticks
    on entries still offered stay, the others go (the planner would refuse them)."""
    if [v for v, _ in widget.values] == [v for v, _ in values]:
        return
    keys = [v for v, _ in values]
    widget.values = values
    widget.current_values = [v for v in widget.current_values if v in keys]
    # the list's cursor: prompt_toolkit has no public setter, and it must stay inside the list
    widget._selected_index = min(widget._selected_index, len(values) - 1)


def _highlighted(widget: CheckboxList) -> str:
    return widget.values[widget._selected_index][0]


class Builder:
    def __init__(self, offer: PlatformOffer, start: Choices, out: Path, evaluate: Evaluate, write: Write):
        self.offer, self.evaluate, self.write = offer, evaluate, write
        self.page = 0
        self.message = ""
        self.judged: tuple[Choices, str] | None = None
        self.evaluation = Evaluation(error="no choice made yet")

        self.collectives = CheckboxList([(c, c) for c in offer.collectives], default_values=start.collectives)
        self.mpis = CheckboxList([(m.name, f"{m.name}: {m.library or m.problem}"
                                   + (f" ({m.problem})" if m.library and m.problem else ""))
                                  for m in offer.mpis], default_values=start.mpis)
        self.backend_mpi = CheckboxList(offer.mpi_choices(start.collectives, start.mpis),
                                        default_values=start.backend_mpi)
        self.backend_collkit = CheckboxList(offer.collkit_choices(start.collectives),
                                            default_values=start.backend_collkit)
        self.sizes = TextArea(start.sizes, multiline=False, style="class:field")
        self.ranks = TextArea(start.ranks, multiline=False, style="class:field")
        self.root = TextArea(start.root, multiline=False, style="class:field")
        self.dtype = RadioList([(d, d) for d in offer.datatypes], default=start.dtype)
        self.op = RadioList([(o, o) for o in specs.OPS], default=start.op)
        self.in_place = Checkbox("in_place: MPI_IN_PLACE where the collective allows it", checked=start.in_place)
        self.measure = {k: TextArea(start.measure.get(k, ""), multiline=False, style="class:field")
                        for k in MEASURE_KEYS if k not in ("sync", "validate")}
        self.sync = RadioList([(s, s) for s in specs.SYNCS], default=start.measure.get("sync") or None)
        self.validate = RadioList([(v, v) for v in specs.VALIDATIONS], default=start.measure.get("validate") or None)
        self.name = TextArea(start.name, multiline=False, style="class:field")
        self.out = TextArea(str(out), multiline=False, style="class:field")
        self.platform = start.platform
        self.write_button = Button("Write the spec", handler=self._write, width=20)

        self.pages = [
            ("What", VSplit([Frame(self.collectives, title="collectives"),
                             Frame(self.mpis, title="MPI libraries (versions as discovered)")]),
             self.collectives),
            ("MPI algorithms", Frame(self.backend_mpi, title="backend mpi: the library's collective, forced"),
             self.backend_mpi),
            ("libcollkit", Frame(self.backend_collkit, title="backend collkit: libcollkit's algorithms"),
             self.backend_collkit),
            ("Call", HSplit([
                self._row("sizes (8B..1MiB x4, or 8, 4KiB)", self.sizes),
                self._row("rank counts (2, 4)", self.ranks),
                self._row("root", self.root),
                self.in_place,
                VSplit([Frame(self.dtype, title="dtype"), Frame(self.op, title="op")]),
            ]), self.sizes),
            ("Measure", HSplit([
                *(self._row(k, w) for k, w in self.measure.items()),
                VSplit([Frame(self.sync, title="sync"), Frame(self.validate, title="validate")]),
            ]), next(iter(self.measure.values()))),
            ("Write", HSplit([
                self._row("campaign name", self.name),
                self._row("spec file", self.out),
                Window(height=1),
                self.write_button,
            ]), self.name),
        ]

        body = DynamicContainer(lambda: self.pages[self.page][1])
        root = HSplit([
            Window(FormattedTextControl(self._title), height=1),
            Window(FormattedTextControl(self._tabs), height=1),
            body,
            Window(),   # takes the height the page leaves, so the status stays at the bottom
            Window(FormattedTextControl(self._hint), height=3, wrap_lines=True),
            Window(FormattedTextControl(self._status), height=3, wrap_lines=True),
            Window(FormattedTextControl(lambda: [("class:help", "Tab/S-Tab field  Space tick  "
                                                               "^N/^P page  ^W write  ^C quit")]), height=1),
        ])
        self.app: Application = Application(layout=Layout(root, focused_element=self.collectives),
                                            key_bindings=self._keys(), style=STYLE, full_screen=True,
                                            mouse_support=False, before_render=self._update)

    @staticmethod
    def _row(label: str, field) -> VSplit:
        return VSplit([Window(FormattedTextControl(label + ":"), width=34, height=1), field], height=1)

    def _title(self):
        size = self.app.output.get_size()
        if size.columns < MIN_COLUMNS or size.rows < MIN_LINES:
            # shrunk after the start (which refuses a small terminal): the pages no longer fit
            return [("class:refused", f"the terminal is now {size.columns}x{size.rows}: enlarge it to "
                                      f"{MIN_COLUMNS}x{MIN_LINES}")]
        where = self.offer.label or "this machine"
        return [("class:title", f"collkit new · {where} · {self.offer.describe_mpis()}"[:size.columns])]

    def _tabs(self):
        out = []
        for i, (name, _, _) in enumerate(self.pages):
            out.append(("class:tab.current" if i == self.page else "class:tab", f" {i + 1} {name} "))
        return out

    def _hint(self):
        """More about the highlighted entry than its line holds: an algorithm's
        description, origin and constraints, a library's native name and conditions,
        what a [measure] key means."""
        layout = self.app.layout
        text = ""
        if layout.has_focus(self.backend_collkit) and "/" in (v := _highlighted(self.backend_collkit)):
            coll, name = v.split("/", 1)
            a = next(a for a in self.offer.algorithms if (a.collective, a.name) == (coll, name))
            text = f"{a.description} ({a.origin}; needs: {a.constraints.describe()}; traits: {a.traits.describe()})"
        elif layout.has_focus(self.backend_mpi) and "/" in (v := _highlighted(self.backend_mpi)):
            coll, name = v.split("/", 1)
            text = "; ".join(f"{m.name}: {a.native} (id {a.native_id})" + (f", {a.note}" if a.note else "")
                             for m in self.offer.mpis if m.offer and m.name in self.mpis.current_values
                             for a in m.offer.for_collective(coll) if a.name == name)
        elif layout.has_focus(self.mpis):
            m = next(m for m in self.offer.mpis if m.name == _highlighted(self.mpis))
            text = f"{m.name}: {m.library}" + (f"; {m.problem}" if m.problem else "")
        else:
            text = next((MEASURE_KEYS[k] for k, w in self.measure.items() if layout.has_focus(w)), "")
        return [("class:help", text)]

    def _status(self):
        e = self.evaluation
        line = [("class:ok", e.summary())] if e.ok else [("class:refused", f"refused: {e.error}")]
        # the last write's outcome, until the next change of a choice
        return line + ([("", "\n" + self.message)] if self.message else [])

    def current(self) -> Choices:
        return Choices(
            name=self.name.text, collectives=list(self.collectives.current_values),
            mpis=list(self.mpis.current_values), backend_mpi=list(self.backend_mpi.current_values),
            backend_collkit=list(self.backend_collkit.current_values), sizes=self.sizes.text,
            ranks=self.ranks.text, dtype=self.dtype.current_value, op=self.op.current_value, root=self.root.text,
            in_place=self.in_place.checked,
            measure={**{k: w.text for k, w in self.measure.items()},
                     "sync": self.sync.current_value, "validate": self.validate.current_value},
            platform=self.platform)

    def _update(self, _app=None) -> None:
        """Before every render: the lists follow the chosen collectives and MPIs, and
        the status follows the spec the choices make."""
        c = self.current()
        _refresh(self.backend_mpi, self.offer.mpi_choices(c.collectives, c.mpis))
        _refresh(self.backend_collkit, self.offer.collkit_choices(c.collectives))
        key = (self.current(), self.out.text)
        if key != self.judged:
            self.judged = key
            self.message = ""
            self.evaluation = self.evaluate(*key)

    def _goto(self, page: int) -> None:
        self.page = page % len(self.pages)
        self.app.layout.focus(self.pages[self.page][2])

    def _write(self) -> None:
        c = self.current()
        self.message, done = self.write(c, self.out.text)
        if done:
            self.app.exit(result=self.message)

    def _keys(self) -> KeyBindings:
        kb = KeyBindings()
        # eager: these win over the focused field's own bindings (a text field's ^W, ^N, ^P)
        kb.add("tab", eager=True)(lambda e: e.app.layout.focus_next())
        kb.add("s-tab", eager=True)(lambda e: e.app.layout.focus_previous())
        kb.add("c-n", eager=True)(lambda e: self._goto(self.page + 1))
        kb.add("c-p", eager=True)(lambda e: self._goto(self.page - 1))
        kb.add("c-w", eager=True)(lambda e: self._write())
        kb.add("c-c", eager=True)(lambda e: e.app.exit(result=None))
        return kb

    def run(self) -> str | None:
        """The message of the written spec, or None when the user quit."""
        return self.app.run()
