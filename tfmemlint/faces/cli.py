"""The command line. It only parses options and hands over: the work is in runner and report."""

from __future__ import annotations

import contextlib
import io
import os
import sys
import time
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Any

import click

from tfmemlint import __version__
from tfmemlint.faces.report import FORMATS

if TYPE_CHECKING:
    from tfmemlint.configuration.settings import Settings

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class DefaultGroup(click.Group):
    """A group whose first argument, when it is not a subcommand, goes to `check`."""

    default_command = "check"

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        group_options = ("--help", "-h", "--version")
        if not args or (args[0] not in self.commands and args[0] not in group_options):
            args = [self.default_command, *args]
        return super().parse_args(ctx, args)


@click.group(cls=DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="tfmemlint", message="%(prog)s %(version)s")
def cli() -> None:
    """Find TensorFlow sessions that would reserve a whole GPU, and fix them.

    `tfmemlint PATHS...` is `tfmemlint check PATHS...`.
    """


def _cpus() -> int:
    if hasattr(os, "sched_getaffinity"):  # the CPUs this process may use, not the machine's
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _codes(values: tuple[str, ...]) -> list[str]:
    return [code for value in values for code in value.split(",")]


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@click.option("--fix", is_flag=True, help="Rewrite files in place with the available fixes.")
@click.option("--diff", is_flag=True, help="Print the fixes as a unified diff; write nothing.")
@click.option(
    "--add-noqa",
    is_flag=True,
    help="Silence every finding with a `# noqa: CODE` comment on its line (to adopt a gate on "
    "old code); report nothing else.",
)
@click.option(
    "--policy",
    metavar="growth|fraction=F",
    help="How fixes limit memory: allow_growth (the default), or a per-process fraction in (0, 1].",
)
@click.option(
    "--guest-policy",
    type=click.Choice(("hide", "growth")),
    help="What fixes do where TensorFlow is a guest in a JAX or PyTorch program: hide its GPUs "
    "from TensorFlow (the default), or apply --policy.",
)
@click.option(
    "--output-format",
    type=click.Choice(FORMATS),
    envvar="TFMEMLINT_OUTPUT_FORMAT",
    help="How to print findings: text (the default), or as TFMEMLINT_OUTPUT_FORMAT says.",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(exists=True, dir_okay=False, path_type=str),
    help="Use this pyproject.toml or tfmemlint.toml instead of the nearest one.",
)
@click.option("--isolated", is_flag=True, help="Ignore every configuration file.")
@click.option(
    "-o",
    "--output-file",
    type=click.Path(dir_okay=False, writable=True, path_type=str),
    help="Write the report to this file instead of stdout.",
)
@click.option("--statistics", is_flag=True, help="Print the number of findings per code.")
@click.option(
    "--exit-non-zero-on-fix",
    is_flag=True,
    help="With --fix, exit 1 when something was fixed, even if nothing remains.",
)
@click.option("-q", "--quiet", is_flag=True, help="Print the findings and nothing else.")
@click.option(
    "--show-fixes", is_flag=True, help="Show each available fix as a diff under its finding."
)
@click.option(
    "--stdin-filename",
    metavar="NAME",
    help="With the path `-`: the name of the source read from stdin. With --fix, the fixed "
    "source goes to stdout and the report to stderr.",
)
@click.option(
    "--select",
    multiple=True,
    metavar="CODES",
    help="Report only these codes or prefixes (comma-separated), e.g. TFM1,TFM190.",
)
@click.option(
    "--extend-select",
    multiple=True,
    metavar="CODES",
    help="Report these codes on top of the selection, e.g. TFM190.",
)
@click.option("--ignore", multiple=True, metavar="CODES", help="Do not report these codes.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings remain.")
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    help="Worker processes for the files that need parsing (default: one per CPU). "
    "A handful of files is always checked in this process.",
)
@click.option(
    "--respect-gitignore/--no-respect-gitignore",
    default=None,
    help="Whether folder walks leave out what git ignores (default: yes, or the configuration's "
    "respect-gitignore).",
)
@click.option(
    "--force-exclude",
    is_flag=True,
    default=None,
    help="Leave out excluded paths even when named on the command line (for pre-commit).",
)
@click.option("--no-cache", is_flag=True, help="Neither read nor write the cache.")
@click.option(
    "--cache-dir",
    envvar="TFMEMLINT_CACHE_DIR",
    type=click.Path(file_okay=False, path_type=str),
    help="Where to keep the cache (default: .tfmemlint_cache next to the configuration file, "
    "or in the current folder).",
)
@click.option(
    "--show-launched/--no-show-launched",
    default=None,
    help="Report programs that a launch file (a Dockerfile, a Compose file, a script) runs "
    "with GPU memory set up, naming the file; by default they are not reported.",
)
@click.option(
    "-v",
    "--verbose",
    is_flag=True,
    help="Show tracebacks of internal errors, and where the run's time went.",
)
@click.version_option(__version__, prog_name="tfmemlint", message="%(prog)s %(version)s")
def check(
    paths: tuple[str, ...],
    fix: bool,
    diff: bool,
    add_noqa: bool,
    policy: str | None,
    guest_policy: str | None,
    output_format: str | None,
    config_path: str | None,
    isolated: bool,
    output_file: str | None,
    statistics: bool,
    exit_non_zero_on_fix: bool,
    quiet: bool,
    show_fixes: bool,
    stdin_filename: str | None,
    select: tuple[str, ...],
    extend_select: tuple[str, ...],
    ignore: tuple[str, ...],
    exit_zero: bool,
    jobs: int | None,
    respect_gitignore: bool | None,
    force_exclude: bool | None,
    no_cache: bool,
    cache_dir: str | None,
    show_launched: bool | None,
    verbose: bool,
) -> None:
    """Check PATHS (files or folders; default: the current folder) for sessions without GPU
    memory options.

    Exit status: 0 when no finding remains, 1 when findings remain, 2 on a usage or internal
    error.
    """
    # What a replayed run needs, and no more: the rest (the rule registry included) is imported
    # once a run must check files.
    from tfmemlint.configuration import config_files as config
    from tfmemlint.configuration.discovery import Exclusions

    if fix and diff:
        raise click.UsageError("--fix and --diff cannot be used together")
    if add_noqa and (fix or diff or "-" in paths):
        raise click.UsageError("--add-noqa works on files, and not with --fix or --diff")
    try:
        # A source on stdin finds its configuration from the name it is reported under.
        near = [stdin_filename] if "-" in paths and stdin_filename else list(paths)
        file_config = config.resolve(near, config_path, isolated)
        output_format = output_format or file_config.get("output-format", "text")
        if output_format not in FORMATS:
            raise config.ConfigError(f"{file_config.path}: unknown output-format {output_format!r}")
    except config.ConfigError as exc:
        raise click.UsageError(str(exc)) from None
    exclusions = Exclusions.configured(file_config, respect_gitignore, force_exclude)

    def run_settings() -> Settings:
        from tfmemlint.configuration import settings
        from tfmemlint.rules import ALL_RULES

        try:
            return settings.build(
                file_config,
                ALL_RULES,
                policy,
                _codes(select),
                _codes(extend_select),
                _codes(ignore),
                guest_policy,
                show_launched,
            )
        except settings.SettingsError as exc:
            raise click.UsageError(str(exc)) from None

    # Settings that were given may be wrong, and are checked before the walk; the defaults are
    # built once a run needs them: a replayed run never imports the rule registry.
    given = policy or guest_policy or select or extend_select or ignore or show_launched
    settings = run_settings() if given or _SETTINGS_KEYS & set(file_config.values) else None
    mode: Any = "fix" if fix else "diff" if diff else "check"
    report_to = sys.stdout
    way = cache = None  # how this run was made, when a later one may replay its report
    if "-" in paths:
        from tfmemlint.model import FileResult
        from tfmemlint.running import file_check

        if len(paths) > 1:
            raise click.UsageError("`-` (stdin) cannot be combined with other paths")
        settings = settings or run_settings()
        name = stdin_filename or "-"
        source_in = sys.stdin.buffer.read()
        if stdin_filename and exclusions.skip_named(stdin_filename):
            result, source_out = FileResult(name), source_in  # as ruff: left out
        else:
            store = None
            if not no_cache:  # the summaries of the project's modules, as a run of files has
                from tfmemlint.running.cache import store_for_a_source

                store = store_for_a_source(file_config, cache_dir)
            result, source_out = file_check.check_stdin(
                name, source_in, settings, mode, verbose, store=store
            )
        results = [result]
        if fix:
            # Editors read the source back from stdout; the report goes to stderr.
            sys.stdout.buffer.write(source_out)
            sys.stdout.flush()
            report_to = sys.stderr
    else:
        from tfmemlint.configuration.discovery import discover

        started = time.perf_counter()
        outside: list[tuple[str, str]] = []
        items = list(discover(paths or (".",), exclusions, outside))
        walked_s = time.perf_counter() - started
        if verbose:
            for link, target in outside:
                click.echo(f"Skipped {link}: it links to {target}, outside the project", err=True)
        if not items:  # as ruff says it: checking nothing is no pass
            click.echo("warning: No Python files found under the given path(s)", err=True)
        if not no_cache:
            from tfmemlint.running.cache import ResultCache, directory_of

            cache = ResultCache(directory_of(file_config, cache_dir))
            # A check made as the last one was, of files the cache would serve by their stat
            # alone, prints what that one printed (see `cache`); not on a terminal, whose look
            # depends on more.
            if mode == "check" and not (add_noqa or verbose or _to_terminal(output_file)):
                way = repr((os.getcwd(), sorted(click.get_current_context().params.items())))
                way += repr(file_config)
                replayed = cache.replay(way, items)
                if replayed is not None:
                    with _destination(output_file, sys.stdout) as out:
                        out.write(replayed.report)
                    sys.exit(replayed.status)
        from tfmemlint.running import runner

        run = runner.Run(items, settings or run_settings(), mode, verbose, jobs or _cpus(), cache)
        if sys.stderr.isatty() and not os.environ.get("CI"):  # CI logs stay clean
            from tfmemlint.faces.report.text import with_progress

            results = list(with_progress(run, len(run)))
        else:
            results = list(run)

    if add_noqa:
        sys.exit(_add_noqa(results))
    from tfmemlint.faces import report
    from tfmemlint.faces.report import text as text_report

    with _destination(output_file, report_to) as out:
        # A report to be replayed is kept whole; any other goes straight out as it is made.
        kept = io.StringIO() if way is not None else None
        to = kept or out
        if diff:
            text_report.write_diff(results, to)
            text_report.TextReport.diff_summary(results, sys.stderr)
        elif statistics:
            text_report.write_statistics(results, to)
        elif output_format == "text":
            text = text_report.TextReport(to, color=out.isatty(), show_fixes=show_fixes)
            text.findings(results)
            if not quiet and results:
                text.summary(results, mode)
        else:
            report.write(output_format, results, to)
        if kept is not None:
            out.write(kept.getvalue())

    if verbose and "-" not in paths:
        total_s = time.perf_counter() - started
        text_report.write_timing(run.stats, walked_s, total_s, sys.stderr)
    if any(r.internal_error for r in results):
        sys.exit(EXIT_ERROR)
    remaining = sum(len(r.findings) + (r.fixed if diff else 0) for r in results)
    fixed = exit_non_zero_on_fix and any(r.fixed for r in results) and fix
    status = EXIT_FINDINGS if (remaining and not exit_zero) or fixed else EXIT_CLEAN
    if kept is not None and cache is not None and way is not None:
        cache.record(way, items, kept.getvalue(), status)
    sys.exit(status)


# The configuration's keys that settings are built from.
_SETTINGS_KEYS = frozenset(
    {
        "policy",
        "guest-policy",
        "keras-backend",
        "jax-preallocate",
        "select",
        "extend-select",
        "ignore",
        "per-file-ignores",
        "show-launched",
        "launch-environment",
    }
)


def _to_terminal(output_file: str | None) -> bool:
    """Whether the report goes to a terminal, or to something else that is no plain file."""
    if output_file is None:
        return sys.stdout.isatty()
    return os.path.exists(output_file) and not os.path.isfile(output_file)  # /dev/tty, a FIFO


@contextlib.contextmanager
def _destination(output_file: str | None, default: IO[str]) -> Iterator[IO[str]]:
    """Where the report goes: the file named, or else `default`."""
    if output_file is None:
        yield default
        return
    with open(output_file, "w", encoding="utf-8") as out:
        yield out


def _add_noqa(results: list[Any]) -> int:
    """Writes the comments and reports them; the exit status: 0, or 2 when a file could not be
    rewritten."""
    from tfmemlint.faces.report.text import write_noqa
    from tfmemlint.running.file_check import add_noqa

    outcomes = [(result.filename, add_noqa(result)) for result in results]
    write_noqa(outcomes, sys.stdout, sys.stderr)
    return EXIT_ERROR if any(outcome.error for _, outcome in outcomes) else EXIT_CLEAN


@cli.command()
@click.argument("code", required=False)
@click.option("--all", "all_rules", is_flag=True, help="Print every rule's page.")
def rule(code: str | None, all_rules: bool) -> None:
    """Print a rule's page: what it does, why it matters, an example, and its fix."""
    from tfmemlint.faces.docs import render_rule
    from tfmemlint.rules import ALL_RULES, RULES_BY_CODE

    if all_rules:
        _page("\n\n".join(render_rule(r) for r in ALL_RULES))
        return
    if code is None:
        raise click.UsageError("give a rule code, such as TFM101, or --all")
    found = RULES_BY_CODE.get(code.upper())
    if found is None:
        raise click.UsageError(f"unknown rule {code!r}; `tfmemlint rule --all` lists them")
    _page(render_rule(found))


def _page(markdown: str) -> None:
    """A rule's page: rendered with rich's Markdown in a terminal, as Markdown elsewhere (a
    pipe, a file), where it is the site's page word for word."""
    if not sys.stdout.isatty():
        click.echo(markdown)
        return
    from rich.console import Console
    from rich.markdown import Markdown

    Console().print(Markdown(markdown))


@cli.command()
def server() -> None:
    """Run the language server (LSP, over stdio) for editors: diagnostics as you type, quick
    fixes, fix-all, suppressions and rule pages on hover. Needs `pip install 'tfmemlint[lsp]'`."""
    try:
        from tfmemlint.faces.server import main as serve
    except ImportError as exc:
        raise click.UsageError(
            f"the language server needs the lsp extra (pip install 'tfmemlint[lsp]'): {exc}"
        ) from None
    serve()


def main() -> None:
    try:
        cli(prog_name="tfmemlint")
    except Exception as exc:  # last resort: one clear line and exit 2
        click.echo(f"tfmemlint: internal error: {type(exc).__name__}: {exc}", err=True)
        sys.exit(EXIT_ERROR)


class _ScriptArgsCommand(click.Command):
    """Keeps what follows `--` for the scripts instead of taking it as more PATHS."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" in args:
            split = args.index("--")
            args, ctx.meta["script_args"] = args[:split], args[split + 1 :]
        return super().parse_args(ctx, args)


@cli.command(cls=_ScriptArgsCommand)
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@click.option(
    "--baseline",
    metavar="DIR_OR_FILE",
    type=click.Path(exists=True, path_type=str),
    help="Also run the unfixed counterparts (same relative names) and compare.",
)
@click.option(
    "--timeout",
    default=300.0,
    show_default=True,
    type=click.FloatRange(min=0, min_open=True),
    help="Seconds each script may run before its process tree is ended.",
)
@click.option(
    "--output-format", type=click.Choice(["table", "json"]), default="table", show_default=True
)
@click.option("--require-gpu", is_flag=True, help="Fail when no NVIDIA GPU is visible.")
@click.option(
    "--gpu",
    "gpu_index",
    default=0,
    show_default=True,
    type=click.IntRange(min=0),
    help="Which visible GPU to measure (the scripts see it as GPU:0).",
)
@click.option(
    "--python",
    "python",
    default=sys.executable,
    show_default="this interpreter",
    help="The interpreter that runs the scripts.",
)
@click.option(
    "--simulate-gpus",
    "simulate_gpus",
    default=2,
    show_default=True,
    type=click.IntRange(min=0),
    metavar="N",
    help="Without an NVIDIA GPU, run each script as on a machine with N GPUs (TensorFlow's "
    "device configuration only; ops still run on the CPU). 0: no simulation.",
)
@click.option(
    "-j",
    "--jobs",
    default=None,
    type=click.IntRange(min=1),
    metavar="N",
    help="How many scripts run side by side. [default: one per measured GPU on an NVIDIA GPU, "
    "one per core without one]",
)
@click.option(
    "--launcher",
    type=click.Path(exists=True, dir_okay=False),
    help="A launch file (a Dockerfile, a script, a `.env` file, a Compose file or manifest with "
    "one container) whose environment the scripts run with, as where they really run.",
)
@click.pass_context
def verify(
    ctx: click.Context,
    paths: tuple[str, ...],
    baseline: str | None,
    timeout: float,
    output_format: str,
    require_gpu: bool,
    gpu_index: int,
    python: str,
    simulate_gpus: int,
    jobs: int | None,
    launcher: str | None,
) -> None:
    """Run scripts (default: the bundled fixtures/after) and report the GPU memory settings each
    really got and, on an NVIDIA GPU, the peak memory each held. Arguments after `--` go to
    every script.

    Exit status: 0 when every script passed, 1 when any failed, crashed or timed out, 2 on a
    usage or internal error.
    """
    from tfmemlint.verify import cli as verify_cli

    code = verify_cli.main(
        paths=paths,
        baseline=baseline,
        timeout=timeout,
        output_format=output_format,
        require_gpu=require_gpu,
        gpu_index=gpu_index,
        python=python,
        simulate_gpus=simulate_gpus,
        jobs=jobs,
        script_args=ctx.meta.get("script_args", []),
        launcher=launcher,
    )
    sys.exit(code)
