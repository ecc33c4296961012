//! The terminal contract rules that need no terminal, run against every terminal driver the runtime
//! ships, and the pane rules against the tmux driver and a private tmux server (the same rules
//! `agmsg-host driver test` runs).

mod common;

use agmsg_conformance::{Rule, run_rule, tmux::PANE_RULES};
use agmsg_host::terminal::suite::RULES;

fn all_rules(driver: &str) {
    check(driver, RULES);
}

fn check(driver: &str, rules: &[Rule]) {
    let harness = common::harness();
    let failures: Vec<String> =
        rules.iter().filter_map(|rule| run_rule(&harness, rule, driver).err().map(|e| format!("{}: {e}", rule.name))).collect();
    assert!(failures.is_empty(), "{driver} breaks:\n{}", failures.join("\n\n"));
}

#[test]
fn tmux() {
    all_rules("tmux");
}

#[test]
fn tmux_panes_against_a_real_server() {
    check("tmux", PANE_RULES);
}

#[test]
fn plain() {
    all_rules("plain");
}

#[test]
fn herdr() {
    all_rules("herdr");
}

#[test]
fn orca() {
    all_rules("orca");
}
