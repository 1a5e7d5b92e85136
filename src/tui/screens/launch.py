"""`n`: the launch form. It starts from a clone of the selected run or the last launch
(core.launch.clone; the app keeps what was typed for the session), shows the exact command
before launching, whether HF_TOKEN is set and where HF_HOME points, runs `libreyolo doctor`
first (errors block; warnings ask, and ctrl+l again launches without asking the doctor
again), then starts the run detached and closes with its record. The focused field's row
is lit, its label bold: on a 24-row terminal over SSH the cursor alone is easy to lose."""

from __future__ import annotations

import os
from collections.abc import Callable

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Checkbox, Input, Label, Static
from textual.worker import get_current_worker

from ...core.base.text import printable
from ...core.launch import launch_spec
from ...core.launch.doctor import run_doctor
from ...core.launch.launch import launch
from ...core.launch.launch_spec import (
    LaunchError,
    LaunchSpec,
    build_argv,
    display_command,
    free_name,
    hf_status,
    libreyolo_missing,
    make_spec,
    split_extra,
)
from ...core.records.launch_records import LaunchRecord
from ..widgets.form_keys import FOCUS_KEYS, FormCheckbox, FormInput

FIELDS = (
    ("model", "model"),
    ("data", "data.yaml"),
    ("epochs", "epochs"),
    ("batch", "batch (-1: largest that fits)"),
    ("imgsz", "imgsz"),
    ("device", "device"),
    ("project", "project (runs root)"),
    ("name", "name"),
    ("extra", "extra key=value …"),
)


class LaunchScreen(ModalScreen[LaunchRecord | None]):
    BINDINGS = [
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+l", "launch", "Launch"),
        *FOCUS_KEYS,  # a burst of keys lands in the field each was typed for (form_keys)
    ]
    DEFAULT_CSS = """
    LaunchScreen { align: center middle; }
    LaunchScreen > VerticalScroll {
        width: 90; max-width: 100%; height: auto; max-height: 100%;
        border: round $accent; padding: 0 1; background: $surface;
    }
    LaunchScreen Horizontal { height: 1; }
    LaunchScreen Label { width: 30; }
    LaunchScreen Input { width: 1fr; height: 1; border: none; padding: 0; }
    LaunchScreen Input:focus { background: $accent 40%; border: none; }
    LaunchScreen Horizontal:focus-within { background: $accent 15%; }
    LaunchScreen Horizontal:focus-within Label { color: $accent; text-style: bold; }
    LaunchScreen Checkbox { height: 1; border: none; padding: 0; }
    LaunchScreen Checkbox:focus { background: $accent 40%; border: none; }
    LaunchScreen #status { color: $warning; }
    """

    def __init__(
        self,
        defaults: dict[str, str],
        settings,
        gpu_count: int | None,
        *,
        source: str | None = None,
        on_values: Callable[[dict[str, str]], None] | None = None,
    ) -> None:
        """defaults: the fields' first values; source: where they came from (its title);
        on_values: called with the fields' values when the form closes (cancelled or
        launched), so that the app can offer them again."""
        super().__init__()
        self._defaults = defaults
        self._settings = settings
        self._gpu_count = gpu_count
        self._source = source
        self._on_values = on_values
        self._busy = False
        self._confirm_warnings = False
        self._checking = False  # a filesystem check in flight (_check)
        self._status_of_check = False  # #status waits for the check of what is typed
        self._renamed: tuple[str, str] | None = None  # (prefilled name, the free one offered)

    def compose(self) -> ComposeResult:
        with VerticalScroll() as box:
            title = "launch a training run"
            box.border_title = printable(f"{title}: {self._source}" if self._source else title)
            box.border_subtitle = "ctrl+l: launch   esc: cancel"
            for key, label in FIELDS:
                with Horizontal():
                    yield Label(label)
                    yield FormInput(value=self._defaults.get(key, ""), id=f"f-{key}")
            yield FormCheckbox("check the dataset first (libreyolo doctor)", True, id="doctor")
            # what went wrong comes first: on a 24-row terminal the form's end can be cut
            yield Static("", id="status")
            yield Static("", id="command")
            hf = hf_status()
            token = "set" if hf.token_set else "not set (pushes and Hub models need it)"
            yield Static(Text(printable(f"HF_TOKEN {token}; HF_HOME {hf.home}")), id="hf")

    def on_mount(self) -> None:
        self.query_one("#f-data", Input).focus()
        self._update_command()

    def on_input_changed(self, event: Input.Changed) -> None:
        self._confirm_warnings = False
        self._update_command()

    def _values(self) -> dict[str, str]:
        return {key: self.query_one(f"#f-{key}", Input).value for key, _ in FIELDS}

    def _spec(self, values: dict[str, str], *, check_files: bool) -> LaunchSpec:
        """make_spec on the form's values; check_files=False touches no file (the UI
        thread's check), True is the whole check (a worker's)."""
        return make_spec(
            values["data"],
            values["project"],
            settings=self._settings,
            gpu_count=self._gpu_count,
            model=values["model"],
            epochs=values["epochs"],
            batch=values["batch"],
            imgsz=values["imgsz"],
            device=values["device"],
            name=values["name"],
            extra=values["extra"],
            check_files=check_files,
        )

    def _update_command(self) -> None:
        """Each keystroke: the command and what is wrong with what was typed, at once; what
        the filesystem says (data.yaml missing, project a file) comes from a worker."""
        command = self.query_one("#command", Static)
        problem = None
        try:
            spec = self._spec(self._values(), check_files=False)
        except LaunchError as exc:
            command.update(Text("$ …", style="dim"))
            problem = str(exc)
        else:
            argv = build_argv(spec, "libreyolo")
            command.update(Text(printable("$ " + display_command(argv)), style="bold"))
        if not self._busy:  # else the launch under way says how it goes
            if problem:
                self._say(problem, "yellow")
            else:
                self._say("checking…", "dim")
            self._status_of_check = True
        self._check_files()

    def _check_files(self) -> None:
        """One check in flight at most: a stalled filesystem holds one thread, not one a
        keystroke; a check that answers for values typed over starts the next one."""
        if self._checking:
            return
        self._checking = True
        self._check(self._values())

    @work(thread=True, exclusive=True, group="launch-check")
    def _check(self, values: dict[str, str]) -> None:
        try:
            self._spec(values, check_files=True)
            problem = None
        except LaunchError as exc:
            problem = str(exc)
        taken = _name_taken(values)
        if get_current_worker().is_cancelled:  # the form closed
            return
        self.app.call_from_thread(self._checked, values, problem, taken)

    def _checked(
        self, values: dict[str, str], problem: str | None, taken: tuple[str, str | None] | None
    ) -> None:
        self._checking = False
        if not self.is_attached:
            return
        if values != self._values():  # typed over while it looked: look again
            self._check_files()
            return
        name = values["name"].strip()
        if taken and taken[1] and self._renamed is None and name == self._defaults.get("name"):
            # the name it started from is a run already: offer libreyolo's next free one
            self._renamed = (name, taken[1])
            self.query_one("#f-name", Input).value = taken[1]  # its check comes next
            return
        note = ""
        if taken:
            free = taken[1] or f"the next free {name}N"
            note = f"name: {name} exists in the project: libreyolo will write {free}"
        elif self._renamed is not None and name == self._renamed[1]:
            note = f"name: {self._renamed[0]} exists in the project; {name} is the next free name"
        if self._status_of_check:  # not since taken over by a launch
            self._status_of_check = False
            self._say(problem or note, "yellow")

    def _say(self, message: str, style: str = "") -> None:
        """Errors name paths and quote `libreyolo doctor` (the dataset's files): printable."""
        text = Text(printable(message, newlines=True), style=style)
        self.query_one("#status", Static).update(text)

    def action_cancel(self) -> None:
        if not self._busy:
            self._remember(self._values())
            self.dismiss(None)

    def _remember(self, values: dict[str, str]) -> None:
        if self._on_values is not None:
            self._on_values(dict(values))

    def _launched(self, values: dict[str, str], record: LaunchRecord) -> None:
        self._remember(values)
        self.dismiss(record)

    def action_launch(self) -> None:
        """ctrl+l: what was typed is checked again in the launch's worker, filesystem and
        all (the file may have gone since the last look), then the doctor, then the run."""
        if self._busy:
            return
        values = self._values()
        self._status_of_check = False  # the launch's answer is the one to show
        try:
            self._spec(values, check_files=False)
        except LaunchError as exc:
            self._say(str(exc), "bold red")
            return
        self._busy = True
        # the doctor's warnings were shown for exactly these values: this is the launch
        doctor = self._doctor() and not self._confirm_warnings
        self._say("checking the dataset (libreyolo doctor)…" if doctor else "launching…")
        self._run(values, doctor)

    def _doctor(self) -> bool:
        return self.query_one("#doctor", Checkbox).value

    @work(thread=True, exclusive=True, group="launch")
    def _run(self, values: dict[str, str], doctor: bool) -> None:
        try:
            spec = self._spec(values, check_files=True)
        except LaunchError as exc:
            self.app.call_from_thread(self._blocked, str(exc))
            return
        if launch_spec.libreyolo_executable() is None:  # before the doctor: not the dataset's
            self.app.call_from_thread(self._blocked, libreyolo_missing())
            return
        if doctor:
            report = run_doctor(spec.data, spec.imgsz)
            if not report.ok:
                errors = "; ".join(report.errors) or report.output.strip()[:300]
                self.app.call_from_thread(self._blocked, f"dataset errors: {errors}")
                return
            if report.warnings:
                warnings = "; ".join(report.warnings)
                self.app.call_from_thread(self._ask_warnings, warnings)
                return
        try:
            record = launch(spec)
        except (LaunchError, OSError) as exc:
            self.app.call_from_thread(self._blocked, f"launch failed: {exc}")
            return
        self.app.call_from_thread(self._launched, values, record)

    def _blocked(self, message: str) -> None:
        self._busy = False
        self._say(message, "bold red")

    def _ask_warnings(self, warnings: str) -> None:
        self._busy = False
        self._confirm_warnings = True
        self._say(f"dataset warnings: {warnings} — ctrl+l again to launch anyway", "bold yellow")


def _name_taken(values: dict[str, str]) -> tuple[str, str | None] | None:
    """(name, the name libreyolo would write instead) when `project/name` is a directory
    already (core.launch.launch_spec.free_name; None past its tries), else None."""
    name = values.get("name", "").strip()
    project = values.get("project", "").strip()
    if not name or not project or "/" in name or name in (".", ".."):
        return None
    try:
        extra = split_extra(values.get("extra", ""))
    except LaunchError:
        extra = ()
    free = free_name(os.path.abspath(os.path.expanduser(project)), name, extra)
    return None if free == name else (name, free)


def launch_defaults(settings, root: str, gpu_count: int | None) -> dict[str, str]:
    from ...core.launch.launch_spec import default_device

    return {
        "model": settings.model,
        "data": "",
        "epochs": "100",
        "batch": "-1",
        "imgsz": "640",
        "device": default_device(gpu_count),
        "project": os.path.abspath(root),
        "name": "exp",
        "extra": "",
    }
