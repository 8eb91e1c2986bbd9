"""`python -m pointer_gen.run --help`: the project's flags grouped by the mode that reads them,
with their defaults. absl's own --help lists only flags defined in the main module (none here:
config.py defines them), so it would print nothing but "Try --helpfull". The tools' --help
(parse_tool_flags, run_tool): absl's usage, exiting 0 as the entry point's does."""

from absl import app
from absl import flags

from pointer_gen import config

HELP_ARGS = ("--help", "-help", "--helpshort", "-h", "-?", "--?")

# (heading, flag names) of each group, as the settings' declarations group them (config.py):
# the common ones (every mode reads them) first, then each mode's.
MODE_GROUPS = tuple((title, names) for title, names in config.help_groups()
                    if title != config.COMMON)
COMMON = config.COMMON


def project_flags(flag_values):
  """The flags defined by pointer_gen's modules, in definition order."""
  return [flag for module, module_flags in flag_values.flags_by_module_dict().items()
          if module.split(".")[0] == "pointer_gen" for flag in module_flags]


def _default(flag):
  value = flag.default
  if value is None:
    # Not "none", which a setting may take as a value (--coverage_penalty=none).
    return "not set"
  if isinstance(value, bool):
    return str(value).lower()
  if value == "":
    return "''"
  return str(value)


def _describe(flag):
  name = f"--[no]{flag.name}" if flag.boolean else f"--{flag.name}"
  # absl starts an enum's help with its choices, "<a|b>: ".
  return (f"  {name} (default: {_default(flag)})\n"
          + flags.text_wrap(flag.help, length=100, indent="      ") + "\n")


def help_text(flag_values, program="python -m pointer_gen.run"):
  """The usage text: flags grouped by mode (absl's own flags are left to --helpfull)."""
  grouped = {name: title for title, names in MODE_GROUPS for name in names}
  sections = {COMMON: []}
  sections.update({title: [] for title, _ in MODE_GROUPS})
  for flag in project_flags(flag_values):
    sections[grouped.get(flag.name, COMMON)].append(_describe(flag))
  text = (f"Usage: {program} --mode=train|eval|decode|export [flags]\n\n"
          "The pointer-generator network (See et al., 2017). Flags by the mode that reads them;\n"
          "all modes of a run share the run directory --log_root/--exp_name.\n")
  for title, lines in sections.items():
    text += f"\n{title}:\n" + "".join(lines)
  return text + ("\n--flagfile=FILE reads flags from a file (flags/*.cfg); --helpfull lists "
                 "every flag,\nabsl's and TensorFlow's included.")


def parse_tool_flags(argv):
  """absl's parsing of a tool's flags (tools/, tools/dev/), except that --help (HELP_ARGS) and
  --helpfull print the tool's usage to stdout and exit 0, as `python -m pointer_gen.run --help`
  does: absl's own --help exits 1, as if the tool had failed."""
  before_end = argv[1:argv.index("--")] if "--" in argv else argv[1:]
  full = "--helpfull" in before_end
  if full or any(arg in HELP_ARGS for arg in before_end):
    app.usage(shorthelp=not full, writeto_stdout=True, exitcode=0)
  return app.parse_flags_with_usage(argv)


def run_tool(main):
  """A tool's `main` run as absl's app.run runs it, its flags parsed by parse_tool_flags."""
  app.run(main, flags_parser=parse_tool_flags)
