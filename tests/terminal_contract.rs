//! The terminal contract rules that need no terminal, run against every terminal driver the runtime
//! ships (the same rules `agmsg-host driver test` runs).

mod common;

use agmsg_conformance::{run_rule, terminal::RULES};

fn all_rules(driver: &str) {
    let harness = common::harness();
    let failures: Vec<String> =
        RULES.iter().filter_map(|rule| run_rule(&harness, rule, driver).err().map(|e| format!("{}: {e}", rule.name))).collect();
    assert!(failures.is_empty(), "{driver} breaks:\n{}", failures.join("\n\n"));
}

#[test]
fn tmux() {
    all_rules("tmux");
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
