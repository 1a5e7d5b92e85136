"""The app on hostile runs under Pilot: control sequences from
run files show as visible ``^[`` text in the runs list, the header, the metrics and the
log (and on the whole screen), never as the characters themselves; a directory name that
is not UTF-8 and holds a newline is listed without a crash; a run named with markup
(``[bold]``, ``[@click=app.quit]``: an action run on a click; ``[/]`` in a title or notice
raises) shows as typed in notices, dialogs and choices, and crashes nothing."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from rich.text import Text
from support.checkpoints import checkpoint_bytes
from support.hostile import (
    HOSTILE_NAME,
    SAMPLE_RUN,
    make_hostile_root,
    unsafe_chars,
)

from rgpu_tui.core.base.config import Settings
from rgpu_tui.core.base.text import printable
from rgpu_tui.tui.app import RgpuApp
from rgpu_tui.tui.app_rules import fit_words, notice_width
from rgpu_tui.tui.screens.dialogs import ConfirmScreen, PickScreen, ReportScreen

from .helpers import notices, rendered, wait_for


def _app(root: Path, **settings) -> RgpuApp:
    return RgpuApp(root=str(root), interval=3600.0, fake_gpus=1, settings=Settings(**settings))


def _strips_text(widget) -> str:
    """What the widget paints now, row by row, as Textual renders it for the terminal."""
    return "\n".join(
        "".join(seg.text for seg in widget.render_line(y)) for y in range(widget.size.height)
    )


async def test_every_pane_shows_control_sequences_visibly(tmp_path: Path) -> None:
    root = make_hostile_root(tmp_path / "runs")
    app = _app(root)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await wait_for(pilot, lambda: app.view.log_pane.line_count > 0)
        await pilot.pause()
        assert app.snapshot.selected.run_dir == str(root / HOSTILE_NAME)

        runs = [str(app.view.runs_list.get_option_at_index(i).prompt) for i in range(3)]
        assert any("evil^[]0;PWNED^G" in line for line in runs), runs
        assert any("csvask^[[6n" in line for line in runs), runs
        assert any("bad\\xffname^Jsecond line" in line for line in runs), runs

        header = rendered(app.view.run_header)
        assert "evil^[]0;PWNED^G" in header
        # model_family-model_size ("t" + "ask\x1b[6n")
        assert "yolo^[]52;c;ZWNobyBwd25lZA==^G-task^[[6n" in header
        assert "Boom^[]52;c;ZWNobyBwd25lZA==^G: clear^[[2J ask^[[6n c1\\x9b31m" in header

        assert "mAP^[]0;PWNED…" in rendered(app.view.metrics_pane)  # cut at 14 columns

        log = list(app.view.log_pane.lines)
        for shown in ("^[]0;PWNED^G", "^[]52;c;ZWNobyBwd25lZA==^G", "clear^[[2J", "ask^[[6n"):
            assert shown in log, shown

        painted = "\n".join(
            _strips_text(w)
            for w in (
                app.view.runs_list,
                app.view.run_header,
                app.view.metrics_pane,
                app.view.log_pane,
            )
        )
        assert "evil^[]0;PWNED" in painted and "ask^[[6n" in painted
        assert unsafe_chars(painted) == []
        # the whole screen as Textual would send it
        assert unsafe_chars(app.export_screenshot()) == []


async def test_a_results_csv_column_name_shows_visibly(tmp_path: Path) -> None:
    root = make_hostile_root(tmp_path / "runs")
    [csv_run] = [p for p in root.iterdir() if p.name.startswith("csv")]
    app = RgpuApp(root=str(csv_run), interval=3600.0, fake_gpus=1, settings=Settings())
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.pause()
        assert "loss^[[2J" in rendered(app.view.metrics_pane)
        assert unsafe_chars(_strips_text(app.view.metrics_pane)) == []


async def test_a_non_utf8_name_with_a_newline_is_selected_without_a_crash(tmp_path) -> None:
    root = make_hostile_root(tmp_path / "runs")
    app = _app(root)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        index = next(  # by its directory: a long name is shortened in the list
            i for i in range(3) if "bad" in str(app.view.runs_list.get_option_at_index(i).id)
        )
        app.view.runs_list.highlighted = index
        await pilot.press("enter")
        await wait_for(pilot, lambda: "bad\\xffname" in rendered(app.view.run_header))
        assert "bad\\xffname^Jsecond line" in rendered(app.view.run_header)
        assert app.is_running and app.return_code is None


def _markup_run(root: Path, name: str) -> Path:
    run = root / name
    run.mkdir(parents=True)
    shutil.copy(SAMPLE_RUN / "status.json", run / "status.json")
    status = json.loads((run / "status.json").read_text())
    status["save_dir"] = str(run)
    (run / "status.json").write_text(json.dumps(status))
    return run


async def test_a_run_named_with_markup_in_a_notice_and_a_pick_list(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    # a file name cannot hold "/": the markup that needs no slash
    run = _markup_run(root, "[@click=app.quit]x[bold]\x1b]0;T\x07")
    (run / "weights").mkdir()
    (run / "weights" / "[@click=app.quit]odd[red].pt").write_bytes(checkpoint_bytes(10, 1))
    app = _app(root, hub_repo="alice/ckpts")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        # p: no best.pt or last.pt -> a notice naming the path (markup would raise here)
        await pilot.press("p")
        await wait_for(pilot, lambda: any("does not exist" in n for n in notices(app)))
        [notice] = [n for n in notices(app) if "does not exist" in n]
        # as typed, made printable, a path wider than the notice shortened in its middle
        said = printable(f"{run / 'weights' / 'best.pt'} does not exist.", newlines=True)
        assert notice == fit_words(said, notice_width(120))
        assert unsafe_chars(notice) == [] and notice.endswith("/weights/best.pt does not exist.")
        # P: the weights file is a choice, shown as typed
        await pilot.press("P")
        await wait_for(pilot, lambda: isinstance(app.screen, PickScreen))
        await pilot.pause()
        labels = [str(o.prompt) for o in app.screen.query_one("OptionList")._options]
        assert labels[0].startswith("[@click=app.quit]odd[red].pt  ")  # its size follows
        await pilot.press("enter")  # picks it: the confirm dialog with the run's path
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.pause()
        body = _strips_text(app.screen.query_one("#body"))
        unwrapped = "".join(line.rstrip() for line in body.splitlines())
        assert "[@click=app.quit]x[bold]^[]0;T^G/weights/[@click=app.quit]odd[red].pt" in unwrapped
        assert unsafe_chars(body) == []
        await pilot.press("escape")
        assert app.is_running


async def test_a_report_dialog_shows_a_hostile_title_and_body_as_text(tmp_path) -> None:
    root = tmp_path / "runs"
    _markup_run(root, "plain")
    app = _app(root)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        screen = ReportScreen("stopping [/]evil\x1b]0;T\x07", "sending SIGINT…")
        await app.push_screen(screen)
        await pilot.pause()
        screen.show("[/]evil\x1b[2J not stopped: [bold]boom")
        await pilot.pause()
        box = screen.query_one("VerticalScroll")
        assert "stopping [/]evil^[]0;T^G" in Text.from_markup(box.border_title).plain
        body = _strips_text(screen.query_one("#body"))
        assert "[/]evil^[[2J not stopped: [bold]boom" in body
        app.notify("[/]evil\x1b]52;c;eA==\x07 stopped", title="[b]t\x1b[6n")
        await pilot.pause()
        [toast] = app._notifications
        assert str(toast.message) == "[/]evil^[]52;c;eA==^G stopped"
        assert toast.title == "[b]t^[[6n"
        assert unsafe_chars(app.export_screenshot()) == []
        assert os.path.isdir(root)  # nothing crashed


async def test_metric_values_whose_range_overflows_draw_a_sparkline(tmp_path: Path) -> None:
    """1e308 and -1e308 in one column are finite, but their difference is not: the
    sparkline's scale used to be NaN (ValueError in the metrics pane, the app down)."""
    run = tmp_path / "runs" / "huge"
    run.mkdir(parents=True)
    rows = [{"epoch": e, "train/loss": v} for e, v in enumerate([1e308, -1e308, 0.0], 1)]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    app = _app(run.parent)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.selected)
        await pilot.pause()
        assert "train/loss █▁▅" in rendered(app.view.metrics_pane)
        assert app.is_running
