//! `storage describe`'s `capabilities=` line names exactly the optional `agmsg:storage` interfaces the
//! driver's component offers (1.1.0 `live`, 1.2.0 `receipts` and `rename`): a caller deciding whether
//! to call an optional op may trust it. Each bundled driver's answer is checked against what the host
//! finds when it asks for each op.

mod common;

use common::Env;

fn storage(env: &Env, driver: &str, args: &[&str]) -> agmsg_conformance::Run {
    env.run(&[&["--driver", driver, "storage"], args].concat())
}

/// The optional interfaces an op of the CLI can probe (sync, `stage1-sync`, has no CLI op here).
const PROBED: [&str; 3] = ["live", "receipts", "rename"];

/// The capabilities describe lists, among [`PROBED`].
fn described(env: &Env, driver: &str) -> Vec<String> {
    let run = storage(env, driver, &["describe"]);
    let line = run.ok().lines().into_iter().find_map(|l| l.strip_prefix("capabilities=")).unwrap_or_else(|| panic!("{run:?}")).to_owned();
    let mut caps: Vec<String> = line.split([',', ' ']).filter(|c| PROBED.contains(c)).map(str::to_owned).collect();
    caps.sort();
    caps
}

/// The optional interfaces the host finds offered, by calling one op of each on a fresh store.
fn probed(env: &Env, driver: &str) -> Vec<String> {
    let unsupported = |run: &agmsg_conformance::Run| run.code == 13 && run.stderr.contains("unsupported");
    let mut offered = Vec::new();
    let tip = storage(env, driver, &["watch-tip", "t:a"]);
    let cursor = tip.ok().stdout.trim().to_owned();
    let wait = storage(env, driver, &["wait-after", &cursor, "t:a", "--timeout-ms", "10"]);
    if wait.stdout.trim() != "unsupported" {
        offered.push("live".to_owned());
    }
    if !unsupported(&storage(env, driver, &["receipt-status", "t", "no-such-id"])) {
        offered.push("receipts".to_owned());
    }
    if !unsupported(&storage(env, driver, &["rename-agent", "t", "a", "b"])) {
        offered.push("rename".to_owned());
    }
    offered
}

#[test]
fn describe_lists_every_optional_interface_a_file_driver_offers() {
    for (driver, expected) in [("sqlite", vec!["receipts"]), ("jsonl", vec!["rename"])] {
        let env = Env::new();
        let offered = probed(&env, driver);
        assert_eq!(offered, expected, "{driver}: what the host finds offered");
        assert_eq!(described(&env, driver), offered, "{driver}: describe says what it offers");
    }
}

#[test]
fn postgres_describe_lists_live_without_a_database() {
    // describe answers without connecting; postgres exports `live` (wait-after on LISTEN/NOTIFY).
    let env = Env::new();
    assert_eq!(described(&env, "postgres"), ["live"]);
}
