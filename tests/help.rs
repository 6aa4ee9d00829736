//! Issue 10 item 8: the help. Each command's own flags under its own
//! heading, budget flags only where a budget is used, every agent named,
//! examples and exit codes; the shipped man pages match the clap definition.

mod common;
use clap::CommandFactory;
use common::*;

/// The sections of a help text: (heading, body) for every line that starts
/// at column 0 and ends with `:` (`Options:`, `Budget:`, `Exit codes:`).
fn sections(help: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in help.lines() {
        if !line.starts_with(' ') && line.ends_with(':') {
            out.push((line.trim_end_matches(':').to_string(), String::new()));
        } else if let Some((_, body)) = out.last_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    out
}

fn help(args: &[&str]) -> String {
    let out = bin().args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}");
    String::from_utf8(out.stdout).unwrap()
}

fn section<'a>(s: &'a [(String, String)], name: &str) -> Option<&'a str> {
    s.iter().find(|(h, _)| h == name).map(|(_, b)| b.as_str())
}

/// Every command, its heading, its own flags, and whether it judges
/// sessions against a budget (and so takes the budget, `--ignore` and the
/// config file).
const COMMANDS: &[(&str, &str, &[&str], bool)] = &[
    ("list", "List", &["--session"], true),
    ("inspect", "Inspect", &["--session", "--top"], false),
    ("check", "Check", &["--session", "--fail-on"], true),
    (
        "repair",
        "Repair",
        &["--out", "--session", "--dry-run", "--force"],
        false,
    ),
    (
        "compact",
        "Compact",
        &["--session", "--out", "--keep-turns", "--dry-run", "--force"],
        true,
    ),
];

#[test]
fn each_command_lists_its_own_flags_under_its_own_heading() {
    for &(cmd, heading, own, judges) in COMMANDS {
        for flag in ["-h", "--help"] {
            let text = help(&[cmd, flag]);
            let s = sections(&text);
            let mine = section(&s, heading)
                .unwrap_or_else(|| panic!("{cmd} {flag}: no {heading}: heading\n{text}"));
            for f in own {
                assert!(
                    mine.contains(f),
                    "{cmd} {flag}: {f} not under {heading}:\n{text}"
                );
            }
            let options = section(&s, "Options").unwrap();
            assert!(options.contains("--format") && options.contains("--jobs"));
            match section(&s, "Budget") {
                Some(budget) => {
                    assert!(judges, "{cmd} uses no budget but shows one:\n{text}");
                    for f in own {
                        assert!(!budget.contains(f), "{cmd}: {f} under Budget:\n{text}");
                    }
                    for f in ["--context", "--max-request-bytes", "--headroom", "--model"] {
                        assert!(budget.contains(f), "{cmd}: {f}");
                    }
                }
                None => assert!(!judges, "{cmd} has no Budget: heading:\n{text}"),
            }
            assert_eq!(
                section(&s, "Findings").is_some_and(|b| b.contains("--ignore")),
                judges,
                "{cmd} {flag}: --ignore"
            );
            assert_eq!(
                section(&s, "Configuration").is_some_and(|b| b.contains("--config")),
                judges,
                "{cmd} {flag}: --config"
            );
        }
    }
}

#[test]
fn commands_without_a_budget_refuse_budget_flags() {
    for cmd in ["inspect", "repair"] {
        bin()
            .args([cmd, "--max-request-bytes", "1000", "--out", "/nonexistent"])
            .arg(oc("plain"))
            .assert()
            .code(2)
            .stderr(predicates::str::contains("unexpected argument"));
    }
}

#[test]
fn every_help_has_examples_and_exit_codes() {
    let mut all: Vec<Vec<&str>> = vec![vec![]];
    for &(cmd, ..) in COMMANDS {
        all.push(vec![cmd]);
    }
    all.push(vec!["completions"]);
    all.push(vec!["man"]);
    for args in all {
        for flag in ["-h", "--help"] {
            let mut a = args.clone();
            a.push(flag);
            let text = help(&a);
            let s = sections(&text);
            let examples = section(&s, "Examples").unwrap_or_else(|| panic!("{a:?}\n{text}"));
            assert!(examples.contains("session-doctor "), "{a:?}");
            let codes = section(&s, "Exit codes").unwrap_or_else(|| panic!("{a:?}\n{text}"));
            assert!(codes.contains("  0  "), "{a:?}: {codes}");
            assert!(codes.contains("  2  usage error"), "{a:?}: {codes}");
            // 1 only where a run can judge: check's --fail-on, compact's budget.
            let judged = matches!(args.first(), None | Some(&"check") | Some(&"compact"));
            assert_eq!(codes.contains("  1  "), judged, "{a:?}: {codes}");
        }
    }
    let top = help(&["--help"]);
    assert!(
        top.contains("1  check: a finding at or above --fail-on"),
        "{top}"
    );
}

#[test]
fn the_top_level_help_and_the_package_name_every_agent() {
    let top = help(&["--help"]);
    let about = top.lines().next().unwrap();
    for agent in [
        "opencode",
        "Kilo CLI",
        "Claude Code",
        "Codex CLI",
        "hermes-agent",
        "docker-agent",
    ] {
        assert!(about.contains(agent), "help lacks {agent}: {about}");
        assert!(
            env!("CARGO_PKG_DESCRIPTION").contains(agent),
            "Cargo.toml description lacks {agent}"
        );
    }
    // The top-level help names the config file lookup.
    assert!(top.contains("session-doctor.toml") && top.contains("--no-config"));
}

/// The pages man/ must hold: the top level, then one per command.
fn pages() -> Vec<(Option<String>, String)> {
    let cmd = session_doctor::cli::Cli::command();
    let mut v = vec![(None, "session-doctor.1".to_string())];
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = sub.get_name().to_string();
        v.push((Some(name.clone()), format!("session-doctor-{name}.1")));
    }
    v
}

#[test]
fn shipped_man_pages_match_the_cli() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("man");
    let want = pages();
    for (cmd, file) in &want {
        let mut c = bin();
        c.arg("man");
        if let Some(cmd) = cmd {
            c.arg(cmd);
        }
        let out = c.output().unwrap();
        assert!(out.status.success(), "{cmd:?}");
        let shipped = std::fs::read(dir.join(file)).unwrap_or_default();
        assert!(
            out.stdout == shipped,
            "man/{file} is stale: regenerate with `session-doctor man {} > man/{file}`",
            cmd.as_deref().unwrap_or_default()
        );
    }
    // No page for a command that is gone.
    let mut have: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    have.sort();
    let mut names: Vec<String> = want.into_iter().map(|(_, f)| f).collect();
    names.sort();
    assert_eq!(have, names);
}

#[test]
fn the_man_page_carries_the_headings_examples_and_exit_codes() {
    let page = String::from_utf8(bin().args(["man", "check"]).output().unwrap().stdout).unwrap();
    for h in [
        ".SH CHECK",
        ".SH BUDGET",
        ".SH FINDINGS",
        ".SH CONFIGURATION",
    ] {
        assert!(page.contains(h), "{h}");
    }
    assert!(page.contains("Exit codes:"));
    bin().args(["man", "nope"]).assert().code(2);
}
