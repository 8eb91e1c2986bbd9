"""`python -m pointer_gen.run --help`: the project's flags grouped by the mode that reads them,
with their defaults. absl's own --help lists only flags defined in the main module (none here:
config.py defines them), so it would print nothing but "Try --helpfull"."""

from absl import flags

from pointer_gen.search import registry as search_registry
from pointer_gen.search.controls import registry as controls_registry

HELP_ARGS = ("--help", "-help", "--helpshort", "-h", "-?", "--?")

# Flags read by one mode only. Every other flag of the project is listed under the first group:
# data, vocab, run directory and model shape, which all modes share.
MODE_GROUPS = (
    ("Train (--mode=train)", (
        "lr", "adagrad_init_acc", "rand_unif_init_mag", "trunc_norm_init_std", "max_grad_norm",
        "clip_norm", "cov_loss_wt", "num_train_steps", "checkpoint_secs", "log_every_n_steps",
        "convert_to_coverage_model", "restore_best_model", "skip_nonfinite_batches",
        "inject_nonfinite_at_step", "allow_unknown_words")),
    ("Eval (--mode=eval)", (
        "eval_batches_per_checkpoint", "eval_max_checkpoints", "eval_poll_secs",
        "eval_samples")),
    ("Decode (--mode=decode)", (
        "search", *(name for name, *_ in search_registry.settings()),
        *(name for name, *_ in controls_registry.settings()),
        "score_references", "max_decode_examples", "max_attn_vis_files", "decode_dir",
        "first_step_context", "rouge_tokenizer", "compiled_attention")),
    ("Export (--mode=export)", ("export_dir", "export_source", "export_version",
                                "export_compiled_attention")),
    ("Distribute (--mode=train on several devices)", ("strategy", "tpu")),
)
COMMON = "Common and model (every mode)"


def project_flags(flag_values):
  """The flags defined by pointer_gen's modules, in definition order."""
  return [flag for module, module_flags in flag_values.flags_by_module_dict().items()
          if module.split(".")[0] == "pointer_gen" for flag in module_flags]


def _default(flag):
  value = flag.default
  if value is None:
    return "none"
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
