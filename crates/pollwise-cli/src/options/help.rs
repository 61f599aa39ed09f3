//! Help, from the option table: `pollwise help`, `pollwise CMD --help`, `--cmdhelp=OPT`.

use std::fmt::Write as _;

use crate::{Error, Result};

use super::check::or_list;
use super::table::{
    lookup, scenarios, Category, CommandSpec, Default, Opt, Scope, COMMANDS, MODES, OPTIONS,
};
use super::unknown_option;

const SYNTAX: &str = "options are fio's: --name=value or --name value; a bare flag means 1; sizes take k/M/G/T (1024-based); times take ns/us/ms/s/m/h (a bare number is seconds unless the option says otherwise)";

/// `pollwise help`: the commands, the scenarios, the modes, how to get more.
pub fn general() -> String {
    let mut h = String::from(
        "pollwise: how to wait for I/O completions, and what each way costs.\n\nusage:\n",
    );
    for c in COMMANDS.iter().filter(|c| !c.scenario) {
        let _ = writeln!(h, "  {} [options]\n      {}", c.invocation(), c.about);
    }
    h.push_str("  pollwise scenario NAME [options]\n      Reproduces the experiment of one of pollwise's source ideas (NAME: see below; docs/scenarios.md).\n");
    h.push_str("  pollwise [options] JOBFILE... | pollwise --option=value ...\n      fio's command line: `pollwise run` without the word run.\n");
    h.push_str("  pollwise exec [--mode=M] -- CMD [ARGS...]\n      Runs an unmodified liburing program with pollwise's waits (LD_PRELOAD) and prints what they did.\n");
    h.push_str("  pollwise help [COMMAND | scenario NAME] | pollwise COMMAND --help | --cmdhelp[=OPTION] | --version\n");
    h.push_str("  pollwise man | pollwise completions bash|zsh\n      The manual page and shell completions, from the option table.\n\n");
    let _ = writeln!(h, "{SYNTAX}.");
    h.push_str(
        "pollwise's defaults differ from fio's in two places: --rw=randread and --direct=1.\nStarted under the name fio (a link called fio), it takes fio's command line with fio's\ndefaults (read, buffered) and says fio-3.33 to --version.\n\n",
    );
    let _ = writeln!(
        h,
        "wait modes (--mode / --modes):\n  {}\n",
        MODES.join(", ")
    );
    h.push_str("scenarios:\n");
    for s in scenarios() {
        let _ = writeln!(h, "  {:<20} {}", s.name, s.about);
    }
    h.push_str("\n`pollwise run --help` lists the job options; `pollwise --cmdhelp=iodepth` explains one.\n");
    h
}

/// `pollwise scenario --help`: the scenarios.
pub fn scenarios_help() -> String {
    let mut h = String::from("usage: pollwise scenario NAME [options]\n\nscenarios:\n");
    for s in scenarios() {
        let _ = writeln!(h, "  {:<20} {}", s.name, s.about);
    }
    h.push_str("\n`pollwise scenario NAME --help` lists a scenario's options and defaults.\n");
    h
}

fn default_text(d: Default) -> Option<String> {
    match d {
        Default::None => None,
        Default::Value(v) | Default::Text(v) => Some(v.to_string()),
    }
}

fn option_line(h: &mut String, o: &Opt, d: Default) {
    let head = format!("--{}{}", o.name, o.kind.suffix());
    let mut line = o.help.to_string();
    if let Some(d) = default_text(d) {
        let _ = write!(line, " [default: {d}]");
    }
    if !o.aliases.is_empty() {
        let a: Vec<String> = o.aliases.iter().map(|a| format!("--{a}")).collect();
        let _ = write!(line, " (also {})", a.join(", "));
    }
    if head.len() <= 28 {
        let _ = writeln!(h, "  {head:<28} {line}");
    } else {
        let _ = writeln!(h, "  {head}\n  {:<28} {line}", "");
    }
}

/// `pollwise CMD --help`: the options `cmd` takes, by category, with its defaults.
pub fn command_help(cmd: &CommandSpec) -> String {
    let mut h = format!(
        "usage: {} [options]\n  {}\n\n{SYNTAX}.\n",
        cmd.invocation(),
        cmd.about
    );
    let mut cats: Vec<Category> = OPTIONS.iter().map(|o| o.category).collect();
    cats.sort();
    cats.dedup();
    for cat in cats {
        // The command's own options first within a category, then the job options.
        let mut list: Vec<&Opt> = OPTIONS
            .iter()
            .filter(|o| o.category == cat && cmd.accepts(o))
            .collect();
        list.sort_by_key(|o| o.scope == Scope::Job);
        if list.is_empty() {
            continue;
        }
        let _ = writeln!(h, "\n{}:", cat.title());
        for o in list {
            option_line(&mut h, o, cmd.default_of(o));
        }
    }
    let refused: Vec<String> = OPTIONS
        .iter()
        .filter(|o| o.scope == Scope::Job && !cmd.accepts(o))
        .map(|o| format!("--{}", o.name))
        .collect();
    if !refused.is_empty() && refused.len() <= 30 {
        let _ = writeln!(
            h,
            "\nset by the command or not used by it, not taken: {}",
            refused.join(" ")
        );
    }
    if cmd.name == "run" || cmd.name == "compare" {
        let _ = writeln!(h, "\nwait modes: {}", MODES.join(", "));
    }
    h
}

/// fio's `--cmdhelp`: one option's name, aliases, type, default, range or choices, help line and
/// commands; `all` (or a bare `--cmdhelp`) lists every option. `cmd` gives the defaults.
pub fn cmdhelp(what: &str, cmd: Option<&CommandSpec>) -> Result<String> {
    if what == "all" || what.is_empty() {
        let mut h = String::new();
        for o in OPTIONS {
            let d = cmd.map_or(o.default, |c| c.default_of(o));
            let _ = writeln!(
                h,
                "{:<28} {}{}",
                o.name,
                o.help,
                match default_text(d) {
                    Some(d) => format!(" [default: {d}]"),
                    None => String::new(),
                }
            );
        }
        return Ok(h);
    }
    // Any name the option table knows, canonical or alias, dashes or underscores (the lookup
    // the command line uses).
    let Some(o) = lookup(what) else {
        if super::jobfile::is_fio_option(what) {
            return Err(Error::Usage(format!(
                "fio's option --{} is not implemented by pollwise: see `pollwise run --help` for what pollwise implements",
                crate::error::shown(what)
            )));
        }
        return Err(Error::Usage(unknown_option(what, cmd)));
    };
    let mut h = String::new();
    let _ = writeln!(h, "name: {}", o.name);
    let alias = if o.aliases.is_empty() {
        "(none)".to_string()
    } else {
        o.aliases.join(", ")
    };
    let _ = writeln!(h, "alias: {alias}");
    let _ = writeln!(h, "type: {}", o.kind.describe());
    let d = cmd.map_or(o.default, |c| c.default_of(o));
    let _ = writeln!(
        h,
        "default: {}",
        default_text(d).unwrap_or_else(|| "(none)".into())
    );
    let _ = writeln!(h, "category: {}", o.category.title());
    let cmds: Vec<String> = COMMANDS
        .iter()
        .filter(|c| c.accepts(o))
        .map(|c| c.invocation())
        .collect();
    let _ = writeln!(
        h,
        "commands: {}",
        or_list(&cmds.iter().map(String::as_str).collect::<Vec<_>>())
    );
    let _ = writeln!(h, "help: {}", o.help);
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::table::command;

    #[test]
    fn command_help_lists_what_the_command_takes() {
        let run = command_help(command("run").unwrap());
        assert!(run.contains("--iodepth=N"), "{run}");
        assert!(run.contains("--iodepth_batch_submit=N"), "{run}");
        assert!(run.contains("also --iodepth_batch"), "{run}");
        assert!(!run.contains("--burst"), "{run}");
        let f = command_help(command("fairness").unwrap());
        assert!(f.contains("--burst=N"), "{f}");
        assert!(f.contains("[default: 32768]"), "{f}");
        assert!(f.contains("--poller_depth=N"), "{f}");
        assert!(f.contains("[default: 128]"), "{f}");
        assert!(!f.contains("--sources"), "{f}");
        let fixed = f
            .lines()
            .find(|l| l.contains("not taken:"))
            .unwrap_or_default();
        assert!(fixed.contains("--numjobs") && fixed.contains("--rw"), "{f}");
    }

    #[test]
    fn cmdhelp_says_everything_about_one_option() {
        let h = cmdhelp("iodepth_batch", None).unwrap();
        assert!(h.contains("name: iodepth_batch_submit"), "{h}");
        assert!(h.contains("alias: iodepth_batch"), "{h}");
        let h = cmdhelp("rw", None).unwrap();
        assert!(h.contains("one of read, write, randread"), "{h}");
        assert!(h.contains("default: randread"), "{h}");
        let h = cmdhelp("iodepth", command("fairness")).unwrap();
        assert!(h.contains("default: 32"), "{h}");
        assert!(h.contains("1 to 32768"), "{h}");
        let all = cmdhelp("all", None).unwrap();
        assert_eq!(all.lines().count(), OPTIONS.len());
        let e = cmdhelp("iodpth", None).unwrap_err().to_string();
        assert!(e.contains("did you mean `--iodepth`"), "{e}");
    }

    #[test]
    fn cmdhelp_resolves_every_alias() {
        for o in OPTIONS {
            for a in o.aliases {
                for spelled in [a.to_string(), a.replace('_', "-")] {
                    let h = cmdhelp(&spelled, None).unwrap();
                    assert!(
                        h.starts_with(&format!("name: {}\n", o.name)),
                        "{spelled}: {h}"
                    );
                }
            }
        }
        let e = cmdhelp("exec_prerun", None).unwrap_err().to_string();
        assert!(
            e.contains("fio's option --exec_prerun is not implemented"),
            "{e}"
        );
    }

    #[test]
    fn general_help_names_every_mode_and_scenario() {
        let h = general();
        for m in MODES {
            assert!(h.contains(m), "{m}");
        }
        for s in scenarios() {
            assert!(h.contains(s.name), "{}", s.name);
        }
    }
}
