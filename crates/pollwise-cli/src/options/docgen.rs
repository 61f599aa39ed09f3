//! Documents generated from the option table: docs/options.md, the man page, shell completions.
//!
//! Help must not drift from behaviour, so every document that lists options is written from
//! the same [`OPTIONS`] and [`COMMANDS`] the parser reads: `pollwise man` prints the man page,
//! `pollwise completions bash|zsh` a completion script, and [`options_markdown`] is
//! docs/options.md (a test fails when the committed copies are stale).

use std::fmt::Write as _;

use super::jobfile::fio_option_names;
use super::table::{
    lookup, scenarios, Category, CommandSpec, Default, Kind, Opt, Scope, COMMANDS, MODES, OPTIONS,
};

/// fio's options that pollwise accepts and that change nothing in what it does: the help line
/// of each says why (pollwise always works that way already).
pub const ACCEPTED_WITHOUT_EFFECT: &[&str] =
    &["thread", "verify_dump", "verify_fatal", "random_generator"];

/// The commands that are not in [`COMMANDS`] (they take no job options), with their usage.
const OTHER_COMMANDS: &[(&str, &str)] = &[
    ("pollwise calibrate --filename=F [--output-format=json]", "Measures what a submit, a wake-up and a sleep cost on this machine and device; its JSON is a platform for --platform."),
    ("pollwise exec [--mode=M] -- CMD [ARGS...]", "Runs an unmodified liburing program with pollwise's waits (LD_PRELOAD) and prints what they did."),
    ("pollwise help [COMMAND | scenario NAME]", "Help from the option table; also COMMAND --help, --cmdhelp[=OPTION], --version."),
    ("pollwise man", "Prints this manual page (roff)."),
    ("pollwise completions bash|zsh", "Prints a shell completion script."),
    ("pollwise [options] JOBFILE...", "fio's command line: `pollwise run` without the word run."),
];

fn default_text(d: Default) -> Option<&'static str> {
    match d {
        Default::None => None,
        Default::Value(v) | Default::Text(v) => Some(v),
    }
}

fn categories() -> Vec<Category> {
    let mut cats: Vec<Category> = OPTIONS.iter().map(|o| o.category).collect();
    cats.sort();
    cats.dedup();
    cats
}

/// The commands that take `o`, as their names (`run`, `compare`, `fairness`, ...), or `all`.
fn takers(o: &Opt) -> String {
    if o.scope == Scope::All {
        return "all".into();
    }
    let t: Vec<&str> = COMMANDS
        .iter()
        .filter(|c| c.accepts(o))
        .map(|c| c.name)
        .collect();
    if t.len() == COMMANDS.len() {
        "all".into()
    } else {
        t.join(", ")
    }
}

fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// docs/options.md: every option pollwise has, then every option fio has and what pollwise does
/// with it.
pub fn options_markdown() -> String {
    let mut m = String::from("# Options\n\n");
    m.push_str("Generated from the option table (`crates/pollwise-cli/src/options/table.rs`) by `crates/pollwise-cli/tests/docs.rs`; `POLLWISE_BLESS=1 cargo test -p pollwise-cli --test docs` rewrites it, and the test fails when it is stale. `pollwise run --help`, `pollwise --cmdhelp=NAME`, the man page (`pollwise man`) and the shell completions (`pollwise completions bash|zsh`) come from the same table.\n\n");
    m.push_str("Options are fio's: `--name=value` or `--name value`, a bare flag means 1, dashes and underscores are the same; sizes take k/M/G/T (1024-based), times ns/us/ms/s/m/h (a bare number is seconds unless the option says otherwise). A job file takes the same names as `name=value` lines.\n\n");
    m.push_str("## Commands\n\n| command | what it does |\n|---|---|\n");
    for c in COMMANDS {
        let _ = writeln!(m, "| `{}` | {} |", c.invocation(), md_cell(c.about));
    }
    for (u, a) in OTHER_COMMANDS {
        let _ = writeln!(m, "| `{u}` | {} |", md_cell(a));
    }
    let _ = writeln!(
        m,
        "\nWait modes (`--mode`, `--modes`): {}.",
        MODES.join(", ")
    );
    for cat in categories() {
        let _ = writeln!(m, "\n## {}\n", cat.title());
        m.push_str("| option | value | default | commands | fio | what it does |\n|---|---|---|---|---|---|\n");
        for o in OPTIONS.iter().filter(|o| o.category == cat) {
            let mut name = format!("`--{}`", o.name);
            for a in o.aliases {
                let _ = write!(name, "<br>`--{a}`");
            }
            let fio = if fio_option_names().any(|f| f == o.name) {
                if ACCEPTED_WITHOUT_EFFECT.contains(&o.name) {
                    "fio's, no effect"
                } else {
                    "fio's"
                }
            } else {
                "pollwise's"
            };
            let _ = writeln!(
                m,
                "| {name} | {} | {} | {} | {fio} | {} |",
                md_cell(&o.kind.describe()),
                md_cell(default_text(o.default).unwrap_or("")),
                md_cell(&takers(o)),
                md_cell(o.help)
            );
        }
    }
    // fio's side.
    let names: Vec<&str> = fio_option_names().collect();
    let implemented = names.iter().filter(|n| lookup(n).is_some()).count();
    let no_effect = names
        .iter()
        .filter(|n| lookup(n).is_some_and(|o| ACCEPTED_WITHOUT_EFFECT.contains(&o.name)))
        .count();
    let _ = writeln!(
        m,
        "\n## fio's options\n\nEvery option name (and alias) of fio 3.33's `options.c` and engines (`crates/pollwise-cli/src/options/fio_options.txt`): {} in all; pollwise implements {} of them, accepts {} more without effect (their help says why) and refuses the other {}, by name, before anything runs (exit 2). Values fio has and pollwise lacks (engines such as `rdma`, trims, other checksums) are refused the same way; [fio-compat.md](fio-compat.md) is what becomes of fio's own job files.\n",
        names.len(),
        implemented - no_effect,
        no_effect,
        names.len() - implemented
    );
    m.push_str("| fio option | pollwise |\n|---|---|\n");
    for n in &names {
        let what = match lookup(n) {
            Some(o) if ACCEPTED_WITHOUT_EFFECT.contains(&o.name) => {
                format!("accepted, no effect: {}", o.help)
            }
            Some(o) if o.name == *n => "implemented".to_string(),
            Some(o) => format!("implemented, as `--{}`", o.name),
            None => match super::why_not(n) {
                Some(why) => format!("refused: {why}"),
                None => "refused (not implemented)".to_string(),
            },
        };
        let _ = writeln!(m, "| `{n}` | {} |", md_cell(&what));
    }
    m
}

/// roff text: backslashes and leading dots or quotes made literal, hyphens as `\-`.
fn roff(s: &str) -> String {
    let t = s.replace('\\', "\\e").replace('-', "\\-");
    if t.starts_with('.') || t.starts_with('\'') {
        format!("\\&{t}")
    } else {
        t
    }
}

/// `pollwise man`: the manual page, pollwise(1), in roff.
pub fn man_page() -> String {
    let mut m = String::new();
    let _ = writeln!(
        m,
        ".TH POLLWISE 1 \"\" \"pollwise {}\" \"User Commands\"",
        env!("CARGO_PKG_VERSION")
    );
    m.push_str(".SH NAME\npollwise \\- how to wait for I/O completions, and what each way costs\n");
    m.push_str(".SH SYNOPSIS\n");
    for c in COMMANDS.iter().filter(|c| !c.scenario) {
        let _ = writeln!(m, ".B {}\n[\\fIoptions\\fR]\n.br", roff(&c.invocation()));
    }
    m.push_str(".B pollwise scenario\n\\fINAME\\fR [\\fIoptions\\fR]\n.br\n");
    for (u, _) in OTHER_COMMANDS {
        let _ = writeln!(m, ".B {}\n.br", roff(u));
    }
    m.push_str(".SH DESCRIPTION\n");
    m.push_str("pollwise runs fio's jobs under each way of waiting for an io_uring completion (interrupt, poll, hybrid, adaptive, auto) and reports latency percentiles, IOPS and CPU per I/O side by side, in fio's formats.\nOptions are fio's: \\fB\\-\\-name\\fR=\\fIvalue\\fR or \\fB\\-\\-name\\fR \\fIvalue\\fR; a bare flag means 1; sizes take k/M/G/T (1024\\-based); times take ns/us/ms/s/m/h (a bare number is seconds unless the option says otherwise).\npollwise's defaults differ from fio's in two places: \\fB\\-\\-rw\\fR=randread and \\fB\\-\\-direct\\fR=1. Started under the name \\fBfio\\fR, it takes fio's command line with fio's defaults.\n");
    m.push_str(".SH COMMANDS\n");
    for c in COMMANDS.iter().filter(|c| !c.scenario) {
        let _ = writeln!(m, ".TP\n.B {}\n{}", roff(&c.invocation()), roff(c.about));
    }
    for (u, a) in OTHER_COMMANDS {
        let _ = writeln!(m, ".TP\n.B {}\n{}", roff(u), roff(a));
    }
    m.push_str(".SH SCENARIOS\n");
    for s in scenarios() {
        let _ = writeln!(m, ".TP\n.B {}\n{}", roff(s.name), roff(s.about));
    }
    m.push_str(".SH WAIT MODES\n");
    let _ = writeln!(m, "{}", roff(&MODES.join(", ")));
    m.push_str(".SH OPTIONS\n");
    for cat in categories() {
        let _ = writeln!(m, ".SS {}", roff(cat.title()));
        for o in OPTIONS.iter().filter(|o| o.category == cat) {
            let _ = writeln!(
                m,
                ".TP\n\\fB\\-\\-{}\\fR{}",
                roff(o.name),
                roff(&man_suffix(&o.kind))
            );
            let mut text = o.help.to_string();
            if let Some(ch) = choices(&o.kind).filter(|_| !matches!(o.kind, Kind::Bool)) {
                let _ = write!(text, " Values: {}.", ch.join(", "));
            }
            if let Some(d) = default_text(o.default) {
                let _ = write!(text, " Default: {d}.");
            }
            if !o.aliases.is_empty() {
                let a: Vec<String> = o.aliases.iter().map(|a| format!("--{a}")).collect();
                let _ = write!(text, " Also {}.", a.join(", "));
            }
            let t = takers(o);
            if t != "all" {
                let _ = write!(text, " Commands: {t}.");
            }
            let _ = writeln!(m, "{}", roff(&text));
        }
    }
    m.push_str(".SH EXIT STATUS\n0: the run did what was asked. 1: it failed (an I/O error, a job that did no I/O or ran shorter than asked). 2: a usage or capability error, named in one line with its fix. 128+N: stopped by signal N (SIGINT, SIGTERM, SIGHUP, SIGALRM), after printing the results so far.\n");
    m.push_str(".SH SEE ALSO\n.BR fio (1),\n.BR io_uring (7)\n");
    m
}

/// The value after the name in the man page's tag: choices are listed in the text instead, so a
/// long list does not overflow the tag line.
fn man_suffix(k: &Kind) -> String {
    match k {
        Kind::Enum { .. } => "=WORD".into(),
        Kind::EnumList { .. } => "=WORD,...".into(),
        other => other.suffix(),
    }
}

/// Whether an option takes a value after `=` (a bare flag does not need one).
fn takes_value(k: &Kind) -> bool {
    k.bare().is_none()
}

fn choices(k: &Kind) -> Option<&'static [&'static str]> {
    match k {
        Kind::Enum { choices, .. } | Kind::EnumList { choices, .. } => Some(choices),
        Kind::Bool => Some(&["0", "1"]),
        _ => None,
    }
}

fn option_words(c: &CommandSpec) -> String {
    let mut w: Vec<String> = OPTIONS
        .iter()
        .filter(|o| c.accepts(o))
        .map(|o| {
            if takes_value(&o.kind) {
                format!("--{}=", o.name)
            } else {
                format!("--{}", o.name)
            }
        })
        .collect();
    w.sort();
    w.join(" ")
}

fn shell_fn_name(name: &str) -> String {
    name.replace('-', "_")
}

/// `pollwise completions bash`.
pub fn bash_completion() -> String {
    let mut s = String::from("# bash completion for pollwise, generated from its option table (`pollwise completions bash`).\n# Source it, or install it as /usr/share/bash-completion/completions/pollwise.\n\n");
    s.push_str("_pollwise() {\n  local cur=${COMP_WORDS[COMP_CWORD]} cmd= i\n");
    let cmds: Vec<&str> = COMMANDS
        .iter()
        .filter(|c| !c.scenario)
        .map(|c| c.name)
        .collect();
    let scen: Vec<&str> = scenarios().map(|c| c.name).collect();
    let _ = writeln!(
        s,
        "  local commands=\"{} scenario calibrate exec help man completions\"",
        cmds.join(" ")
    );
    let _ = writeln!(s, "  local scenarios=\"{}\"", scen.join(" "));
    s.push_str("  for ((i = 1; i < COMP_CWORD; i++)); do\n    case ${COMP_WORDS[i]} in\n      -*) ;;\n      scenario) cmd=scenario ;;\n      *) if [[ $cmd == scenario ]]; then cmd=${COMP_WORDS[i]}; break; elif [[ -z $cmd ]]; then cmd=${COMP_WORDS[i]}; fi ;;\n    esac\n  done\n");
    // Values of --name=...
    s.push_str("  if [[ $cur == --*=* ]]; then\n    local key=${cur%%=*} val=${cur#*=} words=\n    case ${key//-/_} in\n");
    for o in OPTIONS {
        if let Some(ch) = choices(&o.kind) {
            let mut names = vec![format!("__{}", o.name)];
            names.extend(o.aliases.iter().map(|a| format!("__{a}")));
            let _ = writeln!(
                s,
                "      {}) words=\"{}\" ;;",
                names.join("|"),
                ch.join(" ")
            );
        }
    }
    s.push_str("    esac\n    if [[ -n $words ]]; then\n      COMPREPLY=($(compgen -P \"$key=\" -W \"$words\" -- \"$val\"))\n    else\n      compopt -o default 2>/dev/null\n      COMPREPLY=($(compgen -P \"$key=\" -f -- \"$val\"))\n    fi\n    return\n  fi\n");
    s.push_str("  local opts=\n  case $cmd in\n");
    s.push_str("    '') COMPREPLY=($(compgen -W \"$commands\" -- \"$cur\")); [[ $cur == -* ]] && opts=run || return ;;\n");
    s.push_str("    scenario) COMPREPLY=($(compgen -W \"$scenarios\" -- \"$cur\")); return ;;\n");
    s.push_str("    help) COMPREPLY=($(compgen -W \"$commands\" -- \"$cur\")); return ;;\n");
    s.push_str("    completions) COMPREPLY=($(compgen -W \"bash zsh\" -- \"$cur\")); return ;;\n");
    s.push_str("    *) opts=$cmd ;;\n  esac\n");
    s.push_str("  local words\n  case ${opts:-run} in\n");
    for c in COMMANDS {
        let _ = writeln!(s, "    {}) words=\"{}\" ;;", c.name, option_words(c));
    }
    s.push_str("    *) words=\"--help\" ;;\n  esac\n");
    s.push_str("  if [[ $cur == -* ]]; then\n    COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n    [[ ${COMPREPLY[0]} == *= ]] && compopt -o nospace 2>/dev/null\n  else\n    COMPREPLY=($(compgen -f -- \"$cur\"))\n  fi\n}\ncomplete -F _pollwise pollwise\n");
    s
}

/// A zsh `_arguments` description: no brackets, colons or single quotes to break the spec.
fn zsh_desc(s: &str) -> String {
    let first = s.split(['(', ';']).next().unwrap_or(s).trim();
    let first = if first.is_empty() { s } else { first };
    let mut d: String = first
        .chars()
        .map(|c| match c {
            '[' => '(',
            ']' => ')',
            '\'' => '\u{2019}',
            '`' | '"' | '$' | '\\' => ' ',
            c => c,
        })
        .collect();
    d = d.replace(':', "\\:");
    if d.chars().count() > 72 {
        d = d.chars().take(72).collect::<String>() + "...";
    }
    d
}

/// `pollwise completions zsh`.
pub fn zsh_completion() -> String {
    let mut s = String::from("#compdef pollwise\n# zsh completion for pollwise, generated from its option table (`pollwise completions zsh`).\n# Put it in a directory of $fpath as _pollwise.\n\n");
    for c in COMMANDS {
        let _ = writeln!(
            s,
            "_pollwise_{}() {{\n  _arguments -s \\",
            shell_fn_name(c.name)
        );
        for o in OPTIONS.iter().filter(|o| c.accepts(o)) {
            let desc = zsh_desc(o.help);
            let spec = match (takes_value(&o.kind), choices(&o.kind)) {
                (false, _) => format!("'--{}[{desc}]'", o.name),
                (true, Some(ch)) => format!("'--{}=[{desc}]:value:({})'", o.name, ch.join(" ")),
                (true, None) => {
                    let action =
                        if matches!(o.name, "filename" | "output" | "directory" | "platform") {
                            "_files"
                        } else {
                            " "
                        };
                    format!(
                        "'--{}=[{desc}]:{}:{action}'",
                        o.name,
                        o.kind.placeholder().replace(':', "\\:")
                    )
                }
            };
            let _ = writeln!(s, "    {spec} \\");
        }
        s.push_str("    '*:file:_files'\n}\n\n");
    }
    s.push_str("_pollwise() {\n  local -a commands scenarios\n  commands=(\n");
    for c in COMMANDS.iter().filter(|c| !c.scenario) {
        let _ = writeln!(s, "    '{}:{}'", c.name, zsh_desc(c.about));
    }
    s.push_str("    'scenario:reproduce a source idea'\"'\"'s experiment'\n    'calibrate:measure this machine'\n    'exec:run a liburing program with pollwise'\"'\"'s waits'\n    'help:help from the option table'\n    'man:print the manual page'\n    'completions:print a completion script'\n  )\n  scenarios=(\n");
    for c in scenarios() {
        let _ = writeln!(s, "    '{}:{}'", c.name, zsh_desc(c.about));
    }
    s.push_str("  )\n  if (( CURRENT == 2 )); then\n    _describe -t commands command commands\n    return\n  fi\n  local cmd=$words[2]\n  if [[ $cmd == scenario ]]; then\n    if (( CURRENT == 3 )); then\n      _describe -t scenarios scenario scenarios\n      return\n    fi\n    cmd=$words[3]\n    shift 2 words; (( CURRENT -= 2 ))\n  else\n    shift words; (( CURRENT -= 1 ))\n  fi\n  case $cmd in\n");
    for c in COMMANDS {
        let _ = writeln!(s, "    {}) _pollwise_{} ;;", c.name, shell_fn_name(c.name));
    }
    s.push_str("    completions) _values shell bash zsh ;;\n    help) _describe -t commands command commands ;;\n    *) _files ;;\n  esac\n}\n\n_pollwise \"$@\"\n");
    s
}
